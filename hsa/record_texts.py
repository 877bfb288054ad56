"""The free text of a record: where it is, its tokens, and rewriting it in place.

Free text: message contents (text parts too), tool and parameter descriptions, skill descriptions and content,
prompt section titles and bodies, and, for reading only, hook source. :mod:`hsa.renames` rewrites these texts
(whole tokens) when a name changes; the samplers of the transforms read them (:func:`record_tokens`: what a new
name must not collide with).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from hsa import _json
from hsa.cache import lru as _lru
from hsa.hooks_model import map_content
from hsa.mapping import ARRAY
from hsa.names import is_plain_token, text_tokens
from hsa.records import Record
from hsa.schema_facts import schema_fact

__all__ = [
    "content_parts",
    "record_words",
    "text_words",
    "data_words",
    "DataWords",
    "Words",
    "map_schema_descriptions",
    "map_schema_descriptions_in_place",
    "copy_for_texts",
    "map_texts",
    "map_texts_skipping",
    "map_prompt_texts",
    "schema_skipper",
    "schema_texts",
    "text_fields",
    "texts_of",
    "labelled_texts",
    "labelled_message_texts",
    "labelled_harness_texts",
    "record_tokens",
    "texts_hold",
    "rewritten_texts",
    "param_paths",
]


# --------------------------------------------------------------------------- free text


def content_parts(content: Any) -> list[str]:
    """The texts of a message's ``content``: the string itself, or the text parts (strings or ``{"text": ...}``)
    of a list of parts; nothing for anything else."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] if isinstance(p, dict) else p for p in content
                if (isinstance(p, dict) and isinstance(p.get("text"), str)) or isinstance(p, str)]
    return []


def map_schema_descriptions(schema: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k in ("description", "title") and isinstance(v, str):
                out[k] = fn(v)
            elif k in ("properties", "$defs", "definitions", "patternProperties") and isinstance(v, dict):
                out[k] = {pk: map_schema_descriptions(pv, fn) for pk, pv in v.items()}
            elif k in ("enum", "const", "default", "examples", "required"):
                out[k] = v
            else:
                out[k] = map_schema_descriptions(v, fn)
        return out
    if isinstance(schema, list):
        return [map_schema_descriptions(v, fn) for v in schema]
    return schema


def map_schema_descriptions_in_place(schema: Any, fn: Callable[[str], str]) -> None:
    """:func:`map_schema_descriptions` on a schema the caller owns: only the changed strings are set."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("description", "title") and isinstance(v, str):
                new = fn(v)
                if new != v:
                    schema[k] = new  # an existing key: the dict keeps its size and order
            elif k in ("properties", "$defs", "definitions", "patternProperties") and isinstance(v, dict):
                for pv in v.values():
                    map_schema_descriptions_in_place(pv, fn)
            elif k not in ("enum", "const", "default", "examples", "required"):
                map_schema_descriptions_in_place(v, fn)
    elif isinstance(schema, list):
        for v in schema:
            map_schema_descriptions_in_place(v, fn)


def copy_for_texts(record: Record, names: Iterable[str] | None = None) -> Record:
    """A copy of ``record`` that :func:`map_texts` (with the same ``names``) may edit in place: every dict and list
    that holds a text it rewrites is the copy's own (parameter schemas only where a name occurs in them), and
    everything else is shared with ``record``, which no transform modifies."""
    skip = schema_skipper(names)
    out = dict(record)
    out["messages"] = [dict(m) for m in record["messages"]]
    out["tools"] = [{**t, "parameters": t["parameters"] if skip is not None and skip(t["parameters"])
                     else _json.copy(t["parameters"])} for t in record["tools"]]
    if record.get("skills"):
        out["skills"] = [dict(sk) for sk in record["skills"]]
    prompt = record.get("prompt")
    if prompt:
        out["prompt"] = {**prompt, "sections": [dict(sec) for sec in prompt.get("sections", ())]}
    return out


def map_texts(record: Record, fn: Callable[[str], str], *, hooks: bool = True,
              tool_descriptions: bool = True, names: Iterable[str] | None = None, messages: bool = True) -> Record:
    """Apply ``fn`` to every free-text field of ``record`` (in place on a record the caller owns).

    Free text: message contents, tool and parameter descriptions, skill descriptions
    and content, prompt section titles and bodies, and (``hooks=True``) the string
    literals of hook source. Recorded hook events (payloads, decisions) follow each
    rename step in :func:`_sync_hooks` / :func:`_map_hook_payloads`, not here.

    ``names``: when given, ``fn`` leaves every text that contains none of them (as a
    substring) unchanged, as a token rename does; a parameter schema whose JSON holds
    none of them is then skipped without walking it. ``messages=False``: the harness texts only (a step's
    appliers carry the messages with the step's message carry, :mod:`hsa.step_carry`).
    """
    return map_texts_skipping(record, fn, schema_skipper(names), tool_descriptions=tool_descriptions,
                              messages=messages)


def map_texts_skipping(record: Record, fn: Callable[[str], str], skip: Callable[[Any], bool] | None, *,
               tool_descriptions: bool = True, messages: bool = True) -> Record:
    """:func:`map_texts`; ``skip(schema)`` true: ``fn`` changes no text of that parameter schema."""
    for m in record["messages"] if messages else ():
        if "content" in m:
            m["content"] = map_content(m["content"], fn)
    if tool_descriptions:
        for t in record["tools"]:
            if isinstance(t.get("description"), str):
                t["description"] = fn(t["description"])
            if skip is None or not skip(t["parameters"]):
                map_schema_descriptions_in_place(t["parameters"], fn)
    for s in record.get("skills") or ():
        for key in ("description", "content"):
            if isinstance(s.get(key), str):
                s[key] = fn(s[key])
    prompt = record.get("prompt")
    if prompt:
        map_prompt_texts(prompt, fn)
    return record


def map_prompt_texts(prompt: dict, fn: Callable[[str], str]) -> None:
    """``fn`` on the titles and bodies of ``prompt``'s sections (in place: sections the caller owns).

    A rename's text function that reads words in context (``fn.in_context``: :class:`hsa.mentions.MentionRenamer`)
    reads each body where the template writes it: the sections rendered together (those of the system message, and
    those placed in the user turn) are renamed as their rendered text reads ("TOOLS: (get)" names a tool where the
    body "(get)" alone does not), so the prompt renders the system message that the same function makes of the
    rendered one. A body the template does not write as it is (:func:`hsa.prompt_model.body_regions`) is read
    alone; so are the titles."""
    sections = prompt.get("sections", ())
    bodies = _bodies_in_context(prompt, fn)
    for i, sec in enumerate(sections):
        if not isinstance(sec, dict):
            continue
        if isinstance(sec.get("title"), str):
            sec["title"] = fn(sec["title"])
        if isinstance(sec.get("body"), str):
            sec["body"] = bodies[i] if i in bodies else fn(sec["body"])


def _bodies_in_context(prompt: dict, fn: Callable[[str], str]) -> dict[int, str]:
    """``{section index: body}`` renamed by ``fn.in_context`` in the text the template renders (see
    :func:`map_prompt_texts`); empty when ``fn`` cannot, or names nothing in any body."""
    in_context, touches = getattr(fn, "in_context", None), getattr(fn, "touches", None)
    sections, template = prompt.get("sections"), prompt.get("template")
    if (in_context is None or touches is None or not isinstance(template, str) or not isinstance(sections, list)
            or not any(isinstance(sec, dict) and isinstance(sec.get("body"), str) and touches(sec["body"])
                       for sec in sections)):
        return {}
    from hsa.prompt_model import body_regions, in_user_turn

    out: dict[int, str] = {}
    twice: set[int] = set()
    for user in (False, True):  # the system message's sections, then those of the user turn: each rendered alone
        group = [i for i, sec in enumerate(sections) if isinstance(sec, dict) and in_user_turn(sec) == user]
        found = body_regions(template, [sections[i] for i in group]) if group else None
        if found is None:
            continue
        text, regions = found
        bodies = in_context(text, [(s, e) for _, s, e in regions])
        if bodies is None:
            continue
        for (j, _, _), body in zip(regions, bodies):
            if out.setdefault(group[j], body) != body:
                twice.add(group[j])  # written twice and read differently: read alone
    return {i: b for i, b in out.items() if i not in twice}


# JSON writes these characters as themselves (no escape): a name made of them that occurs in a string occurs in its JSON
_JSON_PLAIN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]+")


def schema_skipper(names: Iterable[str] | None, encode: Callable[[Any], str] | None = None
                   ) -> Callable[[Any], bool] | None:
    """A test that a schema's texts hold none of ``names``: one JSON encoding instead of a walk (None: no test).
    ``encode``: how a schema is encoded (:func:`hsa._json.dumps`, or a caller's that keeps what it encoded)."""
    if names is None:
        return None
    names = tuple(names)
    if not all(_JSON_PLAIN.fullmatch(n) for n in names):
        return None  # a name JSON would escape: its encoded form differs, walk every schema
    dumps = _json.dumps if encode is None else encode

    def skip(schema: Any) -> bool:
        try:
            encoded = dumps(schema)
        except (TypeError, ValueError):  # not JSON (a record built in code): walk it
            return False
        return not any(n in encoded for n in names)

    return skip


def schema_texts(schema: Any, out: list[str]) -> None:
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("description", "title") and isinstance(v, str):
                out.append(v)
            elif k not in ("enum", "const", "default", "examples", "required"):
                schema_texts(v, out)
    elif isinstance(schema, list):
        for v in schema:
            schema_texts(v, out)


def text_fields(record: Record) -> list[str]:
    """Every free-text string of ``record`` (the fields :func:`map_texts` rewrites), hook source included."""
    return texts_of(record, schemas=True)


def texts_of(record: Record, *, schemas: bool) -> list[str]:
    """:func:`text_fields`; without the texts of parameter schemas when ``schemas`` is false."""
    return _texts(record, schemas=schemas, rewritten=False, hooks=True)


def _texts(record: Record, *, schemas: bool, rewritten: bool, hooks: bool) -> list[str]:
    """The free texts of ``record`` in :func:`map_texts`' order: message contents and text parts, tool
    descriptions and (``schemas``) the texts of their parameter schemas (``rewritten``: the walk of
    :func:`map_schema_descriptions`, else that of :func:`text_fields`), skill descriptions and content, prompt
    section titles and bodies, and (``hooks``) hook sources. With ``schemas`` and not ``rewritten``: the texts of
    :func:`labelled_texts`, then the hook sources (the names-left check, :mod:`hsa.rename_texts`, relies on it)."""
    out: list[str] = []
    for m in record["messages"]:
        out.extend(content_parts(m.get("content")))
    for t in record["tools"]:
        if isinstance(t.get("description"), str):
            out.append(t["description"])
        if schemas:
            out.extend(_schema_texts_by_json(t["parameters"], rewritten=rewritten))
    for s in record.get("skills") or ():
        out.extend(s[k] for k in ("description", "content") if isinstance(s.get(k), str))
    for sec in (record.get("prompt") or {}).get("sections", ()):
        out.extend(sec[k] for k in ("title", "body") if isinstance(sec.get(k), str))
    if hooks:
        out.extend(h.get("source", "") for h in record.get("hooks") or ())
    return out


def labelled_texts(record: Record):
    """``(label, text)`` for every free text of ``record`` but hook source: what a reader sees as prose. The
    messages' (:func:`labelled_message_texts`), then the harness's (:func:`labelled_harness_texts`)."""
    yield from labelled_message_texts(record)
    yield from labelled_harness_texts(record)


def labelled_message_texts(record: Record):
    """:func:`labelled_texts` of the messages: each content text, or text part, labelled by its role."""
    for m in record["messages"]:
        parts = content_parts(m.get("content"))
        for part in parts:
            yield f"a {m.get('role', 'message')} message", part


def labelled_harness_texts(record: Record):
    """:func:`labelled_texts` of the harness: tool and parameter descriptions, skills, prompt sections."""
    for t in record["tools"]:
        if isinstance(t.get("description"), str):
            yield "a tool description", t["description"]
        for text in _schema_texts_by_json(t["parameters"], rewritten=False):
            yield "a parameter description", text
    for sk in record.get("skills") or ():
        for k in ("description", "content"):
            if isinstance(sk.get(k), str):
                yield "a skill", sk[k]
    prompt = record.get("prompt")
    for sec in (prompt or {}).get("sections", ()):
        for k in ("title", "body"):
            if isinstance(sec.get(k), str):
                yield "the prompt", sec[k]


def record_tokens(record: Record) -> set[str]:
    """Every token (``[A-Za-z0-9_-]+``) of the record's texts and names: what a new name must not collide with.

    The tokens of the texts are kept per tuple of texts, the messages' apart from the harness's (tool descriptions,
    skills, prompt, hook sources), so a record of a shared harness finds the harness's tokens kept; every sampler of
    every variant asks. One union into the set returned (the caller's own); :func:`record_words` for membership
    tests alone."""
    return set().union(*record_words(record).parts)


class Words:
    """A set of words for membership tests only (``word in words``), held as the sets it is the union of."""

    __slots__ = ("parts",)

    def __init__(self, *parts):
        self.parts = parts

    def __contains__(self, word) -> bool:
        return any(word in p for p in self.parts)


def record_words(record: Record) -> Words:
    """The tokens of :func:`record_tokens` as a :class:`Words`: what a sampler asks when it only tests names
    (``facts.ask_set(record_words)``), without building their union for each record and question."""
    texts = texts_of(record, schemas=False)
    k = _message_text_count(record)  # the messages' texts come first: per record; the rest is the harness's
    return Words(_texts_tokens(tuple(texts[:k])), _texts_tokens(tuple(texts[k:])), _tools_tokens(record["tools"]),
                 {s["name"] for s in record.get("skills") or ()})


def text_words(record: Record) -> Words:
    """The tokens (:func:`hsa.names.text_tokens`) of every text of :func:`text_fields` (messages, tool descriptions
    and parameter-schema texts, skills, prompt, hook sources; no names) as a :class:`Words`: whether a plain form is
    mentioned in the record's text, asked as ``facts.ask_set(text_words)``. The messages' tokens are kept apart from
    the harness's, each per tuple of texts, so the records of a harness share the second."""
    texts = text_fields(record)
    k = _message_text_count(record)  # text_fields puts the messages' texts first, as texts_of does
    return Words(_texts_tokens(tuple(texts[:k])), _texts_tokens(tuple(texts[k:])))


class DataWords:
    """The words of a record's *data*, for membership tests (``name in words``): the texts of its user messages and
    the string values its calls pass (code, paths, ids, free text; never the argument names). A name found there
    may be a value of the task, not a reference to the harness: "a variable named 'listElement'" in a BFCL question
    whose tool has a parameter ``listElement``; ``from hermes_tools import get_schema`` in a call's code, where
    ``get_schema`` is also a tool. A rename rewrites user texts and never call values, so renaming such a name
    would change what the user asked for, or leave the code calling a name that no longer exists. A name of
    ``[A-Za-z0-9_-]`` characters is found as a whole run of them (``hermes_tools.get_schema`` holds
    ``get_schema``), any other (``git.status``, ``a b``) as text. Asked for a few names per record, so the texts are
    searched, not tokenized."""

    __slots__ = ("text",)

    def __init__(self, texts: tuple[str, ...]):
        self.text = "\n".join(texts)

    def __contains__(self, name) -> bool:
        if not isinstance(name, str) or not name or name not in self.text:
            return False
        if _RUN.fullmatch(name) is None:
            return True
        return re.search(rf"(?<![A-Za-z0-9_\-]){re.escape(name)}(?![A-Za-z0-9_\-])", self.text) is not None


_RUN = re.compile(r"[A-Za-z0-9_\-]+")


def data_words(record: Record, users: bool = True) -> DataWords:
    """:class:`DataWords` of ``record``: what a rename asks before it renames a name
    (``facts.ask_set(data_words, users)``). ``users=False``: the call values alone (a tool's name in a user message
    is a reference far more often than a value: "call load_skill with a reply skill")."""
    texts: list[str] = []
    for m in record["messages"]:
        if users and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                texts.append(c)
            elif isinstance(c, list):
                texts.extend(b["text"] for b in c if isinstance(b, dict) and isinstance(b.get("text"), str))
        for call in m.get("tool_calls") or ():
            _strings_of(call.get("function", {}).get("arguments"), texts)
    return DataWords(tuple(texts))


def _strings_of(value: Any, out: list[str]) -> None:
    """The string values in ``value`` (a call's arguments), at any depth; not the keys."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings_of(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings_of(v, out)


def _message_text_count(record: Record) -> int:
    """How many of :func:`texts_of` are message texts (contents and text parts)."""
    n = 0
    for m in record["messages"]:
        c = m.get("content")
        if isinstance(c, str):
            n += 1
        elif isinstance(c, list):
            n += sum(1 for p in c if (isinstance(p, dict) and isinstance(p.get("text"), str)) or isinstance(p, str))
    return n


def _texts_tokens(texts: tuple[str, ...]) -> frozenset[str]:
    """The tokens of ``texts``, kept per tuple of texts (``texts.tokens``): records of one harness share the tuple
    of its texts, and the message texts stay the same strings from one sampler to the next until a rename rewrites
    them."""
    hit = _TEXT_TOKENS.get(texts)
    if hit is None:
        hit = _TEXT_TOKENS.put(texts, frozenset().union(*map(text_tokens, texts)),
                               3 * sum(map(len, texts)) + 8 * len(texts) + 200)
    return hit


_TEXT_TOKENS = _lru("texts.tokens", 32 << 20)


def _tools_tokens(tools: list[dict]) -> frozenset[str]:
    """The tools' names and the tokens of their schemas (:func:`_schema_tokens`): a fact of the tool list
    (:func:`hsa.schema_facts.schema_fact`), worked out once per list."""
    return schema_fact(tools, _tools_tokens_of, size=_set_size)


def _tools_tokens_of(tools: list[dict]) -> frozenset[str]:
    return frozenset({t["name"] for t in tools}).union(*(_schema_tokens(t["parameters"]) for t in tools))


def _schema_tokens(schema: Any) -> frozenset[str]:
    """The tokens of a parameter schema's texts and its declared property names (but ``"[]"``): a fact of the
    schema (:func:`hsa.schema_facts.schema_fact`), worked out once per schema."""
    return schema_fact(schema, _schema_tokens_of, size=_set_size)


def _set_size(words: frozenset) -> int:
    return 80 * len(words)


def _schema_tokens_of(schema: Any) -> frozenset[str]:
    texts: list[str] = []
    schema_texts(schema, texts)
    keys: set[str] = set()
    _param_keys(schema, keys)
    keys.discard(ARRAY)  # a property literally named "[]" is no name (param_paths' filter in record_tokens)
    return frozenset(keys.union(*map(text_tokens, texts)))


def _param_keys(schema: Any, out: set[str]) -> None:
    """The last keys of :func:`param_paths` of ``schema`` (every declared property name), added to ``out``."""
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for k, sub in props.items():
            out.add(k)
            _param_keys(sub, out)
    items = schema.get("items")
    if isinstance(items, dict):
        _param_keys(items, out)


def texts_hold(record: Record, names: list[str]) -> bool:
    """Whether a token rename of ``names`` by :func:`map_texts` could change a text of ``record``, or the test
    cannot tell (a prompt without a section list, which :func:`copy_for_texts` would add): False means it changes
    nothing, and no copy is needed. Plain names (:func:`hsa.names.is_plain_token`) are looked up in the tokens of
    the texts map_texts rewrites (kept per tuple of texts, ``texts.tokens``: the value steps of
    one ``tool.values`` ask one after the other); other names are searched for as substrings."""
    if not names:
        return False
    prompt = record.get("prompt")
    if prompt and not isinstance(prompt.get("sections"), list):
        return True
    # the schemas' texts count only when the JSON of all the schemas holds a name (one encoding, not one per schema)
    skip = schema_skipper(names)
    texts = rewritten_texts(record, schemas=skip is None or not skip([t["parameters"] for t in record["tools"]]))
    if all(is_plain_token(n) for n in names):
        return not _texts_tokens(texts).isdisjoint(names)
    return any(n in text for text in texts for n in names)


def rewritten_texts(record: Record, *, schemas: bool = True) -> tuple[str, ...]:
    """Every text :func:`map_texts` (tool descriptions included) hands to its function, in its order: message
    contents and text parts, tool descriptions and (``schemas``) the descriptions and titles of parameter schemas
    (the walk of :func:`map_schema_descriptions`, kept per schema JSON), skill descriptions and content, prompt
    section titles and bodies."""
    return tuple(_texts(record, schemas=schemas, rewritten=True, hooks=False))


def _rewritten_schema_texts(schema: Any, out: list[str]) -> None:
    """The strings :func:`map_schema_descriptions_in_place` hands to its function, in its order (the function gives
    each back unchanged, so nothing is set)."""
    map_schema_descriptions_in_place(schema, lambda text: out.append(text) or text)


def _schema_texts_by_json(schema: Any, *, rewritten: bool) -> tuple[str, ...]:
    """:func:`schema_texts` (``rewritten``: :func:`_rewritten_schema_texts`) of ``schema``: a fact of the schema
    (:func:`hsa.schema_facts.schema_fact`; the texts follow from the keys and strings its JSON writes)."""
    return schema_fact(schema, _schema_texts_of, rewritten, size=_texts_size)


def _schema_texts_of(schema: Any, rewritten: bool) -> tuple[str, ...]:
    out: list[str] = []
    (_rewritten_schema_texts if rewritten else schema_texts)(schema, out)
    return tuple(out)


def _texts_size(texts: tuple[str, ...]) -> int:
    return 2 * sum(map(len, texts)) + 8 * len(texts)


# --------------------------------------------------------------------------- declared parameters


def param_paths(schema: Any, prefix: tuple = ()) -> list[tuple]:
    """All property paths declared by ``schema`` (objects at any depth, arrays as ``"[]"``); from the root, a fact
    of the schema (:func:`hsa.schema_facts.schema_fact`: the paths follow from its keys and nesting)."""
    if prefix or not isinstance(schema, dict):
        return _param_paths(schema, prefix)
    return list(schema_fact(schema, _root_paths, size=_paths_size))


def _root_paths(schema: Any) -> tuple[tuple, ...]:
    return tuple(_param_paths(schema, ()))


def _paths_size(paths: tuple) -> int:
    return 100 * len(paths)


def _param_paths(schema: Any, prefix: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    if not isinstance(schema, dict):
        return out
    props = schema.get("properties")
    if isinstance(props, dict):
        for k, sub in props.items():
            out.append(prefix + (k,))
            out.extend(_param_paths(sub, prefix + (k,)))
    items = schema.get("items")
    if isinstance(items, dict):
        out.extend(_param_paths(items, prefix + (ARRAY,)))
    return out
