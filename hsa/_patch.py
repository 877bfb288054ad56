"""Small exact patches between JSON values: what a ``restore`` mapping step keeps (docs/design.md invariant 8).

``diff(a, b)`` returns a patch ``p`` with ``patch(a, p) == b`` exactly (types, key order, list
order), or None when ``a`` and ``b`` are already the same. A patch is one of

``{"=": value}``
    the value itself;
``{"k": [key, ...], "o": {key: patch}}``
    an object: its keys in order (``k``, present only when order or membership changed) and the
    patches of the keys whose values changed or are new (``o``);
``{"l": [item, ...]}``
    a list built from the old one: an item is ``i`` (old item ``i`` as it is), ``[i, patch]``
    (old item ``i`` patched) or ``{"=": value}``; old items are matched exactly first, then by
    their ``name`` / ``id`` / ``tool_call_id``, then by position, so a reorder costs indices and a
    removed item nothing;
``{"s": [[start, end, text], ...]}``
    a long string edited in place (character offsets in the old string, in order).

Patches are plain JSON, so they travel inside a row's ``mapping`` column.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from hsa import _json

__all__ = ["diff", "patch", "same", "str_edits"]

_KEYS = ("name", "id", "tool_call_id")
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
_LONG = 64  # strings at least this long are patched by edits, shorter ones replaced


def _identical(a: Any, b: Any) -> bool:
    """True only where :func:`same` is (False says nothing): the values compare equal (C speed) and write the
    same JSON, which tells ``1`` / ``1.0`` / ``True`` and key orders apart. JSON writes NaN as ``null``, so a text
    holding ``null`` and a ``nan`` in its repr is left to the walk (which tells NaN from None)."""
    try:
        if a != b:
            return False
        da = _json.dumps_bytes(a)
        if da != _json.dumps_bytes(b):
            return False
    except (TypeError, ValueError):  # ints beyond 64 bits, lone surrogates: the walk decides
        return False
    return b"null" not in da or "nan" not in repr(a)


def same(a: Any, b: Any) -> bool:
    """Exact JSON equality: types (``1`` is not ``1.0`` or ``True``), and the key order of every object; NaN is
    the same as NaN (it is written and read back as itself), never as None."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list)) and _identical(a, b):
        return True
    return _same(a, b)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN is itself: a source's NaN given back is the source given back


def _value(v: Any) -> dict:
    return {"=": _json.copy(v)}


def diff(a: Any, b: Any, *, str_edits: Callable[[str, str], list | None] | None = None,
         key_diff: Callable[[str, Any, Any], dict | None] | None = None) -> dict | None:
    """The patch that makes ``a`` into ``b`` (None when they are the same). ``str_edits(old, new)``: what
    :func:`str_edits` gives (a caller's cache of it), for the long strings. ``key_diff(key, old, new)``: the patch
    of one key of a top-level dict present on both sides (a caller's lookup of it); nested values use ``diff``."""
    if type(a) is not type(b):
        return _value(b)
    if isinstance(a, (dict, list)) and _identical(a, b):
        return None
    if isinstance(a, dict):
        changed = {}
        for k, v in b.items():
            if k in a:
                sub = (key_diff(k, a[k], v) if key_diff is not None else diff(a[k], v, str_edits=str_edits))
                if sub is not None:
                    changed[k] = sub
            else:
                changed[k] = _value(v)
        reordered = list(a) != list(b)
        if not changed and not reordered:
            return None
        out: dict = {"o": changed}
        if reordered:
            out["k"] = list(b)
        return out
    if isinstance(a, list):
        return _diff_list(a, b, str_edits)
    if a == b:
        return None
    if isinstance(a, str) and len(a) >= _LONG and len(b) >= _LONG // 2:
        edits = (str_edits or _diff_str)(a, b)
        if edits is not None:
            return {"s": edits}
    return _value(b)


def _diff_list(a: list, b: list, str_edits) -> dict | None:
    if len(a) == len(b):  # mostly the same items in the same places: patch those that changed
        changed = [j for j, (x, y) in enumerate(zip(a, b)) if not same(x, y)]
        if not changed:
            return None
        if len(changed) * 2 <= len(b) or len(b) < 3:
            at = set(changed)
            return {"l": [[j, diff(a[j], b[j], str_edits=str_edits)] if j in at else j for j in range(len(b))]}
    # candidates for an exact match, bucketed by their JSON text: two values that are the same write the same text
    # (types, key order, -0.0 and 0.0 too), so the buckets hold every match the walk would find, in index order
    exact: dict[str, list[int]] = {}
    for i, x in enumerate(a):
        exact.setdefault(_json.dumps(x), []).append(i)
    used: set[int] = set()
    items: list = [None] * len(b)
    left = []
    for j, y in enumerate(b):
        cands = [i for i in exact.get(_json.dumps(y), ()) if i not in used]
        match = next((i for i in cands if i == j and same(a[i], y)), None)
        if match is None:
            match = next((i for i in cands if same(a[i], y)), None)
        if match is not None:
            used.add(match)
            items[j] = match
        else:
            left.append(j)
    for j in left:
        y = b[j]
        i = _keyed(a, y, used)
        if i is None and j < len(a) and j not in used and type(a[j]) is type(y) and isinstance(y, (dict, list, str)):
            i = j
        if i is None:
            items[j] = _value(y)
        else:
            used.add(i)
            items[j] = [i, diff(a[i], y, str_edits=str_edits)]
    return {"l": items}


def _keyed(a: list, y: Any, used: set[int]) -> int | None:
    """The unused item of ``a`` with the same name / id / tool_call_id as ``y`` (when exactly one has it)."""
    if not isinstance(y, dict):
        return None
    for key in _KEYS:
        v = y.get(key)
        if isinstance(v, str):
            hits = [i for i, x in enumerate(a) if i not in used and isinstance(x, dict) and x.get(key) == v]
            if len(hits) == 1:
                return hits[0]
    return None


def str_edits(a: str, b: str) -> list | None:
    """The edits a string patch of ``a`` into ``b`` holds (``[[start, end, text], ...]``), None when they save
    nothing over the new value."""
    return _diff_str(a, b)


def _diff_str(a: str, b: str) -> list | None:
    """Edits of ``a`` into ``b`` as ``[start, end, text]`` (None when they save nothing).

    The common head and tail are cut first; the rest is compared line by line, and a block of
    changed lines short enough word by word, so a long prompt with a few edits costs little time
    and little room."""
    head = 0
    n = min(len(a), len(b))
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    ma, mb = a[head:len(a) - tail], b[head:len(b) - tail]
    edits: list = []
    la, lb = ma.splitlines(keepends=True), mb.splitlines(keepends=True)
    if len(la) > 1 or len(lb) > 1:
        offsets = _offsets(la, head)
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
            if op != "equal":
                edits.extend(_word_edits("".join(la[i1:i2]), "".join(lb[j1:j2]), offsets[i1]))
    else:
        edits = _word_edits(ma, mb, head)
    if sum(len(e[2]) + 12 for e in edits) >= len(b):
        return None
    return edits


def _offsets(tokens: list[str], start: int) -> list[int]:
    out = [start]
    for t in tokens:
        out.append(out[-1] + len(t))
    return out


def _word_edits(a: str, b: str, start: int) -> list:
    """Word-level edits of the piece ``a`` (at ``start`` in the old string) into ``b``; one replacement when long."""
    if not a or not b or len(a) + len(b) > 600:
        return [[start, start + len(a), b]]
    ta, tb = _WORDS.findall(a), _WORDS.findall(b)
    if "".join(ta) != a or "".join(tb) != b:
        return [[start, start + len(a), b]]
    offsets = _offsets(ta, start)
    return [[offsets[i1], offsets[i2], "".join(tb[j1:j2])]
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()
            if op != "equal"]


def patch(a: Any, p: dict | None, *, share: bool = False) -> Any:
    """``a`` with patch ``p`` applied (a new value; ``a`` is not changed). ``share``: what the patch keeps or sets
    is not copied (the result shares it with ``a`` and ``p``: for a reader that changes nothing)."""
    copy = _json.copy if not share else _same_value
    if p is None:
        return copy(a)
    if "=" in p:
        return copy(p["="])
    if "s" in p:
        if not isinstance(a, str):
            raise ValueError(f"a string patch applies to a string, not to {type(a).__name__}")
        out, at = [], 0
        for start, end, text in p["s"]:
            out.append(a[at:start])
            out.append(text)
            at = end
        out.append(a[at:])
        return "".join(out)
    if "l" in p:
        if not isinstance(a, list):
            raise ValueError(f"a list patch applies to a list, not to {type(a).__name__}")
        res = []
        for item in p["l"]:
            if isinstance(item, int):
                res.append(copy(a[item]))
            elif isinstance(item, list):
                res.append(patch(a[item[0]], item[1], share=share))
            else:
                res.append(patch(None, item, share=share))
        return res
    if "o" in p or "k" in p:
        if not isinstance(a, dict):
            raise ValueError(f"an object patch applies to an object, not to {type(a).__name__}")
        changed = p.get("o", {})
        keys = p["k"] if "k" in p else list(a) + [k for k in changed if k not in a]
        # a listed key that ``a`` lacks and the patch does not set was a marker of the record in memory only
        return {k: patch(a.get(k), changed[k], share=share) if k in changed else copy(a[k]) for k in keys
                if k in changed or k in a}
    raise ValueError(f"not a patch: {_json.dumps(p)[:200]}")


def _same_value(v: Any) -> Any:
    return v
