"""Bounded caches of the data path: least recently used entries go first once a byte budget is full.

Every expensive step of augmentation is a pure function of its inputs, so its result is kept
under a key made of an input digest and a parameters digest (:func:`digest`) and looked up
before the step runs again: records that share a harness, and variants that share a pool slot
(``--harness-pool``), do the step once. A cache never changes bytes: a hit returns what the
step would have returned (tests run every preset with the caches on and off and compare).

A module names each of its caches once with :func:`lru` (a :class:`Cache`); the tables themselves,
:class:`ByteLRU`, belong to the process's :class:`hsa.context.WorkerContext`, by name, each bounded by
the approximate bytes of what it holds, so memory stays flat however long the input. ``HSA_CACHE=0`` in the environment turns every cache off (each step runs every time);
``HSA_CACHE_SCALE`` multiplies every budget (default 1: the sizes given at the call sites).
:func:`stats` reports hits, misses and bytes per cache; docs/architecture.md lists every cache.

    from hsa.cache import lru, digest

    _RENDERED = lru("prompt.render", 16 << 20)

    def render(template, sections):
        key = digest(template, sections)
        hit = _RENDERED.get(key)
        if hit is None:
            hit = _RENDERED.put(key, _render(template, sections))
        return hit
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from hsa.context import STACK as _contexts
from hsa.context import current as _current
from hsa.context import memoising as _memoising

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = ["ByteLRU", "Cache", "lru", "memoize", "digest", "exact_key", "sizeof", "enabled", "stats", "clear", "caches"]

_MISSING = object()


def enabled() -> bool:
    """False when ``HSA_CACHE=0`` (read when a cache is made, and again by :func:`clear`):
    :func:`hsa.context.memoising`."""
    return _memoising()


def _scale() -> float:
    try:
        return max(0.0, float(os.environ.get("HSA_CACHE_SCALE", "1")))
    except ValueError:
        return 1.0


#: Bytes a JSON-like value holds in memory per byte of its JSON text (measured on the data path's cache entries:
#: schemas, tool lists, patches hold 7.0-7.8 times their JSON length as Python objects).
_BYTES_PER_JSON_BYTE = 8


def sizeof(value: Any) -> int:
    """Approximate bytes held by a JSON-like value (str, bytes, numbers, lists, tuples, dicts, sets), shared parts
    counted each time; other objects count their ``sys.getsizeof`` only.

    A container is measured by its JSON text (written in C: :data:`_BYTES_PER_JSON_BYTE` per byte, plus its own
    ``sys.getsizeof``), not by a walk of its parts: a put costs microseconds where a walk of a tool list cost as
    much as the step it saves. What orjson cannot write (ints beyond 64 bits, keys that are not scalars) is
    walked (:func:`_walk_size`)."""
    if isinstance(value, (str, bytes, int, float)) or value is None:
        return sys.getsizeof(value)
    others: list[int] = []

    def default(obj: Any) -> Any:
        others.append(sys.getsizeof(obj))
        return list(obj) if isinstance(obj, (set, frozenset)) else None

    if _orjson is not None:
        try:
            data = _orjson.dumps(value, default=default, option=_orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
        else:
            return sys.getsizeof(value) + _BYTES_PER_JSON_BYTE * len(data) + sum(others)
    return _walk_size(value)


def _walk_size(value: Any) -> int:
    """:func:`sizeof` by a walk of the value (``sys.getsizeof`` of every part)."""
    if isinstance(value, (str, bytes)):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        n = sys.getsizeof(value)
        for k, v in value.items():
            n += _walk_size(k) + _walk_size(v)
        return n
    if isinstance(value, (list, tuple, set, frozenset)):
        return sys.getsizeof(value) + sum(_walk_size(v) for v in value)
    return sys.getsizeof(value)


def exact_key(obj: Any) -> bytes | str:
    """A dict key for a JSON value that tells apart any two values that differ at all: key order,
    ``1`` / ``1.0`` / ``True``, NaN / ``None`` (its orjson bytes, or its ``repr`` where orjson cannot
    write it exactly)."""
    if _orjson is not None:
        try:
            data = _orjson.dumps(obj)
        except TypeError:
            pass
        else:
            if b"null" not in data:  # orjson writes NaN and infinities as null too
                return data
    return repr(obj)


def digest(*parts: Any) -> bytes:
    """A 128-bit key for JSON-like values that tells apart any two that differ at all: key order, ``1`` /
    ``1.0`` / ``True``, NaN / ``None`` (values orjson cannot write exactly go through ``repr``)."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        k = p if isinstance(p, bytes) else exact_key(p)
        k = k if isinstance(k, bytes) else b"\x00" + k.encode("utf-8", "surrogatepass")
        h.update(len(k).to_bytes(8, "big"))
        h.update(k)
    return h.digest()


class ByteLRU:
    """A mapping from keys to values with a byte budget: least recently used entries are dropped first.

    ``max_bytes`` bounds the sum of the entries' sizes (each given to :meth:`put`, or measured with
    :func:`sizeof` on the key and value); an entry larger than a quarter of the budget is not kept.
    """

    __slots__ = ("name", "max_bytes", "bytes", "hits", "misses", "evictions", "_data", "_on")

    def __init__(self, name: str, max_bytes: int):
        self.name = name
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._on = enabled() and self.max_bytes > 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        if not self._on:
            self.misses += 1
            return default
        item = self._data.get(key, _MISSING)
        if item is _MISSING:
            self.misses += 1
            return default
        self._data.move_to_end(key)
        self.hits += 1
        return item[0]  # type: ignore[index]

    def __contains__(self, key: Hashable) -> bool:
        return self._on and key in self._data

    def put(self, key: Hashable, value: Any, size: int | None = None) -> Any:
        """Keep ``value`` under ``key`` (when the cache is on and it fits); returns ``value``."""
        if not self._on:
            return value
        if size is None:
            size = sizeof(key) + sizeof(value)
        size += 64  # the entry itself
        if size > self.max_bytes // 4:
            return value
        old = self._data.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._data[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, n) = self._data.popitem(last=False)
            self.bytes -= n
            self.evictions += 1
        return value

    def clear(self) -> None:
        self._data.clear()
        self.bytes = 0
        self._on = enabled() and self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._data)

    def stats(self) -> dict:
        return {"entries": len(self._data), "bytes": self.bytes, "max_bytes": self.max_bytes, "hits": self.hits,
                "misses": self.misses, "evictions": self.evictions}


class Cache:
    """A named cache as the modules that use it hold it: made once at import (:func:`lru`), it reads and writes
    the :class:`ByteLRU` of that name in the process's current :class:`hsa.context.WorkerContext`, made there on
    first use with its budget times ``HSA_CACHE_SCALE``. The same methods as :class:`ByteLRU`; its counters
    (``hits``, ``bytes``, ...) are the current table's."""

    __slots__ = ("name", "max_bytes_given", "_serial", "_table")

    def __init__(self, name: str, max_bytes: int):
        self.name = name
        self.max_bytes_given = int(max_bytes)
        self._serial = -1
        self._table: ByteLRU | None = None

    def table(self) -> ByteLRU:
        """The current context's table of this name."""
        ctx = _contexts[-1] if _contexts else _current()
        if ctx.serial != self._serial:
            table = ctx.caches.get(self.name)
            if table is None:
                table = ctx.caches[self.name] = ByteLRU(self.name, int(self.max_bytes_given * _scale()))
            self._table, self._serial = table, ctx.serial
        return self._table  # type: ignore[return-value]

    def get(self, key: Hashable, default: Any = None) -> Any:
        ctx = _contexts[-1] if _contexts else None
        table = self._table if ctx is not None and ctx.serial == self._serial else self.table()
        return table.get(key, default)

    def put(self, key: Hashable, value: Any, size: int | None = None) -> Any:
        ctx = _contexts[-1] if _contexts else None
        table = self._table if ctx is not None and ctx.serial == self._serial else self.table()
        return table.put(key, value, size)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.table()

    def __len__(self) -> int:
        return len(self.table())

    def clear(self) -> None:
        self.table().clear()

    def stats(self) -> dict:
        return self.table().stats()

    def __getattr__(self, attr: str) -> Any:  # hits, misses, evictions, bytes, max_bytes: the table's
        if attr in ("hits", "misses", "evictions", "bytes", "max_bytes"):
            return getattr(self.table(), attr)
        raise AttributeError(attr)


def lru(name: str, max_bytes: int) -> Cache:
    """The cache called ``name``: a :class:`Cache` whose table, in each :class:`hsa.context.WorkerContext`, holds
    at most ``max_bytes`` times ``HSA_CACHE_SCALE``."""
    return Cache(name, max_bytes)


def memoize(name: str, max_bytes: int, *, key: Callable[..., Hashable] | None = None,
            size: Callable[[Any], int] | None = None) -> Callable:
    """Decorator: cache a pure function's results in :func:`lru` ``name``. ``key(*args, **kwargs)`` makes the
    key (default: :func:`digest` of the arguments); ``size(result)`` its bytes (default: :func:`sizeof`).
    Callers must treat a cached result as read-only."""

    def wrap(fn: Callable) -> Callable:
        cache = lru(name, max_bytes)

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            k = key(*args, **kwargs) if key is not None else digest(list(args), kwargs)
            hit = cache.get(k, _MISSING)
            if hit is not _MISSING:
                return hit
            out = fn(*args, **kwargs)
            return cache.put(k, out, None if size is None else size(out) + 80)

        cached.cache = cache  # type: ignore[attr-defined]
        return cached

    return wrap


def caches() -> dict[str, ByteLRU]:
    """Every cache of the current context (:class:`hsa.context.WorkerContext`) by name."""
    return dict(_current().caches)


def stats() -> dict[str, dict]:
    """Hits, misses, evictions, entries and bytes of every cache of the current context."""
    return _current().cache_stats()


def clear() -> None:
    """Empty every cache and the slot plans of the current context, and read ``HSA_CACHE`` and ``HSA_PLANS``
    again."""
    _current().clear()
