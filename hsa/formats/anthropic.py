"""Anthropic Messages: ``tool_use`` / ``tool_result`` content blocks (:func:`convert_messages`)."""

from __future__ import annotations

from hsa.formats.common import block_content, count_dropped, dropped_note, json_text, plural, tool_call
from hsa.record_model import RecordError

__all__ = ["convert_messages"]


_ANTHROPIC_TOOL_BLOCKS = ("tool_use", "tool_result")


def _has_anthropic_blocks(messages: list) -> bool:
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_TOOL_BLOCKS for b in m["content"])
               for m in messages)


def _anthropic_assistant(m: dict, where: str, calls_by_id: dict, dropped: dict[str, int], notes: list[str]) -> dict:
    calls, reasoning, rest = [], [], []
    for bi, b in enumerate(m["content"]):
        at = f"{where}.content[{bi}]"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_use":
            call_id, name = b.get("id"), b.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                raise RecordError("bad tool call", f"{at}: a tool_use block needs a string 'id' and 'name'")
            args = b.get("input", {})
            if not isinstance(args, dict):
                raise RecordError("bad arguments", f"{at} ({name}): 'input' must be an object, got "
                                                   f"{type(args).__name__}")
            for k in b:
                if k not in ("type", "id", "name", "input"):
                    count_dropped(dropped, f"tool_use key {k!r}")
            call = tool_call(call_id, name, args)
            calls.append(call)
            calls_by_id[call_id] = call
        elif kind == "tool_result":
            raise RecordError("bad message", f"{at}: a tool_result block in an assistant message; results go in the "
                              "user message after it")
        elif kind == "thinking" and isinstance(b.get("thinking"), str):
            reasoning.append(b["thinking"])
            if "signature" in b:
                count_dropped(dropped, "thinking signature")
        else:
            rest.append(b)
    msg = {k: v for k, v in m.items() if k != "content"}
    content = block_content(rest, "", dropped)
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
            raise RecordError("bad message", f"{at}: a tool_use block in a {m.get('role')} message; calls are made "
                              "by the assistant")
        if kind != "tool_result":
            rest.append(b)
            continue
        call = calls_by_id.get(b.get("tool_use_id"))
        if call is None:
            raise RecordError("unmatched tool result", f"{at}: tool_use_id {b.get('tool_use_id')!r} matches no earlier "
                              f"tool_use (ids so far: {sorted(calls_by_id)}); answer a tool_use of an assistant "
                              "message")
        content = b.get("content", "")
        if isinstance(content, list):
            content = block_content(content, "\n", dropped)
            if isinstance(content, list):
                notes.append(f"{at}: a tool_result with blocks other than text kept as a content list")
        elif content is None:
            content = ""
        elif not isinstance(content, str):
            content = json_text(content)
        result = {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": content}
        if "is_error" in b:
            result["is_error"] = b["is_error"]
        for k in b:
            if k not in ("type", "tool_use_id", "content", "is_error"):
                count_dropped(dropped, f"tool_result key {k!r}")
        results.append(result)
    if rest or not results:
        msg = {k: v for k, v in m.items() if k != "content"}
        msg["content"] = block_content(rest, "\n", dropped)
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
    summary = (f"converted Anthropic content blocks: {plural(len(calls_by_id), 'tool_use')} -> tool_calls, "
               f"{plural(n_results, 'tool_result')} -> tool messages")
    notes.insert(0, summary)
    return out, notes + dropped_note(dropped)
