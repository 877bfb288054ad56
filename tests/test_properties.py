"""Property suite: the invariants of docs/design.md for every registered transform and for random recipes.

Every registered transform is enrolled from the registry and built from
tests/transform_table.py; hypothesis draws records with :mod:`hsa.testing`. The
number of examples follows the hypothesis profile (HSA_HYPOTHESIS_PROFILE=thorough
for release checks).
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import ClassVar

import pytest
import yaml
from hypothesis import given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from hsa import _json
from hsa.mapping import Mapping
from hsa.pipeline import rng_for, source_row
from hsa.recipes import recipe_from_dict, recipe_to_dict
from hsa.records import denormalize, normalize
from hsa.testing import (
    DIALECTS,
    arguments,
    assert_task_preserving,
    check_transform,
    harnesses,
    hooks,
    prompts,
    records,
    recipes,
    skills,
    tool_schemas,
    tools,
)
from hsa.testing.checks import hooks_checker
from hsa.transform import Combinator, Sequence, from_config, registry, replay, run
from hsa.invariants import calls_of, check_record, validator_for
from tests.conftest import FIXTURES
from tests.transform_table import NOT_ON_FIXTURES, TABLE

REGISTRY = registry()
NAMES = sorted(REGISTRY)
LEAVES = [n for n in NAMES if not issubclass(REGISTRY[n], Combinator) and n in TABLE]
FIXTURE_RECORDS = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines()]

#: Examples per hypothesis test: the profile's number (30 by default, 500 thorough).
EXAMPLES = settings().max_examples
#: Per-transform tests run once per registered transform, so they take a share.
PER_TRANSFORM = max(8, EXAMPLES // 3)
#: Fixture records checked per transform (all 300 under the thorough profile).
FIXTURE_SAMPLE = min(len(FIXTURE_RECORDS), max(8, EXAMPLES // 3) if EXAMPLES < 300 else len(FIXTURE_RECORDS))


def _table(name: str):
    if name not in TABLE:
        pytest.fail(f"{name} is registered but has no entry in tests/transform_table.py; add one")
    return TABLE[name]()


# --------------------------------------------------------------------------- the strategies themselves


@settings(max_examples=EXAMPLES)
@given(records())
def test_generated_records_are_valid_input(raw):
    """Every record hsa.testing draws normalises and every call validates against its tool (by construction)."""
    record = normalize(json.loads(json.dumps(raw)))
    assert check_record(record, check_names=True) == []


@settings(max_examples=EXAMPLES)
@given(records())
def test_generated_records_round_trip_through_the_input_format(raw):
    """normalize -> denormalize gives back the same messages and tools, in the record's own dialect."""
    record = normalize(json.loads(json.dumps(raw)))
    out = denormalize(record)
    assert out["messages"] == raw["messages"]
    if isinstance(raw["tools"], str):  # a JSON string of tools comes back as JSON of the same tools
        assert isinstance(out["tools"], str) and json.loads(out["tools"]) == json.loads(raw["tools"])
    else:
        assert out["tools"] == raw["tools"]
    again = normalize(json.loads(json.dumps(out)))
    for key in ("messages", "tools", "skills", "skill_tool", "prompt", "hooks", "hook_events", "meta", "extra"):
        assert _json.canonical(again.get(key)) == _json.canonical(record.get(key)), key


@pytest.mark.parametrize("dialect", DIALECTS)
def test_records_cover_every_dialect_and_argument_encoding(dialect):
    """records(dialects=d) writes tools in dialect d; arguments come as JSON strings and as objects.

    40 examples: at 15, one full-suite run under load saw only objects for openai (each record draws one encoding)."""
    seen: set[str] = set()

    @settings(max_examples=40, database=None, derandomize=True)
    @given(records(dialects=dialect, max_turns=2))
    def draw(raw):
        tools_ = raw["tools"] if isinstance(raw["tools"], list) else json.loads(raw["tools"])
        for t in normalize(raw)["tools"]:
            assert t["dialect"] == dialect
        assert tools_
        for m in raw["messages"]:
            for c in m.get("tool_calls") or ():
                args = c["function"]["arguments"] if "function" in c else c["arguments"]
                seen.add(type(args).__name__)

    draw()
    assert seen == {"str", "dict"}


@settings(max_examples=EXAMPLES)
@given(st.data())
def test_arguments_validate_against_their_schema(data):
    """arguments(schema) draws values that validate against strict and non-strict schemas at any depth."""
    schema = data.draw(tool_schemas(max_depth=3))
    args = data.draw(arguments(schema))
    errors = list(validator_for(schema).iter_errors(args))
    assert not errors, errors[0].message


@settings(max_examples=EXAMPLES)
@given(tool_schemas(strict=True))
def test_strict_schemas_are_strict(schema):
    """strict=True: additionalProperties false and every property required, at every level."""
    def walk(s):
        if s.get("type") == "object":
            assert s["additionalProperties"] is False
            assert set(s["required"]) == set(s["properties"])
            for sub in s["properties"].values():
                walk(sub)
        elif s.get("type") == "array":
            walk(s["items"])
    walk(schema)


@settings(max_examples=EXAMPLES)
@given(tools(), harnesses(), skills(mentions=["get_item"]), prompts(mentions=["get_item"]),
       hooks(tools={"get_item": ["item_id"]}))
def test_part_strategies_give_input_format_parts(tool, harness, skill, prompt, hook):
    """tools/harnesses/skills/prompts/hooks draw parts that normalize inside a record."""
    normalize({"messages": [], "tools": [tool]})
    record = normalize({"messages": [], **harness})
    assert {s["name"] for s in record.get("skills") or ()} == {s["name"] for s in harness.get("skills") or ()}
    rec = normalize({"messages": [], "tools": [], "skills": [skill], "prompt": prompt, "hooks": [hook]})
    compile(rec["hooks"][0]["source"], "<hook>", "exec")


@pytest.mark.parametrize("factory,kwargs", [
    (records, {"dialects": ["klingon"]}),
    (records, {"max_turns": 0}),
    (records, {"arguments_as": "yaml"}),
    (tool_schemas, {"strict": "yes"}),
    (harnesses, {"max_tools": -1}),
    (recipes, {"max_leaves": -2}),
])
def test_bad_options_fail_when_drawn_not_when_built(factory, kwargs):
    """Factories never fail when called; a bad option raises InvalidArgument, naming it, on the first draw."""
    strategy = factory(**kwargs)  # must not raise

    @settings(max_examples=1, database=None)
    @given(strategy)
    def draw(_):
        pass

    with pytest.raises(InvalidArgument, match=next(iter(kwargs))):
        draw()


def test_options_are_keyword_only():
    """Strategy options are keyword-only."""
    for factory in (records, tool_schemas, harnesses, tools, recipes):
        with pytest.raises(TypeError):
            factory(1)


# --------------------------------------------------------------------------- every transform


@pytest.mark.parametrize("name", NAMES)
def test_transform_is_task_preserving_on_generated_records(name):
    """Invariants 1-6 (and 7 when a hook checker is installed) hold for each transform on drawn records."""
    transform = _table(name)

    @settings(max_examples=PER_TRANSFORM)
    @given(records(), st.integers(0, 2**32 - 1))
    def check(raw, seed):
        assert_task_preserving(transform, raw, seed)

    check()


@pytest.mark.parametrize("name", NAMES)
def test_transform_is_task_preserving_on_fixture_records(name):
    """Invariants 1-6 (+7) hold for each transform on the live-commerce fixtures, and it applies to some of them."""
    transform = _table(name)
    step = max(1, len(FIXTURE_RECORDS) // FIXTURE_SAMPLE)
    applied = 0
    for i in range(0, len(FIXTURE_RECORDS), step)[:FIXTURE_SAMPLE]:
        report = assert_task_preserving(transform, FIXTURE_RECORDS[i], seed=i)
        applied += bool(report.applied)
    if name in NOT_ON_FIXTURES:
        return  # its own tests build records it applies to; the invariants above still had to hold
    assert applied, (f"{name} (as built in tests/transform_table.py) applied to none of {FIXTURE_SAMPLE} fixture "
                     "records: give it options that apply, list it in NOT_ON_FIXTURES with the reason, or the "
                     "invariants above prove nothing")


def test_empty_recipe_is_identity():
    """Invariant 5: the empty recipe returns every fixture record unchanged."""
    for i, raw in enumerate(FIXTURE_RECORDS[:50]):
        report = check_transform(Sequence(()), raw, seed=i)
        assert report.ok and "identity" in report.checked, report.format()


@settings(max_examples=EXAMPLES)
@given(records(), st.integers(0, 2**32 - 1))
def test_empty_recipe_is_identity_on_generated_records(raw, seed):
    """Invariant 5 on drawn records: the empty recipe copies them, and its output denormalises to the same JSON."""
    report = assert_task_preserving(Sequence(()), raw, seed)
    assert report.applied == () and report.variant == report.source


# --------------------------------------------------------------------------- recipes


def _records_or_fixtures():
    return st.one_of(records(), st.sampled_from(FIXTURE_RECORDS))


@settings(max_examples=EXAMPLES)
@given(recipes(transforms=[TABLE[n] for n in LEAVES], max_leaves=6), _records_or_fixtures(),
       st.integers(0, 2**32 - 1))
def test_random_recipes_are_task_preserving(recipe, raw, seed):
    """Random trees of up to 6 transforms across families keep invariants 1-6 (+7)."""
    note(f"recipe: {json.dumps(recipe_to_dict(recipe))}")
    assert_task_preserving(recipe, raw, seed)


@settings(max_examples=max(10, EXAMPLES // 2))
@given(st.permutations(LEAVES), _records_or_fixtures(), st.integers(0, 2**32 - 1))
def test_one_transform_of_every_family_in_a_row(order, raw, seed):
    """A sequence holding one transform of each family, in a random order, keeps the invariants."""
    by_family: dict[str, str] = {}
    for name in order:
        by_family.setdefault(REGISTRY[name].family, name)
    recipe = Sequence(tuple(TABLE[n]() for n in by_family.values()))
    note(f"recipe: {list(by_family.values())}")
    assert_task_preserving(recipe, raw, seed)


# --------------------------------------------------------------------------- serialisation and replay


@pytest.mark.parametrize("name", NAMES)
def test_every_transform_round_trips_as_a_recipe(name, tmp_path):
    """Each transform, wrapped in the versioned envelope, survives JSON and YAML unchanged."""
    from hsa.recipes import load_recipe, save_recipe

    t = _table(name)
    assert recipe_from_dict(json.loads(json.dumps(recipe_to_dict(t)))) == t
    for suffix in (".json", ".yaml"):
        path = tmp_path / f"r{suffix}"
        save_recipe(t, path)
        assert load_recipe(path) == t


@settings(max_examples=EXAMPLES)
@given(recipes(transforms=[TABLE[n] for n in LEAVES], max_leaves=6))
def test_random_recipes_round_trip_through_json_and_yaml(recipe):
    """A recipe tree serialises to JSON and YAML and reads back equal, with an equal config."""
    data = recipe_to_dict(recipe)
    assert recipe_from_dict(json.loads(json.dumps(data))) == recipe
    assert recipe_from_dict(yaml.safe_load(yaml.safe_dump(data, sort_keys=False))) == recipe
    assert recipe_to_dict(from_config(data["transform"])) == data


@settings(max_examples=EXAMPLES)
@given(recipes(transforms=[TABLE[n] for n in LEAVES], max_leaves=4), _records_or_fixtures(),
       st.integers(0, 2**32 - 1))
def test_output_rows_replay_to_the_same_variant(recipe, raw, seed):
    """An output row's ``transforms`` column, applied to the source with no rng, rebuilds the variant."""
    source = normalize(json.loads(json.dumps(raw)))
    variant, applied, _ = run(recipe, source, rng_for(seed, source["id"], 1))
    row = json.loads(json.dumps(source_row(variant, 1, [a.to_json() for a in applied])))
    again = replay(source, row["transforms"])
    assert _json.canonical(again) == _json.canonical(variant)
    assert Mapping.from_dict(row["mapping"]) == Mapping(variant["mapping"])


# --------------------------------------------------------------------------- mapping composition


@settings(max_examples=EXAMPLES)
@given(st.sampled_from(LEAVES), st.sampled_from(LEAVES), _records_or_fixtures(), st.integers(0, 2**32 - 1))
def test_composed_mapping_of_two_transforms_equals_composed_inverses(first, second, raw, seed):
    """For variant = B(A(source)): to_canonical of A.then(B) equals A.to_canonical(B.to_canonical(.))."""
    source = normalize(json.loads(json.dumps(raw)))
    rng = random.Random(seed)
    v1, _, _ = run(TABLE[first](), source, rng)
    v2, _, _ = run(TABLE[second](), v1, rng)
    a = Mapping(v1["mapping"])
    b = Mapping(v2["mapping"][len(v1["mapping"]):])
    ab = a.then(b)
    assert ab == Mapping(v2["mapping"])
    task_preserving = ab.task_preserving
    src_calls, var_calls = calls_of(source), calls_of(v2)
    for call in var_calls:
        expected = a.to_canonical(b.to_canonical(call))
        assert ab.to_canonical(call) == expected
        assert ab.inverse().to_variant(call) == expected
        assert b.inverse().then(a.inverse()).to_variant(call) == expected
    if task_preserving and len(src_calls) == len(var_calls):
        assert [ab.to_canonical(c) for c in var_calls] == src_calls
        assert [ab.to_variant(c) for c in src_calls] == var_calls
    for tool in source["tools"]:
        assert ab.tool_names().get(tool["name"], tool["name"]) == ab.tool_to_variant(tool["name"])
    for skill in source.get("skills") or ():
        assert ab.skill_names().get(skill["name"], skill["name"]) == ab.skill_to_variant(skill["name"])
    assert Mapping.from_dict(json.loads(json.dumps(ab.to_dict()))) == ab


_TOOLS = ("a", "b", "c", "d")


def _bijective_steps():
    """Mapping steps that are bijections on the calls of _calls(): tool permutations, key renames, value swaps."""
    tools_step = st.permutations(_TOOLS).map(lambda p: {"op": "tools", "map": dict(zip(_TOOLS, p))})
    keys = st.permutations(("x", "y", "z", "w"))
    params_step = st.builds(lambda tool, p, nested: {"op": "params", "tool": tool, "paths": (
        [[[k], [n]] for k, n in zip(("x", "y", "z", "w"), p)] + ([[["o", "[]", "k"], ["o", "[]", "q"]]] if nested else []))},
        st.sampled_from(_TOOLS), keys, st.booleans())
    values_step = st.builds(lambda tool, key: {"op": "values", "tool": tool, "path": [key], "map": [[1, "one"], ["one", 1]]},
                            st.sampled_from(_TOOLS), st.sampled_from(("x", "y")))
    skills_step = st.permutations(("s1", "s2", "s3")).map(
        lambda p: {"op": "skills", "tool": "a", "argument": "skill", "map": dict(zip(("s1", "s2", "s3"), p))})
    return st.lists(st.one_of(tools_step, params_step, values_step, skills_step), max_size=6)


def _calls():
    scalar = st.one_of(st.integers(0, 2), st.just("one"), st.booleans(), st.none(), st.text(max_size=3))
    args = st.fixed_dictionaries({}, optional={
        "x": scalar, "y": scalar, "z": st.lists(scalar, max_size=2), "skill": st.sampled_from(("s1", "s2", "s3")),
        "o": st.lists(st.fixed_dictionaries({}, optional={"k": scalar, "m": scalar}), max_size=2)})
    return st.builds(lambda n, a: {"name": n, "arguments": a}, st.sampled_from(_TOOLS), args)


@settings(max_examples=EXAMPLES * 3)
@given(_bijective_steps(), _bijective_steps(), st.lists(_calls(), min_size=1, max_size=4))
def test_mapping_composition_algebra(steps_a, steps_b, calls):
    """Composition is concatenation: to_canonical(A.then(B)) = A.to_canonical . B.to_canonical = (B^-1 . A^-1)."""
    a, b = Mapping(steps_a), Mapping(steps_b)
    ab = a.then(b)
    for call in calls:
        forward = ab.to_variant(call)
        assert forward == b.to_variant(a.to_variant(call))
        assert ab.to_canonical(forward) == a.to_canonical(b.to_canonical(forward)) == call
        assert ab.inverse().to_variant(forward) == call
        assert b.inverse().then(a.inverse()).to_variant(forward) == call
        assert ab.inverse().inverse().to_variant(call) == forward
    for name in _TOOLS:
        assert ab.tool_names().get(name, name) == ab.tool_to_variant(name)
        assert ab.tool_to_canonical(ab.tool_to_variant(name)) == name
    assert Mapping.from_dict(json.loads(json.dumps(ab.to_dict()))) == ab


# --------------------------------------------------------------------------- invariant 7


def test_hook_invariant_is_enrolled():
    """Invariant 7 runs inside check_transform once a hook checker (check_hooks) is installed."""
    checker = hooks_checker()
    if checker is None:
        pytest.skip("no check_hooks in hsa.invariants / hsa.sandbox yet: invariant 7 is not checked")
    for i, raw in enumerate(FIXTURE_RECORDS[:40]):
        report = check_transform(TABLE["tool.rename"](), raw, seed=i)
        if report.applied and raw.get("hooks"):
            assert "hooks" in report.checked
            return
    pytest.fail("tool.rename never applied to a fixture record with hooks")


def test_reports_name_the_broken_invariant():
    """A transform that breaks round trip is reported with the invariant, the params and the record."""
    from hsa.renames import rename_tools
    from hsa.transform import Transform

    @dataclasses.dataclass(frozen=True)
    class ForgetfulRename(Transform):
        name: ClassVar[str] = "test.forgetful_rename"
        family: ClassVar[str] = "tool"

        def sample(self, record, rng):
            return {"old": calls_of(record)[0]["name"]}

        def apply(self, record, params):
            out = rename_tools(record, {params["old"]: "renamed_tool"})
            out["mapping"] = out["mapping"][:-1]  # loses the step: calls no longer map back
            return out

    report = check_transform(ForgetfulRename(), FIXTURE_RECORDS[0], seed=0)
    assert "round-trip" in report.failed
    text = report.format()
    assert "[2 round-trip]" in text and "renamed_tool" in text and "ls-000001" in text
    with pytest.raises(AssertionError, match="round-trip"):
        assert_task_preserving(ForgetfulRename(), FIXTURE_RECORDS[0])


# --------------------------------------------------------------------------- invariant 8 and added names


def _through_a_row(variant, k: int = 1) -> dict:
    """The variant as ``hsa augment`` writes it and ``hsa canonicalize`` reads it back (JSON, row to record)."""
    from hsa.io import row_to_record

    return normalize(row_to_record(json.loads(json.dumps(source_row(variant, k, [])))))


def _canonical_gives_back(raw, transform, seed) -> None:
    from hsa._patch import same
    from hsa.pipeline import canonicalize_record
    from hsa.renames import canonicalize, content_of

    source = normalize(json.loads(json.dumps(raw)))
    variant, applied, _ = run(transform, source, rng_for(seed, source["id"], 1))
    if not Mapping(variant["mapping"]).task_preserving:
        return  # task-changing (tool.irrelevance): excluded from invariant 8, and says so in its mapping
    back = canonicalize(_through_a_row(variant))
    note(f"applied: {json.dumps([a.to_json() for a in applied])[:1500]}")
    assert same(content_of(back), content_of(source))
    from hsa.io import row_to_record

    row = row_to_record(json.loads(json.dumps(source_row(variant, 1, []))))  # as hsa canonicalize reads a folder
    want = {k: v for k, v in denormalize(source).items() if k not in ("id", "notes")}
    got = {k: v for k, v in canonicalize_record(row).items() if k not in ("id", "notes", "transforms", "mapping",
                                                                           "source_id", "variant")}
    assert json.dumps(got) == json.dumps(want)  # the written record, byte for byte


@pytest.mark.parametrize("name", NAMES)
def test_canonicalize_gives_back_the_source(name):
    """Invariant 8: for each transform, canonicalize(variant) read back from its row is the source record exactly."""
    transform = _table(name)

    @settings(max_examples=PER_TRANSFORM)
    @given(_records_or_fixtures(), st.integers(0, 2**32 - 1))
    def check(raw, seed):
        _canonical_gives_back(raw, transform, seed)

    check()


@settings(max_examples=EXAMPLES)
@given(recipes(transforms=[TABLE[n] for n in LEAVES], max_leaves=6), _records_or_fixtures(), st.integers(0, 2**32 - 1))
def test_canonicalize_gives_back_the_source_of_random_recipes(recipe, raw, seed):
    """Invariant 8 for random trees of transforms, composed restore steps included."""
    _canonical_gives_back(raw, recipe, seed)


def _added_names(source, variant) -> list[str]:
    """Names of tools and parameters the variant adds (no source one maps to them) that map back onto a source name."""
    from hsa.invariants import _check_added_names

    return [v.detail for v in _check_added_names(source, variant, Mapping(variant["mapping"]))]


@pytest.mark.parametrize("name", NAMES)
def test_no_added_name_equals_a_source_name(name):
    """For each transform, alone and after a rename of every tool and parameter, no added tool or parameter takes a
    source name (a distractor named like a masked tool made the canonical calls ambiguous)."""
    from transforms import tool

    transform = _table(name)
    first = Sequence((tool.ToolRename(styles=("mask",)), tool.ParamRename(styles=("mask",), p=1.0)))

    @settings(max_examples=PER_TRANSFORM)
    @given(_records_or_fixtures(), st.integers(0, 2**32 - 1), st.booleans())
    def check(raw, seed, renamed_first):
        source = normalize(json.loads(json.dumps(raw)))
        recipe = Sequence((first, transform)) if renamed_first else transform
        variant, applied, _ = run(recipe, source, rng_for(seed, source["id"], 1))
        note(f"applied: {json.dumps([a.to_json() for a in applied])[:1500]}")
        src_tools = {t["name"] for t in source["tools"]}
        mapping = Mapping(variant["mapping"])
        mapped = {mapping.tool_to_variant(n) for n in src_tools}
        assert not [t["name"] for t in variant["tools"] if t["name"] not in mapped and t["name"] in src_tools]
        assert _added_names(source, variant) == []

    check()
