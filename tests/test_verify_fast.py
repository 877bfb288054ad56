"""hsa.invariants shortcuts (issue 8): the same validators and the same violations as the plain checks."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

import jsonschema
import pytest

from hsa import _json
from hsa import schema_facts
from hsa import invariants as verify
from hsa.mapping import Mapping
from hsa.names import find_tokens, is_identifier_like
from hsa.records import normalize
from hsa.renames import rename_skills, rename_tools, text_fields


def _class_with_check(schema: dict) -> type:
    """The validator class validator_for drew before the shortcut: check_schema always runs."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        cls = jsonschema.Draft202012Validator
    return cls


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


DRAFT7 = "http://json-schema.org/draft-07/schema#"
ODD_SCHEMAS = [
    {"type": "object", "properties": {"q": {"type": "string"}}},
    {"type": 5},  # invalid for the metaschema: the 2020-12 fallback either way
    {"type": "object", "properties": 3},
    {"$schema": DRAFT7, "type": "object", "properties": {"q": {"type": "string"}}},
    {"$schema": DRAFT7, "type": 5},  # invalid draft-07: falls back to 2020-12
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
    {"type": "object", "properties": {"q": {"type": "string", "pattern": "^[a-z]+$"}}},
    {"type": "object", "properties": {"q": {"type": "string", "pattern": "(unclosed"}}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
    _nested(10),
    _nested(45),
]


def test_validator_class_is_the_one_check_schema_gives(fixture_records):
    """validator_for draws the class the full check_schema path draws, for fixture and odd schemas."""
    schemas = [t["parameters"] for r in fixture_records[:40] for t in normalize(r)["tools"]] + ODD_SCHEMAS
    schema_facts._TABLE.clear()
    for schema in schemas:
        assert type(verify.validator_for(schema)) is _class_with_check(schema), schema


@pytest.mark.parametrize("schema, moot", [
    ({"type": "object", "properties": {"q": {"type": "string"}}}, True),
    ({"type": "object", "properties": {"q": {"type": "string", "pattern": "a+"}}}, False),  # regex format check
    ({"type": "object", "patternProperties": {"^a": {}}}, False),
    (_nested(19), True),
    (_nested(41), False),  # deep enough that check_schema might exhaust the stack
])
def test_check_schema_is_skipped_only_where_it_cannot_raise_anything_else(schema, moot):
    """check_schema is skipped only for schemas without regexes and at most 40 objects deep."""
    assert verify._check_schema_moot(_json.canonical(schema)) is moot


def _consistency_by_hand(variant: dict, mapping: Mapping) -> list:
    """Invariant 6 as it was written first: find_tokens on every text."""
    renamed = {**mapping.tool_names(), **mapping.skill_names()}
    current = {t["name"] for t in variant["tools"]} | {s["name"] for s in variant.get("skills") or ()}
    stale = [old for old in renamed if is_identifier_like(old) and old not in current]
    out = []
    for text in text_fields(variant) if stale else ():
        hits = find_tokens(text, stale)
        if hits:
            snippet = text[:80].replace("\n", " ")
            out.append(verify.Violation("consistency", "old name left behind",
                                        f"{sorted(set(hits))} still occur in text {snippet!r}"))
    return out


def test_consistency_violations_are_those_of_find_tokens_on_every_text(fixture_records):
    """Planted old names (bare, dotted, at a sentence end, not plain) are reported exactly as before."""
    rng = random.Random(0)
    checked = found = 0
    for raw in fixture_records[:30]:
        source = normalize(raw)
        tools = {t["name"]: t["name"] + "_v2" for t in source["tools"][:3]}
        tools[source["tools"][-1]["name"]] = "odd:name"  # a non-plain new name in the mapping
        variant = rename_tools(source, tools)
        if source.get("skills"):
            variant = rename_skills(variant, {s["name"]: s["name"] + "_v2" for s in source["skills"][:2]})
        mapping = Mapping(variant["mapping"][len(source["mapping"]):])
        olds = list(mapping.tool_names()) + list(mapping.skill_names())
        for trial in range(4):
            planted = _json.copy(variant)
            texts = [m for m in planted["messages"] if isinstance(m.get("content"), str)]
            for old in olds:
                if texts and rng.random() < 0.5:
                    m = rng.choice(texts)
                    m["content"] += rng.choice([f" {old}", f" fs.{old}", f" {old}.", f"{old}", f" ({old})", " x"])
            if trial == 3:  # a renamed name that is not plain: find_tokens runs on every text
                planted["mapping"] = planted["mapping"] + [{"op": "tools", "map": {"shop:get_x": "get_x_y"}}]
                planted["messages"][0]["content"] = "call shop:get_x now"
                mapping = Mapping(planted["mapping"][len(source["mapping"]):])
            got = verify.check_consistency(source, planted, mapping)
            assert got == _consistency_by_hand(planted, mapping)
            checked += 1
            found += bool(got)
    assert found > 10 and checked > found  # both outcomes were exercised


_WEATHER = {
    "id": "w1",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
}


def test_one_consistency_check_the_pipeline_runs_part_of():
    """Invariant 6 is one function: check_variant runs its per-variant part on every variant, hsa.testing all of it
    (thorough); a tool result left under the old tool name is caught only by the thorough check."""
    from hsa.testing import check_transform
    from hsa.transform import Transform

    source = normalize(_WEATHER)
    planted = rename_tools(source, {"get_weather": "fetch_weather"})
    planted["messages"][2]["name"] = "get_weather"  # the result still names the old tool
    reasons = {v.reason for v in verify.check_variant(source, planted, thorough=True)}
    assert "tool result name not renamed" in reasons
    assert "tool result name not renamed" not in {v.reason for v in verify.check_variant(source, planted)}

    @dataclasses.dataclass(frozen=True)
    class ForgetsResults(Transform):
        name: ClassVar[str] = "test.forgets_results"
        family: ClassVar[str] = "tool"

        def sample(self, record, rng):
            return {}

        def apply(self, record, params):
            out = rename_tools(record, {"get_weather": "fetch_weather"})
            out["messages"][2]["name"] = "get_weather"
            return out

    report = check_transform(ForgetsResults(), _WEATHER)
    assert "consistency" in report.failed
    assert any(v.reason == "tool result name not renamed" for v in report.violations)


def test_thorough_consistency_covers_task_changing_variants():
    """The skill tool must follow its tool in every variant, task-changing ones too (no other part of invariant 6
    applies to them)."""
    raw = _json.copy(_WEATHER)
    raw["tools"].append({"type": "function", "function": {"name": "load_skill", "parameters": {
        "type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}})
    source = normalize(raw)
    variant = _json.copy(source)
    variant["tools"] = [t for t in variant["tools"] if t["name"] != "load_skill"]
    variant["mapping"] = variant["mapping"] + [{"op": "opaque", "transform": "test", "removed": ["load_skill"]}]
    mapping = Mapping(variant["mapping"][len(source["mapping"]):])
    assert not mapping.task_preserving
    assert [v.reason for v in verify.check_consistency(source, variant, mapping, thorough=True)] == ["skill tool lost"]
    assert verify.check_consistency(source, variant, mapping) == []
    assert "skill tool lost" in {v.reason for v in verify.check_variant(source, variant, thorough=True)}


# --------------------------------------------------------------------------- the added-names check's shortcut


def _tool(name: str, props: dict, **schema) -> dict:
    return {"name": name, "parameters": {"type": "object", "properties": props, **schema}, "dialect": "openai",
            "extra": {}, "outer": {}}


def _added_names_both(source: dict, variant: dict, mapping: Mapping, monkeypatch) -> list:
    """_check_added_names with its shortcut, after checking that it equals the walk through to_variant."""
    got = verify._check_added_names(source, variant, mapping)
    with monkeypatch.context() as m:
        m.setattr(verify, "_carried_as_is", lambda mapping, name: False)
        want = verify._check_added_names(source, variant, mapping)
    assert got == want
    return got


S = {"type": "string"}
ADDED_NAME_CASES = [  # (source tools, variant tools, mapping steps, violations expected)
    ([_tool("f", {"a": S})], [_tool("g", {"b": S, "a": S})],  # renamed, then its parameter: the step names g
     [{"op": "tools", "map": {"f": "g"}}, {"op": "params", "tool": "g", "paths": [[["a"], ["b"]]]}], 1),
    ([_tool("f", {"a": S})], [_tool("g", {"a": S, "x": S})],  # an added parameter with a name of its own
     [{"op": "tools", "map": {"f": "g"}}, {"op": "params", "tool": "f", "paths": [[["a"], ["b"]]]}], 0),
    ([_tool("f", {"a": S}), _tool("h", {"a": S})], [_tool("f", {"a": S}), _tool("h2", {"c": S, "a": S})],
     [{"op": "tools", "map": {"h": "h2"}}, {"op": "params", "tool": "h2", "paths": [[["a"], ["c"]]]},
      {"op": "restore", "patch": {}}], 1),
    ([_tool("f", {"o": {"type": "object", "properties": {"type": S}}, "items": S}, items={"type": "object",
                                                                                        "properties": {"z": S}})],
     [_tool("f", {"o": {"type": "object", "properties": {"type": S}}, "items": S}, items={"type": "object",
                                                                                         "properties": {"z": S}})],
     [{"op": "opaque"}], 1),  # properties and items: the items' paths are not in the skeleton (both say so)
    ([_tool("f", {"n": {"type": "integer", "maximum": 2 ** 70}})], [_tool("f", {"n": {"type": "integer"}, "m": S})],
     [{"op": "values", "tool": "g", "path": ["n"], "map": [[1, 2]]}], 0),
    ([_tool("f", {"a": {"type": "array", "items": {"type": "object", "properties": {"k": S}}}})],
     [_tool("f", {"a": {"type": "array", "items": {"type": "object", "properties": {"k": S, "k2": S}}}})],
     [{"op": "skills", "tool": "f", "argument": "a", "map": {"x": "y"}}], 0),
]


@pytest.mark.parametrize("case", range(len(ADDED_NAME_CASES)))
def test_the_added_names_shortcut_gives_the_walks_violations(case, monkeypatch):
    """Where no step carries a tool's calls (tool renames, restore, opaque, steps of other tools), its source
    parameters reach the variant as the skeleton's paths: the same violations as carrying the skeleton through
    to_variant, on renamed-then-changed tools, keyword-named parameters, schemas with properties and items,
    big ints, and the plain path where a step names the tool."""
    src_tools, var_tools, steps, n = ADDED_NAME_CASES[case]
    source = {"tools": src_tools}
    variant = {"tools": var_tools}
    assert len(_added_names_both(source, variant, Mapping(steps), monkeypatch)) == n


def test_the_added_names_shortcut_on_the_default_recipes_variants(fixture_records, monkeypatch):
    """The shortcut gives the walk's verdict on every variant the default recipe makes of the fixtures."""
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    shortcut = 0
    for raw in fixture_records[:40]:
        source = normalize(raw)
        for k in range(3):
            variant = run(recipe, source, random.Random(k))[0]
            mapping = Mapping(variant["mapping"][len(source["mapping"]):])
            if mapping.task_preserving:
                _added_names_both(source, variant, mapping, monkeypatch)
                shortcut += any(verify._carried_as_is(mapping, t["name"]) for t in source["tools"])
    assert shortcut > 20


def test_the_added_names_shortcut_leaves_an_unknown_step_to_to_variant():
    """A step of an op no carrier knows is not taken for one that changes nothing: to_variant rejects it."""
    source, variant = {"tools": [_tool("f", {"a": S})]}, {"tools": [_tool("f", {"a": S})]}
    assert not verify._carried_as_is(Mapping([{"op": "merge"}]), "f")
    with pytest.raises(ValueError, match="unknown mapping step op"):
        verify._check_added_names(source, variant, Mapping([{"op": "merge"}]))
