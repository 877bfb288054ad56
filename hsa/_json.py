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
        """Parse JSON exactly: orjson where it can, the standard library where orjson would not give the text's values
        back (NaN and infinity literals and lone surrogates, which orjson refuses; integers beyond 64 bits, which it
        reads as floats without a word, so a text with a run of 19 digits or more goes to the standard library)."""
        if _may_hold_big_int(text):
            return json.loads(text)
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return json.loads(text)

    #: Every byte to b" " but the ASCII digits, which stay themselves as b"0": a run of digits is a run of b"0".
    _DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))

    def _may_hold_big_int(text: str | bytes) -> bool:
        """True when ``text`` has 19 digits in a row: every integer beyond 64 bits has (2**63 has 19 digits); a
        string or a float may too, and is then read by the slower parser, still exactly. At C speed (a translate and
        a substring search: about a quarter of what orjson takes to parse the same text)."""
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        return b"0000000000000000000" in data.translate(_DIGITS)

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


def sorted_key(value: Any) -> str | bytes:
    """A key that two JSON values share exactly when their :func:`canonical` texts are equal: orjson's key-sorted
    bytes (C speed) where they say as much, else the canonical text. orjson writes NaN and infinities as null, and
    refuses ints beyond 64 bits, keys that are not strings and lone surrogates: a value with any of them (or any
    null) gets the canonical text, and so does every value equal to it up to key order. :func:`loads` of either
    gives the value back with its keys sorted."""
    try:
        import orjson as _orjson
    except ImportError:  # pragma: no cover
        return canonical(value)
    try:
        data = _orjson.dumps(value, option=_orjson.OPT_SORT_KEYS)
    except TypeError:
        return canonical(value)
    return data if b"null" not in data else canonical(value)


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
