"""Hermes / Qwen tool tags (NousResearch hermes-function-calling-v1, Qwen chat data).

ShareGPT ``conversations`` or ``messages`` turns; tools in the system turn between ``<tools>`` and
``</tools>``, calls in assistant turns as ``<tool_call>{...}</tool_call>`` (:data:`CALL_RE`, which the
evaluation parsers read completions with too), results as ``<tool_response>...</tool_response>``. JSON or
Python literals (single quotes) are read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hsa.formats.common import (
    SHAREGPT_ROLES,
    check_tools,
    merge_tools,
    parse_literal,
    plural,
    read_arguments,
    read_turn,
    strip_body,
    take_call,
    tool_call,
    with_notes,
)
from hsa.record_model import RecordError

__all__ = ["CALL_RE", "convert_hermes", "hermes_turns"]


_TOOLS_RE = re.compile(r"<tools>(.*?)</tools>", re.S)
CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_RESPONSE_RE = re.compile(r"<tool_response>(.*?)</tool_response>", re.S)
_CALL_SHAPE = '{"name": ..., "arguments": {...}}'


def hermes_turns(raw: dict) -> tuple[str, list] | None:
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
    return strip_body(body)[:1] in ("[", "{")


def _parse_tools_block(body: str, where: str) -> list:
    """The tools of one ``<tools>`` block: a list, one object, or objects one after another (JSON or Python)."""
    body = strip_body(body)
    try:
        value = parse_literal(body)
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
                    item = parse_literal(body[pos:end])
                except ValueError:
                    raise RecordError("bad tools", f"{where}: the <tools> block is not JSON or Python literals "
                                      f"({whole_error}); write a list of tool objects or one object per line") from None
                pos = end
            value.append(item)
    tools = value if isinstance(value, list) else [value]
    return check_tools(tools, f"{where} <tools> block")


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
    blocks = list(CALL_RE.finditer(text))
    if text.count("<tool_call>") != len(blocks):
        raise RecordError("bad tool call", f"{where}: a <tool_call> without its closing </tool_call>; close every tag")
    calls = []
    for k, m in enumerate(blocks, 1):
        body = strip_body(m.group(1))
        try:
            value = parse_literal(body)
        except ValueError as exc:
            raise RecordError("bad tool call", f"{where}: <tool_call> {k} is neither JSON nor a Python literal "
                              f"({exc}); expected"
                              " {\"name\": ..., \"arguments\": {...}}") from None
        for item in value if isinstance(value, list) else [value]:
            calls.append(_hermes_call(item, f"{where} <tool_call> {k}", counter, notes))
    content = CALL_RE.sub("", text).strip()
    return calls, content


def _hermes_call(item: Any, where: str, counter: list[int], notes: list[str]) -> dict:
    if not isinstance(item, dict):
        raise RecordError("bad tool call", f"{where} is {type(item).__name__}; expected {_CALL_SHAPE}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        hint = ""
        if isinstance(item.get("arguments"), dict) and "name" in item["arguments"]:
            hint = " ('name' is inside 'arguments'; move it to the top level of the call)"
        raise RecordError("bad tool call", f"{where} has no string 'name'{hint}; expected {_CALL_SHAPE}")
    arg_key = "arguments" if "arguments" in item or "parameters" not in item else "parameters"
    arguments = read_arguments(item.get(arg_key), where, name)
    counter[0] += 1
    call_id = item["id"] if isinstance(item.get("id"), str) and item["id"] else f"call_{counter[0]}"
    extra = {k: v for k, v in item.items() if k not in ("name", arg_key, "id")}
    if extra:
        notes.append(f"{where}: keys {sorted(extra)} besides name/arguments kept in the call's function")
    return tool_call(call_id, name, arguments, extra)


def _hermes_results(text: str, pending: list, where: str, extra: dict) -> list[dict]:
    """Tool messages for the ``<tool_response>`` blocks of ``text`` (the whole text when it has none).

    Each answers the unanswered call it names (a ``"name"`` in its JSON, else the turn's ``name`` key),
    else the first unanswered call of the preceding assistant turn.
    """
    blocks = list(_RESPONSE_RE.finditer(text))
    if text.count("<tool_response>") != len(blocks):
        raise RecordError("bad tool result", f"{where}: a <tool_response> without its closing </tool_response>; "
                          "close every tag")
    bodies = [strip_body(m.group(1)) for m in blocks] or [text.strip()]
    out = []
    for k, body in enumerate(bodies, 1):
        declared = extra.get("name") if isinstance(extra.get("name"), str) and len(bodies) == 1 else None
        try:
            value = parse_literal(body)
            if isinstance(value, dict) and isinstance(value.get("name"), str):
                declared = value["name"]
        except ValueError:
            pass
        call = take_call(pending, f"{where} <tool_response> {k}", name=declared)
        out.append({**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                    "content": body})
    return out


def convert_hermes(raw: dict, key: str, turns: list) -> dict:
    """A row with Hermes tags (:func:`hermes_turns`) as messages, tool calls, tool results and tools."""
    notes: list[str] = []
    messages: list[dict] = []
    tools: list = []
    pending: list[dict] = []
    counter = [0]
    n_results = 0
    for i, t in enumerate(turns):
        where = f"{key}[{i}]"
        role, text, extra = read_turn(t, where)
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
                raise RecordError("bad tool result", f"{where}: text outside the <tool_response> tags of a tool turn; "
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
        out["tools"] = merge_tools(raw, tools, "the <tools> block", notes)
    summary = (f"converted from the Hermes tool-tag layout ({key} with <tools>/<tool_call>/<tool_response>): "
               f"{plural(len(tools), 'tool')}, {plural(counter[0], 'call')}, {plural(n_results, 'result')}")
    return with_notes(out, [summary] + notes)
