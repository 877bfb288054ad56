"""The literals a hook tells the model, and rewriting them (used by ``hook.message_format``).

A *message site* is a string literal (or a text part of an f-string) whose value
flows into what the hook says: a decision's ``message``/``reason``/
``permissionDecisionReason``/``additionalContext``, text printed to stderr by a
command hook, or the argument of an exception it raises. The sites come from the
same analysis as ``hook.sync`` (:func:`hsa.codemods.analysis.analyze`).
"""

from __future__ import annotations

import re

from hsa.codemods import Refusal
from hsa.codemods.analysis import NAME_ROLES, LiteralSite, analyze
from hsa.codemods.splice import apply_edits

__all__ = ["message_sites", "rewrite_messages", "is_prose"]

_WORD = re.compile(r"[A-Za-z]{2,}")


def is_prose(text: str) -> bool:
    """Text with at least two words: worth rewording (format fragments such as ``" chars"`` are not)."""
    return len(_WORD.findall(text)) >= 2


def message_sites(source: str, entry: str | None) -> list[LiteralSite]:
    """The message sites of a hook that are prose and play no name role, in source order."""
    an = analyze(source, entry)
    if not an.ok:
        return []
    out = []
    for s in an.sites:
        if s.kind not in ("simple", "ftext"):
            continue
        names = s.role_names()
        if "message" in names and not names & NAME_ROLES and is_prose(s.value):
            out.append(s)
    return out


def rewrite_messages(source: str, entry: str | None, edits: dict[int, str]) -> str | Refusal:
    """``source`` with message sites (by index) given new values; a :class:`Refusal` when one cannot be written."""
    an = analyze(source, entry)
    valid = {s.index for s in message_sites(source, entry)}
    bad = sorted(set(edits) - valid)
    if bad:
        return Refusal("not a message site", f"sites {bad} are not message literals of this hook")
    spliced = apply_edits(an, edits, {})
    return spliced if isinstance(spliced, Refusal) else spliced[0]
