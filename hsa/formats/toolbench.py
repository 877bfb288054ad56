"""ToolBench's answer files (``data/answer/G1_answer/*.json``, one search per file): the trajectory of the answer
the search kept, as OpenAI's legacy function-calling chat (:func:`convert_toolbench_answer`).

A file is ``{"answer_generation": {"function", "train_messages", "query", "final_answer", "finish_type",
"valid_data", "chain", ...}, "tree", "compare_candidates", "forward_args", "win"}``. ``train_messages`` holds one
message list per assistant step of the kept path, each the one before with the step added; the last is the whole
conversation (``system`` / ``user`` / ``assistant`` with ``function_call`` / ``function`` messages) and
``function`` its tools (``Finish`` among them). The search tree and the compared candidates are the search's
bookkeeping, not the conversation: they are left out, and noted. A search that kept no path (``valid_data``
false, no ``train_messages``) has no conversation: a reject that says so.
"""

from __future__ import annotations

from typing import Any

from hsa.formats.common import plural, with_notes
from hsa.record_model import RecordError

__all__ = ["toolbench_answer", "convert_toolbench_answer"]

#: Top-level keys of an answer file that are the search's bookkeeping: left out of the record, noted.
_SEARCH_KEYS = ("tree", "compare_candidates")


def toolbench_answer(raw: dict) -> dict | None:
    """The ``answer_generation`` object of a ToolBench answer file, or None for any other row."""
    ag = raw.get("answer_generation")
    if "messages" in raw or not isinstance(ag, dict) or not isinstance(ag.get("function"), list):
        return None
    if "train_messages" in ag or "valid_data" in ag or "finish_type" in ag:
        return ag
    return None


def convert_toolbench_answer(raw: dict, ag: dict) -> dict:
    """The answer file's kept trajectory as a legacy function-calling row (``messages`` and ``functions``, read on
    by :func:`hsa.formats.openai_legacy.convert_legacy_openai`); the rest of ``answer_generation`` (query, final
    answer, finish type, chain) kept under that key, the search tree and candidates left out."""
    steps = ag.get("train_messages")
    if not isinstance(steps, list) or not steps or not isinstance(steps[-1], list) or not steps[-1]:
        raise RecordError(
            "toolbench answer without a trajectory",
            f"a ToolBench answer file whose search kept no path (valid_data={ag.get('valid_data')!r}, "
            f"finish_type={ag.get('finish_type')!r}): 'answer_generation' has no 'train_messages' to read; such a "
            "search has no conversation to train on or to vary")
    messages = steps[-1]
    notes = [f"converted from ToolBench's answer layout: the last of {plural(len(steps), 'train_messages list')} "
             "(each earlier one is a prefix of it), 'answer_generation.function' as the functions"]
    if not all(isinstance(s, list) and messages[:len(s)] == s for s in steps):
        notes.append("some earlier train_messages lists are not prefixes of the last one; the last one is read")
    left = [k for k in _SEARCH_KEYS if k in raw]
    if left:
        notes.append(f"left out the search's bookkeeping: {', '.join(repr(k) for k in left)}")
    out: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("answer_generation", *_SEARCH_KEYS)}
    out["answer_generation"] = {k: v for k, v in ag.items() if k not in ("train_messages", "function")}
    out["messages"] = messages
    out["functions"] = ag["function"]
    return with_notes(out, notes)
