"""What a broken invariant looks like: :class:`Violation`, the value every check returns.

It lives below every check (``hsa.invariants``, the hook check in ``hsa.sandbox``, ``hsa validate``) so that they can
all build one without importing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

__all__ = ["Violation", "MAX_DETAILS", "details"]

#: Violations of one record named in one message (a reject's detail); the rest are counted.
MAX_DETAILS = 10


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken invariant: which, a short stable reason, and where."""

    invariant: str  # "validity" | "round-trip" | "closure" | "consistency" | "identity" | "determinism" | "hooks"
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.reason}: {self.detail}"


def details(violations: Sequence[Violation], *, limit: int = MAX_DETAILS, max_chars: int = 1000) -> str:
    """The details of ``violations`` as one text: each of them, up to ``limit`` of them and ``max_chars``
    characters, then how many more there are (``"...; and 4 more violations"``)."""
    parts: list[str] = []
    used = 0
    for v in violations[:limit]:
        if parts and used + len(v.detail) > max_chars:
            break
        parts.append(v.detail if len(v.detail) <= max_chars else v.detail[:max_chars] + "...")
        used += len(parts[-1]) + 2
    rest = len(violations) - len(parts)
    if rest:
        parts.append(f"and {rest} more violation{'s' if rest != 1 else ''}")
    return "; ".join(parts)
