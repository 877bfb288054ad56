"""Widespread public tool-calling layouts, converted to hsa's messages layout.

- **Hermes / Qwen tags** (NousResearch hermes-function-calling-v1, Qwen chat data): ShareGPT
  ``conversations`` or ``messages`` turns; tools in the system turn between ``<tools>`` and
  ``</tools>``, calls in assistant turns as ``<tool_call>{...}</tool_call>``, results as
  ``<tool_response>...</tool_response>``. JSON or Python literals (single quotes) are read.
- **Glaive function-calling v2**: ``{"system": "SYSTEM: ... -\\n{function}\\n\\n{function}",
  "chat": "USER: ...\\n\\n\\nASSISTANT: <functioncall> {...} <|endoftext|>\\n\\n\\nFUNCTION RESPONSE: ..."}``.
  The same turns republished as ShareGPT ``conversations`` (``system``/``human``/``gpt``/``tool``) or as
  ``messages`` with text contents too.
- **ToolACE** (Team-ACE/ToolACE): ``{"system": "... invoke:\\n[{tool json}, ...]. \\nShould you decide ...",
  "conversations": [{"from": "user"|"assistant"|"tool", "value"}]}``; calls are whole assistant turns
  ``[Get Manager Placeholder Image(sport="football"), GetCompetitions()]`` (names with spaces, keyword arguments
  with JSON / Python literal values), results ``[{"name": ..., "results": {...}}, ...]``.
- **Anthropic Messages**: content blocks ``tool_use`` / ``tool_result`` (:func:`convert_messages`).
- **Gemini**: ``{"contents": [{"role", "parts"}], "tools": [{"functionDeclarations"}], "systemInstruction"}``.
- **OpenAI legacy function calling**: ``functions`` beside ``messages``, assistant ``function_call`` and
  ``function`` result messages (:func:`_convert_legacy_openai`).
- **ReAct text** (ToolBench): ``Thought / Action / Action Input`` assistant turns calling declared tools (ToolBench's
  API list in the system text), ``function`` results (:func:`_convert_react`).
- **OpenAI Responses API items** (how the OpenAI Agents SDK logs a run): ``function_call`` /
  ``function_call_output`` items and typed-text ``message`` items in ``messages`` or ``input`` + ``output``,
  ``instructions`` as the system message (:func:`_convert_responses`).
- **LangChain message dicts**: ``messages_to_dict`` / ``dumpd`` output (:func:`_convert_langchain`).
- **Vercel AI SDK** ``tool-call`` / ``tool-result`` content parts, and Ollama's ``tool_name`` on tool messages.
- **Calls left as model output text**: Mistral ``[TOOL_CALLS] [...]`` and Llama 3.1 ``<|python_tag|>{...}`` /
  bare JSON calls to declared tools in assistant text, ``ipython`` results (:func:`_convert_text_calls`).

The result is ``{"messages": [...], "tools": [...], ...other keys of the row..., "notes": [...]}``:
OpenAI / Hugging Face chat messages with ``tool_calls`` (arguments as objects) and ``tool``
messages carrying ``tool_call_id`` and ``name``. Keys that are not converted stay in the row;
anything dropped is named in a note. Conversion is pure: the input row is never modified.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from hsa import _json
from hsa.record_model import RecordError

__all__ = ["convert", "convert_messages"]


# --------------------------------------------------------------------------- shared helpers


def _fail(reason: str, detail: str) -> Exception:
    """A :class:`hsa.record_model.RecordError`."""
    return RecordError(reason, detail)


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


def _parse_literal(text: str) -> Any:
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


def _strip_body(text: str) -> str:
    """The text between two tags, without surrounding whitespace or escaped ``\\n`` sequences."""
    text = text.strip()
    while text.startswith("\\n"):
        text = text[2:].lstrip()
    while text.endswith("\\n") and not text.endswith("\\\\n"):
        text = text[:-2].rstrip()
    return text


def _json_text(value: Any) -> str:
    """A tool result as message content: strings unchanged, anything else as JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _call(call_id: str, name: str, arguments: dict, extra: dict | None = None) -> dict:
    """An OpenAI tool call with object arguments (``extra``: other keys of the source call, kept)."""
    function = {"name": name, "arguments": arguments}
    if extra:
        function.update(extra)
    return {"id": call_id, "type": "function", "function": function}


def _arguments(value: Any, where: str, name: str) -> dict:
    """Call arguments as an object: JSON / Python-literal strings are parsed; ``None`` and ``""`` are ``{}``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            value = _parse_literal(value)
        except ValueError as exc:
            raise _fail("arguments not JSON", f"{where} ({name}): the arguments string is not JSON or a "
                        f"Python literal ({exc}); write arguments as a JSON object") from None
    if not isinstance(value, dict):
        raise _fail("bad arguments", f"{where} ({name}): arguments must be an object, got "
                    f"{type(value).__name__}; write them as {{\"param\": value, ...}}")
    return value


def _take_call(pending: list[dict], where: str, *, name: str | None = None, call_id: str | None = None) -> dict:
    """The unanswered call a result answers (by id, else by name, else the first) and remove it from ``pending``."""
    if not pending:
        raise _fail("unmatched tool result", f"{where}: a tool result with no unanswered tool call before it; "
                    "a result must follow the assistant turn that made the call")
    for i, c in enumerate(pending):
        if call_id is not None and c["id"] == call_id:
            return pending.pop(i)
    for i, c in enumerate(pending):
        if name is not None and c["function"]["name"] == name:
            return pending.pop(i)
    if name is not None or call_id is not None:
        open_calls = [(c["id"], c["function"]["name"]) for c in pending]
        raise _fail("unmatched tool result", f"{where}: the result names {name or call_id!r}, but the unanswered "
                    f"calls before it are {open_calls}; make it answer one of them")
    return pending.pop(0)


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
    return name if isinstance(name, str) and name else None


def _check_tools(tools: list, where: str) -> list:
    for i, t in enumerate(tools):
        if _tool_name(t) is None:
            raise _fail("bad tool", f"{where}: tool {i + 1} is {str(t)[:80]!r}, expected an object with a 'name' "
                        "(or an OpenAI {\"type\": \"function\", \"function\": {\"name\", ...}})")
    return tools


def _merge_tools(raw: dict, found: list, source: str, notes: list[str]) -> Any:
    """The row's ``tools`` plus the ``found`` ones; a name defined in both keeps the row's definition (noted)."""
    existing = raw.get("tools")
    if existing is None or existing == [] or existing == "":
        return found
    if isinstance(existing, str):
        try:
            existing = _json.loads(existing)
        except ValueError:
            raise _fail("bad tools", "'tools' is a string that is not JSON") from None
    if not isinstance(existing, list):
        raise _fail("bad tools", f"'tools' is {type(existing).__name__}, expected a list")
    if not found:
        return existing
    names = {_tool_name(t): t for t in existing}
    out = list(existing)
    for t in found:
        name = _tool_name(t)
        if name in names:
            same = _json.canonical(names[name]) == _json.canonical(t)
            notes.append(f"tool {name!r} of {source} is also in 'tools'"
                         + ("" if same else " with a different definition; the one in 'tools' kept"))
        else:
            out.append(t)
            names[name] = t
    return out


def _with_notes(row: dict, notes: list[str]) -> dict:
    existing = row.get("notes")
    if existing is not None and not isinstance(existing, list):
        raise _fail("bad notes", f"'notes' is {type(existing).__name__}, expected a list of strings")
    row["notes"] = list(existing or []) + notes
    return row


def _count(dropped: dict[str, int], what: str, n: int = 1) -> None:
    """Count something dropped; the counts become one ``dropped: ...`` note."""
    dropped[what] = dropped.get(what, 0) + n


def _dropped_note(dropped: dict[str, int]) -> list[str]:
    return ["dropped: " + ", ".join(f"{k} (x{n})" for k, n in sorted(dropped.items()))] if dropped else []


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --------------------------------------------------------------------------- Hermes / Qwen tags

_TOOLS_RE = re.compile(r"<tools>(.*?)</tools>", re.S)
_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_RESPONSE_RE = re.compile(r"<tool_response>(.*?)</tool_response>", re.S)
_CALL_SHAPE = '{"name": ..., "arguments": {...}}'
#: ShareGPT speakers (``from``) and the chat roles they are (shared with the plain ShareGPT reader in hsa.records).
SHAREGPT_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "tool": "tool", "observation": "tool", "function_response": "tool", "function": "tool",
                  "ipython": "tool"}


def _turn(turn: Any, where: str) -> tuple[str, Any, dict]:
    """(role, text, other keys) of a ShareGPT ``{from, value}`` or chat ``{role, content}`` turn."""
    if isinstance(turn, dict) and "from" in turn and "value" in turn:
        role = SHAREGPT_ROLES.get(str(turn["from"]).lower())
        if role is None:
            raise _fail("unknown role", f"{where}: from={turn['from']!r} in a row with Hermes tool tags; expected "
                        f"one of {sorted(SHAREGPT_ROLES)}")
        return role, turn["value"], {k: v for k, v in turn.items() if k not in ("from", "value")}
    if isinstance(turn, dict) and isinstance(turn.get("role"), str):
        role = SHAREGPT_ROLES.get(turn["role"].lower(), turn["role"])
        return role, turn.get("content"), {k: v for k, v in turn.items() if k not in ("role", "content")}
    raise _fail("bad turn", f"{where} is {str(turn)[:80]!r}; expected {{\"from\", \"value\"}} or "
                "{\"role\", \"content\"}")


def _hermes_turns(raw: dict) -> tuple[str, list] | None:
    """(key, turns) when ``raw`` is a chat row with Hermes tags in the places they belong, else None."""
    for key in ("messages", "conversations"):
        turns = raw.get(key)
        if isinstance(turns, list) and turns:
            break
    else:
        return None
    if not all(isinstance(t, dict) and (("from" in t and "value" in t) or isinstance(t.get("role"), str))
               for t in turns):
        return None
    if any("tool_calls" in t or "tool_call_id" in t for t in turns):
        return None  # already the OpenAI / Hugging Face format
    for t in turns:
        role = SHAREGPT_ROLES.get(str(t.get("from", t.get("role"))).lower())
        text = t.get("value", t.get("content"))
        if not isinstance(text, str):
            continue
        if role == "system" and any(_is_tools_body(m.group(1)) for m in _TOOLS_RE.finditer(text)):
            return key, turns
        if role == "assistant" and "<tool_call>" in text:
            return key, turns
        if role == "tool" and "<tool_response>" in text:
            return key, turns
    return None


def _is_tools_body(body: str) -> bool:
    """True for a ``<tools>`` body holding definitions, False for prose such as ``<tools> </tools>``."""
    return _strip_body(body)[:1] in ("[", "{")


def _parse_tools_block(body: str, where: str) -> list:
    """The tools of one ``<tools>`` block: a list, one object, or objects one after another (JSON or Python)."""
    body = _strip_body(body)
    try:
        value = _parse_literal(body)
    except ValueError as whole_error:
        value = []
        decoder = json.JSONDecoder()
        pos = 0
        while pos < len(body):
            if body[pos].isspace():
                pos += 1
                continue
            try:
                item, pos = decoder.raw_decode(body, pos)
            except (ValueError, RecursionError):
                end = body.find("\n", pos)
                end = len(body) if end < 0 else end
                try:
                    item = _parse_literal(body[pos:end])
                except ValueError:
                    raise _fail("bad tools", f"{where}: the <tools> block is not JSON or Python literals "
                                f"({whole_error}); write a list of tool objects or one object per line") from None
                pos = end
            value.append(item)
    tools = value if isinstance(value, list) else [value]
    return _check_tools(tools, f"{where} <tools> block")


def _remove_tools_blocks(text: str, where: str) -> tuple[str, list]:
    """``text`` without its ``<tools>`` blocks, and their tools. Prose mentions (``<tools></tools>``) stay."""
    tools: list = []
    out, pos = [], 0
    for m in _TOOLS_RE.finditer(text):
        if not _is_tools_body(m.group(1)):
            continue
        tools.extend(_parse_tools_block(m.group(1), where))
        out.append(text[pos:m.start()])
        pos = m.end()
        if text[pos:pos + 1] == "\n" and (m.start() == 0 or text[m.start() - 1] == "\n"):
            pos += 1  # the block was a line of its own
    out.append(text[pos:])
    return "".join(out), tools


def _hermes_calls(text: str, where: str, counter: list[int], notes: list[str]) -> tuple[list, str]:
    """The ``<tool_call>`` blocks of an assistant turn as tool calls, and the text outside them."""
    blocks = list(_CALL_RE.finditer(text))
    if text.count("<tool_call>") != len(blocks):
        raise _fail("bad tool call", f"{where}: a <tool_call> without its closing </tool_call>; close every tag")
    calls = []
    for k, m in enumerate(blocks, 1):
        body = _strip_body(m.group(1))
        try:
            value = _parse_literal(body)
        except ValueError as exc:
            raise _fail("bad tool call", f"{where}: <tool_call> {k} is neither JSON nor a Python literal ({exc}); "
                        "expected {\"name\": ..., \"arguments\": {...}}") from None
        for item in value if isinstance(value, list) else [value]:
            calls.append(_hermes_call(item, f"{where} <tool_call> {k}", counter, notes))
    content = _CALL_RE.sub("", text).strip()
    return calls, content


def _hermes_call(item: Any, where: str, counter: list[int], notes: list[str]) -> dict:
    if not isinstance(item, dict):
        raise _fail("bad tool call", f"{where} is {type(item).__name__}; expected {_CALL_SHAPE}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        hint = ""
        if isinstance(item.get("arguments"), dict) and "name" in item["arguments"]:
            hint = " ('name' is inside 'arguments'; move it to the top level of the call)"
        raise _fail("bad tool call", f"{where} has no string 'name'{hint}; expected {_CALL_SHAPE}")
    arg_key = "arguments" if "arguments" in item or "parameters" not in item else "parameters"
    arguments = _arguments(item.get(arg_key), where, name)
    counter[0] += 1
    call_id = item["id"] if isinstance(item.get("id"), str) and item["id"] else f"call_{counter[0]}"
    extra = {k: v for k, v in item.items() if k not in ("name", arg_key, "id")}
    if extra:
        notes.append(f"{where}: keys {sorted(extra)} besides name/arguments kept in the call's function")
    return _call(call_id, name, arguments, extra)


def _hermes_results(text: str, pending: list, where: str, extra: dict) -> list[dict]:
    """Tool messages for the ``<tool_response>`` blocks of ``text`` (the whole text when it has none).

    Each answers the unanswered call it names (a ``"name"`` in its JSON, else the turn's ``name`` key),
    else the first unanswered call of the preceding assistant turn.
    """
    blocks = list(_RESPONSE_RE.finditer(text))
    if text.count("<tool_response>") != len(blocks):
        raise _fail("bad tool result", f"{where}: a <tool_response> without its closing </tool_response>; "
                    "close every tag")
    bodies = [_strip_body(m.group(1)) for m in blocks] or [text.strip()]
    out = []
    for k, body in enumerate(bodies, 1):
        declared = extra.get("name") if isinstance(extra.get("name"), str) and len(bodies) == 1 else None
        try:
            value = _parse_literal(body)
            if isinstance(value, dict) and isinstance(value.get("name"), str):
                declared = value["name"]
        except ValueError:
            pass
        call = _take_call(pending, f"{where} <tool_response> {k}", name=declared)
        out.append({**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                    "content": body})
    return out


def _convert_hermes(raw: dict, key: str, turns: list) -> dict:
    notes: list[str] = []
    messages: list[dict] = []
    tools: list = []
    pending: list[dict] = []
    counter = [0]
    n_results = 0
    for i, t in enumerate(turns):
        where = f"{key}[{i}]"
        role, text, extra = _turn(t, where)
        if not isinstance(text, str):
            messages.append({**extra, "role": role, "content": text})
            continue
        if role == "system":
            text, found = _remove_tools_blocks(text, where)
            tools.extend(found)
            if found and not text.strip():
                notes.append(f"{where}: the system turn held only the <tools> block; dropped")
                continue
            messages.append({**extra, "role": "system", "content": text})
        elif role == "assistant":
            calls, content = _hermes_calls(text, where, counter, notes)
            msg = {**extra, "role": "assistant", "content": content if calls else text}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            pending = list(calls)
        elif role == "tool":
            results = _hermes_results(text, pending, where, extra)
            if "<tool_response>" in text and _RESPONSE_RE.sub("", text).strip():
                raise _fail("bad tool result", f"{where}: text outside the <tool_response> tags of a tool turn; "
                            "put each result inside its own <tool_response> block")
            n_results += len(results)
            messages.extend(results)
        elif role == "user" and "<tool_response>" in text:
            results = _hermes_results(text, pending, where, extra)
            n_results += len(results)
            messages.extend(results)
            rest = _RESPONSE_RE.sub("", text).strip()
            if rest:
                messages.append({**extra, "role": "user", "content": rest})
        else:
            messages.append({**extra, "role": role, "content": text})
            if role == "user":
                pending = []
    out = {k: v for k, v in raw.items() if k != key}
    out["messages"] = messages
    if tools or "tools" in raw:
        out["tools"] = _merge_tools(raw, tools, "the <tools> block", notes)
    summary = (f"converted from the Hermes tool-tag layout ({key} with <tools>/<tool_call>/<tool_response>): "
               f"{_plural(len(tools), 'tool')}, {_plural(counter[0], 'call')}, {_plural(n_results, 'result')}")
    return _with_notes(out, [summary] + notes)


# --------------------------------------------------------------------------- Glaive function-calling v2

_GLAIVE_TURN_RE = re.compile(r"(?:\A|\n)[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?")
_GLAIVE_ROLES = {"USER": "user", "ASSISTANT": "assistant", "FUNCTION RESPONSE": "tool"}
_GLAIVE_QUOTED_ARGS = re.compile(r"""\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*'(.*)'\s*\}""", re.S)
_END = "<|endoftext|>"


def _is_glaive(raw: dict) -> bool:
    return (isinstance(raw.get("system"), str) and isinstance(raw.get("chat"), str)
            and raw["system"].lstrip().startswith("SYSTEM:") and "messages" not in raw
            and _GLAIVE_TURN_RE.match(raw["chat"].lstrip()) is not None)


def _glaive_system(system: str) -> tuple[str, list]:
    """The prose of a Glaive system text and the function definitions that follow it."""
    body = system.lstrip()[len("SYSTEM:"):].lstrip(" ")
    start = re.search(r"(?m)^[ \t]*\{", body)
    if start is None:
        return body.strip(), []
    prose, rest = body[:start.start()], body[start.start():]
    decoder = json.JSONDecoder()
    tools, pos = [], 0
    while pos < len(rest):
        if rest[pos].isspace():
            pos += 1
            continue
        try:
            tool, pos = decoder.raw_decode(rest, pos)
        except (ValueError, RecursionError) as exc:
            raise _fail("bad tools", f"system: function definition {len(tools) + 1} is not JSON ({exc}); "
                        "expected JSON objects separated by blank lines after the prose") from None
        tools.append(tool)
    return prose.rstrip(), _check_tools(tools, "system")


def _glaive_call(text: str, where: str) -> tuple[str, Any]:
    """(name, arguments) of a ``<functioncall>`` payload; arguments may be JSON quoted in single quotes."""
    try:
        value = _parse_literal(text)
    except ValueError as exc:
        m = _GLAIVE_QUOTED_ARGS.fullmatch(text.strip())
        if m is None:
            raise _fail("bad tool call", f"{where}: the <functioncall> payload is not JSON or a Python literal "
                        f"({exc}); expected {{\"name\": ..., \"arguments\": '{{...}}'}}") from None
        value = {"name": json.loads(m.group(1)), "arguments": m.group(2)}
    if not isinstance(value, dict):
        raise _fail("bad tool call", f"{where}: the <functioncall> payload is {type(value).__name__}; "
                    "expected {\"name\": ..., \"arguments\": ...}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise _fail("bad tool call", f"{where}: <functioncall> has no string 'name'; "
                    "expected {\"name\": ..., \"arguments\": '{...}'}")
    return name, value


def _text_turn_messages(turns: list[tuple[str, str, str]], calls_of, notes: list[str]) -> tuple[list[dict], int, int]:
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
                calls.append(_call(f"call_{n_calls}", name, _arguments(args, where, name), extra))
            msg = {"role": "assistant", "content": content}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            pending = list(calls)
        elif role == "tool":
            call = _take_call(pending, where)
            n_results += 1
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                             "content": text})
        else:
            messages.append({"role": "user", "content": text})
            pending = []
    return messages, n_calls, n_results


def _glaive_text_calls(text: str, where: str, notes: list[str]) -> tuple[str, list[tuple[str, Any, dict]]]:
    """The text and the ``<functioncall>`` payloads of a Glaive assistant turn."""
    if text.endswith(_END):
        text = text[:-len(_END)].rstrip()
    content, *payloads = text.split("<functioncall>")
    found = []
    for payload in payloads:
        name, value = _glaive_call(payload.strip().removesuffix(_END).rstrip(), where)
        extra = {k: v for k, v in value.items() if k not in ("name", "arguments")}
        if extra:
            notes.append(f"{where}: keys {sorted(extra)} besides name/arguments kept in the call's function")
        found.append((name, value.get("arguments"), extra))
    return (content.strip() if found else content), found


def _glaive_turns(turns: list[tuple[str, str, str]], notes: list[str]) -> tuple[list[dict], int, int]:
    """Messages from Glaive turns ``(role, text, where)``: ``<functioncall>`` payloads in assistant text become
    tool calls, tool turns the results of the last turn's calls; (messages, calls, results)."""
    return _text_turn_messages(turns, _glaive_text_calls, notes)


def _convert_glaive(raw: dict) -> dict:
    notes: list[str] = []
    prose, tools = _glaive_system(raw["system"])
    chat = raw["chat"]
    marks = list(_GLAIVE_TURN_RE.finditer(chat))
    if chat[:marks[0].start()].strip():
        raise _fail("bad chat", "chat: text before the first USER:/ASSISTANT: marker; start the chat with 'USER: '")
    turns = [(_GLAIVE_ROLES[m.group(1)], chat[m.end():marks[k + 1].start() if k + 1 < len(marks) else len(chat)].strip(),
              f"chat turn {k + 1} ({m.group(1)})") for k, m in enumerate(marks)]
    body, n_calls, n_results = _glaive_turns(turns, notes)
    out = {k: v for k, v in raw.items() if k not in ("system", "chat")}
    out["messages"] = ([{"role": "system", "content": prose}] if prose else []) + body
    out["tools"] = _merge_tools(raw, tools, "the system text", notes)
    summary = (f"converted from the Glaive function-calling v2 layout (system/chat): {_plural(len(tools), 'tool')}, "
               f"{_plural(n_calls, 'call')}, {_plural(n_results, 'result')}")
    return _with_notes(out, [summary] + notes)


#: Speakers of rows whose turns are all text (ShareGPT ``from`` or chat ``role``), as standard roles.
_TEXT_TURN_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant",
                    "assistant": "assistant", "tool": "tool", "function": "tool", "observation": "tool",
                    "function_response": "tool"}


def _text_turns(raw: dict) -> tuple[str, list[tuple[str, str]]] | None:
    """``(key, [(speaker, text)])`` of a row whose ``conversations`` (from / value) or ``messages`` (role /
    content) are all text turns of known speakers without structured tool calls; else None."""
    for key, who, what in (("conversations", "from", "value"), ("messages", "role", "content")):
        turns = raw.get(key)
        if not isinstance(turns, list) or not turns:
            continue
        if not all(isinstance(t, dict) and t.get(who) in _TEXT_TURN_ROLES and isinstance(t.get(what), str)
                   and not t.get("tool_calls") for t in turns):
            return None
        return key, [(t[who], t[what]) for t in turns]
    return None


def _glaive_turns_of(raw: dict) -> tuple[str, list[tuple[str, str]]] | None:
    """The text turns (:func:`_text_turns`) of a Glaive row republished as ShareGPT ``conversations`` or as
    ``messages``: assistant turns with ``<functioncall>``, or a system turn in Glaive's ``SYSTEM: ...`` form
    holding the function definitions; else None."""
    found = _text_turns(raw)
    if found is None:
        return None
    calls = any("<functioncall>" in text for who, text in found[1] if _TEXT_TURN_ROLES[who] == "assistant")
    glaive_system = any(text.lstrip().startswith("SYSTEM:") and re.search(r"(?m)^[ \t]*\{", text)
                        for who, text in found[1] if who == "system")  # function definitions follow the prose
    return found if calls or glaive_system else None


def _convert_glaive_sharegpt(raw: dict, key: str, turns: list[tuple[str, str]]) -> dict:
    notes: list[str] = []
    system = "\n\n".join(text for who, text in turns if who == "system")
    if system.lstrip().startswith("SYSTEM:"):
        prose, tools = _glaive_system(system)
    else:
        prose, tools = system.strip(), []
    body, n_calls, n_results = _glaive_turns(
        [(_TEXT_TURN_ROLES[who], text.strip(), f"{key}[{i}] ({who})")
         for i, (who, text) in enumerate(turns) if who != "system"], notes)
    out = {k: v for k, v in raw.items() if k != key}
    out["messages"] = ([{"role": "system", "content": prose}] if prose else []) + body
    out["tools"] = _merge_tools(raw, tools, "the system turn", notes)
    layout = "ShareGPT conversations" if key == "conversations" else "chat messages"
    summary = (f"converted from Glaive function calling in {layout}: {_plural(len(tools), 'tool')}, "
               f"{_plural(n_calls, 'call')}, {_plural(n_results, 'result')}")
    return _with_notes(out, [summary] + notes)


# --------------------------------------------------------------------------- ToolACE

#: Speakers of a ToolACE row; a row with other turns (LLaMA-Factory's function_call/observation) is not ToolACE.
_TOOLACE_ROLES = {"system", "user", "human", "assistant", "gpt", "tool"}
#: The call-format instruction of ToolACE system texts: "[func1(params_name=params_value, ...), func2(params)]".
_TOOLACE_FORMAT_RE = re.compile(r"\[func\w*\(params?_name")
#: An assistant turn that is a call list: "[" + a name (any characters but brackets, quotes, "=" and ",") + "(".
_TOOLACE_CALL_HEAD = re.compile(r"\[\s*[^\s\[\](){}=,\"'][^\[\](){}=,\"'\n]*\(")
_TOOLACE_NAME_STOP = frozenset("()[]{}=,\"'\n")
_TOOLACE_SHAPE = '[Name(param="text", n=3), Other(flag=True, items=[1, 2])]'


def _toolace_tool_lists(text: str) -> list[tuple[int, int, list]]:
    """(start, end, tools) of each JSON list of named tool objects in ``text``."""
    found, decoder, pos = [], json.JSONDecoder(), 0
    for m in re.finditer(r"\[\s*\{", text):
        if m.start() < pos:
            continue
        try:
            value, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, list) and value and all(_tool_name(t) is not None for t in value):
            found.append((m.start(), end, value))
            pos = end
    return found


def _is_toolace_calls(text: Any) -> bool:
    """True for an assistant text that is a whole ``[Name(...), ...]`` call list."""
    if not isinstance(text, str):
        return False
    s = text.strip()
    return s.endswith("]") and _TOOLACE_CALL_HEAD.match(s) is not None


def _toolace_turns(raw: dict) -> list | None:
    """The turns when ``raw`` is a ToolACE row, else None.

    A ToolACE row: ``conversations`` of ``{from, value}`` turns by system/user/assistant/tool only (no "messages"),
    a system text (top-level ``system`` or a system turn) holding a JSON list of tool objects, and either an
    assistant turn that is a ``[Name(...)]`` call list or the ``[func1(params_name=...)]`` instruction in the
    system text (rows where the assistant answers or asks without calling).
    """
    turns = raw.get("conversations")
    if "messages" in raw or not isinstance(turns, list) or not turns:
        return None
    if not all(isinstance(t, dict) and "from" in t and "value" in t and str(t["from"]).lower() in _TOOLACE_ROLES
               for t in turns):
        return None
    roles = [str(t["from"]).lower() for t in turns]
    systems = [raw["system"]] if isinstance(raw.get("system"), str) else []
    systems += [t["value"] for t, r in zip(turns, roles) if r == "system" and isinstance(t["value"], str)]
    with_tools = [s for s in systems if _toolace_tool_lists(s)]
    if not with_tools:
        return None
    if any(r in ("assistant", "gpt") and _is_toolace_calls(t["value"]) for t, r in zip(turns, roles)):
        return turns
    if any(_TOOLACE_FORMAT_RE.search(s) for s in with_tools):
        return turns
    return None


def _toolace_system(text: str, where: str) -> tuple[str, list]:
    """The system text without its JSON tool lists (a "." right after a list goes with it), and their tools."""
    out, pos, tools = [], 0, []
    for start, end, found in _toolace_tool_lists(text):
        tools.extend(_check_tools(found, f"{where} tool list"))
        out.append(text[pos:start])
        pos = end + 1 if text[end:end + 1] == "." else end
        rest = text[pos:]
        stripped = rest.lstrip(" \t")
        pos += len(rest) - len(stripped)
        if (start == 0 or text[start - 1] == "\n") and text[pos:pos + 1] == "\n":
            pos += 1  # the list was a line of its own
    out.append(text[pos:])
    return "".join(out), tools


class _ToolaceCalls:
    """A tokenizer for ToolACE call lists: ``[Name(key=literal, ...), ...]``.

    Names may hold spaces, dots, slashes and dashes (``Get Manager Placeholder Image``, ``/madlibs-diceware``),
    so the list is not Python: a name is read up to its ``(`` (a defined tool name is preferred, so a name
    holding ``(`` works too); each value is scanned to its ``,`` or ``)`` outside brackets and strings and read
    as a JSON or Python literal. Nothing is evaluated.
    """

    def __init__(self, text: str, where: str, names: list[str]):
        self.s, self.i, self.where, self.names = text.strip(), 0, where, names

    def fail(self, what: str) -> Exception:
        near = self.s[max(0, self.i - 30):self.i + 30]
        return _fail("bad tool call", f"{self.where}: the call list is broken at character {self.i + 1} ({what}; "
                     f"near {near!r}); expected [Name(param=value, ...), ...] with JSON or Python literal values, "
                     f"e.g. {_TOOLACE_SHAPE}")

    def peek(self) -> str:
        return self.s[self.i:self.i + 1]

    def space(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def more(self, closer: str, after: str) -> bool:
        """After an item of a list: True past a ',' with another item to come, False past ``closer`` (a trailing
        ',' before it is allowed); anything else is an error."""
        self.space()
        if self.peek() == ",":
            self.i += 1
            self.space()
            if self.peek() != closer:
                return True
        if self.peek() != closer:
            raise self.fail(f"expected ',' or {closer!r} after {after}")
        self.i += 1
        return False

    def parse(self) -> list[tuple[str, dict]]:
        self.i = 1  # past the "[" (the caller checked the shape)
        calls = []
        while True:
            self.space()
            calls.append(self.call())
            if not self.more("]", "a call"):
                break
        self.space()
        if self.i < len(self.s):
            raise self.fail("text after the closing ']'")
        return calls

    def name(self) -> str:
        for known in self.names:
            if self.s.startswith(known, self.i) and self.s[self.i + len(known):].lstrip()[:1] == "(":
                self.i += len(known)
                return known
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in _TOOLACE_NAME_STOP:
            self.i += 1
        name = self.s[start:self.i].strip()
        if not name:
            raise self.fail("a call without a name")
        return name

    def call(self) -> tuple[str, dict]:
        name = self.name()
        self.space()
        if self.peek() != "(":
            raise self.fail(f"expected '(' after the name {name!r}")
        self.i += 1
        args: dict[str, Any] = {}
        self.space()
        if self.peek() == ")":
            self.i += 1
            return name, args
        while True:
            self.space()
            start = self.i
            while self.i < len(self.s) and not self.s[self.i].isspace() and self.s[self.i] not in "=()[]{},\"'":
                self.i += 1
            key = self.s[start:self.i]
            self.space()
            if not key or self.peek() != "=":
                self.i = start
                raise self.fail(f"argument {len(args) + 1} of {name!r} has no name; write every argument as "
                                "param=value")
            self.i += 1
            self.space()
            start = self.i
            self.value()
            text = self.s[start:self.i].strip()
            if not text:
                raise self.fail(f"{key}= has no value")
            try:
                value = _parse_literal(text)
            except ValueError as exc:
                self.i = start
                raise self.fail(f"the value of {key!r} is not a JSON or Python literal ({exc}); quote text "
                                "values") from None
            if key in args:
                raise self.fail(f"{key!r} is given twice")
            args[key] = value
            if not self.more(")", f"the value of {key!r}"):
                return name, args

    def value(self) -> None:
        """Move past one value: up to a ',' or ')' outside brackets and strings."""
        closers: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in "\"'":
                self.string()
                continue
            if c in "([{":
                closers.append(")]}"["([{".index(c)])
            elif c in ")]}":
                if not closers:
                    if c == ")":
                        return
                    raise self.fail(f"an unmatched {c!r} (is a ')' missing?)")
                if c != closers[-1]:
                    raise self.fail(f"{c!r} where {closers[-1]!r} was expected")
                closers.pop()
            elif c == "," and not closers:
                return
            self.i += 1
        raise self.fail("the call is not closed with ')'")

    def string(self) -> None:
        quote = self.s[self.i] * 3 if self.s.startswith(self.s[self.i] * 3, self.i) else self.s[self.i]
        start = self.i
        self.i += len(quote)
        while self.i < len(self.s):
            if self.s[self.i] == "\\":
                self.i += 2
            elif self.s.startswith(quote, self.i):
                self.i += len(quote)
                return
            else:
                self.i += 1
        self.i = start
        raise self.fail("a string is not closed")


def _toolace_results(text: str, pending: list, where: str, extra: dict, notes: list[str]) -> list[dict]:
    """Tool messages for a tool turn ``[{"name", "results"}, ...]``, paired with the calls by name, else in order.

    Content: the JSON text of each ``results`` (the item without its "name" when it holds other keys too; the
    whole item when its name answers no open call). A turn that is not such a list is one result, kept whole.
    """
    try:
        value = _parse_literal(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        value = [value]
    if not (isinstance(value, list) and value and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                                      for v in value)):
        call = _take_call(pending, where)
        if pending:
            notes.append(f"{where}: not a list of {{\"name\", \"results\"}}; kept whole as the result of "
                         f"{call['id']} ({call['function']['name']})")
        return [{**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                 "content": text}]
    out = []
    for k, item in enumerate(value, 1):
        at = f"{where} result {k}"
        if any(c["function"]["name"] == item["name"] for c in pending):
            call = _take_call(pending, at, name=item["name"])
            rest = {key: v for key, v in item.items() if key != "name"}
            content = _json_text(rest["results"] if list(rest) == ["results"] else rest)
        else:
            call = _take_call(pending, at)
            notes.append(f"{at} names {item['name']!r}, which no open call has; paired in order with "
                         f"{call['id']} ({call['function']['name']}) and kept whole")
            content = _json_text(item)
        out.append({**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                    "content": content})
    return out


def _convert_toolace(raw: dict, turns: list) -> dict:
    notes: list[str] = []
    messages: list[dict] = []
    tools: list = []
    system = raw.get("system")
    if isinstance(system, str):
        prose, found = _toolace_system(system, "system")
        tools.extend(found)
        if prose.strip():
            messages.append({"role": "system", "content": prose})
        elif found:
            notes.append("system: held only the tool list; dropped")
    for i, t in enumerate(turns):
        if _turn(t, f"conversations[{i}]")[0] == "system" and isinstance(t["value"], str):
            tools.extend(_toolace_system(t["value"], f"conversations[{i}]")[1])
    names = sorted({n for n in (_tool_name(t) for t in tools) if n}, key=len, reverse=True)
    pending: list[dict] = []
    n_calls = n_results = 0
    for i, t in enumerate(turns):
        where = f"conversations[{i}]"
        role, text, extra = _turn(t, where)
        if not isinstance(text, str):
            messages.append({**extra, "role": role, "content": text})
        elif role == "system":
            prose, found = _toolace_system(text, where)
            if found and not prose.strip():
                notes.append(f"{where}: the system turn held only the tool list; dropped")
                continue
            messages.append({**extra, "role": "system", "content": prose})
        elif role == "assistant" and _is_toolace_calls(text):
            calls = []
            for name, args in _ToolaceCalls(text, f"{where} (assistant)", names).parse():
                n_calls += 1
                calls.append(_call(f"call_{n_calls}", name, args))
            messages.append({**extra, "role": "assistant", "content": "", "tool_calls": calls})
            pending = list(calls)
        elif role == "tool":
            results = _toolace_results(text, pending, f"{where} (tool)", extra, notes)
            n_results += len(results)
            messages.extend(results)
        else:
            if role == "assistant" and _TOOLACE_CALL_HEAD.match(text.strip()):
                notes.append(f"{where}: starts like a call list but does not end with ']'; kept as text")
            messages.append({**extra, "role": role, "content": text})
            pending = []
    out = {k: v for k, v in raw.items() if k != "conversations" and not (k == "system" and isinstance(v, str))}
    out["messages"] = messages
    out["tools"] = _merge_tools(raw, tools, "the system text", notes)
    summary = (f"converted from the ToolACE layout (system with a JSON tool list, [Name(args)] calls): "
               f"{_plural(len(tools), 'tool')}, {_plural(n_calls, 'call')}, {_plural(n_results, 'result')}")
    return _with_notes(out, [summary] + notes)


# --------------------------------------------------------------------------- Anthropic content blocks

_ANTHROPIC_TOOL_BLOCKS = ("tool_use", "tool_result")


def _has_anthropic_blocks(messages: list) -> bool:
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_TOOL_BLOCKS for b in m["content"])
               for m in messages)


def _block_content(blocks: list, joiner: str, dropped: dict[str, int]) -> str | list:
    """Text blocks joined into one string; a list of the blocks as they are when any is not text."""
    if all(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in blocks):
        for b in blocks:
            for k in b:
                if k not in ("type", "text"):
                    _count(dropped, f"text block key {k!r}")
        return joiner.join(b["text"] for b in blocks)
    return list(blocks)


def _anthropic_assistant(m: dict, where: str, calls_by_id: dict, dropped: dict[str, int], notes: list[str]) -> dict:
    calls, reasoning, rest = [], [], []
    for bi, b in enumerate(m["content"]):
        at = f"{where}.content[{bi}]"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_use":
            call_id, name = b.get("id"), b.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                raise _fail("bad tool call", f"{at}: a tool_use block needs a string 'id' and 'name'")
            args = b.get("input", {})
            if not isinstance(args, dict):
                raise _fail("bad arguments", f"{at} ({name}): 'input' must be an object, got {type(args).__name__}")
            for k in b:
                if k not in ("type", "id", "name", "input"):
                    _count(dropped, f"tool_use key {k!r}")
            call = _call(call_id, name, args)
            calls.append(call)
            calls_by_id[call_id] = call
        elif kind == "tool_result":
            raise _fail("bad message", f"{at}: a tool_result block in an assistant message; results go in the "
                        "user message after it")
        elif kind == "thinking" and isinstance(b.get("thinking"), str):
            reasoning.append(b["thinking"])
            if "signature" in b:
                _count(dropped, "thinking signature")
        else:
            rest.append(b)
    msg = {k: v for k, v in m.items() if k != "content"}
    content = _block_content(rest, "", dropped)
    if isinstance(content, list):
        notes.append(f"{where}: blocks other than text kept as a content list")
    msg["content"] = content
    if reasoning:
        msg["reasoning_content"] = "".join(reasoning)
    if calls:
        msg["tool_calls"] = calls
    return msg


def _anthropic_user(m: dict, where: str, calls_by_id: dict, dropped: dict[str, int], notes: list[str]) -> list[dict]:
    results, rest = [], []
    for bi, b in enumerate(m["content"]):
        at = f"{where}.content[{bi}]"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_use":
            raise _fail("bad message", f"{at}: a tool_use block in a {m.get('role')} message; calls are made "
                        "by the assistant")
        if kind != "tool_result":
            rest.append(b)
            continue
        call = calls_by_id.get(b.get("tool_use_id"))
        if call is None:
            raise _fail("unmatched tool result", f"{at}: tool_use_id {b.get('tool_use_id')!r} matches no earlier "
                        f"tool_use (ids so far: {sorted(calls_by_id)}); answer a tool_use of an assistant message")
        content = b.get("content", "")
        if isinstance(content, list):
            content = _block_content(content, "\n", dropped)
            if isinstance(content, list):
                notes.append(f"{at}: a tool_result with blocks other than text kept as a content list")
        elif content is None:
            content = ""
        elif not isinstance(content, str):
            content = _json_text(content)
        result = {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": content}
        if "is_error" in b:
            result["is_error"] = b["is_error"]
        for k in b:
            if k not in ("type", "tool_use_id", "content", "is_error"):
                _count(dropped, f"tool_result key {k!r}")
        results.append(result)
    if rest or not results:
        msg = {k: v for k, v in m.items() if k != "content"}
        msg["content"] = _block_content(rest, "\n", dropped)
        if isinstance(msg["content"], list):
            notes.append(f"{where}: blocks other than text kept as a content list")
        results.append(msg)
    return results


def convert_messages(messages: list) -> tuple[list, list[str]] | None:
    """For a row that already has "messages": Anthropic content blocks (tool_use / tool_result) turned into
    OpenAI tool_calls / tool messages; (new messages, notes), or None when there is nothing to convert.

    Text blocks are joined into ``content`` (assistant blocks with "", user blocks with a newline);
    ``tool_use`` becomes a tool call keeping its id; each ``tool_result`` becomes a tool message with the
    matching call's id and name (``is_error`` kept), followed by a user message for any other user blocks;
    ``thinking`` becomes ``reasoning_content``. Blocks of other kinds (images, documents) are kept as a
    content list. Raises :class:`hsa.records.RecordError` for a result that answers no earlier call.
    """
    if not isinstance(messages, list) or not _has_anthropic_blocks(messages):
        return None
    out: list[dict] = []
    notes: list[str] = []
    dropped: dict[str, int] = {}
    calls_by_id: dict[str, dict] = {}
    for mi, m in enumerate(messages):
        where = f"messages[{mi}]"
        if not (isinstance(m, dict) and isinstance(m.get("content"), list)):
            out.append(m)
        elif m.get("role") == "assistant":
            out.append(_anthropic_assistant(m, where, calls_by_id, dropped, notes))
        elif m.get("role") == "user":
            out.extend(_anthropic_user(m, where, calls_by_id, dropped, notes))
        else:
            out.append(m)
    n_results = sum(1 for m in out if isinstance(m, dict) and m.get("role") == "tool" and "tool_call_id" in m)
    summary = (f"converted Anthropic content blocks: {_plural(len(calls_by_id), 'tool_use')} -> tool_calls, "
               f"{_plural(n_results, 'tool_result')} -> tool messages")
    notes.insert(0, summary)
    return out, notes + _dropped_note(dropped)


# --------------------------------------------------------------------------- Gemini

_GEMINI_ROLES = {"user": "user", "model": "assistant", "function": "tool", "tool": "tool"}
_GEMINI_DECLS = ("functionDeclarations", "function_declarations")


def _is_gemini(raw: dict) -> bool:
    contents = raw.get("contents")
    return ("messages" not in raw and isinstance(contents, list) and bool(contents)
            and isinstance(contents[0], dict) and isinstance(contents[0].get("parts"), list))


def _gemini_tools(raw: dict, notes: list[str]) -> list:
    tools_in = raw.get("tools")
    if tools_in is None:
        return []
    if not isinstance(tools_in, list):
        raise _fail("bad tools", f"'tools' is {type(tools_in).__name__}; expected a list of "
                    "{\"functionDeclarations\": [...]}")
    tools = []
    for ti, entry in enumerate(tools_in):
        decls = next((entry[k] for k in _GEMINI_DECLS if isinstance(entry, dict) and k in entry), None)
        if decls is None and _tool_name(entry) is not None:
            decls = [entry]  # a declaration given directly
        if decls is None:
            keys = sorted(entry) if isinstance(entry, dict) else [type(entry).__name__]
            notes.append(f"tools[{ti}] {keys} dropped: not function declarations")
            continue
        if not isinstance(decls, list):
            raise _fail("bad tools", f"tools[{ti}]: functionDeclarations is {type(decls).__name__}, expected a list")
        for d in _check_tools(decls, f"tools[{ti}].functionDeclarations"):
            if isinstance(d, dict) and "parameters" not in d and "parametersJsonSchema" in d:
                d = {("parameters" if k == "parametersJsonSchema" else k): v for k, v in d.items()}
                notes.append(f"tool {d['name']!r}: parametersJsonSchema read as parameters")
            tools.append(d)
    return tools


def _gemini_system(raw: dict) -> tuple[str | None, str | None]:
    """(key, text) of the system instruction, if any."""
    for key in ("systemInstruction", "system_instruction"):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, str):
            return key, value
        parts = value.get("parts") if isinstance(value, dict) else None
        if isinstance(parts, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
            return key, "\n".join(p["text"] for p in parts)
        raise _fail("bad system instruction", f"{key}: expected a string or {{\"parts\": [{{\"text\": ...}}]}}")
    return None, None


def _gemini_content(c: Any, ci: int, pending: list, counter: list[int], dropped: dict[str, int]) -> list[dict]:
    where = f"contents[{ci}]"
    if not (isinstance(c, dict) and isinstance(c.get("parts"), list)):
        raise _fail("bad contents", f"{where}: expected {{\"role\", \"parts\": [...]}}")
    role = _GEMINI_ROLES.get(c.get("role") or "user")
    if role is None:
        raise _fail("unknown role", f"{where}: role {c.get('role')!r}; expected 'user', 'model' or 'function'")
    texts, thoughts, calls, results = [], [], [], []
    for pi, p in enumerate(c["parts"]):
        at = f"{where}.parts[{pi}]"
        if not isinstance(p, dict):
            raise _fail("bad part", f"{at} is {type(p).__name__}; expected an object")
        if "thoughtSignature" in p or "thought_signature" in p:
            _count(dropped, "thoughtSignature")
        if isinstance(p.get("text"), str):
            (thoughts if p.get("thought") is True else texts).append(p["text"])
        elif isinstance(p.get("functionCall", p.get("function_call")), dict):
            if role != "assistant":
                raise _fail("bad part", f"{at}: a functionCall in a {c.get('role') or 'user'} turn; calls are made "
                            "by the model")
            fc = p.get("functionCall", p.get("function_call"))
            name = fc.get("name")
            if not isinstance(name, str) or not name:
                raise _fail("bad tool call", f"{at}: functionCall has no string 'name'")
            counter[0] += 1
            call_id = fc["id"] if isinstance(fc.get("id"), str) and fc["id"] else f"call_{counter[0]}"
            extra = {k: v for k, v in fc.items() if k not in ("name", "args", "id")}
            calls.append(_call(call_id, name, _arguments(fc.get("args"), at, name), extra))
        elif isinstance(p.get("functionResponse", p.get("function_response")), dict):
            if role == "assistant":
                raise _fail("bad part", f"{at}: a functionResponse in a model turn; results go in the next turn")
            fr = p.get("functionResponse", p.get("function_response"))
            call = _take_call(pending, at, name=fr.get("name") if isinstance(fr.get("name"), str) else None,
                              call_id=fr.get("id") if isinstance(fr.get("id"), str) else None)
            for k in fr:
                if k not in ("name", "response", "id"):
                    _count(dropped, f"functionResponse key {k!r}")
            results.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                            "content": _json_text(fr.get("response", {}))})
        else:
            kinds = sorted(k for k in p if k not in ("thought", "thoughtSignature", "thought_signature"))
            raise _fail("unsupported part", f"{at} holds {kinds}; only text, functionCall and functionResponse "
                        "parts are converted (remove or describe the others in text)")
    if role == "assistant":
        msg = {"role": "assistant", "content": "".join(texts)}
        if thoughts:
            msg["reasoning_content"] = "".join(thoughts)
        if calls:
            msg["tool_calls"] = calls
        pending[:] = calls
        return [msg]
    out = results
    if texts or not results:
        out.append({"role": "user", "content": "\n".join(texts)})
    if thoughts:
        _count(dropped, "thought text in a user turn", len(thoughts))
    return out


def _convert_gemini(raw: dict) -> dict:
    notes: list[str] = []
    dropped: dict[str, int] = {}
    tools = _gemini_tools(raw, notes)
    sys_key, system = _gemini_system(raw)
    messages: list[dict] = [{"role": "system", "content": system}] if system is not None else []
    pending: list[dict] = []
    counter = [0]
    for ci, c in enumerate(raw["contents"]):
        messages.extend(_gemini_content(c, ci, pending, counter, dropped))
    n_results = sum(1 for m in messages if m["role"] == "tool" and "tool_call_id" in m)
    out = {k: v for k, v in raw.items() if k not in ("contents", "tools", sys_key)}
    out["messages"] = messages
    out["tools"] = tools
    summary = (f"converted from the Gemini contents layout: {_plural(len(tools), 'function declaration')}, "
               f"{_plural(counter[0], 'call')}, {_plural(n_results, 'result')}"
               + (f", {sys_key} -> system message" if sys_key else ""))
    return _with_notes(out, [summary] + notes + _dropped_note(dropped))


# --------------------------------------------------------------------------- entry point


#: Keys only hsa's own records carry: such a record is never in a foreign layout, and a ``<tools>`` section of its
#: prompt (or a tag in a message) is text of the harness, not a Hermes tool block.
_HSA_ONLY_KEYS = ("prompt", "skills", "hooks", "hook_events", "mapping", "transforms", "source_id")


# --------------------------------------------------------------------------- OpenAI legacy function calling


def _is_legacy_openai(raw: dict) -> bool:
    return "functions" in raw or any(
        isinstance(m, dict) and (m.get("function_call") is not None or m.get("role") == "function")
        for m in raw["messages"])


def _convert_legacy_openai(raw: dict) -> dict | None:
    """OpenAI's legacy function-calling rows (``functions``; assistant ``function_call``; ``function`` result
    messages, still the format of OpenAI's function-calling fine-tuning examples) with tools, ``tool_calls``
    and ``tool`` messages; None when the row has none of them.

    Calls get ids ``call_legacy_<n>``; a ``function`` message answers the earliest unanswered call of its
    name. A top-level ``function_call`` (the request's choice, "auto" or a name) is dropped and noted.
    """
    if not _is_legacy_openai(raw):
        return None
    out = {k: v for k, v in raw.items() if k not in ("functions", "function_call")}
    notes: list[str] = []
    functions = raw.get("functions")
    if functions is not None:
        if isinstance(functions, str):
            try:
                functions = _json.loads(functions)
            except ValueError:
                raise _fail("bad functions", "'functions' is a string that is not JSON; expected a list of "
                                             "function definitions") from None
        if not isinstance(functions, list):
            raise _fail("bad functions", f"'functions' is {type(functions).__name__}; expected a list of "
                                         "{name, description, parameters} objects")
        tools = raw.get("tools")
        if tools is None:
            out["tools"] = functions
            notes.append(f"'functions' ({_plural(len(functions), 'function')}) read as tools")
        elif isinstance(tools, list):
            known = {(t.get("function") or t).get("name") for t in tools if isinstance(t, dict)}
            extra = [f for f in functions if not (isinstance(f, dict) and f.get("name") in known)]
            out["tools"] = tools + extra
            notes.append(f"'functions' merged into tools ({_plural(len(extra), 'new tool')})")
        else:
            raise _fail("bad functions", "the row has both 'tools' and 'functions'; give the tools in one of them")
    if "function_call" in raw:
        notes.append(f"top-level 'function_call' {_json.dumps(raw['function_call'])[:60]} dropped (a request "
                     "option, not data)")
    used = {c.get("id") for m in raw["messages"] if isinstance(m, dict)
            for c in m.get("tool_calls") or () if isinstance(c, dict)}
    pending: list[tuple[str, str]] = []  # (name, id) of calls not answered yet, in order
    messages: list = []
    n_calls = n_results = 0
    for mi, m in enumerate(raw["messages"]):
        where = f"messages[{mi}]"
        if not isinstance(m, dict):
            messages.append(m)
            continue
        call = m.get("function_call")
        if call is not None:
            if m.get("role") != "assistant" or m.get("tool_calls"):
                raise _fail("bad function_call", f"{where} has a 'function_call' but is not an assistant message "
                                                 "without tool_calls; give the call in one of the two fields")
            if isinstance(call, str):
                try:
                    call = _json.loads(call)
                except ValueError:
                    call = None
            if not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]):
                raise _fail("bad function_call", f"{where}.function_call should be {{\"name\", \"arguments\"}} "
                                                 f"with a function name; got {_json.dumps(m['function_call'])[:80]}")
            n_calls += 1
            cid = f"call_legacy_{n_calls}"
            while cid in used:
                cid += "_"
            used.add(cid)
            pending.append((call["name"], cid))
            msg = {k: v for k, v in m.items() if k != "function_call"}
            msg["tool_calls"] = [{"id": cid, "type": "function",
                                  "function": {"name": call["name"], "arguments": call.get("arguments", {})}}]
            messages.append(msg)
        elif m.get("role") == "function":
            name = m.get("name")
            match = next((i for i, (n, _) in enumerate(pending) if n == name), None)
            if match is None and name is None and len(pending) == 1:
                match = 0
            if match is None:
                raise _fail("unanswered function result",
                            f"{where} is a 'function' result for {name!r}, but no earlier function_call to "
                            f"{name!r} is waiting for one; each result must follow its call")
            name, cid = pending.pop(match)
            n_results += 1
            msg = {k: v for k, v in m.items() if k not in ("role", "name")}
            messages.append({"role": "tool", "tool_call_id": cid, "name": name, **msg})
        else:
            messages.append(m)
    out["messages"] = messages
    if n_calls or n_results:
        notes.insert(0, f"converted OpenAI legacy function calling: {_plural(n_calls, 'function_call')} -> "
                        f"tool_calls, {_plural(n_results, 'function message')} -> tool messages")
    return _with_notes(out, notes)


# --------------------------------------------------------------------------- calls left as model output text

_MISTRAL_CALLS = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")


def _declared_names(tools: Any) -> set[str]:
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
        name = _tool_name(t)
        if name:
            names.add(name)
    return names


def _text_calls(content: str, declared: set[str]) -> tuple[str, list[tuple[str, Any, str | None]]] | None:
    """``(format, [(name, arguments, id or None)])`` when an assistant text is nothing but tool calls to ``declared`` tools in
    a model's raw output format: Mistral's ``[TOOL_CALLS] [{"name", "arguments"}, ...]``, Llama 3.1's
    ``<|python_tag|>{"name", "parameters"}`` or its bare JSON ``{"name": ..., "parameters": {...}}``; else None."""
    text = content.strip()
    for end in _LLAMA_ENDS:
        text = text.removesuffix(end).rstrip()
    if text.startswith(_MISTRAL_CALLS):
        fmt, body = "Mistral [TOOL_CALLS]", text[len(_MISTRAL_CALLS):].strip()
    elif text.startswith(_PYTHON_TAG):
        fmt, body = "Llama <|python_tag|>", text[len(_PYTHON_TAG):].strip()
    elif text.startswith("{") and text.endswith("}"):
        fmt, body = "Llama JSON", text
    else:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None  # e.g. Llama's built-in tools, brave_search.call(query=...): left as text
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not (isinstance(item, dict) and item.get("name") in declared):
            return None
        args = item.get("arguments", item.get("parameters", {}))
        if not isinstance(args, (dict, str)):
            return None
        calls.append((item["name"], args, item.get("id") if isinstance(item.get("id"), str) else None))
    return (fmt, calls) if calls else None


def _convert_text_calls(raw: dict) -> dict | None:
    """A messages row whose tool calls are still the model's raw output text (see :func:`_text_calls`), with
    ``ipython`` / ``tool`` results answering them in order, as tool calls and results; else None."""
    messages = raw["messages"]
    if any(isinstance(m, dict) and m.get("tool_calls") for m in messages):
        return None
    declared = _declared_names(raw.get("tools"))
    if not declared:
        return None
    found = {i: _text_calls(m["content"], declared) for i, m in enumerate(messages)
             if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), str)}
    found = {i: v for i, v in found.items() if v is not None}
    if not found:
        return None
    out_messages: list = []
    pending: list[dict] = []
    formats: dict[str, int] = {}
    n_calls = n_results = 0
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if i in found:
            fmt, calls = found[i]
            formats[fmt] = formats.get(fmt, 0) + len(calls)
            made = []
            for name, args, call_id in calls:
                n_calls += 1
                made.append(_call(call_id or f"call_{n_calls}", name, _arguments(args, where, name)))
            out_messages.append({**{k: v for k, v in m.items() if k != "content"}, "content": "", "tool_calls": made})
            pending = list(made)
        elif isinstance(m, dict) and m.get("role") in ("ipython", "tool") and pending:
            known_id = m.get("tool_call_id") if any(c["id"] == m.get("tool_call_id") for c in pending) else None
            call = _take_call(pending, f"{where} ({m['role']})", name=m.get("name"), call_id=known_id)
            n_results += 1
            rest = {k: v for k, v in m.items() if k not in ("role", "tool_call_id", "name")}
            out_messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], **rest})
        else:
            out_messages.append(m)
    out = {**raw, "messages": out_messages}
    kinds = ", ".join(f"{fmt} x{n}" for fmt, n in sorted(formats.items()))
    return _with_notes(out, [f"converted tool calls written as model output text ({kinds}): "
                             f"{_plural(n_calls, 'call')}, {_plural(n_results, 'result')}"])


# --------------------------------------------------------------------------- ReAct text (ToolBench)

_TOOLBENCH_MARKER = "Specifically, you have access to the following APIs:"
_REACT_ACTION = re.compile(r"(?:\A|\n)[ \t]*Action:[ \t]*(?P<name>[^\n]+?)[ \t]*\n[ \t]*Action Input:[ \t]*(?P<args>.*)\Z",
                           re.S)


def _toolbench_system(text: str) -> tuple[str, list] | None:
    """(the system text without it, the API list) of ToolBench's ``Specifically, you have access to the following
    APIs: [...]`` (a Python-literal list of ``{name, description, parameters}``); None without the marker."""
    at = text.find(_TOOLBENCH_MARKER)
    start = text.find("[", at + len(_TOOLBENCH_MARKER)) if at >= 0 else -1
    if start < 0:
        return None
    decoder_end = _literal_list_end(text, start)
    if decoder_end is None:
        return None
    try:
        apis = _parse_literal(text[start:decoder_end])
    except ValueError:
        return None
    if not (isinstance(apis, list) and all(_tool_name(a) for a in apis)):
        return None
    prose = (text[:at].rstrip() + "\n" + text[decoder_end:].lstrip(" .")).strip()
    return prose, apis


def _literal_list_end(text: str, start: int) -> int | None:
    """The index after the bracket that closes the list opened at ``start`` (quotes of either kind respected)."""
    depth, quote, escape = 0, "", False
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _react_turns_of(raw: dict) -> tuple[str, list[tuple[str, str]], str, list] | None:
    """``(key, [(speaker, text)], system prose, tools from the system text)`` of a row whose assistant turns are
    ReAct text (``Thought: ...\nAction: <tool>\nAction Input: {...}``, as ToolBench writes them) calling declared
    tools, with the results in function / tool / observation turns; else None."""
    found = _text_turns(raw)
    if found is None:
        return None
    key, pairs = found
    system = "\n\n".join(text for who, text in pairs if who == "system")
    api_list = _toolbench_system(system)
    prose, tools = api_list if api_list is not None else (system.strip(), [])
    declared = _declared_names(raw.get("tools")) | {_tool_name(t) for t in tools}
    calls = [m for who, text in pairs if _TEXT_TURN_ROLES[who] == "assistant"
             for m in [_REACT_ACTION.search(text)] if m is not None]
    if calls and all(m.group("name").strip() in declared and _object_text(m.group("args")) for m in calls):
        return key, pairs, prose, tools
    return None


def _object_text(text: str) -> bool:
    """Whether ``text`` is empty or one JSON / Python-literal object (an Action Input hsa can read)."""
    if not text.strip():
        return True
    try:
        return isinstance(_parse_literal(text.strip()), dict)
    except ValueError:
        return False


def _react_text_calls(text: str, where: str, notes: list[str]) -> tuple[str, list[tuple[str, Any, None]]]:
    """The thought and the one ``Action`` / ``Action Input`` call of a ReAct assistant turn (none: the text)."""
    m = _REACT_ACTION.search(text)
    if m is None:
        return text, []
    return text[:m.start()].strip(), [(m.group("name").strip(), m.group("args").strip() or None, None)]


def _convert_react(raw: dict, key: str, turns: list[tuple[str, str]], prose: str, tools: list) -> dict:
    notes: list[str] = []
    body, n_calls, n_results = _text_turn_messages(
        [(_TEXT_TURN_ROLES[who], text, f"{key}[{i}] ({who})") for i, (who, text) in enumerate(turns)
         if who != "system"], _react_text_calls, notes)
    messages = ([{"role": "system", "content": prose}] if prose else []) + body
    out = {k: v for k, v in raw.items() if k != key}
    out["messages"] = messages
    out["tools"] = _merge_tools(raw, tools, "the system text's API list", notes) if tools else raw.get("tools")
    if out["tools"] is None:
        del out["tools"]
    summary = (f"converted ReAct text (Thought / Action / Action Input, as ToolBench writes it): "
               f"{_plural(len(tools), 'tool')} from the system text, {_plural(n_calls, 'call')}, "
               f"{_plural(n_results, 'result')}")
    return _with_notes(out, [summary] + notes)


# --------------------------------------------------------------------------- OpenAI Responses API items

_RESPONSES_TEXT_PARTS = {"input_text", "output_text", "text"}


def _responses_items(raw: dict) -> tuple[str, list[dict]] | None:
    """``(key, items)`` when ``messages`` or ``input`` (with the response's ``output`` after it) holds OpenAI
    Responses API items (``function_call`` / ``function_call_output``, or ``message`` items with typed text
    parts), as the OpenAI Agents SDK logs a run; else None."""
    for key in ("messages", "input"):
        items = raw.get(key)
        if not (isinstance(items, list) and items and all(isinstance(i, dict) for i in items)):
            continue
        if key == "input" and isinstance(raw.get("output"), list):
            items = items + [i for i in raw["output"] if isinstance(i, dict)]
        typed = any(i.get("type") in ("function_call", "function_call_output") or (
            i.get("type") == "message" and isinstance(i.get("content"), list)
            and any(isinstance(p, dict) and p.get("type") in ("input_text", "output_text") for p in i["content"]))
            for i in items)
        return (key, items) if typed else None
    return None


def _responses_text(content: Any, where: str, dropped: dict[str, int]) -> Any:
    """A message item's content: a string as it is, typed text parts joined; other parts kept as a list."""
    if not isinstance(content, list):
        return content
    if all(isinstance(p, dict) and p.get("type") in _RESPONSES_TEXT_PARTS and isinstance(p.get("text"), str)
           for p in content):
        for p in content:
            if p.get("annotations"):
                _count(dropped, "text annotations")
        return "".join(p["text"] for p in content)
    return content


def _convert_responses(raw: dict, key: str, items: list[dict]) -> dict:
    messages: list[dict] = []
    if isinstance(raw.get("instructions"), str) and raw["instructions"].strip():
        messages.append({"role": "system", "content": raw["instructions"]})
    dropped: dict[str, int] = {}
    calls: dict[str, dict] = {}  # call_id -> the call
    n_results = 0
    for i, item in enumerate(items):
        where = f"{key}[{i}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str):
                raise _fail("bad message", f"{where}: a message item without a 'role'")
            messages.append({"role": "system" if role == "developer" else role,
                             "content": _responses_text(item.get("content"), where, dropped)})
        elif kind == "function_call":
            name, call_id = item.get("name"), item.get("call_id") or item.get("id")
            if not (isinstance(name, str) and name and isinstance(call_id, str)):
                raise _fail("bad tool call", f"{where}: a function_call item needs a 'name' and a 'call_id'")
            call = _call(call_id, name, _arguments(item.get("arguments"), where, name))
            calls[call_id] = call
            last = messages[-1] if messages else None
            if last is not None and last.get("role") == "assistant":  # text and calls of one turn: one message
                last.setdefault("tool_calls", []).append(call)
                if last.get("content") is None:
                    last["content"] = ""
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            call = calls.get(item.get("call_id"))
            if call is None:
                raise _fail("unmatched tool result", f"{where}: function_call_output for call_id "
                            f"{item.get('call_id')!r}, which no earlier function_call has")
            n_results += 1
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                             "content": _json_text(item.get("output"))})
        else:  # reasoning, web_search_call, file_search_call, ...: no chat-format counterpart
            _count(dropped, f"{kind} item")
    out = {k: v for k, v in raw.items() if k not in (key, "instructions", "output")}
    if "output" in raw and key != "input":
        out["output"] = raw["output"]
    out["messages"] = messages
    notes = [f"converted OpenAI Responses API items: {_plural(len(calls), 'function_call')} -> tool_calls, "
             f"{_plural(n_results, 'function_call_output')} -> tool messages"]
    return _with_notes(out, notes + _dropped_note(dropped))


# --------------------------------------------------------------------------- LangChain message dicts

_LC_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
             "HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system", "ToolMessage": "tool",
             "FunctionMessage": "tool", "HumanMessageChunk": "user", "AIMessageChunk": "assistant"}


def _lc_fields(m: Any) -> tuple[str, dict] | None:
    """``(role, fields)`` of one LangChain message as ``messages_to_dict`` (``{"type", "data"}``) or ``dumpd``
    (``{"lc": 1, "id": [..., "AIMessage"], "kwargs"}``) write it; None for anything else."""
    if not isinstance(m, dict):
        return None
    if isinstance(m.get("data"), dict) and m.get("type") in _LC_ROLES:
        return _LC_ROLES[m["type"]], m["data"]
    ident = m.get("id")
    if m.get("lc") == 1 and isinstance(m.get("kwargs"), dict) and isinstance(ident, list) and ident \
            and ident[-1] in _LC_ROLES:
        return _LC_ROLES[ident[-1]], m["kwargs"]
    return None


def _is_langchain(raw: dict) -> bool:
    msgs = raw.get("messages")
    return isinstance(msgs, list) and bool(msgs) and all(_lc_fields(m) is not None for m in msgs)


def _convert_langchain(raw: dict) -> dict:
    messages: list[dict] = []
    dropped: dict[str, int] = {}
    names: dict[str, str] = {}  # call id -> tool name
    n_calls = n_results = 0
    for i, m in enumerate(raw["messages"]):
        where = f"messages[{i}]"
        role, data = _lc_fields(m)  # type: ignore[misc]
        content = data.get("content", "")
        calls = data.get("tool_calls") or (data.get("additional_kwargs") or {}).get("tool_calls") or []
        if isinstance(content, list):
            if role == "assistant":  # Anthropic tool_use blocks: the same calls as tool_calls (or the only record)
                uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
                if not calls:
                    calls = [{"name": b.get("name"), "args": b.get("input", {}), "id": b.get("id")} for b in uses]
                content = _block_content([b for b in content if not any(b is u for u in uses)], "", dropped)
            else:
                content = _block_content(content, "\n", dropped)
        msg: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and calls:
            out_calls = []
            for k, c in enumerate(calls):
                if not isinstance(c, dict):
                    raise _fail("bad tool call", f"{where}.tool_calls[{k}] is {type(c).__name__}; expected an object")
                fn = c.get("function") if isinstance(c.get("function"), dict) else c  # OpenAI form in additional_kwargs
                name = fn.get("name")
                if not isinstance(name, str) or not name:
                    raise _fail("bad tool call", f"{where}.tool_calls[{k}] has no 'name'")
                call_id = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call_{n_calls + 1}"
                args = fn.get("args", fn.get("arguments"))
                n_calls += 1
                out_calls.append(_call(call_id, name, _arguments(args, f"{where}.tool_calls[{k}]", name)))
                names[call_id] = name
            msg["tool_calls"] = out_calls
        if role == "tool":
            call_id = data.get("tool_call_id")
            if isinstance(call_id, str):
                msg["tool_call_id"] = call_id
            name = data.get("name") if isinstance(data.get("name"), str) else names.get(str(call_id))
            if name:
                msg["name"] = name
            msg["content"] = _json_text(content) if not isinstance(content, (str, list)) else content
            n_results += 1
        for key in ("invalid_tool_calls", "usage_metadata", "response_metadata"):
            if data.get(key):
                _count(dropped, key)
        messages.append(msg)
    out = {**raw, "messages": messages}
    notes = [f"converted LangChain message dicts: {_plural(n_calls, 'tool call')}, {_plural(n_results, 'tool result')}"]
    return _with_notes(out, notes + _dropped_note(dropped))


# --------------------------------------------------------------------------- Vercel AI SDK parts, Ollama names

def _ai_sdk_parts(messages: list) -> bool:
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result") for p in m["content"])
               for m in messages)


def _ai_sdk_result(value: Any) -> Any:
    """A tool-result's value: AI SDK 5 wraps it as ``{"type": "json" | "text", "value": ...}``."""
    if isinstance(value, dict) and set(value) == {"type", "value"} and value["type"] in ("json", "text", "error-text",
                                                                                       "error-json", "content"):
        return value["value"]
    return value


def _convert_ai_sdk(raw: dict) -> dict:
    """Vercel AI SDK messages: ``tool-call`` parts (``toolCallId``, ``toolName``, ``args`` / ``input``) become tool
    calls, each ``tool-result`` part (``result`` / ``output``) a tool message; text parts are joined."""
    messages: list[dict] = []
    dropped: dict[str, int] = {}
    n_calls = n_results = 0
    for i, m in enumerate(raw["messages"]):
        where = f"messages[{i}]"
        if not (isinstance(m, dict) and isinstance(m.get("content"), list)):
            messages.append(m)
            continue
        parts = m["content"]
        calls = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool-call"]
        results = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool-result"]
        rest = [p for p in parts if not any(p is q for q in calls + results)]
        if results:
            for k, p in enumerate(results):
                call_id, name = p.get("toolCallId"), p.get("toolName")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    raise _fail("bad tool result", f"{where}.content: tool-result {k} needs 'toolCallId' and 'toolName'")
                n_results += 1
                value = _ai_sdk_result(p["output"] if "output" in p else p.get("result"))
                messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": _json_text(value)})
            if rest:
                messages.append({**m, "content": _block_content(rest, "\n", dropped)})
            continue
        msg = {**m, "content": _block_content(rest, "", dropped) if rest else ""}
        if calls:
            out_calls = []
            for k, p in enumerate(calls):
                call_id, name = p.get("toolCallId"), p.get("toolName")
                if not isinstance(call_id, str) or not isinstance(name, str) or not name:
                    raise _fail("bad tool call", f"{where}.content: tool-call {k} needs 'toolCallId' and 'toolName'")
                n_calls += 1
                out_calls.append(_call(call_id, name, _arguments(p["input"] if "input" in p else p.get("args"),
                                                                  where, name)))
            msg["tool_calls"] = out_calls
        messages.append(msg)
    out = {**raw, "messages": messages}
    notes = [f"converted Vercel AI SDK parts: {_plural(n_calls, 'tool-call')} -> tool_calls, "
             f"{_plural(n_results, 'tool-result')} -> tool messages"]
    return _with_notes(out, notes + _dropped_note(dropped))


def _ollama_tool_names(raw: dict) -> dict | None:
    """Tool messages that name their tool with Ollama's ``tool_name`` get it as ``name`` (renames follow that key)."""
    msgs = raw["messages"]
    if not any(isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_name"), str)
               and "name" not in m for m in msgs):
        return None
    n = 0
    out_msgs = []
    for m in msgs:
        if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_name"), str) and "name" not in m:
            m = {("name" if k == "tool_name" else k): v for k, v in m.items()}
            n += 1
        out_msgs.append(m)
    return _with_notes({**raw, "messages": out_msgs},
                       [f"converted Ollama tool messages: 'tool_name' read as 'name' ({_plural(n, 'message')})"])


def _convert_within_messages(raw: dict, hsa_record: bool) -> dict | None:
    """A messages row with its tool calls and results rewritten from the per-message dialects into OpenAI's: legacy
    ``function_call``, Vercel AI SDK parts, Ollama's ``tool_name``, calls left as model output text (not in hsa
    records, whose texts are the harness's own) and Anthropic content blocks; None when nothing changed."""
    row, changed = raw, False
    steps = [_convert_legacy_openai,
             lambda r: _convert_ai_sdk(r) if _ai_sdk_parts(r["messages"]) else None,
             _ollama_tool_names]
    if not hsa_record:
        steps.append(_convert_text_calls)
    for step in steps:
        out = step(row)
        if out is not None:
            row, changed = out, True
    blocks = convert_messages(row["messages"])
    if blocks is not None:
        row, changed = _with_notes({**row, "messages": blocks[0]}, blocks[1]), True
    return row if changed else None


def convert(raw: dict) -> dict | None:
    """The row in hsa's messages layout when it is in one of the layouts of this module, else None.
    Raises hsa.records.RecordError(reason, detail) for a row that is clearly in one of these layouts but broken
    (detail: which key/turn, what was expected, what to do).

    Rows already in the Hugging Face format, and the xLAM and tag-free ShareGPT layouts (read by
    :mod:`hsa.records`), give None. In hsa records (a key of ``_HSA_ONLY_KEYS``), texts are the harness's
    own: tags, tool lists and calls written in them stay text, and only structure (content blocks and parts,
    legacy fields, whole-row item layouts) is converted.
    """
    if not isinstance(raw, dict):
        return None
    hsa_record = any(k in raw for k in _HSA_ONLY_KEYS)
    responses = _responses_items(raw)
    if responses is not None:
        return _convert_responses(raw, *responses)
    if _is_langchain(raw):
        return _convert_langchain(raw)
    if not hsa_record:
        for find, convert_turns in ((_hermes_turns, _convert_hermes), (_glaive_turns_of, _convert_glaive_sharegpt),
                                    (_react_turns_of, _convert_react)):
            found = find(raw)
            if found is not None:
                return convert_turns(raw, *found)
    if isinstance(raw.get("messages"), list):
        return _convert_within_messages(raw, hsa_record)
    if hsa_record:
        return None
    toolace = _toolace_turns(raw)
    if toolace is not None:
        return _convert_toolace(raw, toolace)
    if _is_glaive(raw):
        return _convert_glaive(raw)
    if _is_gemini(raw):
        return _convert_gemini(raw)
    return None
