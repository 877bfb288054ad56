"""BFCL / Gorilla: ``question`` (turns, each a list of messages) and ``function`` (tool documents)."""

from __future__ import annotations

from hsa.formats.common import parse_json_field
from hsa.record_model import RecordError

__all__ = ["is_bfcl", "convert_bfcl"]


def is_bfcl(raw: dict) -> bool:
    """Whether ``raw`` is a BFCL row (``question`` and ``function``, no ``messages``)."""
    return "question" in raw and "function" in raw and "messages" not in raw


def convert_bfcl(raw: dict) -> dict:
    """BFCL / Gorilla rows: ``question`` (turns, each a list of messages) and ``function`` (tool documents)."""
    question = parse_json_field(raw["question"], "question")
    if isinstance(question, str):
        question = [[{"role": "user", "content": question}]]
    if not (isinstance(question, list) and all(isinstance(t, (list, dict)) for t in question)):
        raise RecordError("bad question", "'question' must be a list of turns, each a list of {role, content} messages")
    messages = [m for turn in question for m in (turn if isinstance(turn, list) else [turn])]
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise RecordError("bad question", "every message of 'question' must be an object with a 'role'")
    out = {k: v for k, v in raw.items() if k not in ("question", "function")}
    out["messages"] = messages
    out["tools"] = parse_json_field(raw["function"], "function")
    out["notes"] = list(out.get("notes") or []) + [
        "converted from the BFCL question/function layout (no assistant turn: the answers live in a separate file)"]
    return out
