"""The per-record call check (invariant 1) through four validators, on one corpus: what benchmarks/bench_validators.py and
tests/test_validators_differential.py share.

- ``jsonschema``: hsa's authority today, :func:`hsa.invariants.validator_for` (the draft the schema declares, else
  2020-12; no format assertions) and ``is_valid``;
- ``quick``: what :func:`hsa.invariants.check_record` runs today, :func:`hsa.invariants.quick_valid` and jsonschema
  where it does not say "valid";
- ``fastjsonschema``: ``fastjsonschema.compile`` (code generated per schema; drafts 4, 6 and 7 only; defaults
  not filled in, formats not asserted);
- ``jsonschema_rs``: ``jsonschema_rs.validator_for`` (Rust; formats not asserted).

A verdict is True (valid), False, or the name of the exception that making the validator or validating raised
("unusable schema" in hsa's words). The corpus is ``tests/data/validation_pairs.jsonl`` (every ``(schema,
arguments)`` pair that the data-path tests check, captured by ``benchmarks/capture_validation_pairs.py``), the
tool lists of the nine public MCP servers in ``fixtures/mcp`` with :func:`hsa.hooks_model.schema_examples` as
calls, and, for each pair, :func:`mutants`: the same arguments with a required key dropped, a value of the wrong
type, an undeclared key and a value outside an enum, so that both verdicts occur.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests" / "data" / "validation_pairs.jsonl"
MCP = ROOT / "fixtures" / "mcp"

Verdict = bool | str


def corpus_pairs() -> list[tuple[Any, Any]]:
    """The captured pairs, then the MCP servers' schemas with their example calls (no mutants)."""
    out = []
    if PAIRS.exists():
        with open(PAIRS, encoding="utf-8") as fh:
            out += [tuple(json.loads(line)) for line in fh if line.strip()]
    from hsa.hooks_model import schema_examples

    for f in sorted(MCP.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        tools = data.get("tools") if isinstance(data, dict) else data
        if isinstance(tools, dict):
            tools = tools.get("tools")
        for t in tools or ():
            schema = t.get("inputSchema") if isinstance(t, dict) else None
            if isinstance(schema, dict):
                out += [(schema, args) for args in schema_examples(schema)]
    return out


def mutants(schema: Any, instance: Any) -> Iterator[Any]:
    """Arguments near ``instance`` that ``schema`` may reject: a required key dropped, the first value of the wrong
    type, an undeclared key, a string outside an enum (each only where it changes something)."""
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for key in schema.get("required") or ():
        if isinstance(key, str) and key in instance:
            yield {k: v for k, v in instance.items() if k != key}
            break
    for key, value in instance.items():
        wrong = [] if isinstance(value, str) else "not a list"
        yield {**instance, key: wrong}
        break
    yield {**instance, "zz_undeclared": 1}
    for key, sub in props.items():
        if isinstance(sub, dict) and isinstance(sub.get("enum"), list):
            yield {**instance, key: "zz_not_in_enum"}
            break


def with_mutants(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    out = []
    for schema, instance in pairs:
        out.append((schema, instance))
        out += [(schema, m) for m in mutants(schema, instance)]
    return out


# --------------------------------------------------------------------------- the validators


def _jsonschema() -> tuple[Callable, Callable]:
    from hsa.invariants import validator_for

    return validator_for, lambda v, x: v.is_valid(x)


def _quick() -> tuple[Callable, Callable]:
    from hsa.invariants import quick_valid, validator_for

    def check(schema, x):
        return quick_valid(schema, x) is True or validator_for(schema).is_valid(x)

    return (lambda schema: schema), check


def _fastjsonschema() -> tuple[Callable, Callable]:
    import fastjsonschema

    def make(schema):
        return fastjsonschema.compile(schema, use_default=False, use_formats=False, detailed_exceptions=False)

    def check(fn, x):
        try:
            fn(x)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    return make, check


def _jsonschema_rs() -> tuple[Callable, Callable]:
    import jsonschema_rs

    return (lambda schema: jsonschema_rs.validator_for(schema, validate_formats=False)), (lambda v, x: v.is_valid(x))


VALIDATORS: dict[str, Callable[[], tuple[Callable, Callable]]] = {
    "jsonschema": _jsonschema, "quick": _quick, "fastjsonschema": _fastjsonschema, "jsonschema_rs": _jsonschema_rs}


def verdicts(name: str, pairs: list[tuple[Any, Any]]) -> list[Verdict]:
    """Each pair's verdict by validator ``name`` (compiled once per distinct schema)."""
    make, check = VALIDATORS[name]()
    compiled: dict[str, Any] = {}
    out: list[Verdict] = []
    for schema, instance in pairs:
        key = json.dumps(schema, sort_keys=False)
        try:
            if key not in compiled:
                try:
                    compiled[key] = make(copy.deepcopy(schema))
                except Exception as exc:  # noqa: BLE001 - the verdict "unusable schema", by exception type
                    compiled[key] = exc
            v = compiled[key]
            if isinstance(v, Exception):
                raise v
            out.append(bool(check(v, copy.deepcopy(instance))))
        except Exception as exc:  # noqa: BLE001
            out.append(type(exc).__name__)
    return out


# --------------------------------------------------------------------------- where a compiled validator may decide


def compiled_decides(schema: Any, instance: Any) -> bool:
    """Whether the verdict of ``jsonschema_rs`` on ``(schema, instance)`` may stand in for jsonschema's: the schema
    has no regular expression (``pattern``, ``patternProperties``: Rust's regex dialect is not Python's, ``\\d`` and
    ``\\p{L}`` differ) and no ``multipleOf`` (jsonschema divides floats: 19.99 is no multiple of 0.01 there, it is
    in Rust's exact decimals), no reference that leaves the document and no ``$id``, and neither holds a number JSON
    cannot carry exactly (an integer beyond 64 bits, NaN, an infinity). Outside this the data path keeps asking
    jsonschema, as it asks it today for every schema that :func:`hsa.invariants.quick_valid` cannot decide."""
    from hsa.cache import exact_key

    for value in (schema, instance):
        if not isinstance(exact_key(value), bytes) and _inexact(value):
            return False
    text = json.dumps(schema)
    if '"pattern' in text or '"multipleOf"' in text or '"$id"' in text or 'nullable": true' in text:
        return False  # (hsa reads OpenAPI's nullable: true as admitting null; compiled validators ignore it)
    return all(ref.startswith("#") for ref in _refs(schema))


def _inexact(value: Any) -> bool:
    """A NaN, an infinity or an integer beyond 64 bits somewhere in ``value`` (``None`` alone is exact)."""
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, int) and not isinstance(value, bool):
        return not -2**63 <= value < 2**64
    if isinstance(value, dict):
        return any(_inexact(v) for v in value.values())
    if isinstance(value, list):
        return any(_inexact(v) for v in value)
    return False


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _refs(v)


#: Hand-picked pairs where validators are known to part ways: integers written as floats, booleans beside
#: numbers, formats (never asserted), regex dialects, references, 2019-09 / 2020-12 keywords that draft 7 lacks,
#: numbers beyond JSON's exact range, string lengths in code points, unknown types.
EDGE_CASES: list[tuple[Any, Any]] = [
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": 1.0}),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": True}),
    ({"type": "object", "properties": {"a": {"type": "number"}}}, {"a": True}),
    ({"type": "object", "properties": {"a": {"enum": [1]}}}, {"a": True}),
    ({"type": "object", "properties": {"a": {"enum": [1]}}}, {"a": 1.0}),
    ({"type": "object", "properties": {"a": {"const": False}}}, {"a": 0}),
    ({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}, {"a": [1, True]}),
    ({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}, {"a": [1, 1.0]}),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "date-time"}}}, {"a": "not a date"}),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}, {"a": "x"}),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^\\d+$"}}}, {"a": "\u0661\u0662"}),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=a)b"}}}, {"a": "ab"}),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "\\p{L}+"}}}, {"a": "x"}),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}, {"a": "x"}),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, {"a": 1}),
    ({"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}, "definitions": {"x": {"type": "string"}}},
     {"a": 1}),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}}, {"a": 1}),
    ({"type": "array", "prefixItems": [{"type": "string"}]}, [1]),
    ({"type": "array", "items": [{"type": "string"}]}, [1]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}]}, [1]),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
      "properties": {"a": {"type": "integer"}}}, {"a": 1.0}),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1}),
    ({"type": "object", "unevaluatedProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}),
    ({"type": "object", "properties": {"a": {"type": "integer", "maximum": 10}}}, {"a": 10**30}),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": 10**30}),
    ({"type": "object", "properties": {"a": {"type": "number", "maximum": 1}}}, {"a": float("nan")}),
    ({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0.01}}}, {"a": 19.99}),
    ({"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}}, {"a": "\U0001F600"}),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 1}}}, {"a": "\U0001F600"}),
    ({"type": "object", "additionalProperties": False, "patternProperties": {"^x_": {}}}, {"x_a": 1}),
    ({"type": "object", "propertyNames": {"maxLength": 2}}, {"abc": 1}),
    ({"type": "objekt"}, {}),
    ({"type": "object", "properties": {"a": {"type": "string", "nullable": True}}}, {"a": None}),
    ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"a": 1}),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object",
      "dependentRequired": {"a": ["b"]}}, {"a": 1}),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json"}}}, {"a": 1}),
]
