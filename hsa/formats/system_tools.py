"""Tool definitions written into a system message as JSON ("You have access to the following functions: [...]"),
in rows of the messages layout.

A row with no ``tools`` whose calls name tools defined there gets them as its tools, cut from the text (the prose
kept), as the ToolACE reader does: before, every call was an ``undefined tool`` reject. A row with ``tools`` keeps
its text: the listing is prompt text that renders the tools (``prompt.tool_format`` varies its notation), and the
row is noted, since tool transforms rename the names in it but do not re-render it (a variant's listing keeps the
source's descriptions, parameters and tool list). Only JSON that is a tool definition (a name and a schema, or
OpenAI's ``{"type": "function", "function": ...}``) naming a tool the row defines or calls is read.
"""

from __future__ import annotations

import re
from typing import Any

from hsa.formats.common import cut_spans, declared_names, json_spans, merge_tools, plural, tool_name, with_notes

__all__ = ["convert_system_tools"]

#: Where a JSON tool definition, or a list of them, may start.
_START = re.compile(r"\[\s*\{|\{\s*\"")
#: The keys that make an object with a name a tool definition (its schema, in any dialect).
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")


def _is_tool(value: Any) -> bool:
    if not isinstance(value, dict) or tool_name(value) is None:
        return False
    fn = value.get("function")
    return isinstance(fn, dict) and any(isinstance(fn.get(k), dict) for k in _SCHEMA_KEYS) or any(
        isinstance(value.get(k), dict) for k in _SCHEMA_KEYS)


def _definitions(text: str) -> list[tuple[int, int, list]]:
    """(start, end, tools) of each JSON tool definition, or list of them, in ``text``."""
    def accept(value: Any) -> list | None:
        tools = value if isinstance(value, list) else [value]
        return tools if tools and all(_is_tool(t) for t in tools) else None

    return json_spans(text, _START, accept)


def _called_names(messages: list) -> set[str]:
    names = set()
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        for c in calls if isinstance(calls, list) else ():
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                names.add(fn["name"])
    return names


def convert_system_tools(row: dict) -> dict | None:
    """``row`` with the JSON tool definitions of its system messages moved to ``tools`` when it has none, or noted
    when it has (see the module); None when its system messages hold none. A definition is read only when some
    definition in the same text names a tool the row defines or calls, so JSON that merely looks like a tool is
    left alone."""
    msgs = row["messages"]
    hits = []
    for i, m in enumerate(msgs):
        text = m.get("content") if isinstance(m, dict) and m.get("role") == "system" else None
        if isinstance(text, str) and ("{" in text):
            spans = _definitions(text)
            if spans:
                hits.append((i, spans))
    if not hits:
        return None
    declared = declared_names(row.get("tools"))
    known = declared | _called_names(msgs)  # the guard against look-alike JSON
    hits = [(i, spans) for i, spans in hits if known & {tool_name(t) for _, _, tools in spans for t in tools}]
    if not hits:
        return None
    if declared:  # the text lists the row's own tools: a prompt that renders them (prompt.tool_format varies it)
        return with_notes(dict(row), [
            f"messages[{i}] (system) lists tools as JSON; kept as prompt text: tool transforms rename the names in it "
            "but do not re-render it (a variant's listing keeps the source's descriptions, parameters and tool list)"
            for i, _ in hits])
    messages, found, notes = list(msgs), [], []
    for i, spans in hits:
        text = cut_spans(msgs[i]["content"], spans).strip()
        messages[i] = {**msgs[i], "content": text}
        tools = [t for _, _, ts in spans for t in ts]
        found.extend(t for t in tools if t not in found)
        notes.append(f"converted tool definitions written as JSON in a system message: messages[{i}] held "
                     f"{plural(len(tools), 'tool definition')}; moved to 'tools' and cut from the text (the row has "
                     "no 'tools'; a chat template renders them)")
    return with_notes({**row, "messages": messages, "tools": merge_tools(row, found, "the system message", notes)},
                      notes)
