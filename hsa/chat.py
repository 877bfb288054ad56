"""A row as a chat: trl's conversational format, what chat templates render and the trainers train on.

:func:`to_chat` reads one row (an input record in any layout hsa reads, or an output row of ``hsa augment``)
into ``{"messages", "tools", "train", "record", "adapted"}``: OpenAI / Hugging Face messages, the tools in the
OpenAI form chat templates expect, a train flag per message, the normalised record, and what the rewrites of
:data:`CHAT_COMPAT` (:mod:`hsa.chat_template`) changed for templates that cannot render some conversations.
The trainers (:func:`trainers.common.to_chat`) and ``hsa stats`` use it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hsa.chat_template import REWRITES

__all__ = ["ChatInputError", "CHAT_COMPAT", "to_chat", "adaptation_summary", "tally"]


class ChatInputError(ValueError):
    """A row that cannot be read as a chat, or an unknown rewrite; the message says what to do."""


def _content(value: Any) -> Any:
    if value is None:
        return ""
    return value


def _result_text(content: Any) -> str:
    """A tool result as the text a chat template expects: MCP / Anthropic text blocks joined, other values as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(
            isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in content):
        return "\n".join(b["text"] for b in content)
    return json.dumps(content, ensure_ascii=False)


#: ``to_chat(..., compat=...)`` rewrites for chat templates that cannot render some conversations: the rewrites of
#: :mod:`hsa.chat_template`, in the order they apply (the trainers detect the ones a template needs with
#: :func:`trainers.common.template_compat`).
CHAT_COMPAT = REWRITES


def to_chat(row: dict, *, where: str = "row", compat: Sequence[str] = ()) -> dict[str, Any]:
    """One row as trl's conversational format, plus what the trainers need beside it.

    Returns ``{"messages", "tools", "train", "record", "adapted"}``: messages without hsa-only keys
    (tool-call arguments as objects, tool results as strings, text blocks joined, each
    result named after its call), tools in the OpenAI form (``None`` when the row has
    none), one train flag per message (``False`` where the message carries
    ``"train": false``), the normalised hsa record and ``adapted``, the count of what each rewrite
    changed. ``compat`` names rewrites of :data:`CHAT_COMPAT` for templates that cannot render some
    conversations (:mod:`hsa.chat_template`).
    """
    unknown = [c for c in compat if c not in CHAT_COMPAT]
    if unknown:
        raise ChatInputError(f"unknown chat_compat {unknown}; expected some of {list(CHAT_COMPAT)}")
    from hsa.io import row_to_record
    from hsa.records import RecordError, normalize, openai_tools

    def no_messages() -> ChatInputError:
        cols = sorted(row) if isinstance(row, dict) else type(row).__name__
        return ChatInputError(f"{where} has no 'messages' column (found: {cols}). The trainers read the Hugging "
                                 "Face conversational format {\"messages\": [...], \"tools\": [...]}, which the "
                                 "output of `hsa augment` has, and the public layouts hsa reads (xLAM, ShareGPT, "
                                 "Hermes, ToolACE, Glaive, Anthropic, Gemini, BFCL: docs/format.md); convert the "
                                 "dataset or pick one with a messages column.")

    if not isinstance(row, dict):
        raise no_messages()
    raw = row_to_record(row) if "source_id" in row or "extra" in row else dict(row)
    if isinstance(raw.get("mapping"), str):
        raw["mapping"] = json.loads(raw["mapping"])
    try:
        record = normalize(raw, default_id=where)  # other layouts are converted here
    except RecordError as exc:
        if exc.reason == "missing messages":
            raise no_messages() from None
        raise ChatInputError(f"{where}: {exc.reason}: {exc.detail}") from None
    messages, train = [], []
    names: dict[str, str] = {}  # call id -> tool name, to name results that come without one
    waiting: list[str] = []  # names of the last assistant turn's calls not yet answered, in order
    for m in record["messages"]:
        msg = {k: v for k, v in m.items() if k != "train"}
        msg["content"] = _content(msg.get("content"))
        if msg.get("role") == "tool":
            msg["content"] = _result_text(msg["content"])
            if not isinstance(msg.get("name"), str):
                name = names.get(str(msg.get("tool_call_id"))) if msg.get("tool_call_id") is not None else None
                if name is None and waiting:
                    name = waiting[0]
                if name is not None:
                    msg["name"] = name
            if msg.get("name") in waiting:
                waiting.remove(msg["name"])
        if msg.get("tool_calls"):
            msg["tool_calls"] = [{**({"id": c["id"]} if "id" in c else {}), "type": "function",
                                  "function": {"name": c["function"]["name"],
                                               "arguments": c["function"]["arguments"]}}
                                 for c in msg["tool_calls"]]
            names.update({str(c["id"]): c["function"]["name"] for c in msg["tool_calls"] if "id" in c})
            waiting = [c["function"]["name"] for c in msg["tool_calls"]]
        messages.append(msg)
        train.append(m.get("train", True) is not False)
    from hsa.chat_template import adapt

    messages, train, adapted = adapt(messages, train, compat)
    tools = openai_tools(list(record["tools"])) or None
    return {"messages": messages, "tools": tools, "train": train, "record": record, "adapted": adapted}


def tally(totals: dict[str, list[int]], counts: dict[str, int]) -> None:
    """Add one row's ``counts`` (name -> items: what a rewrite changed, the turns a template leaves out) to
    ``totals`` (name -> [rows, items]), what :func:`adaptation_summary` and
    :func:`hsa.chat_template.losses_summary` print."""
    for name, k in counts.items():
        row = totals.setdefault(name, [0, 0])
        row[0] += 1
        row[1] += k


def adaptation_summary(counts: dict[str, list[int]]) -> str:
    """``{rewrite: [rows, items]}`` as one line: "split_parallel_calls: 3 turns in 2 rows; ..."."""
    what = {"split_parallel_calls": "turns split", "alnum9_call_ids": "ids rewritten",
            "system_as_user": "system messages sent as user", "fold_system": "late system messages folded",
            "merge_user_turns": "user turns merged", "system_in_last_user": "system prompts put in the last user turn",
            "string_arguments": "calls' arguments written as JSON text",
            "tool_call_tags": "calls written as <tool_call> tags in the text"}
    return "; ".join(f"{k}: {n} {what.get(k, 'changes')} in {rows} rows" for k, (rows, n) in counts.items())
