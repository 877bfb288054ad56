"""verify.quick_valid gives jsonschema's verdict (Draft 2020-12) wherever it gives one, and declines the rest."""

from __future__ import annotations

import math

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.invariants import quick_valid

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.0, 1.0, 2.5, -1.5, math.inf]),
                    st.sampled_from(["", "a", "ab", "abc", "x1", "Ünï"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.sampled_from(["a", "b", "c", "type"]), inner,
                                                                      max_size=3)), max_leaves=8)
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])


def _schemas(inner):
    keyword = st.one_of(
        st.tuples(st.just("type"), st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3))),
        st.tuples(st.just("enum"), st.lists(SCALARS, min_size=1, max_size=4)),
        st.tuples(st.just("const"), JSON),
        st.tuples(st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
                  st.sampled_from([0, 1, 2.5, -1])),
        st.tuples(st.sampled_from(["minLength", "maxLength", "minItems", "maxItems"]), st.integers(0, 3)),
        st.tuples(st.just("pattern"), st.sampled_from(["^a", "b$", "[0-9]", "Ü"])),
        st.tuples(st.just("properties"), st.dictionaries(st.sampled_from(["a", "b", "c", "type"]), inner, max_size=3)),
        st.tuples(st.just("required"), st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)),
        st.tuples(st.just("additionalProperties"), st.one_of(st.booleans(), inner)),
        st.tuples(st.just("items"), st.one_of(st.booleans(), inner)),
        st.tuples(st.sampled_from(["description", "default", "format", "nullable", "x-note"]), SCALARS),
        st.tuples(st.just("uniqueItems"), st.one_of(st.booleans(), st.just(1))),
        st.tuples(st.sampled_from(["anyOf", "uniqueItems", "$ref", "multipleOf", "patternProperties"]),
                  st.sampled_from([[{"type": "string"}], True, "#/$defs/x", 2, {"^a": {}}])),
    )
    return st.lists(keyword, max_size=5).map(dict)


SCHEMAS = st.recursive(st.one_of(st.booleans(), st.just({})), _schemas, max_leaves=6)


def _jsonschema(schema, instance) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


@settings(max_examples=600, deadline=None)
@given(SCHEMAS, JSON)
def test_quick_verdicts_agree_with_jsonschema(schema, instance):
    """Wherever quick_valid answers, jsonschema gives the same answer."""
    verdict = quick_valid(schema, instance)
    if verdict is not None:
        try:
            expected = _jsonschema(schema, instance)
        except (jsonschema.exceptions.SchemaError, TypeError, jsonschema.exceptions.UnknownType):
            pytest.fail(f"quick_valid answered {verdict} where jsonschema raises")
        assert verdict is expected, (schema, instance)


@pytest.mark.parametrize("schema,instance,expected", [
    ({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, {"n": 1.0}, True),
    ({"type": "integer"}, True, False),
    ({"enum": [1, "a"]}, 1.0, True),
    ({"enum": [1]}, True, False),
    ({"type": "object", "additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}, {"b": 1}, True),  # $ref not reached
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}, {"a": 1}, None),
    ({"type": "strng"}, "x", None),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, 1.0, None),
    ({"type": "number", "exclusiveMaximum": True}, 1, None),  # a draft-4 boolean: jsonschema compares with 1
    ({"type": "string", "pattern": "("}, "x", None),
    ({"type": "array", "uniqueItems": True}, ["a", "b"], True),
    ({"type": "array", "uniqueItems": True}, ["a", "b", "a"], False),
    ({"type": "array", "uniqueItems": True}, [1, 2.5, 1.0], False),  # 1 == 1.0 for jsonschema
    ({"type": "array", "uniqueItems": True}, [1, True], None),  # bools: not decided here
    ({"type": "array", "uniqueItems": True}, [1, math.nan, 1], None),  # NaN: jsonschema's sort sees no pair
    ({"type": "array", "uniqueItems": True}, [{"a": 1}, {"a": 1}], None),
    ({"type": "array", "uniqueItems": False}, ["a", "a"], True),
    ({"type": "array", "uniqueItems": 1}, ["a"], None),
    ({"uniqueItems": True}, "aa", True),  # not an array: no constraint
])
def test_quick_cases(schema, instance, expected):
    """Hand-picked corners: integer floats, bools, enum equality, reach, drafts and bad keywords."""
    assert quick_valid(schema, instance) is expected
    if expected is not None:
        assert _jsonschema(schema, instance) is expected
