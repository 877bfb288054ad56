"""The transform protocol, registry, combinators and recipes."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

import hsa
from hsa import _json
from hsa.records import normalize
from hsa.recipes import builtin_recipes, hold_out, load_recipe, recipe_from_dict, recipe_to_dict, save_recipe
from hsa.transform import OneOf, Sequence, SomeOf, Sometimes, from_config, registry, replay, run
from transforms.tool import ParamRename, ToolRename


@pytest.fixture
def record(fixture_records):
    return normalize(fixture_records[0])


def test_transforms_are_frozen(record):
    """A transform holds configuration only: it cannot be mutated, and sampling does not change it."""
    t = ToolRename(styles=("camel",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.p = 0.1  # type: ignore[misc]
    before = t.to_dict()
    t.sample(record, random.Random(0))
    assert t.to_dict() == before


def test_apply_is_pure(record):
    """apply never modifies its input record."""
    t = ToolRename(styles=("camel",))
    params = t.sample(record, random.Random(0))
    snapshot = _json.canonical(record)
    out = t.apply(record, params)
    assert _json.canonical(record) == snapshot
    assert out["tools"][0]["name"] != record["tools"][0]["name"]


def test_params_are_json_and_replay_gives_the_same_variant(record):
    """Params survive a JSON round trip and re-applying them gives the same record byte for byte."""
    recipe = load_recipe("default")
    out, applied, _ = run(recipe, record, random.Random(3))
    entries = json.loads(json.dumps([a.to_json() for a in applied]))
    again = replay(record, entries)
    assert _json.canonical(again) == _json.canonical(out)


def test_same_rng_seed_same_output(record):
    """Sampling is a function of the rng state only."""
    recipe = load_recipe("default")
    a, _, _ = run(recipe, record, random.Random(7))
    b, _, _ = run(recipe, record, random.Random(7))
    assert _json.canonical(a) == _json.canonical(b)


def test_every_registered_transform_has_a_test_entry():
    """Registering a transform without an entry in the enrolment table fails this test."""
    from tests.transform_table import TABLE

    missing = sorted(set(registry()) - set(TABLE))
    assert not missing, f"add these transforms to tests/transform_table.py: {missing}"


def test_every_registered_transform_round_trips_through_config():
    """to_dict -> JSON -> from_config gives an equal transform, for every registered transform."""
    from tests.transform_table import TABLE

    for name in registry():
        t = TABLE[name]()
        again = from_config(json.loads(json.dumps(t.to_dict())))
        assert again == t, name


def test_one_of_respects_weights(record):
    """OneOf with a zero weight never picks that child."""
    t = OneOf((ToolRename(styles=("camel",)), ToolRename(styles=("kebab",))), weights=(0.0, 1.0))
    for seed in range(10):
        _, applied, _ = run(t, record, random.Random(seed))
        assert applied[0].config["styles"] == ["kebab"]


def test_some_of_applies_n_distinct_children(record):
    """SomeOf(n=2) applies exactly two different children."""
    t = SomeOf((ToolRename(styles=("camel",)), ParamRename(styles=("kebab",), p=1.0), ToolRename(styles=("mask",))), n=2)
    for seed in range(10):
        _, applied, _ = run(t, record, random.Random(seed))
        assert len(applied) == 2


def test_sometimes_probability_bounds(record):
    """Sometimes(p=0) never applies, p=1 always applies."""
    never, always = Sometimes(ToolRename(), p=0.0), Sometimes(ToolRename(), p=1.0)
    for seed in range(5):
        assert run(never, record, random.Random(seed))[1] == []
        assert len(run(always, record, random.Random(seed))[1]) == 1


@pytest.mark.parametrize("bad,msg", [
    ({"transform": "tool.nope"}, "unknown transform"),
    ({"transform": "tool.rename", "colour": 1}, "unknown option"),
    ({"transform": "tool.rename", "styles": ["klingon"]}, "unknown style"),
    ({"transform": "meta.sometimes", "p": 2, "child": {"transform": "tool.rename"}}, "within [0, 1]"),
    ({"nothing": 1}, "'transform' key"),
])
def test_bad_configs_say_what_is_wrong(bad, msg):
    """Bad recipe entries fail with a message naming the problem."""
    with pytest.raises((ValueError, KeyError)) as info:
        from_config(bad)
    assert msg in str(info.value)


def test_recipes_round_trip_yaml_and_json(tmp_path):
    """Every built-in recipe saves and loads as YAML and JSON to an equal recipe."""
    for name in builtin_recipes():
        recipe = load_recipe(name)
        for suffix in (".yaml", ".json"):
            path = tmp_path / f"{name}{suffix}"
            save_recipe(recipe, path)
            assert load_recipe(path) == recipe
            assert recipe_to_dict(load_recipe(path)) == recipe_to_dict(recipe)


def test_recipe_version_is_checked():
    """A recipe from a future version is refused with a clear message."""
    with pytest.raises(ValueError, match="version"):
        recipe_from_dict({"__version__": 99, "transform": {"transform": "tool.rename"}})


def test_hold_out_removes_a_family():
    """--hold-out tool removes every tool transform and keeps the rest of the tree."""
    recipe = Sequence((Sometimes(ToolRename(), 0.5), ParamRename()))
    assert hold_out(recipe, ["tool"]) == Sequence(())
    assert {leaf.family for leaf in hold_out(load_recipe("default"), ["tool"]).leaves()} <= {"skill", "prompt", "hook", "trajectory"}
    with pytest.raises(ValueError, match="unknown family"):
        hold_out(recipe, ["tools"])


def test_identity_recipe_copies_records(record):
    """The identity recipe changes nothing (invariant 5)."""
    out, applied, _ = run(load_recipe("identity"), record, random.Random(0))
    assert applied == []
    assert _json.canonical(out) == _json.canonical(record)


def test_public_api():
    """hsa exports its public names and the registry lists the built-in transforms."""
    for name in hsa.__all__:
        assert hasattr(hsa, name), name
    assert {"tool.rename", "tool.param_rename", "meta.sequence"} <= set(hsa.registry())
