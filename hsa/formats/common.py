"""What the layout readers of :mod:`hsa.formats` share: literals, calls, results, tools and notes.

Every reader builds OpenAI / Hugging Face chat messages: :func:`tool_call` makes a call with object
arguments (:func:`read_arguments` parses JSON or Python-literal argument text), :func:`take_call` pairs a
result with the unanswered call it answers, :func:`merge_tools` joins the tools a layout carries with the
row's own, and :func:`with_notes` / :func:`dropped_note` say what was converted or dropped.
:func:`parse_literal` reads JSON or a Python literal without evaluating anything (the evaluation parsers
use it too).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from hsa import _json
from hsa.record_model import RecordError

__all__ = [
    "SHAREGPT_ROLES",
    "TEXT_TURN_ROLES",
    "block_content",
    "check_tools",
    "count_dropped",
    "cut_spans",
    "declared_names",
    "dropped_note",
    "json_spans",
    "json_text",
    "merge_tools",
    "noted",
    "parse_json_field",
    "parse_literal",
    "plural",
    "read_arguments",
    "read_turn",
    "strip_body",
    "take_call",
    "text_turn_messages",
    "text_turns",
    "tool_call",
    "tool_name",
    "with_notes",
]


_LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _from_node(node: ast.AST) -> Any:
    """The JSON value of a literal expression node (JSON and Python spellings of constants both accepted)."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float, bool))):
        return node.value
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _from_node(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_from_node(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            key = None if k is None else _from_node(k)
            if not isinstance(key, str):
                raise ValueError("a dict key is not a string")
            out[key] = _from_node(v)
        return out
    raise ValueError(f"{type(node).__name__} at line {getattr(node, 'lineno', '?')} is not a literal")


def parse_literal(text: str) -> Any:
    """``text`` as JSON, else as a Python literal (single quotes, True/None; true/null also accepted).

    Raises ``ValueError`` saying why neither reading works. Nothing is evaluated.
    """
    try:
        return _json.loads(text)
    except ValueError:
        pass
    except RecursionError:
        raise ValueError("nested too deeply") from None
    try:
        node = ast.parse(text.strip(), mode="eval").body
        return _from_node(node)
    except SyntaxError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.offset}") from None
    except (RecursionError, MemoryError):
        raise ValueError("nested too deeply") from None


def strip_body(text: str) -> str:
    """The text between two tags, without surrounding whitespace or escaped ``\\n`` sequences."""
    text = text.strip()
    while text.startswith("\\n"):
        text = text[2:].lstrip()
    while text.endswith("\\n") and not text.endswith("\\\\n"):
        text = text[:-2].rstrip()
    return text


def json_text(value: Any) -> str:
    """A tool result as message content: strings unchanged, anything else as JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_call(call_id: str, name: str, arguments: dict, extra: dict | None = None) -> dict:
    """An OpenAI tool call with object arguments (``extra``: other keys of the source call, kept)."""
    function = {"name": name, "arguments": arguments}
    if extra:
        function.update(extra)
    return {"id": call_id, "type": "function", "function": function}


def read_arguments(value: Any, where: str, name: str) -> dict:
    """Call arguments as an object: JSON / Python-literal strings are parsed; ``None`` and ``""`` are ``{}``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            value = parse_literal(value)
        except ValueError as exc:
            raise RecordError("arguments not JSON", f"{where} ({name}): the arguments string is not JSON or a "
                              f"Python literal ({exc}); write arguments as a JSON object") from None
    if not isinstance(value, dict):
        raise RecordError("bad arguments", f"{where} ({name}): arguments must be an object, got "
                          f"{type(value).__name__}; write them as {{\"param\": value, ...}}")
    return value


def take_call(pending: list[dict], where: str, *, name: str | None = None, call_id: str | None = None) -> dict:
    """The unanswered call a result answers (by id, else by name, else the first) and remove it from ``pending``."""
    if not pending:
        raise RecordError("unmatched tool result", f"{where}: a tool result with no unanswered tool call before it; "
                          "a result must follow the assistant turn that made the call")
    for i, c in enumerate(pending):
        if call_id is not None and c["id"] == call_id:
            return pending.pop(i)
    for i, c in enumerate(pending):
        if name is not None and c["function"]["name"] == name:
            return pending.pop(i)
    if name is not None or call_id is not None:
        open_calls = [(c["id"], c["function"]["name"]) for c in pending]
        raise RecordError("unmatched tool result", f"{where}: the result names {name or call_id!r}, but the unanswered "
                          f"calls before it are {open_calls}; make it answer one of them")
    return pending.pop(0)


def tool_name(tool: Any) -> str | None:
    """The name of a tool definition (OpenAI or flat), or None when it has none."""
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
    return name if isinstance(name, str) and name else None


def check_tools(tools: list, where: str) -> list:
    """``tools``, or a RecordError naming the first that has no name."""
    for i, t in enumerate(tools):
        if tool_name(t) is None:
            raise RecordError("bad tool", f"{where}: tool {i + 1} is {str(t)[:80]!r}, expected an object with a 'name' "
                              "(or an OpenAI {\"type\": \"function\", \"function\": {\"name\", ...}})")
    return tools


def merge_tools(raw: dict, found: list, source: str, notes: list[str]) -> Any:
    """The row's ``tools`` plus the ``found`` ones; a name defined in both keeps the row's definition (noted)."""
    existing = raw.get("tools")
    if existing is None or existing == [] or existing == "":
        return found
    if isinstance(existing, str):
        try:
            existing = _json.loads(existing)
        except ValueError:
            raise RecordError("bad tools", "'tools' is a string that is not JSON") from None
    if not isinstance(existing, list):
        raise RecordError("bad tools", f"'tools' is {type(existing).__name__}, expected a list")
    if not found:
        return existing
    names = {tool_name(t): t for t in existing}
    out = list(existing)
    for t in found:
        name = tool_name(t)
        if name in names:
            same = _json.canonical(names[name]) == _json.canonical(t)
            notes.append(f"tool {name!r} of {source} is also in 'tools'"
                         + ("" if same else " with a different definition; the one in 'tools' kept"))
        else:
            out.append(t)
            names[name] = t
    return out


def json_spans(text: str, start: "re.Pattern[str]", accept: Callable[[Any], list | None]) -> list[tuple[int, int, list]]:
    """``(start, end, accept(value))`` of each JSON value in ``text`` that begins where ``start`` matches and that
    ``accept`` takes (gives a list for); the values do not overlap (the scan goes on after each one taken)."""
    found, decoder, pos = [], json.JSONDecoder(), 0
    for m in start.finditer(text):
        if m.start() < pos:
            continue
        try:
            value, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        taken = accept(value)
        if taken:
            found.append((m.start(), end, taken))
            pos = end
    return found


def cut_spans(text: str, spans: list[tuple[int, int, Any]]) -> str:
    """``text`` without the ``(start, end, ...)`` spans of :func:`json_spans`: a "." right after a span goes with it,
    and so does the line break after a span that was a line of its own."""
    out, pos = [], 0
    for start, end, _ in spans:
        out.append(text[pos:start])
        pos = end + 1 if text[end:end + 1] == "." else end
        rest = text[pos:]
        pos += len(rest) - len(rest.lstrip(" \t"))
        if (start == 0 or text[start - 1] == "\n") and text[pos:pos + 1] == "\n":
            pos += 1
    out.append(text[pos:])
    return "".join(out)


def with_notes(row: dict, notes: list[str]) -> dict:
    """``row`` with ``notes`` appended to its own (a ``notes`` that is not a list is an error)."""
    existing = row.get("notes")
    if existing is not None and not isinstance(existing, list):
        raise RecordError("bad notes", f"'notes' is {type(existing).__name__}, expected a list of strings")
    row["notes"] = list(existing or []) + notes
    return row


def count_dropped(dropped: dict[str, int], what: str, n: int = 1) -> None:
    """Count something dropped; the counts become one ``dropped: ...`` note."""
    dropped[what] = dropped.get(what, 0) + n


def dropped_note(dropped: dict[str, int]) -> list[str]:
    """The counts of :func:`count_dropped` as one ``dropped: ...`` note (none when nothing was dropped)."""
    return ["dropped: " + ", ".join(f"{k} (x{n})" for k, n in sorted(dropped.items()))] if dropped else []


def plural(n: int, word: str) -> str:
    """``n word`` or ``n words``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


#: ShareGPT speakers (``from``) and the chat roles they are (shared with the plain ShareGPT reader in hsa.records).
SHAREGPT_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "tool": "tool", "observation": "tool", "function_response": "tool", "function": "tool",
                  "ipython": "tool"}


def read_turn(turn: Any, where: str) -> tuple[str, Any, dict]:
    """(role, text, other keys) of a ShareGPT ``{from, value}`` or chat ``{role, content}`` turn."""
    if isinstance(turn, dict) and "from" in turn and "value" in turn:
        role = SHAREGPT_ROLES.get(str(turn["from"]).lower())
        if role is None:
            raise RecordError("unknown role", f"{where}: from={turn['from']!r} in a row with Hermes tool tags; "
                              f"expected one of {sorted(SHAREGPT_ROLES)}")
        return role, turn["value"], {k: v for k, v in turn.items() if k not in ("from", "value")}
    if isinstance(turn, dict) and isinstance(turn.get("role"), str):
        role = SHAREGPT_ROLES.get(turn["role"].lower(), turn["role"])
        return role, turn.get("content"), {k: v for k, v in turn.items() if k not in ("role", "content")}
    raise RecordError("bad turn", f"{where} is {str(turn)[:80]!r}; expected {{\"from\", \"value\"}} or "
                      "{\"role\", \"content\"}")


def text_turn_messages(turns: list[tuple[str, str, str]], calls_of, notes: list[str]) -> tuple[list[dict], int, int]:
    """Messages from text turns ``(role, text, where)``: ``calls_of(text, where, notes)`` gives an assistant turn's
    ``(content, [(name, arguments, extra keys)])``; tool turns answer the last turn's calls in order, user turns
    end them. Returns (messages, calls, results)."""
    messages: list[dict] = []
    pending: list[dict] = []
    n_calls = n_results = 0
    for role, text, where in turns:
        if role == "assistant":
            content, found = calls_of(text, where, notes)
            calls = []
            for name, args, extra in found:
                n_calls += 1
                calls.append(tool_call(f"call_{n_calls}", name, read_arguments(args, where, name), extra))
            msg = {"role": "assistant", "content": content}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            pending = list(calls)
        elif role == "tool":
            call = take_call(pending, where)
            n_results += 1
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                             "content": text})
        else:
            messages.append({"role": "user", "content": text})
            pending = []
    return messages, n_calls, n_results


#: Speakers of rows whose turns are all text (ShareGPT ``from`` or chat ``role``), as standard roles.
TEXT_TURN_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant",
                    "assistant": "assistant", "tool": "tool", "function": "tool", "observation": "tool",
                    "function_response": "tool"}


def text_turns(raw: dict) -> tuple[str, list[tuple[str, str]]] | None:
    """``(key, [(speaker, text)])`` of a row whose ``conversations`` (from / value) or ``messages`` (role /
    content) are all text turns of known speakers without structured tool calls; else None."""
    for key, who, what in (("conversations", "from", "value"), ("messages", "role", "content")):
        turns = raw.get(key)
        if not isinstance(turns, list) or not turns:
            continue
        if not all(isinstance(t, dict) and t.get(who) in TEXT_TURN_ROLES and isinstance(t.get(what), str)
                   and not t.get("tool_calls") for t in turns):
            return None
        return key, [(t[who], t[what]) for t in turns]
    return None


def block_content(blocks: list, joiner: str, dropped: dict[str, int]) -> str | list:
    """Text blocks joined into one string; a list of the blocks as they are when any is not text."""
    if all(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in blocks):
        for b in blocks:
            for k in b:
                if k not in ("type", "text"):
                    count_dropped(dropped, f"text block key {k!r}")
        return joiner.join(b["text"] for b in blocks)
    return list(blocks)


def declared_names(tools: Any) -> set[str]:
    """The names of a row's tools (a list, or its JSON text; JSON-text items read too)."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except ValueError:
            return set()
    if not isinstance(tools, list):
        return set()
    names = set()
    for t in tools:
        if isinstance(t, str):
            try:
                t = json.loads(t)
            except ValueError:
                continue
        name = tool_name(t)
        if name:
            names.add(name)
    return names


def parse_json_field(value: Any, what: str) -> Any:
    """``value`` parsed when it is JSON text (a RecordError naming ``what`` when it does not parse)."""
    if isinstance(value, str):
        try:
            return _json.loads(value)
        except ValueError:
            raise RecordError("bad " + what, f"'{what}' is a string that is not JSON") from None
    return value


def noted(row: dict, *notes: str) -> dict:
    """``row`` with ``notes`` appended to its ``notes`` list; a ``notes`` that is not a list is left as it is for
    the schema check to report."""
    existing = row.get("notes")
    if existing is not None and not isinstance(existing, list):
        return row
    return {**row, "notes": list(existing or []) + list(notes)}
