"""Glaive function-calling v2, and the same turns republished as ShareGPT or chat messages.

``{"system": "SYSTEM: ... -\\n{function}\\n\\n{function}", "chat": "USER: ...\\n\\n\\nASSISTANT: <functioncall> {...}
<|endoftext|>\\n\\n\\nFUNCTION RESPONSE: ..."}``. The same turns republished as ShareGPT ``conversations``
(``system``/``human``/``gpt``/``tool``) or as ``messages`` with text contents too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hsa.formats.common import (
    TEXT_TURN_ROLES,
    check_tools,
    merge_tools,
    parse_literal,
    plural,
    text_turn_messages,
    text_turns,
    with_notes,
)
from hsa.record_model import RecordError

__all__ = ["convert_glaive", "convert_glaive_sharegpt", "glaive_turns_of", "is_glaive"]


_GLAIVE_TURN_RE = re.compile(r"(?:\A|\n)[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?")
_GLAIVE_ROLES = {"USER": "user", "ASSISTANT": "assistant", "FUNCTION RESPONSE": "tool"}
_GLAIVE_QUOTED_ARGS = re.compile(r"""\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*'(.*)'\s*\}""", re.S)
_END = "<|endoftext|>"


def is_glaive(raw: dict) -> bool:
    """Whether ``raw`` is a Glaive v2 row: a ``SYSTEM:`` system text and a ``chat`` of marked turns."""
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
            raise RecordError("bad tools", f"system: function definition {len(tools) + 1} is not JSON ({exc}); "
                              "expected JSON objects separated by blank lines after the prose") from None
        tools.append(tool)
    return prose.rstrip(), check_tools(tools, "system")


def _glaive_call(text: str, where: str) -> tuple[str, Any]:
    """(name, arguments) of a ``<functioncall>`` payload; arguments may be JSON quoted in single quotes."""
    try:
        value = parse_literal(text)
    except ValueError as exc:
        m = _GLAIVE_QUOTED_ARGS.fullmatch(text.strip())
        if m is None:
            raise RecordError("bad tool call", f"{where}: the <functioncall> payload is not JSON or a Python literal "
                              f"({exc}); expected {{\"name\": ..., \"arguments\": '{{...}}'}}") from None
        value = {"name": json.loads(m.group(1)), "arguments": m.group(2)}
    if not isinstance(value, dict):
        raise RecordError("bad tool call", f"{where}: the <functioncall> payload is {type(value).__name__}; "
                          "expected {\"name\": ..., \"arguments\": ...}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise RecordError("bad tool call", f"{where}: <functioncall> has no string 'name'; "
                          "expected {\"name\": ..., \"arguments\": '{...}'}")
    return name, value


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
    return text_turn_messages(turns, _glaive_text_calls, notes)


def convert_glaive(raw: dict) -> dict:
    """A Glaive v2 row (``system`` / ``chat`` texts) as messages and tools."""
    notes: list[str] = []
    prose, tools = _glaive_system(raw["system"])
    chat = raw["chat"]
    marks = list(_GLAIVE_TURN_RE.finditer(chat))
    if chat[:marks[0].start()].strip():
        raise RecordError("bad chat", "chat: text before the first USER:/ASSISTANT: marker; start the chat with "
                                      "'USER: '")
    turns = [(_GLAIVE_ROLES[m.group(1)], chat[m.end():marks[k + 1].start() if k + 1 < len(marks) else len(chat)].strip(),
              f"chat turn {k + 1} ({m.group(1)})") for k, m in enumerate(marks)]
    body, n_calls, n_results = _glaive_turns(turns, notes)
    out = {k: v for k, v in raw.items() if k not in ("system", "chat")}
    out["messages"] = ([{"role": "system", "content": prose}] if prose else []) + body
    out["tools"] = merge_tools(raw, tools, "the system text", notes)
    summary = (f"converted from the Glaive function-calling v2 layout (system/chat): {plural(len(tools), 'tool')}, "
               f"{plural(n_calls, 'call')}, {plural(n_results, 'result')}")
    return with_notes(out, [summary] + notes)


def glaive_turns_of(raw: dict) -> tuple[str, list[tuple[str, str]]] | None:
    """The text turns (:func:`text_turns`) of a Glaive row republished as ShareGPT ``conversations`` or as
    ``messages``: assistant turns with ``<functioncall>``, or a system turn in Glaive's ``SYSTEM: ...`` form
    holding the function definitions; else None."""
    found = text_turns(raw)
    if found is None:
        return None
    calls = any("<functioncall>" in text for who, text in found[1] if TEXT_TURN_ROLES[who] == "assistant")
    glaive_system = any(text.lstrip().startswith("SYSTEM:") and re.search(r"(?m)^[ \t]*\{", text)
                        for who, text in found[1] if who == "system")  # function definitions follow the prose
    return found if calls or glaive_system else None


def convert_glaive_sharegpt(raw: dict, key: str, turns: list[tuple[str, str]]) -> dict:
    """Glaive turns republished as ``conversations`` or text ``messages`` (:func:`glaive_turns_of`) as messages and
    tools."""
    notes: list[str] = []
    system = "\n\n".join(text for who, text in turns if who == "system")
    if system.lstrip().startswith("SYSTEM:"):
        prose, tools = _glaive_system(system)
    else:
        prose, tools = system.strip(), []
    body, n_calls, n_results = _glaive_turns(
        [(TEXT_TURN_ROLES[who], text.strip(), f"{key}[{i}] ({who})")
         for i, (who, text) in enumerate(turns) if who != "system"], notes)
    out = {k: v for k, v in raw.items() if k != key}
    out["messages"] = ([{"role": "system", "content": prose}] if prose else []) + body
    out["tools"] = merge_tools(raw, tools, "the system turn", notes)
    layout = "ShareGPT conversations" if key == "conversations" else "chat messages"
    summary = (f"converted from Glaive function calling in {layout}: {plural(len(tools), 'tool')}, "
               f"{plural(n_calls, 'call')}, {plural(n_results, 'result')}")
    return with_notes(out, [summary] + notes)
