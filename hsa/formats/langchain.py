"""LangChain message dicts: ``messages_to_dict`` / ``dumpd`` output (:func:`convert_langchain`)."""

from __future__ import annotations

from typing import Any

from hsa.formats.common import (
    block_content,
    count_dropped,
    dropped_note,
    json_text,
    plural,
    read_arguments,
    tool_call,
    with_notes,
)
from hsa.record_model import RecordError

__all__ = ["convert_langchain", "is_langchain"]


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


def is_langchain(raw: dict) -> bool:
    """Whether every message of ``raw`` is a LangChain message dict."""
    msgs = raw.get("messages")
    return isinstance(msgs, list) and bool(msgs) and all(_lc_fields(m) is not None for m in msgs)


def convert_langchain(raw: dict) -> dict:
    """LangChain message dicts as chat messages (calls from ``tool_calls`` or Anthropic ``tool_use`` blocks)."""
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
                content = block_content([b for b in content if not any(b is u for u in uses)], "", dropped)
            else:
                content = block_content(content, "\n", dropped)
        msg: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and calls:
            out_calls = []
            for k, c in enumerate(calls):
                if not isinstance(c, dict):
                    raise RecordError("bad tool call", f"{where}.tool_calls[{k}] is {type(c).__name__}; expected an "
                                                       "object")
                fn = c.get("function") if isinstance(c.get("function"), dict) else c  # OpenAI form in additional_kwargs
                name = fn.get("name")
                if not isinstance(name, str) or not name:
                    raise RecordError("bad tool call", f"{where}.tool_calls[{k}] has no 'name'")
                call_id = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call_{n_calls + 1}"
                args = fn.get("args", fn.get("arguments"))
                n_calls += 1
                out_calls.append(tool_call(call_id, name, read_arguments(args, f"{where}.tool_calls[{k}]", name)))
                names[call_id] = name
            msg["tool_calls"] = out_calls
        if role == "tool":
            call_id = data.get("tool_call_id")
            if isinstance(call_id, str):
                msg["tool_call_id"] = call_id
            name = data.get("name") if isinstance(data.get("name"), str) else names.get(str(call_id))
            if name:
                msg["name"] = name
            msg["content"] = json_text(content) if not isinstance(content, (str, list)) else content
            n_results += 1
        for key in ("invalid_tool_calls", "usage_metadata", "response_metadata"):
            if data.get(key):
                count_dropped(dropped, key)
        messages.append(msg)
    out = {**raw, "messages": messages}
    notes = [f"converted LangChain message dicts: {plural(n_calls, 'tool call')}, {plural(n_results, 'tool result')}"]
    return with_notes(out, notes + dropped_note(dropped))
