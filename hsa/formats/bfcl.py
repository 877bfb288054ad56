"""BFCL / Gorilla: ``question`` (turns, each a list of messages) and ``function`` (tool documents)."""

from __future__ import annotations

from hsa.formats.common import parse_json_field
from hsa.record_model import RecordError

__all__ = ["is_bfcl", "convert_bfcl", "check_bfcl_multi_turn"]


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


def check_bfcl_multi_turn(raw: dict) -> None:
    """Refuse, with what to do, a BFCL multi-turn row that does not carry its functions.

    BFCL's multi-turn rows (``question``, ``involved_classes``, ``initial_config``, ``path``, and
    ``excluded_function`` in the missing-function category) name the classes whose functions are their tools and
    keep the function documents in ``multi_turn_func_doc/*.json`` of the package; their answers, in
    ``possible_answer/``, are Python call strings without the results the calls returned. With the functions added
    as ``function`` the row is read as BFCL's single-turn layout is (docs/format.md shows how)."""
    if "question" not in raw or "function" in raw or "involved_classes" not in raw:
        return
    classes = raw["involved_classes"]
    raise RecordError(
        "bfcl multi-turn row without functions",
        f"a BFCL multi-turn row names the classes of its tools ({classes!r}) but not their functions, which BFCL "
        "keeps apart (multi_turn_func_doc/*.json in the bfcl-eval package's data); BFCL's own loader adds them "
        "(bfcl_eval.utils.load_dataset_entry(category), which also picks a memory row's backend: memory_kv, "
        "memory_vector, memory_rec_sum) and the rows it gives are read as BFCL question/function rows: "
        "docs/format.md, 'BFCL multi-turn rows'")
