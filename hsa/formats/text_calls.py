"""Calls left as model output text: Mistral ``[TOOL_CALLS] [...]`` and Llama 3.1 ``<|python_tag|>{...}`` /
bare JSON calls to declared tools in assistant text, ``ipython`` results (:func:`convert_text_calls`)."""

from __future__ import annotations

import json
from typing import Any

from hsa.formats.common import declared_names, plural, read_arguments, take_call, tool_call, with_notes

__all__ = ["convert_text_calls"]


_MISTRAL_CALLS = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")


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


def convert_text_calls(raw: dict) -> dict | None:
    """A messages row whose tool calls are still the model's raw output text (see :func:`_text_calls`), with
    ``ipython`` / ``tool`` results answering them in order, as tool calls and results; else None."""
    messages = raw["messages"]
    if any(isinstance(m, dict) and m.get("tool_calls") for m in messages):
        return None
    declared = declared_names(raw.get("tools"))
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
                made.append(tool_call(call_id or f"call_{n_calls}", name, read_arguments(args, where, name)))
            out_messages.append({**{k: v for k, v in m.items() if k != "content"}, "content": "", "tool_calls": made})
            pending = list(made)
        elif isinstance(m, dict) and m.get("role") in ("ipython", "tool") and pending:
            known_id = m.get("tool_call_id") if any(c["id"] == m.get("tool_call_id") for c in pending) else None
            call = take_call(pending, f"{where} ({m['role']})", name=m.get("name"), call_id=known_id)
            n_results += 1
            rest = {k: v for k, v in m.items() if k not in ("role", "tool_call_id", "name")}
            out_messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], **rest})
        else:
            out_messages.append(m)
    out = {**raw, "messages": out_messages}
    kinds = ", ".join(f"{fmt} x{n}" for fmt, n in sorted(formats.items()))
    return with_notes(out, [f"converted tool calls written as model output text ({kinds}): "
                             f"{plural(n_calls, 'call')}, {plural(n_results, 'result')}"])
