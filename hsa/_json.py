"""JSON helpers: one fast, exact encoding used everywhere bytes matter."""

from __future__ import annotations

import json
from typing import Any

try:  # orjson is a hard dependency, but keep the fallback for vendored use.
    import orjson

    def dumps(obj: Any) -> str:
        """Compact JSON, keys in insertion order, non-ASCII kept as is."""
        try:
            return orjson.dumps(obj).decode()
        except TypeError:  # ints beyond 64 bits
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    def dumps_bytes(obj: Any) -> bytes:
        """:func:`dumps` as UTF-8 bytes, raising ``TypeError`` where orjson cannot write ``obj`` (no fallback)."""
        return orjson.dumps(obj)

    def loads(text: str | bytes) -> Any:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            # orjson refuses ints beyond 64 bits and lone surrogates; json accepts them.
            return json.loads(text)

except ImportError:  # pragma: no cover
    def dumps(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    def dumps_bytes(obj: Any) -> bytes:
        return dumps(obj).encode("utf-8")

    def loads(text: str | bytes) -> Any:
        return json.loads(text)


def canonical(obj: Any) -> str:
    """Key-sorted JSON: the form used for hashing and equality of JSON values."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy(obj: Any) -> Any:
    """Deep copy of a JSON value (faster than copy.deepcopy for plain data; leaves are not recursed into)."""
    if isinstance(obj, dict):
        return {k: v if type(v) in _ATOMS else copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [v if type(v) in _ATOMS else copy(v) for v in obj]
    return obj


def strict_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values that also tells ``True`` from ``1`` and ``1`` from ``1.0``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b
