"""Rendered ChatML text: a row that holds only ``<|im_start|>role\n...<|im_end|>`` turns in a ``text`` column."""

from __future__ import annotations

import re

from hsa.formats.common import noted

__all__ = ["rendered_chatml"]


_CHATML_TURN = re.compile(r"<\|im_start\|>[ \t]*(system|user|assistant|tool|function|ipython)[ \t]*\n(.*?)"
                          r"(?:<\|im_end\|>|(?=<\|im_start\|>)|\Z)", re.S)


def rendered_chatml(raw: dict) -> dict:
    """A row that holds only the rendered ChatML text of a conversation (a ``text`` column of
    ``<|im_start|>role\n...<|im_end|>`` turns, as many SFT datasets ship) with that text read back as messages;
    tool tags inside the turns are then read like any Hermes / Qwen row."""
    text = raw.get("text")
    if "messages" in raw or "conversations" in raw or not isinstance(text, str) or "<|im_start|>" not in text:
        return raw
    turns = [(m.group(1), m.group(2).strip("\n")) for m in _CHATML_TURN.finditer(text)]
    if not turns or text[:text.find("<|im_start|>")].strip():
        return raw
    roles = {"function": "tool", "ipython": "tool"}
    out = {k: v for k, v in raw.items() if k != "text"}
    out["messages"] = [{"role": roles.get(role, role), "content": body} for role, body in turns]
    return noted(out, f"converted from rendered ChatML text: {len(turns)} turns")
