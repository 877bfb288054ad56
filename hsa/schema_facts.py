"""What hsa reads of a parameter schema or a tool list, worked out once per content: one table, keyed by content.

A tool's parameter schema is read many times a record, and the records of a harness (and the variants of a pool
slot) hand the same schema again as a fresh object: its declared paths (every rename and the added-names check),
its texts and their words (the fresh-name draws, the names-left check), its skeleton (invariant 6), its compiled
validator (invariant 1), the nodes a value transform may change, example arguments for a hook. Each of them is a
pure function of the schema, so :func:`schema_fact` works it out once per schema content and keeps it with the
others in one :class:`SchemaFacts` entry of one table (``schema.facts``, bounded by bytes like every named cache,
:mod:`hsa.cache`). A whole tool list is read the same way where a fact is of all its schemas at once (the names and
words of a harness's tools: one key for the list instead of one per schema)::

    from hsa.schema_facts import schema_fact

    def declared_names(schema):           # a pure function of the schema
        return frozenset(schema.get("properties", {}))

    schema_fact(tool["parameters"], declared_names)   # worked out once per schema content

**The key.** A schema's JSON bytes tell apart every two schemas that differ but for one thing: JSON has no NaN or
infinity, and orjson writes them as ``null``. A fact that reads only a schema's structure and texts (its keys,
nesting and strings: paths, texts, tokens, skeleton) is the same for both, and is kept under the JSON bytes
(``exact=False``, the default). A fact that reads its values (a validator, the values a transform lists, example
arguments) passes ``exact=True`` and is kept under :func:`hsa.cache.exact_key`, which tells those apart too; for
a schema without ``null`` the two keys are the same bytes, so one entry holds both kinds. A schema orjson cannot
write (an int beyond 64 bits, a lone surrogate, a value that is not JSON) is keyed by its ``repr`` (exact) or,
for a structure fact, worked out afresh each time.

**What a fact's function receives.** A fact's value is shared: callers treat it as read-only. A structure fact
(``exact=False``) is worked out on the caller's schema, whose content at that moment is the key's, and returns
values built of the schema's strings (tuples and frozensets of names, paths and words): it keeps nothing of the
caller's object, which the caller may change later. A value fact (``exact=True``) may keep parts of the schema (a
compiled validator holds it), so it receives the entry's own copy, read from the key's bytes once per entry.
Copying every schema instead cost a third of a second in 200 records that each have their own tools.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from hsa import _json
from hsa.cache import exact_key
from hsa.cache import lru as _lru

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = ["SchemaFacts", "schema_fact"]

#: Bytes counted for an entry beyond its key, and for each fact beyond what its own ``size`` says.
_ENTRY_BYTES = 400
_FACT_BYTES = 120


class SchemaFacts:
    """The facts worked out so far for one schema content: ``values`` by (function, args), the entry's own copy
    of the schema (made on first need from the key's bytes, or given), and the bytes counted for it."""

    __slots__ = ("key", "_schema", "values", "size")

    def __init__(self, key: bytes | str, schema: Any = None):
        self.key = key
        self._schema = schema
        self.values: dict[Hashable, Any] = {}
        self.size = 3 * len(key) + _ENTRY_BYTES

    @property
    def schema(self) -> Any:
        """The entry's own copy of the schema: read from the key's JSON bytes when it is a bytes key."""
        if self._schema is None:
            self._schema = _orjson.loads(self.key) if isinstance(self.key, bytes) else None
        return self._schema


_TABLE = _lru("schema.facts", 64 << 20)


def _key(schema: Any, exact: bool) -> bytes | str | None:
    if _orjson is None:  # pragma: no cover
        return None
    if exact:
        return exact_key(schema)
    try:
        return _orjson.dumps(schema)
    except TypeError:
        return None


def schema_fact(schema: Any, fn: Callable[..., Any], *args: Hashable, exact: bool = False,
                size: Callable[[Any], int] | None = None) -> Any:
    """``fn(schema, *args)``, worked out once per schema content (and ``args``) and shared: read-only.

    ``exact``: the fact reads the schema's values, so NaN or infinity must not count as ``null`` (module
    docstring). ``size(value)``: the approximate bytes the value holds (default: a small constant), counted
    against the table's budget."""
    key = _key(schema, exact)
    if key is None:  # not JSON: nothing to key it by
        return fn(schema, *args)
    table = _TABLE
    entry = table.get(key)
    if entry is None:  # a str key (a repr: exact only) cannot give the copy back: it is made now
        entry = SchemaFacts(key, _json.copy(schema) if isinstance(key, str) else None)
    fact_key = (fn, args) if args else fn
    values = entry.values
    if fact_key in values:
        return values[fact_key]
    value = values[fact_key] = fn(entry.schema if exact else schema, *args)
    entry.size += _FACT_BYTES + (size(value) if size is not None else 0)
    table.put(key, entry, entry.size)
    return value
