"""Records: reading an input object of any supported dialect into the one internal form, and writing it back.

A *record* is one harness plus one trajectory under it. On input it may use any
supported dialect (OpenAI / Anthropic / MCP / flat tool definitions; tool-call
arguments as JSON strings or objects; non-standard JSON-Schema types). Internally
every record has one form (the records model, :mod:`hsa.record_model`: ``Record``
and its parts, re-exported here), so that transforms are written once.
:func:`normalize` reads a record into that form; :func:`denormalize` writes it back
in the dialect it came in (tracked in ``record["_fmt"]``).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.formats import to_messages_layout
from hsa.formats.common import noted
from hsa.tool_dialects import denormalize_tool, normalize_schema, normalize_tool, normalize_tools, read_tool_list
from hsa.record_model import (
    DEFAULT_SKILL_TOOL,
    HSA_KEYS,
    OUTPUT_KEYS,
    Hook,
    HookEvent,
    Message,
    Prompt,
    PromptSection,
    Record,
    RecordError,
    Skill,
    Tool,
    ToolCall,
    clone,
    iter_calls,
    openai_tools,
    tool_index,
)

__all__ = [
    "openai_tools",
    "Record",
    "converted_layouts",
    "Tool",
    "Skill",
    "Prompt",
    "PromptSection",
    "Hook",
    "HookEvent",
    "Message",
    "ToolCall",
    "RecordError",
    "normalize",
    "read_row",
    "read_harness_file",
    "supply_harness",
    "parse_skill_tool",
    "denormalize",
    "read_back",
    "normalize_schema",
    "record_schema",
    "iter_calls",
    "tool_index",
    "clone",
    "DEFAULT_SKILL_TOOL",
    "HSA_KEYS",
    "OUTPUT_KEYS",
]


@lru_cache(maxsize=1)
def record_schema() -> dict[str, Any]:
    """The JSON Schema of an input record, shipped as ``hsa/schema/record.schema.json``."""
    text = resources.files("hsa").joinpath("schema/record.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _record_validator():
    import jsonschema

    schema = record_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _opt(value: Any, types: type | tuple) -> bool:
    return value is None or (isinstance(value, types) and not isinstance(value, bool))


def _str_keys(d: dict, required: tuple[str, ...], optional: tuple[str, ...], nonempty: tuple[str, ...] = ()) -> bool:
    return (all(isinstance(d.get(k), str) for k in required)
            and all(k not in d or isinstance(d[k], str) for k in optional)
            and all(d.get(k) != "" for k in nonempty))


def _fast_structure_ok(raw: dict) -> bool:
    """A quick check that never accepts what ``record.schema.json`` rejects (False: ask jsonschema)."""
    msgs = raw.get("messages")
    if not isinstance(msgs, list):
        return False
    for m in msgs:  # _opt written out (no bool is a str or a list): this loop runs for every message of every record
        if not (isinstance(m, dict) and isinstance(m.get("role"), str)):
            return False
        content, calls, call_id, name = m.get("content"), m.get("tool_calls"), m.get("tool_call_id"), m.get("name")
        if not ((content is None or isinstance(content, (str, list))) and (calls is None or isinstance(calls, list))
                and (call_id is None or isinstance(call_id, str)) and (name is None or isinstance(name, str))):
            return False
        if "train" in m and not isinstance(m["train"], bool):
            return False
        if calls:
            for c in calls:
                if not isinstance(c, dict):
                    return False
    tools = raw.get("tools")
    if not _opt(tools, (list, str)):
        return False
    if isinstance(tools, list):
        for t in tools:
            if not isinstance(t, dict):
                return False
            fn = t.get("function")
            if not ((isinstance(fn, dict) and "name" in fn) or ("function" not in t and "name" in t)):
                return False
    if "id" in raw and not (isinstance(raw["id"], (str, int)) and not isinstance(raw["id"], bool)):
        return False
    for key, types in (("skills", list), ("hooks", list), ("hook_events", list), ("meta", dict),
                       ("source_id", str), ("variant", int), ("transforms", list), ("mapping", dict),
                       ("notes", list)):
        if not _opt(raw.get(key), types):
            return False
    for sk in raw.get("skills") or ():
        if not (isinstance(sk, dict) and _str_keys(sk, ("name",), ("description", "content"), ("name",))):
            return False
    st = raw.get("skill_tool")
    if st is not None and not (isinstance(st, str) and st) and not (
            isinstance(st, dict) and _str_keys(st, (), ("name", "argument"), ("name", "argument"))):
        return False
    prompt = raw.get("prompt")
    if prompt is not None:
        if not (isinstance(prompt, dict) and isinstance(prompt.get("sections"), list)
                and ("template" not in prompt or isinstance(prompt["template"], str))):
            return False
        for sec in prompt["sections"]:
            if not (isinstance(sec, dict) and _str_keys(sec, ("id", "body"), ("title",))
                    and ("movable" not in sec or isinstance(sec["movable"], bool))):
                return False
    for h in raw.get("hooks") or ():
        if not (isinstance(h, dict) and _str_keys(h, ("name", "source"), ("event", "entry"))) \
                or "files" in h or "path" in h or ("matcher" in h and not isinstance(h["matcher"], str)):
            return False  # sibling files and their paths: the schema checks them
    for ev in raw.get("hook_events") or ():
        if not (isinstance(ev, dict) and isinstance(ev.get("hook"), str) and isinstance(ev.get("message_index"), int)
                and not isinstance(ev["message_index"], bool) and ev["message_index"] >= 0
                and ("payload" not in ev or isinstance(ev["payload"], dict))
                and ("decision" not in ev or isinstance(ev["decision"], dict))):
            return False
    if any(not isinstance(n, str) for n in raw.get("notes") or ()):
        return False
    return True


# --------------------------------------------------------------------------- messages


def _normalize_call(raw: Any, where: str, fmt: dict[str, Any]) -> ToolCall:
    if not isinstance(raw, dict):
        raise RecordError("bad tool call", f"{where} is {type(raw).__name__}, expected an object")
    if isinstance(raw.get("function"), dict):
        fn = raw["function"]
        call = {k: v for k, v in raw.items() if k != "function"}
        call.setdefault("type", "function")
        style = "openai"
    else:  # flat {"name": ..., "arguments": ...}
        fn = raw
        call = {k: v for k, v in raw.items() if k not in ("name", "arguments", "parameters")}
        style = "flat"
    fmt.setdefault("calls", style)
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise RecordError("bad tool call", f"{where} has no function name")
    args = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(args, str):
        fmt.setdefault("args", "string")
        if not args.strip():
            args = {}
        else:
            try:
                args = _json.loads(args)
            except ValueError as exc:
                raise RecordError("arguments not JSON",
                                  f"{where} ({name}): arguments string is not valid JSON ({exc})") from None
    else:
        fmt.setdefault("args", "object")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise RecordError("bad arguments", f"{where} ({name}): arguments must be a JSON object, got {type(args).__name__}")
    function = {"name": name, "arguments": args}
    function.update({k: v for k, v in fn.items() if k not in ("name", "arguments", "parameters")} if style == "openai" else {})
    call["function"] = function
    return call  # type: ignore[return-value]


def _denormalize_call(call: ToolCall, fmt: dict[str, Any]) -> dict[str, Any]:
    fn = call["function"]
    args: Any = fn["arguments"]
    if fmt.get("args") == "string":
        args = json.dumps(args, ensure_ascii=False)
    if fmt.get("calls") == "flat":
        out = {k: v for k, v in call.items() if k not in ("function", "type")}
        if "type" in call and call["type"] != "function":
            out["type"] = call["type"]
        return {"name": fn["name"], "arguments": args, **out}
    function = {"name": fn["name"], "arguments": args}
    function.update({k: v for k, v in fn.items() if k not in ("name", "arguments")})
    out = {k: v for k, v in call.items() if k != "function"}
    out["function"] = function
    return out


# --------------------------------------------------------------------------- whole records


def parse_skill_tool(value: Any) -> dict[str, str]:
    """The internal ``skill_tool`` (``{"name", "argument"}``) of an input's ``skill_tool`` value: a name, an
    object with either key, or None (:data:`DEFAULT_SKILL_TOOL`)."""
    if value is None:
        return dict(DEFAULT_SKILL_TOOL)
    if isinstance(value, str):
        return {"name": value, "argument": DEFAULT_SKILL_TOOL["argument"]}
    return {"name": value.get("name", DEFAULT_SKILL_TOOL["name"]),
            "argument": value.get("argument", DEFAULT_SKILL_TOOL["argument"])}


def normalize(raw: Any, *, default_id: str | None = None, harness: dict | None = None, loaded: bool = False,
              shared: bool = False) -> Record:
    """Read one input object into the internal form, or raise :class:`RecordError`.

    Checks the structure against the shipped JSON Schema, parses string arguments
    and string tool lists, normalises tool dialects and non-standard schema types
    (each change is listed in ``record["notes"]``). It does not check calls against
    schemas; :func:`hsa.invariants.check_record` does that. ``harness`` (from
    :func:`read_harness_file`, ``--tools FILE``) supplies the harness of a row without one
    (:func:`supply_harness`). ``loaded``: ``raw`` is what a JSON parser made (dicts, lists, strings, numbers,
    booleans and None only), so its tools are looked up by their JSON bytes (:func:`normalize_tool`); the record
    is the same either way. ``shared`` (with ``loaded``): the record's tool list may be one object with other
    records' that have the same tools (:func:`hsa.tool_dialects.normalize_tools`): read only.
    """
    if not isinstance(raw, dict):
        raise RecordError("not an object", f"expected a JSON object, got {type(raw).__name__}")
    try:
        return _normalize(raw, default_id, harness, loaded=loaded, shared=shared)
    except RecordError:
        raise
    except Exception as exc:  # a layout the readers do not foresee must cost one reject, never the run
        raise RecordError("unreadable record", f"{type(exc).__name__}: {str(exc)[:200]} (hsa could not read this "
                          f"layout; please report it with the line)") from exc


def read_row(text: str | bytes) -> Record:
    """:func:`normalize` of the JSON ``text`` (a record as its row writes it: what :func:`denormalize` gives, as
    JSON), or raise :class:`RecordError`. The same record as ``normalize(_json.loads(text))``; what a parser made
    holds JSON types only, so its tools are looked up by their JSON bytes (:func:`normalize_tool` ``loaded``)."""
    raw = _json.loads(text)
    if not isinstance(raw, dict):
        raise RecordError("not an object", f"expected a JSON object, got {type(raw).__name__}")
    try:
        return _normalize(raw, None, None, loaded=True)
    except RecordError:
        raise
    except Exception as exc:
        raise RecordError("unreadable record", f"{type(exc).__name__}: {str(exc)[:200]} (hsa could not read this "
                          f"layout; please report it with the line)") from exc


# --------------------------------------------------------------------------- --tools FILE

#: The harness parts a ``--tools FILE`` may hold besides ``tools``.
HARNESS_KEYS = ("tools", "skills", "skill_tool", "prompt", "system", "hooks")


def _no_tools(value: Any) -> bool:
    return value is None or value == [] or (isinstance(value, str) and value.strip() in ("", "[]"))


def read_harness_file(path: str | os.PathLike) -> dict:
    """The harness of ``--tools FILE``: ``{"tools": [...], "source": path}`` plus, when the file has them,
    ``skills``, ``skill_tool``, ``prompt`` (sections and template), ``system`` (the system message text) and
    ``hooks``.

    The file is JSON: a list of tool definitions (OpenAI, Anthropic, MCP or flat, as rows hold them), or an
    object with a ``tools`` list and the other parts; or JSON Lines with one tool definition per line. Each
    tool is read now, so a bad definition fails here with its position, not on every row.
    """
    p = Path(path)
    if not p.is_file():
        raise RecordError("bad --tools file", f"{path} does not exist; give a JSON file with a list of tool "
                          "definitions, or an object {\"tools\": [...], \"skills\"?, \"prompt\"?, \"system\"?}")
    text = p.read_text(encoding="utf-8-sig")
    try:
        data: Any = _json.loads(text)
    except ValueError:
        data = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(_json.loads(line))
            except ValueError as exc:
                raise RecordError("bad --tools file", f"{path}:{n}: not JSON ({exc}); expected one JSON file or "
                                  "one tool definition per line") from None
    if isinstance(data, list):
        data = {"tools": data}
    if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
        raise RecordError("bad --tools file", f"{path}: expected a list of tool definitions or an object with a "
                          f"'tools' list (got {type(data).__name__}"
                          + (f" with keys {sorted(data)}" if isinstance(data, dict) else "") + ")")
    unknown = sorted(set(data) - set(HARNESS_KEYS))
    if unknown:
        raise RecordError("bad --tools file", f"{path}: unknown keys {unknown}; a harness file may hold "
                          f"{list(HARNESS_KEYS)}")
    notes: list[str] = []
    for i, t in enumerate(data["tools"]):
        try:
            normalize_tool(t, i, notes)
        except RecordError as exc:
            raise RecordError("bad --tools file", f"{path}: tools[{i}]: {exc.reason}: {exc.detail}") from None
    if data.get("system") is not None and not isinstance(data["system"], str):
        raise RecordError("bad --tools file", f"{path}: 'system' must be the system message text")
    return {**{k: v for k, v in data.items() if v is not None}, "source": p.name}


def supply_harness(raw: dict, harness: dict) -> dict:
    """``raw`` with the parts of ``harness`` (:func:`read_harness_file`) it lacks, noted as
    ``converted with the harness of --tools FILE``.

    A row without tools (no ``tools``, null or an empty list) gets the file's tools; skills, the
    skill tool and hooks fill rows that have none; the file's ``system`` text, or its ``prompt``
    (with the system message rendered from it), goes only to rows that have no system message of
    their own. A row that has its own tools keeps its whole harness.
    """
    if "messages" not in raw:
        raw = to_messages_layout(raw)  # a trajectory dump's turn list (traj) read as messages first
    if not _no_tools(raw.get("tools")):
        return raw
    out = dict(raw)
    out["tools"] = _json.copy(harness["tools"])
    parts = [f"{len(harness['tools'])} tools"]
    for key in ("skills", "skill_tool", "hooks"):
        if harness.get(key) is not None and out.get(key) in (None, []):
            out[key] = _json.copy(harness[key])
            parts.append(key)
    msgs = out.get("messages")
    has_system = isinstance(msgs, list) and any(isinstance(m, dict) and m.get("role") == "system" for m in msgs)
    if isinstance(msgs, list) and not has_system and out.get("prompt") is None:
        system = harness.get("system")
        if harness.get("prompt") is not None:
            from hsa.prompt_model import render, system_sections

            out["prompt"] = _json.copy(harness["prompt"])
            system = render(out["prompt"]["template"], system_sections(out["prompt"]))
            parts.append("prompt")
        elif system is not None:
            parts.append("system")
        if system is not None:
            out["messages"] = [{"role": "system", "content": system}, *msgs]
    return noted(out, f"converted with the harness of --tools {harness.get('source', 'FILE')}: {', '.join(parts)}")


def converted_layouts(notes: list[str]) -> list[str]:
    """The layouts a record was converted from on input, from its notes (each once, in order)."""
    return list(dict.fromkeys(n.split(":", 1)[0] for n in notes if n.startswith("converted ")))


def _normalize(raw: dict, default_id: str | None, harness: dict | None = None, *, loaded: bool = False,
               shared: bool = False) -> Record:
    raw = to_messages_layout(raw)
    if harness:
        raw = supply_harness(raw, harness)
    fmt: dict[str, Any] = {}
    notes: list[str] = list(raw.get("notes") or []) if isinstance(raw.get("notes"), list) else []
    raw = dict(raw)
    if raw.get("tools") is not None:
        raw["tools"] = read_tool_list(raw["tools"], fmt, notes)
    if raw.get("tools") is None:
        raw["tools"] = []
        fmt["no_tools"] = "tools" not in raw or "null"
    errors = [] if _fast_structure_ok(raw) else sorted(_record_validator().iter_errors(raw),
                                                        key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise RecordError("schema", f"at {at}: {e.message}")

    tools = normalize_tools(raw["tools"], notes, loaded=loaded, shared=shared)
    messages: list[Message] = []
    for mi, m in enumerate(raw["messages"]):
        msg = dict(m)
        if msg.get("tool_calls"):
            msg["tool_calls"] = [_normalize_call(c, f"messages[{mi}].tool_calls[{ci}]", fmt)
                                 for ci, c in enumerate(msg["tool_calls"])]
        messages.append(msg)  # type: ignore[arg-type]

    rid = raw.get("id")
    if rid is None:
        rid = default_id
    if rid is None:
        import hashlib

        rid = "sha-" + hashlib.sha256(_json.canonical(raw).encode()).hexdigest()[:16]
    record: Record = {  # type: ignore[typeddict-item]
        "id": str(rid),
        "messages": messages,
        "tools": tools,
        "skill_tool": parse_skill_tool(raw.get("skill_tool")),
        "mapping": [],
        "transforms": [],
        "notes": notes,
        "extra": {},
        "_fmt": fmt,
    }
    if isinstance(raw.get("skill_tool"), str):
        fmt["skill_tool_str"] = True
    elif raw.get("skill_tool") is None:
        fmt["skill_tool_default"] = True
    for key in _JSON_TEXT_PARTS:
        if raw.get(key) is not None:
            record[key] = raw[key]  # type: ignore[literal-required]
    if raw.get("mapping") is not None:  # re-augmenting an output row: compose with its mapping
        from hsa.mapping import Mapping

        record["mapping"] = Mapping.from_dict(raw["mapping"]).steps
        record["transforms"] = list(raw.get("transforms") or [])
        if raw.get("source_id") is not None:
            fmt["source_id"] = raw["source_id"]
    for key, value in raw.items():
        if key not in HSA_KEYS and key not in OUTPUT_KEYS and key != "tools":
            record["extra"][key] = value
    unread = _unread_call(record)
    if unread is not None:
        notes.append(unread)
    return record


#: How the note of :func:`_unread_call` starts (the pipeline counts the records that carry it).
UNREAD_CALL_NOTE = "unread call: "


def _unread_call(record: Record) -> str | None:
    """A note when a record with tools but no tool calls has assistant text that calls a declared tool the way
    code or JSON would (``name(``, ``"name": "name"``, ``Action: name``): a layout the readers do not know."""
    if not record["tools"] or any(m.get("tool_calls") for m in record["messages"]):
        return None
    for i, m in enumerate(record["messages"]):
        text = m.get("content")
        if m.get("role") != "assistant" or not isinstance(text, str):
            continue
        for name in (t["name"] for t in record["tools"]):
            if name in text and re.search(rf"(?<![\w-]){re.escape(name)}\s*\(|\"name\"\s*:\s*\"{re.escape(name)}\""
                                          rf"|Action:\s*{re.escape(name)}(?![\w-])", text):
                return (f"{UNREAD_CALL_NOTE}messages[{i}] calls {name!r} in its text, in a layout hsa does not read; "
                        "it stays text, so parameter renames and schema changes do not follow it")
    return None


def read_back(record: Record) -> Record:
    """``record`` as its output row reads back: written (:func:`denormalize`), as JSON, and read again
    (:func:`read_row`), the mapping, transforms and notes aside (the caller's). Every row hsa writes carries its
    own keys (``source_id``, ``mapping``: :func:`hsa.pipeline.record.source_row`), so the reader takes it for an hsa
    record and converts structure only (content blocks, legacy fields): a call written as text in a message stays
    text, as it does when the row itself is read. The row is marked so here, or a record whose harness has no
    hsa-only part (a tool list alone) would have such a text read as a call: a difference that is not in the row.
    Raises :class:`RecordError` when the row does not read."""
    row = denormalize(record)
    row["source_id"] = record["id"]  # an hsa row (hsa.formats.dispatch._HSA_ONLY_KEYS); with no mapping key, the
    # reader takes nothing from it
    return read_row(_json.dumps(row))


#: The keys and roles of a message that reads back from an hsa row as it is written: none of the per-message layouts
#: the reader converts (legacy ``function_call`` and ``function`` roles, Anthropic content blocks, AI SDK parts,
#: Ollama's ``tool_name``, LangChain's ``type``/``data`` and ``lc``/``kwargs``, Responses items' ``type``, role
#: spellings) can match a message of these keys and roles whose content is a string.
PLAIN_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
PLAIN_ROLES = frozenset({"system", "user", "assistant", "tool"})
#: The ``_fmt`` keys that say how the tools and the skill tool are written: the harness half of a read-back, set
#: before the calls' keys (``tools_str``, ``no_tools``) or after them (the skill tool's).
_FMT_BEFORE_CALLS = ("tools_str", "no_tools")
#: The parts the reader copies as they are, unless one is a JSON text (then it parses it).
_JSON_TEXT_PARTS = ("skills", "prompt", "hooks", "hook_events", "meta")
_FMT_AFTER_CALLS = ("skill_tool_str", "skill_tool_default")


def plain_trajectory(record: Record) -> bool:
    """Whether :func:`read_back` of ``record`` converts nothing of its trajectory, so that it is
    :func:`read_back_trajectory` with the harness half of any record of the same harness: no extra keys (a top-level
    ``system``, ``functions`` or turn list is read), no skills, prompt, hooks, hook events or meta as a string (a
    JSON text is parsed), and every message a dict of :data:`PLAIN_MESSAGE_KEYS` with a
    role of :data:`PLAIN_ROLES`, its content a string or None and its tool calls a list (their own form is read by
    the reader's call normalizer, which :func:`read_back_trajectory` runs too)."""
    if record["extra"] or any(isinstance(record.get(k), str) for k in _JSON_TEXT_PARTS):
        return False  # a JSON text there is parsed by the reader (hsa.formats.json_texts)
    for m in record["messages"]:
        if type(m) is not dict or m.get("role") not in PLAIN_ROLES or not m.keys() <= PLAIN_MESSAGE_KEYS:
            return False
        content = m.get("content")
        if content is not None and type(content) is not str:
            return False
        if "tool_calls" in m and type(m["tool_calls"]) is not list:
            return False
    return True


def harness_read_back(back: Record) -> tuple[bytes, dict, tuple, tuple] | None:
    """The harness half of ``back`` (what :func:`read_back` gave): its tools as JSON, its skill tool and the
    ``_fmt`` keys that say how they are written; None when JSON does not give the tools back exactly (their types)."""
    try:
        data = _json.dumps_bytes(back["tools"])
    except (TypeError, ValueError):
        return None
    if repr(_json.loads(data)) != repr(back["tools"]):
        return None
    fmt = back["_fmt"]
    return (data, dict(back["skill_tool"]), tuple((k, fmt[k]) for k in _FMT_BEFORE_CALLS if k in fmt),
            tuple((k, fmt[k]) for k in _FMT_AFTER_CALLS if k in fmt))


def read_back_trajectory(record: Record, harness: tuple[bytes, dict, tuple, tuple], *, tools: list | None = None
                         ) -> Record | None:
    """:func:`read_back` of a :func:`plain_trajectory` record, given its harness half (:func:`harness_read_back` of
    a record with the same tools, skill tool and ``_fmt``): the trajectory written and read as the reader reads it
    (the same JSON, the same call normalizer and structure check), the harness half taken as it is. The same record,
    key order included (tested against :func:`read_back` on the property suite), but the mapping, transforms and
    notes, which are empty (the caller's: :func:`read_back`'s notes say what the reader converted or noticed on the
    way); None when the structure check asks for the full reader (which then raises or reads it). ``tools``: the
    harness half's tools as parsed once, given as they are (the caller's, read only), instead of parsed afresh."""
    fmt = record.get("_fmt", {})
    row: dict[str, Any] = {"id": record["id"], "messages": _written_messages(record["messages"], fmt)}
    for key in _JSON_TEXT_PARTS:
        if key in record:
            row[key] = record[key]  # type: ignore[literal-required]
    raw = _json.loads(_json.dumps(row))
    if not _fast_structure_ok(raw):
        return None
    data, skill_tool, before, after = harness
    out_fmt: dict[str, Any] = dict(before)
    out_messages: list[Message] = []
    for mi, m in enumerate(raw["messages"]):
        if m.get("tool_calls"):
            m["tool_calls"] = [_normalize_call(c, f"messages[{mi}].tool_calls[{ci}]", out_fmt)
                               for ci, c in enumerate(m["tool_calls"])]
        out_messages.append(m)
    out_fmt.update(after)
    rid = raw.get("id")
    out: Record = {  # type: ignore[typeddict-item]
        "id": str(rid), "messages": out_messages, "tools": _json.loads(data) if tools is None else tools,
        "skill_tool": dict(skill_tool), "mapping": [], "transforms": [], "notes": [], "extra": {}, "_fmt": out_fmt}
    for key in _JSON_TEXT_PARTS:
        if raw.get(key) is not None:
            out[key] = raw[key]  # type: ignore[literal-required]
    return out


def _written_messages(messages: list, fmt: dict[str, Any]) -> list:
    """``messages`` as a row writes them: each tool call in the form ``fmt`` says (a message with calls copied)."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = dict(m)
            m["tool_calls"] = [_denormalize_call(c, fmt) for c in m["tool_calls"]]
        out.append(m)
    return out


def denormalize(record: Record, *, call_arguments: str = "keep", tools: list[dict] | None = None) -> dict[str, Any]:
    """Write ``record`` back as an input-format object, in the dialect it came in.

    ``call_arguments`` is ``hsa augment --call-arguments``: ``keep`` writes tool-call arguments in the form the
    record came with, ``object`` / ``string`` all in that form (the manifest's ``call_arguments`` says which a
    run used). ``tools``: ``[denormalize_tool(t) for t in record["tools"]]``, where the caller has it (the pipeline
    keeps it in a slot plan for the variants that share their tools); the object written has it, read only, like
    the record's other parts."""
    fmt = record.get("_fmt", {})
    if call_arguments != "keep":
        if call_arguments not in ("object", "string"):
            raise ValueError(f"call_arguments must be 'keep', 'object' or 'string' (got {call_arguments!r})")
        fmt = {**fmt, "args": call_arguments}
    out: dict[str, Any] = {"id": record["id"], "messages": _written_messages(record["messages"], fmt)}
    if fmt.get("no_tools") and not record["tools"]:
        if fmt["no_tools"] == "null":
            out["tools"] = None
    else:
        if tools is None:
            tools = [denormalize_tool(t) for t in record["tools"]]
        out["tools"] = json.dumps(tools, ensure_ascii=False) if fmt.get("tools_str") else tools
    for key in ("skills",):
        if key in record:
            out[key] = record[key]  # type: ignore[literal-required]
    st = record["skill_tool"]
    if fmt.get("skill_tool_default") and st == DEFAULT_SKILL_TOOL:
        pass
    elif fmt.get("skill_tool_str") and st["argument"] == DEFAULT_SKILL_TOOL["argument"]:
        out["skill_tool"] = st["name"]
    else:
        out["skill_tool"] = dict(st)
    for key in ("prompt", "hooks", "hook_events", "meta"):
        if key in record:
            out[key] = record[key]  # type: ignore[literal-required]
    out.update(record.get("extra", {}))
    return out
