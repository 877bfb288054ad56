"""OpenAI Responses API items, as the OpenAI Agents SDK logs a run.

``function_call`` / ``function_call_output`` items and typed-text ``message`` items in ``messages`` or
``input`` + ``output``, ``instructions`` as the system message (:func:`convert_responses`).
"""

from __future__ import annotations

from typing import Any

from hsa.formats.common import count_dropped, dropped_note, json_text, plural, read_arguments, tool_call, with_notes
from hsa.record_model import RecordError

__all__ = ["convert_responses", "responses_items"]


_RESPONSES_TEXT_PARTS = {"input_text", "output_text", "text"}


def responses_items(raw: dict) -> tuple[str, list[dict]] | None:
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
                count_dropped(dropped, "text annotations")
        return "".join(p["text"] for p in content)
    return content


def convert_responses(raw: dict, key: str, items: list[dict]) -> dict:
    """OpenAI Responses API items (:func:`responses_items`) as messages; items with no chat counterpart are counted
    as dropped."""
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
                raise RecordError("bad message", f"{where}: a message item without a 'role'")
            messages.append({"role": "system" if role == "developer" else role,
                             "content": _responses_text(item.get("content"), where, dropped)})
        elif kind == "function_call":
            name, call_id = item.get("name"), item.get("call_id") or item.get("id")
            if not (isinstance(name, str) and name and isinstance(call_id, str)):
                raise RecordError("bad tool call", f"{where}: a function_call item needs a 'name' and a 'call_id'")
            call = tool_call(call_id, name, read_arguments(item.get("arguments"), where, name))
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
                raise RecordError("unmatched tool result", f"{where}: function_call_output for call_id "
                                  f"{item.get('call_id')!r}, which no earlier function_call has")
            n_results += 1
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                             "content": json_text(item.get("output"))})
        else:  # reasoning, web_search_call, file_search_call, ...: no chat-format counterpart
            count_dropped(dropped, f"{kind} item")
    out = {k: v for k, v in raw.items() if k not in (key, "instructions", "output")}
    if "output" in raw and key != "input":
        out["output"] = raw["output"]
    out["messages"] = messages
    notes = [f"converted OpenAI Responses API items: {plural(len(calls), 'function_call')} -> tool_calls, "
             f"{plural(n_results, 'function_call_output')} -> tool messages"]
    return with_notes(out, notes + dropped_note(dropped))
