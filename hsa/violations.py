"""What a broken invariant looks like: :class:`Violation`, the value every check returns.

It lives below every check (``hsa.invariants``, the hook check in ``hsa.sandbox``, ``hsa validate``) so that they can
all build one without importing each other.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Violation"]


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken invariant: which, a short stable reason, and where."""

    invariant: str  # "validity" | "round-trip" | "closure" | "consistency" | "identity" | "determinism" | "hooks"
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.reason}: {self.detail}"
