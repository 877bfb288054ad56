"""Where a rename reaches the free text of a record: which mentions follow it, and which names stay.

:mod:`hsa.mentions` decides, mention by mention, what a text refers to; this module applies that to records: the
text function of a tool or skill rename (:func:`names_renamer`: identifier-like names as whole tokens, compound
names inside longer tokens too, plain words where a text refers to them), the texts a parameter rename reaches
(:func:`param_mentions`: the tool's own descriptions and results, every text for a name only that tool declares),
the names that stay (:func:`harness_names`), and the check that no reference to an old name is left
(:func:`stale_references`, invariant 6 in :mod:`hsa.invariants`). :mod:`hsa.renames` makes the renames.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from hsa import _json
from hsa.literals import plain_literals
from hsa.mapping import ARRAY, Mapping
from hsa.steps import ParamsStep, RegroupStep, RestoreStep, Step, steps_of
from hsa.mentions import inner_spans, is_compound, mention_renamer, referenced, stale_mentions
from hsa.names import find_tokens, is_identifier_like, is_plain_token, replace_tokens, text_tokens
from hsa.record_texts import content_parts
from hsa.record_texts import (labelled_harness_texts, labelled_message_texts, labelled_texts, map_prompt_texts,
                              map_schema_descriptions,
                              map_schema_descriptions_in_place, param_paths, schema_skipper)
from hsa.records import Record
from hsa.schema_facts import schema_fact

__all__ = [
    "LEGACY_MENTIONS",
    "harness_names",
    "names_renamer",
    "token_renamer",
    "nested_names",
    "word_name_free",
    "renames_leaves",
    "param_mentions",
    "SchemaReads",
    "schema_strings",
    "tools_schema_strings",
    "rename_in_tool_texts",
    "rename_param_mentions",
    "legacy_param_renamer",
    "step_mentions",
    "hook_literals",
    "stale_references",
    "stale_names",
    "variant_key",
    "structured",
    "prose_only",
]


#: ``mentions`` of :func:`rename_params` for a step made before steps said which mentions follow (the tool's own
#: descriptions, by the rule of that time: identifier-like names as tokens, plain words in backticks).
LEGACY_MENTIONS = "legacy"


def harness_names(record: Record, renames: dict[str, str] | None = None) -> frozenset[str]:
    """The names of ``record``'s harness (tools, skills, the skill tool, declared parameters) and the new names of
    ``renames``: the longer tokens a compound name inside them does not make a mention of it."""
    out = set(schema_fact(record["tools"], _tool_names))
    out.update(s["name"] for s in record.get("skills") or ())
    out.add(record["skill_tool"]["name"])
    if renames:
        out.update(renames.values())
    return frozenset(out)


def _tool_names(tools: list[dict]) -> frozenset[str]:
    """The names of ``tools`` and of their declared parameters: a fact of the tool list
    (:func:`hsa.schema_facts.schema_fact`)."""
    out = {t["name"] for t in tools}
    for t in tools:
        out.update(p[-1] for p in param_paths(t["parameters"]) if p[-1] != ARRAY)
    return frozenset(out)


def names_renamer(renames: dict[str, str], kind: str, keep: frozenset[str] = frozenset()) -> Callable[[str], str]:
    """The text function of a tool or skill rename (:mod:`hsa.mentions`): identifier-like names as whole tokens and
    compound names inside longer tokens too (but inside the ``keep`` names), plain words where a text refers to
    them. Names that are neither plain nor compound (``getItem``) take the token split of :func:`_token_renamer`."""
    renames = {k: v for k, v in renames.items() if k != v}
    if all(is_identifier_like(n) and not is_compound(n) for n in renames):
        return token_renamer(renames)
    return mention_renamer(renames, kind, inner=True, keep=keep)


def nested_names(record: Record, steps: Iterable[dict]) -> bool:
    """Whether a compound name that a tools or skills step renames is a part of a longer name of the record or of a
    step (``git_diff`` of ``git_diff_staged``): then a text rewrite depends on the harness (the longer name stays),
    not on the step alone."""
    typed = steps_of(steps)
    renamed = [n for st in typed if st.renames_names for n in st.to_json()["map"] if is_compound(n)]
    if not renamed:
        return False
    names = set(harness_names(record))
    for st in typed:
        if st.renames_names:
            names.update(st.to_json()["map"])
            names.update(st.to_json()["map"].values())
        elif isinstance(st, ParamsStep):
            names.update(k for pair in st.to_json().get("paths", ()) for path in pair for k in path if isinstance(k, str))
    # each name alone (a compound name is inside a longer one only as its substring): not one scan of them joined
    return any(inner_spans(m, n) for n in renamed for m in names if n in m and m != n)


def token_renamer(renames: dict[str, str]) -> Callable[[str], str]:
    """``lambda s: replace_tokens(s, renames)`` that first tests for each name as a substring (a whole token
    is one): most texts name nothing renamed, and the test is cheaper than a token split."""
    names = tuple(k for k, v in renames.items() if k != v)

    def fn(text: str) -> str:
        for n in names:
            if n in text:
                return replace_tokens(text, renames)
        return text

    return fn


def word_name_free(record: Record, name: str) -> bool:
    """Whether a tool may take the plain word ``name`` (``read``, ``bash``) although the record's texts use it as a
    word: no harness name or hook literal is ``name`` and no text refers to ``name`` as a tool (:mod:`hsa.mentions`),
    so a rename back finds the references it made and leaves the words alone."""
    if is_identifier_like(name) or name in harness_names(record) or name in hook_literals(record):
        return False
    return not any(referenced(text, name, "tool") for _, text in labelled_texts(record))


def renames_leaves(renames: dict[tuple, str]) -> dict[str, str]:
    """``{old leaf: new leaf}`` of a parameter rename table."""
    return {p[-1]: n for p, n in renames.items()}


class SchemaReads:
    """What a parameter rename reads of the other tools' schemas (their leaf names and string values for its
    mentions, :func:`param_mentions`; their JSON, to skip those that hold none of the renamed names,
    :func:`rename_param_mentions`), kept by the schema object (held) for a rename of several tools' parameters whose
    schemas are replaced, never edited (:func:`hsa.step_apply.rename_declared_params`): each tool's rename reads
    every other tool's schema, so a record of N tools with R renamed would read R x N schemas."""

    __slots__ = ("_held",)

    def __init__(self):
        self._held: dict[int, list] = {}  # id -> [the schema, its leaves, its string values, its JSON] or None

    def _entry(self, schema: Any) -> list:
        hit = self._held.get(id(schema))
        if hit is None or hit[0] is not schema:
            hit = self._held[id(schema)] = [schema, None, None, None]
        return hit

    def leaves(self, schema: Any) -> list[str]:
        entry = self._entry(schema)
        if entry[1] is None:
            entry[1] = [p[-1] for p in param_paths(schema)]  # the last key of every declared parameter path
        return entry[1]

    def strings(self, schema: Any) -> frozenset[str]:
        entry = self._entry(schema)
        if entry[2] is None:
            entry[2] = schema_fact(schema, _schema_strings_fact)
        return entry[2]

    def text(self, schema: Any) -> str:
        """``schema`` as JSON (:func:`hsa._json.dumps`; what it raises for a schema that is not JSON, each time)."""
        entry = self._entry(schema)
        if entry[3] is None:
            entry[3] = _json.dumps(schema)
        return entry[3]


def param_mentions(record: Record, idx: int, renames: dict[tuple, str],
                   also: dict[str, str] | None = None, reads: SchemaReads | None = None) -> dict:
    """The ``mentions`` of a rename of the parameters of ``record["tools"][idx]``: ``own``, the names that every
    declaration of the tool renames to one new name (renamed in its descriptions and results); ``all``, those of
    them that no other tool declares (but where ``also`` says the same transform renames them there to the same
    name too), that name no tool or skill, and that no schema holds as a string value (renamed in every text). A
    plain word that a schema holds as a string value (a quoted 'content' may be an enum value) is in neither.
    ``reads``: the schemas' leaves and values, kept across the renames of one transform."""
    tools = record["tools"]
    reads = SchemaReads() if reads is None else reads
    leaves = reads.leaves(tools[idx]["parameters"])
    news: dict[str, set[str]] = {}
    for p, n in renames.items():
        news.setdefault(p[-1], set()).add(n)
    own = {k: next(iter(v)) for k, v in news.items()
           if len(v) == 1 and leaves.count(k) == sum(1 for p in renames if p[-1] == k)}
    if not own:
        return {}
    values = frozenset().union(*(reads.strings(t["parameters"]) for t in tools))
    own = {k: v for k, v in own.items() if is_identifier_like(k) or k not in values}
    also = also or {}
    others = {leaf for i, t in enumerate(tools) if i != idx for leaf in reads.leaves(t["parameters"])}
    names = {t["name"] for t in tools} | {s["name"] for s in record.get("skills") or ()}
    everywhere = {k: v for k, v in own.items() if k not in names and (k not in others or also.get(k) == v)}
    return {k: v for k, v in (("own", own), ("all", everywhere)) if v}


def tools_schema_strings(tools: Iterable[dict]) -> frozenset[str]:
    """:func:`schema_strings` of the parameter schemas of ``tools``, together: each schema's a fact of its content
    (:func:`hsa.schema_facts.schema_fact`), worked out once, not walked again for every rename and every check."""
    out: frozenset[str] = frozenset()
    for t in tools:
        out |= schema_fact(t["parameters"], _schema_strings_fact)
    return out


def _schema_strings_fact(schema: Any) -> frozenset[str]:
    return frozenset(schema_strings(schema))


def schema_strings(schema: Any, out: set[str] | None = None) -> set[str]:
    """The string values a schema holds (``enum``, ``const``, ``default``, ``examples``), at any depth."""
    out = set() if out is None else out
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("enum", "examples") and isinstance(v, list):
                out.update(x for x in v if isinstance(x, str))
            elif k in ("const", "default") and isinstance(v, str):
                out.add(v)
            elif k != "required":
                schema_strings(v, out)
    elif isinstance(schema, list):
        for v in schema:
            schema_strings(v, out)
    return out


def rename_in_tool_texts(tool: dict, fn: Callable[[str], str], names: Iterable[str], shared_schemas: bool, *,
                         schemas: bool = True, skip: Callable[[Any], bool] | None = None) -> None:
    """``fn`` on the tool's description and the texts of its schema (a shared schema is rebuilt, never edited);
    ``schemas=False``: the caller knows the schema holds none of ``names``; ``skip``: their
    :func:`hsa.record_texts.schema_skipper`, where the caller has it."""
    if isinstance(tool.get("description"), str):
        tool["description"] = fn(tool["description"])
    if not schemas:
        return
    if skip is None:
        skip = schema_skipper(names)  # fn changes only texts holding an old name: none in the JSON, no walk
    if skip is not None and skip(tool["parameters"]):
        return
    if shared_schemas:
        tool["parameters"] = map_schema_descriptions(tool["parameters"], fn)
    else:
        map_schema_descriptions_in_place(tool["parameters"], fn)


def rename_param_mentions(record: Record, idx: int, all_fn, everywhere: dict[str, str],
                          reads: SchemaReads | None = None) -> None:
    """The mentions of a parameter rename of tool ``idx`` in the harness outside that tool: the other tools'
    descriptions, the skills and the prompt (``all_fn``, the renamer of ``everywhere``). The messages (the results
    of the tool's calls, every other message) follow the step's message carry (:class:`hsa.steps.ParamsStep`,
    :mod:`hsa.step_carry`); the tool's own texts, its ``own`` mentions. ``reads``: the other schemas' JSON, kept
    across the renames of one transform (each schema is tested alone, on its kept JSON)."""
    if all_fn is None:
        return
    others = [t for i, t in enumerate(record["tools"]) if i != idx]
    if reads is None:
        skip = schema_skipper(everywhere)  # one encoding of every other schema: most hold none of the names
        schemas = not (skip is not None and skip([t["parameters"] for t in others]))
    else:
        skip, schemas = schema_skipper(everywhere, reads.text), True
    for t in others:
        rename_in_tool_texts(t, all_fn, everywhere, True, schemas=schemas, skip=skip)
    for sk in record.get("skills") or ():
        for key in ("description", "content"):
            if isinstance(sk.get(key), str):
                sk[key] = all_fn(sk[key])
    prompt = record.get("prompt")
    if prompt and isinstance(prompt.get("sections"), list):
        map_prompt_texts(prompt, all_fn)


def legacy_param_renamer(tokens: dict[str, str], quoted: dict[str, str]) -> Callable[[str], str]:
    """Rename parameters in a description: ``tokens`` as whole tokens, ``quoted`` only inside backticks."""
    pattern = _quoted_pattern(tuple(sorted(quoted, key=len, reverse=True))) if quoted else None

    def fn(text: str) -> str:
        if tokens:
            text = replace_tokens(text, tokens)
        if pattern is not None and "`" in text:
            text = pattern.sub(lambda m: f"`{quoted[m.group(1)]}`", text)
        return text

    return fn


@lru_cache(maxsize=1024)
def _quoted_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("`(" + "|".join(map(re.escape, names)) + ")`")


def structured(text: str) -> bool:
    """Whether ``text`` is structured data (a JSON object or array): a tool result whose keys and values stay as
    recorded when a parameter is renamed (docs/design.md, "Tool results")."""
    t = text.strip()
    if not t or t[0] not in "{[" or t[-1] not in "}]":
        return False
    try:
        import json

        json.loads(t)
    except ValueError:
        return False
    return True


def prose_only(fn: Callable[[str], str] | None) -> Callable[[str], str] | None:
    """``fn`` for the texts of tool results: structured data (:func:`structured`) is left as it is."""
    if fn is None:
        return None
    return lambda text: text if structured(text) else fn(text)


def step_mentions(step: dict) -> tuple[dict[str, str], dict[str, str]]:
    """``(own, everywhere)`` of a params step: the parameter names its mentions follow in the tool's own texts and
    results, and in every text (:func:`rename_params`); none for a step made before steps said so."""
    m = step.get("mentions") or {}
    return dict(m.get("own") or {}), dict(m.get("all") or {})


def hook_literals(record: Record) -> set[str]:
    """Every string value that occurs as a literal in the record's hook source."""
    out: set[str] = set()
    for h in record.get("hooks") or ():
        out |= _literals(h.get("source", ""))
    return out


@lru_cache(maxsize=4096)
def _literals(source: str) -> frozenset[str]:
    """The values of the plain string literals of ``source`` (and their ``|``-separated parts), cached."""
    return plain_literals(source)


# --------------------------------------------------------------------------- invariant 6: references left behind


def stale_references(variant: Record, steps: list[dict], *, key: str | None = None) -> list[tuple[str, str]]:
    """``(reason, detail)`` for each text of ``variant`` that still refers to a name that ``steps`` (the variant's
    own mapping steps) renamed away: a plain-word tool or skill name in a reference form, a compound tool or skill
    name inside a longer token that is no name of the harness (``<skill-creator-path>``), and a parameter name in a
    reference form where it can only mean the renamed parameter: in its tool's descriptions and results when the
    tool no longer declares it, in any text when no tool does (and no schema holds it as a value). Identifier-like
    tool and skill names as whole tokens are :meth:`_StaleNames.left_behind`'s too (:mod:`hsa.invariants`' check).

    The check is in two halves: what to look for and the harness's texts (the tools', skills' and prompt's) are
    read by :class:`_StaleNames`, the same for every record of a slot plan with this variant harness and these
    steps (:func:`stale_names`); the messages are read per record. The results are in the order of one walk of the
    texts (:func:`hsa.record_texts.labelled_texts`: the messages first)."""
    check = stale_names(variant, steps, key=key)
    return check.merge(check.scan(list(labelled_message_texts(variant)), variant))


def variant_key(variant: Record, steps: list[dict], source: Record | None = None) -> str | None:
    """The key under which a slot plan keeps the checks of a variant that read its harness and its own ``steps``:
    the digest of those steps but ``restore`` (which renames nothing), its tools, skills, skill tool, prompt and
    hooks. None where no slot plan keeps the work of the variant being checked
    (:attr:`hsa.context.WorkerContext.keeping`), or the record is not JSON.

    The plan remembers the digest of the last parts it was asked about by their identity (:meth:`SlotPlan.same_as`):
    the parts a plan's leaf runs made are shared by the variants that took them, and a part that is ``source``'s own
    (the variant's source record) under a key the harness digest covers (:data:`hsa.plans.DIGEST_KEYS`) is the same
    in every record of the plan, so such a variant's key is found without a digest."""
    from hsa import cache
    from hsa.context import current
    from hsa.plans import held

    plan = current().keeping
    if plan is None:
        return None
    own = [s for s in steps if not isinstance(Step.from_json(s), RestoreStep)]
    ident = ("variant key", *own, *held(variant, ("tools", "skills", "skill_tool", "prompt", "hooks"), source))
    found = plan.same_as(ident)
    if found is not None:
        return found
    parts = [variant["tools"], variant.get("skills"), variant["skill_tool"], variant.get("prompt"), variant.get("hooks")]
    try:
        key = cache.digest(own, *parts)
    except (TypeError, ValueError):  # not JSON: no key
        return None
    return plan.remember(ident, key)


def stale_names(variant: Record, steps: list[dict], *, key: str | None = None) -> _StaleNames:
    """:class:`_StaleNames` of ``variant`` and ``steps``, kept in the slot plan of the variant being checked
    (:attr:`hsa.context.WorkerContext.keeping`) by :func:`variant_key` (``key``: the caller's, already worked out).
    Without a plan or a key, made afresh."""
    from hsa.context import current

    plan, key = current().keeping, key or variant_key(variant, steps)
    if plan is None or key is None:
        return _StaleNames(variant, steps)
    return plan.kept(("stale names", key), lambda: _StaleNames(variant, steps))


class _StaleNames:
    """The harness half of :func:`stale_references`: the names ``steps`` renamed away that a text may still refer
    to, by kind, and the results on the harness's own texts (:func:`labelled_harness_texts`); the identifier-like
    ones looked for as whole tokens (:attr:`tokens`), and their results there and in the hook sources. :meth:`scan`
    gives the same results on other texts (a record's messages), :meth:`merge` puts the two halves in the order of
    one walk, and :meth:`left_behind` is all of it for one record. Read only once made: a slot plan shares it."""

    __slots__ = ("kinds", "keep", "everywhere", "own", "harness", "tokens", "tokens_harness")

    def __init__(self, variant: Record, steps: list[dict]):
        mapping = Mapping(steps)
        current = {t["name"] for t in variant["tools"]} | {s["name"] for s in variant.get("skills") or ()}
        renamed = {**mapping.tool_names(), **mapping.skill_names()}
        #: the identifier-like tool and skill names renamed away, looked for as whole tokens
        self.tokens = [old for old in renamed if is_identifier_like(old) and old not in current]
        self.keep = harness_names(variant)
        typed = mapping.typed()
        self.kinds: list[tuple[str, list[str], list[str]]] = []
        for kind in ("tool", "skill"):
            old = {n for st in typed if st.renames_kind == kind for n in st.to_json()["map"]} - current
            plain = [n for n in old if not is_identifier_like(n)]
            compound = [n for n in old if is_compound(n)]
            if plain or compound:
                self.kinds.append((kind, plain, compound))
        self.everywhere: set[str] = set()
        #: (tool, the old names its own texts must not hold, those texts in the harness)
        self.own: list[tuple[str, set[str], list[str]]] = []
        self._stale_params(variant, mapping)
        texts = list(labelled_harness_texts(variant))
        self.harness = self.scan(texts, None)
        self.tokens_harness = self.tokens_left([text for _, text in texts] + [
            h.get("source", "") for h in variant.get("hooks") or ()]) if self.tokens else []

    def _stale_params(self, variant: Record, mapping: Mapping) -> None:
        steps = mapping.steps
        renamed: dict[str, set[str]] = {}  # variant tool name -> old leaves its steps renamed
        # the mentions a rename step followed are those of its tables (rename_params: "mentions"; none when absent):
        # a leaf outside them was left on purpose (declared twice, a schema value, another tool's name), so it is
        # checked where the step's tables say; a swap (kind "permute") follows its tool's own descriptions
        follow_own: dict[str, set[str]] = {}
        follow_all: set[str] = set()
        for k, (st, typed) in enumerate(zip(steps, mapping.typed())):
            if isinstance(typed, RegroupStep):
                # a later flatten / nest moves a parameter and leaves its mentions as they are (they name the
                # parameter it was), and so the object it dissolves or makes (its container): a leaf renamed earlier
                # and declared again by then (a swap) is no longer judged by this check
                tool = Mapping(steps[k + 1:]).tool_to_variant(st["tool"])
                moved = {a[-1] for a, _ in st["paths"] if a and a[-1] != ARRAY}
                container = (st.get("container") or {}).get("path")
                if isinstance(container, list) and container and container[-1] != ARRAY:
                    moved.add(container[-1])
                for table in (renamed, follow_own):
                    if tool in table:
                        table[tool] -= moved
                follow_all -= moved
                continue
            if not isinstance(typed, ParamsStep) or typed.kind not in (None, "permute"):  # a rename or a swap only
                continue
            tool = Mapping(steps[k + 1:]).tool_to_variant(st["tool"])
            leaves = {a[-1] for a, b in st["paths"] if a[-1] != b[-1] and a[-1] != ARRAY}
            renamed.setdefault(tool, set()).update(leaves)
            if "mentions" not in st and st.get("kind") == "permute":  # a swap without tables: its tool's descriptions
                follow_own.setdefault(tool, set()).update(leaves)
            else:
                own, every = step_mentions(st)
                follow_own.setdefault(tool, set()).update(leaf for leaf in leaves if leaf in own)
                follow_all.update(leaf for leaf in leaves if leaf in every)
        if not renamed:
            return
        tools = {t["name"]: t for t in variant["tools"]}
        declared = {name: {p[-1] for p in param_paths(t["parameters"])} for name, t in tools.items()}
        values = tools_schema_strings(variant["tools"])
        names = set(tools) | {s["name"] for s in variant.get("skills") or ()}
        self.everywhere = {leaf for leaves in renamed.values() for leaf in leaves
                           if not any(leaf in d for d in declared.values()) and leaf not in names
                           and (is_identifier_like(leaf) or leaf not in values) and leaf in follow_all}
        for tool, leaves in renamed.items():
            t = tools.get(tool)
            if t is None:
                continue
            own_values = schema_fact(t["parameters"], _schema_strings_fact)
            gone = {leaf for leaf in leaves - self.everywhere if leaf not in declared[tool]
                    and (is_identifier_like(leaf) or leaf not in own_values) and leaf in follow_own.get(tool, ())}
            if not gone:
                continue
            own_texts = [t["description"]] if isinstance(t.get("description"), str) else []
            own_texts += _own_schema_texts(t["parameters"])
            self.own.append((tool, gone, own_texts))

    def scan(self, texts: list[tuple[str, str]], record: Record | None) -> tuple[list, list, list]:
        """The results on ``texts`` (``(label, text)``): one list for each kind of :attr:`kinds`, one for the
        parameter names no tool declares, and one for each tool of :attr:`own`, on its own texts of ``texts``
        (``record``: the results of its calls in ``record``'s messages; None: the tool's texts in the harness)."""
        by_kind = []
        for kind, plain, compound in self.kinds:
            out = []
            for where, text in texts:
                hits = stale_mentions(text, plain, kind) if plain else []
                hits += [n for n in compound if n in text and inner_spans(text, n, self.keep)]
                if hits:
                    out.append(("old name left behind", f"{sorted(set(hits))} still referred to in {where}: "
                                                        f"{_snippet(text, hits[0])!r}"))
            by_kind.append(out)
        everywhere = []
        if self.everywhere:
            for where, text in texts:
                if where == "a tool message" and structured(text):
                    continue  # structured result data stays as recorded
                hits = stale_mentions(text, self.everywhere, "param")
                if hits:
                    everywhere.append(("old parameter name left behind",
                                       f"{sorted(hits)} still referred to in {where}: {_snippet(text, hits[0])!r}"))
        own = []
        for tool, gone, own_texts in self.own:
            out = []
            for text in (own_texts if record is None else _result_texts(record, tool)):
                hits = stale_mentions(text, gone, "param_own")
                if hits:
                    out.append(("old parameter name left behind", f"{sorted(hits)} of {tool!r} still referred to "
                                                                  f"in its own texts: {_snippet(text, hits[0])!r}"))
            own.append(out)
        return by_kind, everywhere, own

    def left_behind(self, variant: Record) -> list[tuple[str, str]]:
        """Every name of ``variant`` (whose harness and steps made this) left behind: :func:`stale_references`,
        then the whole-token names (:attr:`tokens`) in its texts (:func:`hsa.record_texts.text_fields`' order:
        the messages', then the harness's). Its messages are walked once."""
        texts = list(labelled_message_texts(variant))
        return self.merge(self.scan(texts, variant)) + self.tokens_left([text for _, text in texts]) \
            + self.tokens_harness

    def tokens_left(self, texts: Iterable[str]) -> list[tuple[str, str]]:
        """``(reason, detail)`` for each of ``texts`` in which a name of :attr:`tokens` is left as a whole token."""
        stale = self.tokens
        if not stale:
            return []
        out = []
        # A plain name (a token or dotted chain) is found in a text only if it is one of the text's
        # tokens: a cached set lookup rules most texts out before find_tokens splits them.
        plain = {n for n in stale if is_plain_token(n)}
        some_not_plain = len(plain) < len(stale)
        for text in texts:  # a dotted name ("shop.get_x") is one token: it holds no "get_x"
            if not some_not_plain and plain.isdisjoint(text_tokens(text)):
                continue
            hits = find_tokens(text, stale)
            if hits:
                snippet = text[:80].replace("\n", " ")
                out.append(("old name left behind", f"{sorted(set(hits))} still occur in text {snippet!r}"))
        return out

    def merge(self, messages: tuple[list, list, list]) -> list[tuple[str, str]]:
        """The results of the messages (:meth:`scan`) and of the harness in the order of one walk of the texts:
        for each kind, the messages' then the harness's; a tool's own texts before its results."""
        out: list[tuple[str, str]] = []
        for m, h in zip(messages[0], self.harness[0]):
            out += m + h
        out += messages[1] + self.harness[1]
        for m, h in zip(messages[2], self.harness[2]):
            out += h + m
        return out


def _snippet(text: str, name: str, width: int = 40) -> str:
    i = max(0, text.find(name))
    return text[max(0, i - width):i + len(name) + width].replace("\n", " ")


def _own_schema_texts(schema: Any) -> list[str]:
    out: list[str] = []
    map_schema_descriptions_in_place(schema, lambda text: out.append(text) or text)
    return out


def _result_texts(record: Record, tool: str) -> list[str]:
    """The texts of the results of ``tool``'s calls (a tool message belongs to the earlier call of its id, else to
    its ``name``)."""
    names_by_id: dict[str, str] = {}
    out = []
    for m in record["messages"]:
        for c in m.get("tool_calls") or ():
            if isinstance(c.get("id"), str):
                names_by_id[c["id"]] = c["function"]["name"]
        if m.get("role") != "tool":
            continue
        cid = m.get("tool_call_id")
        owner = names_by_id[cid] if isinstance(cid, str) and cid in names_by_id else m.get("name")
        if owner == tool:
            out.extend(content_parts(m.get("content")))
    return [t for t in out if not structured(t)]
