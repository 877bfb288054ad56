"""ReAct text (ToolBench): ``Thought / Action / Action Input`` assistant turns calling declared tools
(ToolBench's API list in the system text), ``function`` results (:func:`convert_react`)."""

from __future__ import annotations

import re
from typing import Any

from hsa.formats.common import (
    TEXT_TURN_ROLES,
    declared_names,
    merge_tools,
    parse_literal,
    plural,
    text_turn_messages,
    text_turns,
    tool_name,
    with_notes,
)

__all__ = ["convert_react", "react_turns_of"]


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
        apis = parse_literal(text[start:decoder_end])
    except ValueError:
        return None
    if not (isinstance(apis, list) and all(tool_name(a) for a in apis)):
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


def react_turns_of(raw: dict) -> tuple[str, list[tuple[str, str]], str, list] | None:
    """``(key, [(speaker, text)], system prose, tools from the system text)`` of a row whose assistant turns are
    ReAct text (``Thought: ...\nAction: <tool>\nAction Input: {...}``, as ToolBench writes them) calling declared
    tools, with the results in function / tool / observation turns; else None."""
    found = text_turns(raw)
    if found is None:
        return None
    key, pairs = found
    system = "\n\n".join(text for who, text in pairs if who == "system")
    api_list = _toolbench_system(system)
    prose, tools = api_list if api_list is not None else (system.strip(), [])
    declared = declared_names(raw.get("tools")) | {tool_name(t) for t in tools}
    calls = [m for who, text in pairs if TEXT_TURN_ROLES[who] == "assistant"
             for m in [_REACT_ACTION.search(text)] if m is not None]
    if calls and all(m.group("name").strip() in declared and _object_text(m.group("args")) for m in calls):
        return key, pairs, prose, tools
    return None


def _object_text(text: str) -> bool:
    """Whether ``text`` is empty or one JSON / Python-literal object (an Action Input hsa can read)."""
    if not text.strip():
        return True
    try:
        return isinstance(parse_literal(text.strip()), dict)
    except ValueError:
        return False


def _react_text_calls(text: str, where: str, notes: list[str]) -> tuple[str, list[tuple[str, Any, None]]]:
    """The thought and the one ``Action`` / ``Action Input`` call of a ReAct assistant turn (none: the text)."""
    m = _REACT_ACTION.search(text)
    if m is None:
        return text, []
    return text[:m.start()].strip(), [(m.group("name").strip(), m.group("args").strip() or None, None)]


def convert_react(raw: dict, key: str, turns: list[tuple[str, str]], prose: str, tools: list) -> dict:
    """A ReAct row (:func:`react_turns_of`) as messages, one call per Action, and the system text's tools."""
    notes: list[str] = []
    body, n_calls, n_results = text_turn_messages(
        [(TEXT_TURN_ROLES[who], text, f"{key}[{i}] ({who})") for i, (who, text) in enumerate(turns)
         if who != "system"], _react_text_calls, notes)
    messages = ([{"role": "system", "content": prose}] if prose else []) + body
    out = {k: v for k, v in raw.items() if k != key}
    out["messages"] = messages
    out["tools"] = merge_tools(raw, tools, "the system text's API list", notes) if tools else raw.get("tools")
    if out["tools"] is None:
        del out["tools"]
    summary = (f"converted ReAct text (Thought / Action / Action Input, as ToolBench writes it): "
               f"{plural(len(tools), 'tool')} from the system text, {plural(n_calls, 'call')}, "
               f"{plural(n_results, 'result')}")
    return with_notes(out, [summary] + notes)
