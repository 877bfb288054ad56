"""Ollama's ``tool_name`` on tool messages (:func:`ollama_tool_names`)."""

from __future__ import annotations

from hsa.formats.common import plural, with_notes

__all__ = ["ollama_tool_names"]


def ollama_tool_names(raw: dict) -> dict | None:
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
    return with_notes({**raw, "messages": out_msgs},
                      [f"converted Ollama tool messages: 'tool_name' read as 'name' ({plural(n, 'message')})"])
