"""Consistent renames across a whole record (docs/design.md invariant 6).

Every renaming transform goes through these functions, so a renamed tool, parameter
or skill is renamed everywhere it occurs — schemas, calls, tool results, skill-tool
arguments, free text (whole tokens only), hook source — and nowhere else. Each
function returns a new record and appends the matching step to ``record["mapping"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hsa import _json, _patch
from hsa import cache as _cache
from hsa.context import current as _current
from hsa.hooks_model import content_text, map_content
from hsa.mentions import mention_renamer, prose_uses
from hsa.names import find_tokens, is_identifier_like, replace_tokens
from hsa.rename_texts import (LEGACY_MENTIONS, harness_names, hook_literals, legacy_param_renamer, names_renamer,
                              nested_names, param_mentions, rename_in_tool_texts, rename_param_mentions, SchemaReads,
                              renames_leaves, step_mentions, word_name_free)
from hsa.record_texts import (copy_for_texts, map_schema_descriptions, map_texts, map_texts_skipping, param_paths,
                              record_tokens, record_words, schema_skipper, text_fields, texts_hold)
from hsa.records import Record, clone
from hsa.step_carry import carry_messages as _carry_steps
from hsa.step_carry import compile_carry
from hsa.steps import ARRAY, OpaqueStep, ParamsStep, SkillsStep, Step, ToolsStep, ValuesStep, rename_pairs, steps_of
from hsa.step_schemas import map_schema_values, permute_schema, regroup_schema, require_schema
from hsa.written import UndoKey, Written, by_plan
from hsa.written import as_written as _as_written

__all__ = [
    "rename_tools",
    "rename_params",
    "param_mentions",
    "harness_names",
    "names_renamer",
    "nested_names",
    "LEGACY_MENTIONS",
    "rename_skills",
    "map_texts",
    "record_tokens",
    "record_words",
    "text_fields",
    "param_paths",
    "apply_step",
    "canonicalize",
    "undo",
    "with_restore",
    "content_of",
    "CONTENT_KEYS",
    "STEP_APPLIERS",
    "hook_literals",
    "word_uses",
    "word_name_free",
    "owned_copy",
    "carries",
    "carry_messages",
    "STEP_PARTS",
    "step_parts",
]

#: Roles of a hook literal that make it a tool name (compared with ``tool_name``, a matcher, a key of a dict
#: looked up by tool name, a predicate over tool names): hsa.codemods.analysis.
_TOOL_ROLES = frozenset({"tool", "tool_re", "tool_pred", "split"})


def word_uses(record: Record, names: Iterable[str]) -> dict[str, str]:
    """The plain-word names among ``names`` (Bash, Read, think) that a hook of ``record`` uses where it may mean the
    word, not the tool: name -> where (``"hook 'guard'"``). Renaming those is ambiguous, since a hook's literals are
    rewritten whole (docs/design.md, "What names a tool").

    Prose never makes a name ambiguous: each mention there is a reference or a word (:mod:`hsa.mentions`), and a
    rename follows the references only. In hook source the codemod analysis decides: a literal compared with the
    tool name, a matcher or predicate over tool names, a dict key looked up by tool name is a reference; a message
    or a comment is prose, ambiguous when it uses the word; any other literal holding the name (data) is ambiguous.
    Identifier-like names are never ambiguous.
    """
    plain = sorted({n for n in names if not is_identifier_like(n)})
    out: dict[str, str] = {}
    if not plain:
        return out
    for h in record.get("hooks") or ():
        source = h.get("source", "")
        left = [n for n in plain if n not in out]
        hits = set(find_tokens(source, left)) if left else set()
        if hits:
            for n in _hook_word_uses(h, source, hits):
                out[n] = f"hook {h.get('name', '?')!r}"
    return out


def _hook_word_uses(hook: dict, source: str, names: set[str]) -> set[str]:
    from hsa.codemods.analysis import analyze
    from hsa.hooks_model import entry_of

    an = analyze(source, entry_of(hook))
    if not an.ok:  # no analysis: the source is text
        return {n for n in names if prose_uses(source, n)[1]}
    out: set[str] = set()
    for site in an.sites:
        hits = [n for n in names if n not in out and n in site.value and find_tokens(site.value, [n])]
        if not hits:
            continue
        roles = site.role_names()
        for n in hits:
            if roles & _TOOL_ROLES and (site.value == n or roles & {"tool_re", "tool_pred", "split"}):
                continue
            if site.kind == "comment" or roles & {"message", "in_text"} or site.value != n:
                if prose_uses(site.value, n)[1]:
                    out.add(n)
                continue
            out.add(n)  # the bare name as data (not compared with a tool name): ambiguous
    return out


# --------------------------------------------------------------------------- schemas


def _rename_in_schema(schema: dict, path: tuple, new_key: str) -> dict:
    """Rename the last key of ``path`` (a declared property) to ``new_key``, keeping property order."""
    schema = dict(schema)
    head = path[0]
    if len(path) == 1:
        props = schema["properties"]
        schema["properties"] = {(new_key if k == head else k): v for k, v in props.items()}
        if isinstance(schema.get("required"), list):
            schema["required"] = [new_key if r == head else r for r in schema["required"]]
        return schema
    if head == ARRAY:
        schema["items"] = _rename_in_schema(schema["items"], path[1:], new_key)
    else:
        props = dict(schema["properties"])
        props[head] = _rename_in_schema(props[head], path[1:], new_key)
        schema["properties"] = props
    return schema


# --------------------------------------------------------------------------- hook source


def _hook_harness(record: Record):
    """What a hook sync needs to know of the harness, taken before a step changes it (None without hooks): a
    :class:`hsa.codemods.sync.HarnessBefore`, which works the schemas' shapes out only if a hook needs them."""
    if not record.get("hooks"):
        return None
    from hsa.codemods.sync import HarnessBefore

    return HarnessBefore(record)


def _sync_hooks(record: Record, step: dict, before) -> None:
    """Make hooks, and the events they recorded, follow ``step`` (``before``: :func:`_hook_harness` of the input)."""
    if before is not None:  # role-aware sync; refusals become notes (hsa.codemods.sync)
        from hsa.codemods.sync import sync_record_hooks

        sync_record_hooks(record, step, before, payloads=False)
        return
    if record.get("hook_events"):  # events without hook source follow as in sync_record_hooks
        from hsa.codemods.sync import sync_record_events

        sync_record_events(record, step, payloads=False)


def _unchanged(text: str) -> str:
    return text


def _injected_decisions(record: Record) -> list[int]:
    """The indexes of the hook events whose decision message is the text of the message they injected (at their
    ``message_index``): what invariant 6 holds them to (:func:`_decisions_follow`). The appliers whose message carry
    rewrites texts by the mention rules (a parameter's rename or swap, a value step with ``texts``) take them before
    the carry and make the decisions follow after it; the tool and skill renames keep an injected message on the
    hook's own rule instead (:func:`_map_injected`), which their event sync applies to the decision too."""
    msgs = record["messages"]
    out = []
    for k, ev in enumerate(record.get("hook_events") or ()):
        d, i = (ev.get("decision"), ev.get("message_index")) if isinstance(ev, dict) else (None, None)
        if isinstance(d, dict) and isinstance(d.get("message"), str) and isinstance(i, int) \
                and 0 <= i < len(msgs) and d["message"] == content_text(msgs[i].get("content")):
            out.append(k)
    return out


def _decisions_follow(record: Record, injected: list[int]) -> None:
    """After a step rewrote the messages' texts: each event of ``injected`` (:func:`_injected_decisions`, taken
    before) gets the text its injected message has now as its decision message. The event list is replaced, and an
    event that changes with it (a decision dict is shared with the input, never edited)."""
    events = list(record["hook_events"])
    for k in injected:
        ev = events[k]
        text = content_text(record["messages"][ev["message_index"]].get("content"))
        if isinstance(text, str) and text != ev["decision"]["message"]:
            events[k] = {**ev, "decision": {**ev["decision"], "message": text}}
    record["hook_events"] = events


def _map_hook_payloads(record: Record, step: dict, text_fn: Callable[[str], str] | None = None) -> None:
    """Carry recorded hook payloads through ``step`` (tool_name / tool_input, skill names, names in text).

    ``text_fn``: the text function the step applied to the messages; a payload's ``reply`` (the text of the message
    a hook judged) follows it, so that a plain-word name left as a word in the message is left in the reply too."""
    from hsa.hooks_model import map_payload

    for ev in record.get("hook_events") or ():
        if isinstance(ev.get("payload"), dict):
            before = ev["payload"]
            ev["payload"] = map_payload(before, step)
            if text_fn is not None and isinstance(before.get("reply"), str):
                ev["payload"] = {**ev["payload"], "reply": text_fn(before["reply"])}


# --------------------------------------------------------------------------- renames


def _rewrite_calls(record: Record, step: dict) -> None:
    """The record's tool calls carried through ``step`` (its message carry, calls only: :mod:`hsa.step_carry`)."""
    _carry_steps(record["messages"], (step,), calls_only=True)


def rename_tools(record: Record, renames: dict[str, str], *, copy: bool = True) -> Record:
    """Rename tools everywhere (schemas, calls, tool results, skill tool, texts, hooks) and record the step.
    ``copy=False`` rewrites ``record`` in place (for a caller that already owns a copy)."""
    renames = {k: v for k, v in renames.items() if k != v}
    if not renames:
        return clone(record) if copy else record
    skip = _skip_all_or(schema_skipper(renames), record)  # a schema that names no renamed tool is shared, not copied
    before = _hook_harness(record)
    if copy:
        out, shared = owned_copy(record, lambda t: skip is not None and skip(t["parameters"]))
        skip_texts = lambda schema: id(schema) in shared  # noqa: E731
    else:  # the skip test holds on any state of a schema: no renamed name in its JSON, no text it changes
        out, skip_texts = record, skip
    step = {"op": "tools", "map": dict(renames)}
    for t in out["tools"]:
        t["name"] = renames.get(t["name"], t["name"])
    keep = harness_names(record, renames)
    injected = _hook_injected(out)
    _carry_steps(out["messages"], (step,), keep=keep)  # the step's message carry: calls, tool-result names, texts
    st = out["skill_tool"]
    st["name"] = renames.get(st["name"], st["name"])
    text_fn = names_renamer(renames, "tool", keep)
    map_texts_skipping(out, text_fn, skip_texts, messages=False)
    _map_injected(out, injected, renames)
    _sync_hooks(out, step, before)
    _map_hook_payloads(out, step, text_fn)
    out["mapping"].append(step)
    return out


def _hook_injected(record: Record) -> dict[int, Any]:
    """The contents of the messages that hooks injected (an event's ``message_index`` whose decision has a
    message), by index, before a rename changes them."""
    out: dict[int, Any] = {}
    for ev in record.get("hook_events") or ():
        i, decision = ev.get("message_index"), ev.get("decision")
        if isinstance(i, int) and 0 <= i < len(record["messages"]) and isinstance(decision, dict) \
                and isinstance(decision.get("message"), str) and "content" in record["messages"][i]:
            out[i] = record["messages"][i]["content"]
    return out


def _map_injected(record: Record, injected: dict[int, Any], renames: dict[str, str]) -> None:
    """A message a hook injected follows the rename as the hook's own text does (every token, as
    :mod:`hsa.codemods.sync` rewrites the hook and its recorded decision), not the per-mention rule of the other
    texts: the recorded decision, the injected message and what the rewritten hook returns stay one text."""
    table = {k: v for k, v in renames.items() if k != v}
    for i, content in injected.items():
        record["messages"][i]["content"] = map_content(content, lambda text: replace_tokens(text, table))


def _skip_all_or(skip: Callable[[Any], bool] | None, record: Record) -> Callable[[Any], bool] | None:
    """``skip`` (a :func:`hsa.record_texts.schema_skipper` test), or a test that skips every schema when the JSON of
    all of the record's schemas together holds none of the names (one encoding instead of one per schema)."""
    if skip is not None and skip([t["parameters"] for t in record["tools"]]):
        return lambda schema: True
    return skip


def owned_copy(record: Record, share: Callable[[dict], bool]) -> tuple[Record, set[int]]:
    """A copy of ``record`` that a rename (:func:`rename_tools`, :func:`rename_skills`, :func:`rename_params` with
    ``copy=False``) may rewrite in place, sharing with ``record`` what none of them changes in place. Its own: the
    tool list and every tool dict, the parameter schemas of the tools ``share`` does not pick (deep), every message
    down to each call's ``function``, the skill tool, every skill, the prompt and its sections, every hook, every
    hook event, the notes and the mapping. Shared: the schemas ``share`` picks (a rename that provably leaves them
    as they are), call arguments (replaced, never edited), text parts, payloads and whatever else the renames
    replace rather than edit. ``record`` itself is never modified (transforms never modify their input). Returns
    the copy and the ids of the shared schemas."""
    shared: set[int] = set()
    tools = []
    for t in record["tools"]:
        tool = dict(t)
        if share(t):
            shared.add(id(t["parameters"]))
        else:
            tool["parameters"] = _json.copy(t["parameters"])
        tools.append(tool)
    out = dict(record)
    out["tools"] = tools
    out["messages"] = [{**m, "tool_calls": [{**c, "function": dict(c["function"])} for c in m["tool_calls"]]}
                       if m.get("tool_calls") else dict(m) for m in record["messages"]]
    out["skill_tool"] = dict(record["skill_tool"])
    if record.get("skills"):
        out["skills"] = [dict(sk) for sk in record["skills"]]
    prompt = record.get("prompt")
    if isinstance(prompt, dict):
        out["prompt"] = dict(prompt)
        if isinstance(prompt.get("sections"), list):
            out["prompt"]["sections"] = [dict(sec) if isinstance(sec, dict) else sec for sec in prompt["sections"]]
    if record.get("hooks"):
        out["hooks"] = [dict(h) if isinstance(h, dict) else h for h in record["hooks"]]
    if record.get("hook_events"):
        out["hook_events"] = [dict(ev) if isinstance(ev, dict) else ev for ev in record["hook_events"]]
    out["notes"] = list(record["notes"])
    out["mapping"] = list(record["mapping"])
    return out, shared


def rename_params(record: Record, tool: str, renames: dict[tuple, str], *, copy: bool = True,
                  shared_schemas: bool = False, mentions: dict | str | None = None,
                  also: dict[str, str] | None = None, messages: bool = True,
                  reads: SchemaReads | None = None) -> Record:
    """Rename declared parameters of ``tool``: ``{path: new_last_key}`` at any depth.

    The schema (properties, required), every call of the tool, hook literals and hook payloads follow; the skill
    tool's argument name follows when it is renamed. Mentions of the names (:mod:`hsa.mentions`: identifier-like
    names as whole tokens, plain words in a reference form, "the 'tail' parameter", ``head=10``) follow where they
    can only mean this tool's parameter (:func:`param_mentions`): a name the tool declares once, in its own
    descriptions and in the results of its calls (its implementation changed with it: docs/design.md, "Tool
    results"); a name no other tool declares (``also``: or declares and the same transform renames alike) and no
    schema holds as a value, in every text of the record. The step records both tables (``mentions``), so that
    replaying or undoing it does the same; ``mentions`` given is a step's (``LEGACY_MENTIONS``: a step without
    them).
    ``copy=False`` rewrites ``record`` in place (for a caller that already owns a copy); with ``shared_schemas``
    the caller owns it as :func:`owned_copy` makes it with every schema shared: the tool's schema is then
    replaced, never edited. ``messages=False`` leaves the messages as they are, for a caller that renames the
    parameters of several tools and then carries the messages through all their steps at once
    (:func:`hsa.step_carry.carry_messages`, in step order: the same messages, one pass): nothing else of the rename
    reads the messages, but on a record with hook events (their injected decisions and payload replies follow the
    messages), where it raises ``ValueError``. ``reads``: what the mentions read of the schemas, kept across the
    renames of one transform (:class:`hsa.rename_texts.SchemaReads`; the schemas replaced, never edited).
    """
    if not messages and record.get("hook_events"):
        raise ValueError("rename_params(messages=False) on a record with hook events: they follow the messages")
    renames = {tuple(p): n for p, n in renames.items() if p[-1] != n}
    if not renames:
        return clone(record) if copy else record
    if copy:
        out, _ = owned_copy(record, lambda t: True)
        shared_schemas = True
    else:
        out = record
    hooks_before = _hook_harness(out)
    idx = next(i for i, t in enumerate(out["tools"]) if t["name"] == tool)
    schema = out["tools"][idx]["parameters"]
    if mentions is None:
        mentions = param_mentions(out, idx, renames, also, reads)
    legacy = mentions == LEGACY_MENTIONS
    own, everywhere = ({}, {}) if legacy else step_mentions({"mentions": mentions})
    if legacy:
        declared_leaves = [p[-1] for p in param_paths(schema)]
        unique = {p[-1]: n for p, n in renames.items()
                  if sum(1 for q in renames if q[-1] == p[-1]) == declared_leaves.count(p[-1])}
        own_fn = legacy_param_renamer({k: v for k, v in unique.items() if is_identifier_like(k)},
                                     {k: v for k, v in unique.items() if not is_identifier_like(k)}) if unique else None
    else:
        own_fn = mention_renamer(own, "param_own") if own else None
    # rename deepest first so that outer paths stay valid while inner keys change
    for path in sorted(renames, key=len, reverse=True):
        schema = _rename_in_schema(schema, path, renames[path])
    out["tools"][idx]["parameters"] = schema
    step = {"op": "params", "tool": tool, "paths": rename_pairs(renames)}
    if not legacy and (own or everywhere):
        step["mentions"] = {k: v for k, v in (("own", own), ("all", everywhere)) if v}
    injected = _injected_decisions(out)
    if messages:
        _carry_steps(out["messages"], (step,))  # the step's message carry: calls, mentions in messages
    if own_fn is not None:  # the schema's dicts are this record's own, or (shared_schemas) it is rebuilt
        rename_in_tool_texts(out["tools"][idx], own_fn, own or renames_leaves(renames), shared_schemas)
    reply_fn = None  # a payload's reply is the text of the message a hook judged: it follows as that message did
    if not legacy:
        all_fn = mention_renamer(everywhere, "param") if everywhere else None
        rename_param_mentions(out, idx, all_fn, everywhere, reads)
        reply_fn = all_fn or _unchanged
    if out["skill_tool"]["name"] == tool:
        arg = (out["skill_tool"]["argument"],)
        if arg in renames:
            out["skill_tool"]["argument"] = renames[arg]
    _sync_hooks(out, step, hooks_before)
    _map_hook_payloads(out, step, reply_fn)
    if injected:  # the event sync maps a decision by the hook's rule; the message took the mentions too
        _decisions_follow(out, injected)
    out["mapping"].append(step)
    return out


def _rename_skill_values(record: Record, renames: dict[str, str]) -> None:
    """Skill names listed as values in the skill tool's argument schema (enum, const, default, examples)."""
    st = record["skill_tool"]
    for t in record["tools"]:
        sub = (t["parameters"].get("properties") or {}).get(st["argument"]) if t["name"] == st["name"] else None
        if not isinstance(sub, dict):
            continue
        for key in ("enum", "examples"):
            if isinstance(sub.get(key), list):
                sub[key] = [renames.get(v, v) if isinstance(v, str) else v for v in sub[key]]
        for key in ("const", "default"):
            if isinstance(sub.get(key), str):
                sub[key] = renames.get(sub[key], sub[key])


def rename_skills(record: Record, renames: dict[str, str], *, copy: bool = True) -> Record:
    """Rename skills everywhere (definitions, skill-tool arguments and schema values, texts, hooks) and record the step.
    ``copy=False`` rewrites ``record`` in place (for a caller that already owns a copy)."""
    renames = {k: v for k, v in renames.items() if k != v}
    if not renames:
        return clone(record) if copy else record
    skip = _skip_all_or(schema_skipper(renames), record)  # shared: schemas naming no renamed skill, but the skill tool's
    st_name = record["skill_tool"]["name"]
    before = _hook_harness(record)
    if copy:
        out, shared = owned_copy(record, lambda t: skip is not None and t["name"] != st_name and skip(t["parameters"]))
        skip_texts = lambda schema: id(schema) in shared  # noqa: E731
    else:  # the skip test holds on any state of a schema (the skill tool's after its values are renamed too)
        out, skip_texts = record, skip
    st = out["skill_tool"]
    step = {"op": "skills", "map": dict(renames), "tool": st["name"], "argument": st["argument"]}
    for s in out.get("skills") or ():
        s["name"] = renames.get(s["name"], s["name"])
    keep = harness_names(record, renames)
    injected = _hook_injected(out)
    _carry_steps(out["messages"], (step,), keep=keep)  # the step's message carry: skill-tool calls, texts
    _rename_skill_values(out, renames)
    text_fn = names_renamer(renames, "skill", keep)
    map_texts_skipping(out, text_fn, skip_texts, messages=False)
    _map_injected(out, injected, renames)
    _sync_hooks(out, step, before)
    _map_hook_payloads(out, step, text_fn)
    out["mapping"].append(step)
    return out


# --------------------------------------------------------------------------- structural and value steps


def _tool_index(record: Record, name: str, what: str) -> int:
    for i, t in enumerate(record["tools"]):
        if t["name"] == name:
            return i
    raise ValueError(f"{what}: tool {name!r} is not in the record (tools: {[t['name'] for t in record['tools']]})")


def _clone_for_step(record: Record, i: int) -> Record:
    """A copy of ``record`` that :func:`_finish_step` may edit after the tool at index ``i`` changes: the tool list,
    the tool itself, every message with tool calls down to each call's ``function`` (calls are reassigned there),
    the hook events (payloads are reassigned) and the mapping are the copy's own; everything else (other
    tools, texts, skills, hooks) is shared with ``record``, which no transform modifies."""
    out = dict(record)
    out["tools"] = list(record["tools"])
    out["tools"][i] = _json.copy(record["tools"][i])
    out["messages"] = [m if not m.get("tool_calls") else
                       {**m, "tool_calls": [{**c, "function": dict(c["function"])} for c in m["tool_calls"]]}
                       for m in record["messages"]]
    if record.get("hook_events"):
        out["hook_events"] = [dict(ev) if isinstance(ev, dict) else ev for ev in record["hook_events"]]
    out["mapping"] = list(record["mapping"])
    return out


def _finish_step(out: Record, step: dict, *, calls_only: bool = True) -> Record:
    """The step's message carry on ``out`` (calls only, unless ``calls_only`` is false: the messages are then
    ``out``'s own, and a hook event whose decision message is the message it injected keeps saying what that message
    says), its hook payloads, and the step appended to the mapping."""
    injected = None if calls_only else _injected_decisions(out)
    _carry_steps(out["messages"], (step,), calls_only=calls_only)
    _map_hook_payloads(out, step)
    if injected:
        _decisions_follow(out, injected)
    out["mapping"].append(step)
    return out


def apply_regroup(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "regroup", ...}`` (nest / flatten)."""
    step = {**step, "op": "params"}
    i = _tool_index(record, step["tool"], "regroup")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = regroup_schema(out["tools"][i]["parameters"], step)
    return _finish_step(out, step)


def _rename_in_descriptions(tool: dict, names: dict[str, str], before: dict) -> None:
    """Whole-token renames of identifier-like parameter names in the tool's own descriptions (a permute step made
    before steps said which mentions follow)."""
    counts: dict[str, int] = {}
    for p in param_paths(before):
        counts[p[-1]] = counts.get(p[-1], 0) + 1
    table = {k: v for k, v in names.items() if is_identifier_like(k) and counts.get(k) == 1}
    if not table:
        return
    if isinstance(tool.get("description"), str):
        tool["description"] = replace_tokens(tool["description"], table)
    tool["parameters"] = map_schema_descriptions(tool["parameters"], lambda s: replace_tokens(s, table))


def apply_permute(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "permute", ...}`` (names swapped between siblings).

    The step's ``mentions`` (:func:`param_mentions` of the swap) say where mentions of the names follow, as for a
    rename (:func:`rename_params`); a step without them renames identifier-like names in the tool's descriptions."""
    step = {**step, "op": "params"}
    i = _tool_index(record, step["tool"], "permute")
    own, everywhere = step_mentions(step)
    if not (own or everywhere):
        out = _clone_for_step(record, i)
        tool = out["tools"][i]
        before = tool["parameters"]
        tool["parameters"] = permute_schema(before, step)
        if "mentions" not in step:
            _rename_in_descriptions(tool, {a[-1]: b[-1] for a, b in step["paths"]}, before)
        return _finish_step(out, step)
    out, _ = owned_copy(record, lambda t: True)
    tool = out["tools"][i]
    tool["parameters"] = permute_schema(tool["parameters"], step)
    own_fn = mention_renamer(own, "param_own") if own else None
    if own_fn is not None:
        rename_in_tool_texts(tool, own_fn, own, True)
    rename_param_mentions(out, i, mention_renamer(everywhere, "param") if everywhere else None, everywhere)
    return _finish_step(out, step, calls_only=False)  # calls and the mentions in messages


def apply_require(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "require", ...}`` (a required one-value parameter)."""
    step = {**step, "op": "params"}
    i = _tool_index(record, step["tool"], "require")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = require_schema(out["tools"][i]["parameters"], step)
    return _finish_step(out, step)


def apply_values(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "values", ...}``: schema, calls, hook payloads and, when
    the step says ``"texts": true``, whole-token mentions of the string values in every text but
    tool results. A tool result is what the environment returned: parameter renames and value
    changes never touch it (docs/design.md, "Tool results")."""
    i = _tool_index(record, step["tool"], "values")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = map_schema_values(out["tools"][i]["parameters"], step["path"], step["map"])
    if step.get("texts"):
        table = {a: b for a, b in step["map"] if isinstance(a, str) and isinstance(b, str)}
        if not texts_hold(out, [k for k, v in table.items() if k != v]):
            return _finish_step(out, step)  # no text holds an old value: the token rename changes none
        out = copy_for_texts(out, table)  # every message is the copy's own
        map_texts(out, lambda s: replace_tokens(s, table), names=table, messages=False)
        return _finish_step(out, step, calls_only=False)  # calls, and the texts of messages but tool results
    return _finish_step(out, step)


def _apply_params_step(record: Record, step: dict) -> Record:
    if step.get("kind"):  # a structural step: its applier is "params:<kind>"
        return apply_step(record, {**step, "op": f"params:{step['kind']}"})
    pairs = step["paths"]
    if all(len(a) == len(b) and a[-1] != ARRAY for a, b in pairs):
        return rename_params(record, step["tool"], {tuple(a): b[-1] for a, b in pairs},
                             mentions=step.get("mentions", LEGACY_MENTIONS))
    raise ValueError(f"params step of {step['tool']!r} changes nesting without a kind; no applier undoes it")


#: Record-level appliers of mapping steps, by op (a ``params`` step with a ``kind`` by ``params:<kind>``): a fixed
#: table, part of the mapping's meaning, so canonicalize works with no transform family imported. A step kind is
#: added here, with its call-level meaning in :func:`hsa.mapping.carry_call`, not by a plugin.
STEP_APPLIERS: dict[str, Callable[[Record, dict], Record]] = {
    "tools": lambda r, s: rename_tools(r, s["map"]),
    "skills": lambda r, s: rename_skills(r, s["map"]),
    "params": _apply_params_step,
    "params:regroup": apply_regroup,
    "params:permute": apply_permute,
    "params:require": apply_require,
    "values": apply_values,
}


def apply_step(record: Record, step: dict) -> Record:
    """Apply one mapping step to a whole record (schemas, calls, texts, hooks); appends the step."""
    try:
        fn = STEP_APPLIERS[step["op"]]
    except KeyError:
        raise ValueError(f"no applier for mapping step op {step['op']!r}; known: {sorted(STEP_APPLIERS)}") from None
    return fn(record, step)


#: The parts of a record a variant may change and canonicalize gives back (the rest is bookkeeping: id,
#: mapping, transforms, notes, format details).
CONTENT_KEYS = ("messages", "tools", "skills", "skill_tool", "prompt", "hooks", "hook_events", "meta", "extra")


def content_of(record: Record) -> dict:
    """The record's :data:`CONTENT_KEYS` that it has, in that order: what invariant 8 compares."""
    return {k: record[k] for k in CONTENT_KEYS if k in record}  # type: ignore[literal-required]


def _check_mapping_names(record: Record, mapping) -> None:
    if mapping.task_preserving:
        tools = {t["name"] for t in record["tools"]} | {record["skill_tool"]["name"]}
        skills = {s["name"] for s in record.get("skills") or ()}
        for kind, names, have in (("tool", mapping.tool_names(), tools), ("skill", mapping.skill_names(), skills)):
            for old, new in names.items():
                if new not in have:
                    raise ValueError(f"the mapping renames {kind} {old!r} to {new!r}, but the record has no {kind} "
                                     f"{new!r}: the mapping does not belong to this record")


def undo(record: Record, n: int) -> Record:
    """``record`` with the last ``n`` steps of its mapping undone (their inverses applied, newest first), and those
    steps removed from its mapping. A ``restore`` step puts back what the steps after it could not."""
    return _undo(record, n, owned=False)


def _undo(record: Record, n: int, *, owned: bool) -> Record:
    """:func:`undo`; ``owned``: ``record`` is the caller's own copy, which this may rewrite and return.

    The record is copied once (not at all when owned) and each inverse step rewrites that copy in place
    where its applier can (tool, skill and parameter renames); the other appliers copy what they change."""
    return _undo_from(record, n, owned=owned)[0]


def _undo_from(record: Record, n: int, *, owned: bool, written: Written | None = None) -> tuple[Record, tuple | None]:
    """:func:`_undo`, and where its harness parts came from: the slot plan's key of the split undo that gave them
    (:func:`_undo_split`: they are a function of it), or None (the plain loop). ``written``: the restore step's
    entry for the variant ``record`` was read back from (:func:`hsa.written.by_plan`), which keeps the split's key,
    the inverse steps and the check of the steps' names (functions of what the entry is found by); the record's
    harness parts may then be the plan's, and so may the undone ones: the result is read only."""
    from hsa.mapping import Mapping

    known = None if written is None else written.undo
    kept = list(record["mapping"][:len(record["mapping"]) - n])
    out = record if owned else clone(record)
    if known is not None and known.inverse is not None:  # the entry's: its steps and harness names are these
        inverse, splits = known.inverse
    else:
        steps = record["mapping"][len(record["mapping"]) - n:] if n else []
        _check_mapping_names(record, Mapping(steps))
        inverse = [step.to_json() for step in Mapping(steps).inverse().typed() if not isinstance(step, OpaqueStep)]
        splits = _splits(out, inverse)
        if known is not None:
            known.inverse = (inverse, splits)
    origin = _undo_split(out, inverse, known, share=written is not None) if splits else None
    if origin is None and inverse:
        if written is not None and out["tools"] is written.half.tools:  # the plan's (as_written), read only: the
            out["tools"] = _json.loads(written.half.read[0])  # plain appliers rewrite in place (its JSON: no walk)
        for step in inverse:
            out = _apply_step_in_place(out, step)
    out["mapping"] = kept
    return out, origin


#: The parts of a record besides its messages and mapping that the steps :func:`carries` change: each step changes
#: them as a function of themselves and the step alone, and the messages as a function of the messages and the step
#: alone (:func:`carry_messages`). A record's hooks join them (:func:`step_parts`).
STEP_PARTS = ("tools", "skill_tool", "skills", "prompt")
#: The steps :func:`carry_messages` carries (a ``params`` step with or without a kind). A skill rename's applier
#: carries the calls of the skill tool the record has when it is applied: the one its step names, when the step was
#: made there (a renaming leaf's apply), and wherever an undo reaches it (:func:`_undo_split` checks that).
_SPLIT_STEPS = (ToolsStep, ParamsStep, ValuesStep, SkillsStep)


def carries(record: Record, steps: Iterable[dict]) -> bool:
    """Whether the appliers of ``steps`` change ``record`` in two halves, its :func:`step_parts` and the messages:
    the parts as a function of themselves and the steps, the messages as a function of themselves, the steps and
    the names each step keeps whole (:func:`carry_keeps`: the harness names before a tool or skill rename, where a
    renamed compound name is part of a longer one). Only tool, skill, parameter and value steps
    (:data:`_SPLIT_STEPS`; a restore step patches everything) and no hook events (their payloads, decisions and
    injected messages tie the hooks to the messages).

    Hooks without events are one of the parts: a hook sync (:mod:`hsa.codemods.sync`) reads the hook source, the
    harness before the step and the step alone, and writes the hooks and, where it refuses, a note; the callers keep
    the notes the sync adds (:func:`hsa.transform._apply_carried` checks them before it keeps a branch,
    :func:`_undo_split` keeps them with the undone parts)."""
    return not record.get("hook_events") and all(isinstance(s, _SPLIT_STEPS) for s in steps_of(list(steps)))


def carry_keeps(record: Record, steps: list[dict]) -> tuple[frozenset[str], ...] | None:
    """For each of ``steps`` (applied to ``record`` in order, a record that :func:`carries` them) the names its
    applier keeps whole in the messages' texts: a tool or skill rename's :func:`hsa.rename_texts.harness_names` of
    the harness it is applied to, nothing for the other steps. None where no renamed compound name is part of a
    longer one (:func:`hsa.rename_texts.nested_names`): the steps alone then carry the messages. Else the steps are
    applied to a copy of the record's :func:`step_parts`, without its messages, to have the harness before each
    (what the appliers read); :func:`hsa.step_carry.compile_carry` takes the result."""
    if not nested_names(record, steps):
        return None
    keeps: list[frozenset[str]] = []
    bare = _bare_harness(record)
    for step in steps:
        keeps.append(_kept_whole(bare, step))
        bare = _apply_step_in_place(bare, step)
    return tuple(keeps)


def _kept_whole(harness: Record, step: dict) -> frozenset[str]:
    """The names ``step``'s applier keeps whole in texts when applied to ``harness`` (a copy of it: the harness
    before the step): a tool or skill rename's ``keep`` (:func:`rename_tools`, :func:`rename_skills`), nothing for
    the other steps."""
    typed = Step.from_json(step)
    return harness_names(harness, typed.renamed()) if typed.renames_names else frozenset()


def _bare_harness(record: Record) -> Record:
    """``record`` without its messages, with its own copy of its :func:`step_parts`, mapping and notes: what the
    plain appliers rewrite in place to give the harness half of a split."""
    parts = {k: record[k] for k in step_parts(record) if k in record}
    return {**record, **_json.copy(parts), "messages": [], "mapping": list(record["mapping"]),
            "notes": list(record["notes"])}


def step_parts(record: Record) -> tuple[str, ...]:
    """:data:`STEP_PARTS`, and ``hooks`` when ``record`` has hooks: the harness parts that the steps a record
    :func:`carries` change."""
    return (*STEP_PARTS, "hooks") if record.get("hooks") else STEP_PARTS


def _splits(record: Record, steps: list[dict]) -> bool:
    """Whether :func:`_undo_split` undoes ``steps`` on ``record``."""
    return bool(steps) and carries(record, steps)


def _undo_split(record: Record, steps: list[dict], known: UndoKey | None = None, *, share: bool = False
                ) -> tuple | None:
    """The inverse ``steps`` applied to ``record`` (owned, rewritten in place) as the plain loop of :func:`_undo`
    applies them, in two halves: the harness parts (:func:`step_parts`: the hooks too, on a record with hooks and no
    hook events) by the plain appliers on the record without its messages, kept in the slot plan of the variant
    being made (:attr:`hsa.context.WorkerContext.keeping`, :meth:`hsa.plans.SlotPlan.keep`, by the digest of the steps
    and parts: the records of a harness and pool slot undo the same steps on the same harness, whatever their
    trajectories) with the notes they add (a hook sync that refuses says so in one), and the messages step by step
    (their message carry, :mod:`hsa.step_carry`: calls, tool-result names, texts). Where the plain loop would raise,
    the harness half raises the same (it runs every applier, on a copy of the parts); the messages half raises
    nothing of its own. A skill rename is split where its step names the skill tool the record has when the undo
    reaches it (its applier carries the calls of that one), else these steps are left to the plain loop. Returns the
    plan's key of the undone parts (they are a function of it). None (``record`` as it was): no plan to keep the
    work in (``--harness-pool 0``, an undo outside augmentation, a
    plan's first variant of a harness no earlier record had: :attr:`hsa.context.WorkerContext.keeping`), which the
    plain loop undoes.

    ``known``: where the caller keeps this key for records whose steps and parts are those of ``record``
    (:func:`hsa.written.by_plan`); the key is looked up there before it is worked out, and put there after.
    ``share``: the caller never changes the undone record, so the harness parts kept in the plan are given as they are
    (read only), instead of a copy."""
    plan = _current().keeping
    if plan is None:
        return None
    parts = {k: record[k] for k in step_parts(record) if k in record}
    key = None if known is None else known.key
    if key is None:
        try:
            key = ("undone", _cache.digest(steps, parts))
        except (TypeError, ValueError):  # not JSON: no key
            return None
        if known is not None:
            known.key = key
    hit = plan.recall(key)
    if hit is _PLAIN:
        return None
    if hit is not None:
        undone, carry, noted = hit[3] if share else _json.loads(hit[0]), hit[1], hit[2]
    else:
        notes = record["notes"]
        bare = _bare_harness(record)
        keeps: list[frozenset[str]] | None = [] if nested_names(record, steps) else None
        for step in steps:
            st = bare["skill_tool"]
            if step["op"] == "skills" and (step.get("tool"), step.get("argument")) != (st["name"], st["argument"]):
                plan.keep(key, _PLAIN)  # its applier would carry the messages with another skill tool: not split
                return None
            if keeps is not None:  # carry_keeps, in the same loop
                keeps.append(_kept_whole(bare, step))
            bare = _apply_step_in_place(bare, step)
        undone = {k: bare[k] for k in parts}
        noted = tuple(bare["notes"][len(notes):])  # the appliers copy the notes and append to them, nothing else
        try:
            data = _json.dumps_bytes(undone)
        except (TypeError, ValueError):
            data = None
        carry = compile_carry(steps, keeps)
        if data is not None and repr(_json.loads(data)) == repr(undone):  # JSON gives it back exactly (types)
            plan.keep(key, (data, carry, noted, _json.loads(data)))  # the last: shared, read only
    _carry_steps(record["messages"], steps, entries=carry, sift=True)
    record.update(undone)
    record["notes"].extend(noted)
    return key


#: A plan entry of :func:`_undo_split` whose steps the plain loop undoes every time.
_PLAIN = ("plain",)


def carry_messages(messages: list[dict], steps: Iterable[dict], *, entries: tuple | None = None) -> list[dict]:
    """``messages`` (of a record that :func:`carries` ``steps``) as the appliers of ``steps`` leave them: a copy,
    sharing with ``messages`` what no step changes (call arguments and texts are replaced, never edited). The
    appliers carry their own messages with the same steps' message carry (:mod:`hsa.step_carry`); ``entries``: that
    carry compiled (:func:`hsa.step_carry.compile_carry`), where the caller keeps it with the steps; where a renamed
    name is part of a longer one they are needed (with :func:`carry_keeps`), since the steps alone do not say which
    names the appliers keep whole."""
    out = [{**m, "tool_calls": [{**c, "function": dict(c["function"])} for c in m["tool_calls"]]}
           if m.get("tool_calls") else dict(m) for m in messages]
    _carry_steps(out, steps, entries=entries, sift=True)
    return out


def _apply_step_in_place(record: Record, step: dict) -> Record:
    """:func:`apply_step` on a record the caller owns: renames rewrite it in place, other steps copy what they change."""
    typed = Step.from_json(step)
    if isinstance(typed, ToolsStep):
        return rename_tools(record, step["map"], copy=False)
    if isinstance(typed, SkillsStep):
        return rename_skills(record, step["map"], copy=False)
    if isinstance(typed, ParamsStep) and not typed.kind and \
            all(len(a) == len(b) and a[-1] != ARRAY for a, b in step["paths"]):
        return rename_params(record, step["tool"], {tuple(a): b[-1] for a, b in step["paths"]}, copy=False,
                             mentions=step.get("mentions", LEGACY_MENTIONS))
    return apply_step(record, step)


def canonicalize(record: Record) -> Record:
    """Undo the record's whole mapping: the source record back (docs/design.md invariant 8).

    Names, argument paths and values go back through each step's inverse; what no inverse
    carries (descriptions, order, added tools and parameters, prompt layout, skills, hook style,
    messages) is put back by the ``restore`` step that :func:`with_restore` adds, so for a
    task-preserving variant the result has the source's :data:`CONTENT_KEYS` exactly. Raises
    ``ValueError`` when a task-preserving mapping renames a tool or skill to a name the record does
    not have (a mapping that does not belong to this record cannot be undone on it)."""
    return undo(record, len(record["mapping"]))


def with_restore(source: Record, variant: Record) -> Record:
    """``variant`` (made from ``source``) with a ``restore`` step in its mapping when its other steps do not give
    the source back: inserted before this variant's own steps, it holds the patch (:mod:`hsa._patch`) from what
    undoing them gives, on the variant as its row reads back, to the source's content (``patch``), and how the
    source was written when the variant cannot be written so (``fmt``). Task-changing variants get none (they do
    not pose the same task).
    """
    from hsa.mapping import Mapping

    k = len(source["mapping"])
    steps = variant["mapping"][k:]
    if not Mapping(steps).task_preserving:
        return variant
    written = by_plan(variant, steps, source, (*STEP_PARTS, "hooks"))
    try:  # a fresh record, undone in place; what it shares with the plan is read only (this returns no part of it)
        back, origin = _undo_from(_as_written(variant, written), len(steps), owned=True, written=written)
    except ValueError:
        return variant  # the mapping does not undo: the per-variant check says so
    kept: dict[str, tuple] = {}
    p = _content_patch(content_of(back), content_of(source), kept, origin=origin)
    fmt = _fmt_of(source)
    if p is None and _fmt_of(back) == fmt:
        _current().last_undo[:] = [variant, len(steps), back]
        return variant
    out = dict(variant)
    step: dict = {"op": "restore"}
    if p is not None:
        step["patch"] = p
    if _fmt_of(back) != fmt:  # how the source was written (a skill tool as a string, tools as a JSON string)
        step["fmt"] = fmt
    out["mapping"] = variant["mapping"][:k] + [step] + steps
    _current().last_undo[:] = [out, len(steps) + 1, _restored_view(back, step, kept)]
    return out


#: Content keys of the harness: their patches repeat across the records of a pool slot, so they are looked up.
_HARNESS_KEYS = frozenset({"tools", "skills", "skill_tool", "hooks"})


def _content_patch(a: dict, b: dict, kept: dict[str, tuple] | None = None, *, origin: tuple | None = None
                   ) -> dict | None:
    """``hsa._patch.diff(a, b)`` of two records' contents, the patch of each harness key kept in the slot plan of
    the variant being made (:attr:`hsa.context.WorkerContext.keeping`, by the digest of (key, its value in ``a``, in
    ``b``)): records of one harness and pool slot undo to the same harness, whatever their trajectories. The same
    patch as the diff of the whole, key by key; a kept patch is shared by the variants of the slot in their
    ``restore`` steps (read only, like every mapping step). ``kept``: filled with each harness key's plan key (the
    digest), under which :func:`_restored_view` keeps what the patch makes of that key's value.

    ``origin``: the plan's key of the split undo that gave ``a``'s harness parts (:func:`_undo_from`), ``b`` being
    the source's content: then a harness key's value in ``a`` is a function of ``origin`` (the undo's :func:`step_parts`)
    and its value in ``b`` the same for every record of the plan (:data:`hsa.plans.DIGEST_KEYS`, which the plan's
    harness digest covers), so the pair is keyed by ``origin`` without a digest of the two values."""
    plan = _current().keeping
    if plan is None:
        return _patch.diff(a, b, str_edits=_str_edits)
    undone = step_parts(a) if origin is not None else ()

    def by_key(k: str, old: Any, new: Any) -> dict | None:
        if k not in _HARNESS_KEYS:
            return _patch.diff(old, new, str_edits=_str_edits)
        key = ("undone", k, origin) if k in undone else _cache.digest(k, old, new)
        if kept is not None:
            kept[k] = ("patched", key)
        # shared, read only: a mapping step is never changed in place (its appliers copy)
        return plan.kept(("patch", key), lambda: _patch.diff(old, new, str_edits=_str_edits))

    return _patch.diff(a, b, str_edits=_str_edits, key_diff=by_key)


def _str_edits(a: str, b: str) -> list | None:
    """:func:`hsa._patch.str_edits`, looked up by the pair of strings (``patch.str_edits``, 16 MiB): a skill, a
    prompt section or a hook source and its variant repeat across the records of a pool slot, and their line and
    word diffs are the costly part of a patch. A hit is copied: the patch goes into the variant's mapping."""
    from hsa import cache

    c = cache.lru("patch.str_edits", 16 << 20)
    key = cache.digest(a, b)
    hit = c.get(key)
    if hit is None:
        edits = _patch.str_edits(a, b)
        hit = c.put(key, (edits,), 200 + 2 * sum(len(e[2]) + 40 for e in edits or ()))
    return None if hit[0] is None else [list(e) for e in hit[0]]


def _fmt_of(record: Record) -> dict:
    """How the record is written (its ``_fmt``), but where it came from."""
    return {k: v for k, v in record["_fmt"].items() if k != "source_id"}


def undo_last(record: Record, n: int) -> Record:
    """:func:`undo` (``record``, ``n``), read from :func:`with_restore`'s last result when it is that record (the
    same object, as the pipeline checks the variant it just made; the worker context's ``last_undo`` holds the
    variant, its step count and what undoing them gives); do not modify what it returns."""
    last = _current().last_undo
    if last and last[0] is record and last[1] == n:
        return last[2]
    return undo(record, n)


def _restored_view(record: Record, step: dict, kept: dict[str, tuple] | None = None) -> Record:
    """What :func:`_apply_restore` (``record``, ``step``) gives, but for its mapping (``record``'s), sharing what the
    patch keeps with ``record`` and the step: for :func:`undo_last`, whose reader changes nothing. ``kept``: the plan
    keys of harness keys (:func:`_content_patch`) whose patched value is kept in the slot plan being made: a function
    of the value and its patch, which that key digests, so it is made once a plan and shared, read only (the
    check still compares it with the source for every variant)."""
    out = {k: v for k, v in record.items() if k not in CONTENT_KEYS}
    if "patch" in step:
        content, p = content_of(record), step["patch"]
        plan = _current().keeping if kept else None
        if plan is not None and "o" in p:  # the kept keys' patched values from the plan, the rest patched here
            changed = dict(p["o"])
            for k, key in kept.items():  # type: ignore[union-attr]
                if k in changed:
                    sub = changed.pop(k)
                    content[k] = plan.kept(key, lambda v=content[k], sub=sub: _patch.patch(v, sub, share=True))
            p = {**p, "o": changed}
        restored = _patch.patch(content, p, share=True)
        for k in CONTENT_KEYS:
            if k in restored:
                out[k] = restored[k]
    else:
        out.update(content_of(record))
    if "fmt" in step:
        out["_fmt"] = {**({"source_id": out["_fmt"]["source_id"]} if "source_id" in out["_fmt"] else {}), **step["fmt"]}
    return out  # type: ignore[return-value]


def _apply_restore(record: Record, step: dict) -> Record:
    if "patch" in step:  # the content is made afresh by the patch: copy the rest only
        out = {k: _json.copy(v) for k, v in record.items() if k not in CONTENT_KEYS}
        restored = _patch.patch(content_of(record), step["patch"])
        for k in CONTENT_KEYS:  # the keys in their usual place
            if k in restored:
                out[k] = restored[k]  # type: ignore[literal-required]
    else:
        out = clone(record)
    if "fmt" in step:
        out["_fmt"] = {**({"source_id": out["_fmt"]["source_id"]} if "source_id" in out["_fmt"] else {}),
                       **_json.copy(step["fmt"])}
    out["mapping"].append(step)
    return out


STEP_APPLIERS["restore"] = _apply_restore
