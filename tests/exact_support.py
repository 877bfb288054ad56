"""Exact equality for the fast-path tests: the same types at every level and the same key order."""

from __future__ import annotations

import math


def exact(a, b, *, nan_equal: bool = False) -> bool:
    """``a`` and ``b`` equal with the same type at every level (1, 1.0 and True differ; a list is not a tuple)
    and dict keys in the same order; ``nan_equal``: a NaN equals a NaN (to ``==`` and to this walk it never does)."""
    if nan_equal and isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(exact(a[k], b[k], nan_equal=nan_equal) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(exact(x, y, nan_equal=nan_equal) for x, y in zip(a, b))
    return a == b
