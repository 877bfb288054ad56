"""Vercel AI SDK ``tool-call`` / ``tool-result`` content parts (:func:`convert_ai_sdk`)."""

from __future__ import annotations

from typing import Any

from hsa.formats.common import block_content, dropped_note, json_text, plural, read_arguments, tool_call, with_notes
from hsa.record_model import RecordError

__all__ = ["ai_sdk_parts", "convert_ai_sdk"]


def ai_sdk_parts(messages: list) -> bool:
    """Whether any message has Vercel AI SDK ``tool-call`` / ``tool-result`` content parts."""
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result") for p in m["content"])
               for m in messages)


def _ai_sdk_result(value: Any) -> Any:
    """A tool-result's value: AI SDK 5 wraps it as ``{"type": "json" | "text", "value": ...}``."""
    if isinstance(value, dict) and set(value) == {"type", "value"} and value["type"] in ("json", "text", "error-text",
                                                                                       "error-json", "content"):
        return value["value"]
    return value


def convert_ai_sdk(raw: dict) -> dict:
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
                    raise RecordError("bad tool result", f"{where}.content: tool-result {k} needs 'toolCallId' and "
                                                         "'toolName'")
                n_results += 1
                value = _ai_sdk_result(p["output"] if "output" in p else p.get("result"))
                messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": json_text(value)})
            if rest:
                messages.append({**m, "content": block_content(rest, "\n", dropped)})
            continue
        msg = {**m, "content": block_content(rest, "", dropped) if rest else ""}
        if calls:
            out_calls = []
            for k, p in enumerate(calls):
                call_id, name = p.get("toolCallId"), p.get("toolName")
                if not isinstance(call_id, str) or not isinstance(name, str) or not name:
                    raise RecordError("bad tool call", f"{where}.content: tool-call {k} needs 'toolCallId' and "
                                                       "'toolName'")
                n_calls += 1
                out_calls.append(tool_call(call_id, name, read_arguments(p["input"] if "input" in p else p.get("args"),
                                                                  where, name)))
            msg["tool_calls"] = out_calls
        messages.append(msg)
    out = {**raw, "messages": messages}
    notes = [f"converted Vercel AI SDK parts: {plural(n_calls, 'tool-call')} -> tool_calls, "
             f"{plural(n_results, 'tool-result')} -> tool messages"]
    return with_notes(out, notes + dropped_note(dropped))
