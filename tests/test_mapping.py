"""Mapping: forward and back, composition, JSON round trip."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from hsa import Mapping
from hsa.mapping import move_paths

STEPS = [
    {"op": "tools", "map": {"get_weather": "fetchWeather", "search": "lookup"}},
    {"op": "params", "tool": "fetchWeather",
     "paths": [[["address"], ["addr"]], [["address", "city"], ["addr", "town"]], [["days", "[]", "d"], ["days", "[]", "day"]]]},
    {"op": "values", "tool": "fetchWeather", "path": ["unit"], "map": [["C", "celsius"], [True, "yes"]]},
    {"op": "skills", "tool": "load_skill", "argument": "skill", "map": {"item_qa": "item-qa"}},
]


def test_to_variant_and_back_at_depth():
    """Nested objects and arrays of objects map forward and back exactly."""
    m = Mapping(STEPS)
    call = {"name": "get_weather", "arguments": {"address": {"city": "Paris", "zip": "75001"}, "unit": "C",
                                                 "days": [{"d": 1}, {"d": 2, "x": None}]}}
    v = m.to_variant(call)
    assert v == {"name": "fetchWeather", "arguments": {"addr": {"town": "Paris", "zip": "75001"}, "unit": "celsius",
                                                       "days": [{"day": 1}, {"day": 2, "x": None}]}}
    assert m.to_canonical(v) == call


def test_values_are_compared_strictly():
    """A value table entry for True never matches 1 (booleans stay booleans)."""
    m = Mapping(STEPS[2:3])
    assert m.to_variant({"name": "fetchWeather", "arguments": {"unit": 1}})["arguments"]["unit"] == 1
    assert m.to_variant({"name": "fetchWeather", "arguments": {"unit": True}})["arguments"]["unit"] == "yes"


def test_skill_names_follow_the_skill_tool():
    """Skill renames apply to the skill tool's argument only, not to other tools."""
    m = Mapping(STEPS)
    assert m.to_variant({"name": "load_skill", "arguments": {"skill": "item_qa"}})["arguments"] == {"skill": "item-qa"}
    assert m.to_variant({"name": "other", "arguments": {"skill": "item_qa"}})["arguments"] == {"skill": "item_qa"}
    assert m.skill_to_canonical("item-qa") == "item_qa"
    assert m.skill_names() == {"item_qa": "item-qa"}


def test_composition_equals_sequential_application():
    """a.then(b) maps like a followed by b, and its inverse undoes both."""
    a = Mapping(STEPS[:1])
    b = Mapping([{"op": "tools", "map": {"fetchWeather": "weather_now", "lookup": "get_weather"}}])
    ab = a.then(b)
    call = {"name": "get_weather", "arguments": {"q": 1}}
    assert ab.to_variant(call) == b.to_variant(a.to_variant(call))
    assert ab.tool_names() == {"get_weather": "weather_now", "search": "get_weather"}
    assert ab.tool_to_variant("get_weather") == "weather_now" and ab.tool_to_variant("search") == "get_weather"
    assert ab.tool_to_canonical("weather_now") == "get_weather" and ab.tool_to_canonical("get_weather") == "search"
    assert ab.to_canonical(ab.to_variant(call)) == call
    assert ab.inverse().to_variant(ab.to_variant(call)) == call


def test_swaps_are_bijections():
    """Names permuted between tools map back to the right tool."""
    m = Mapping([{"op": "tools", "map": {"a": "b", "b": "a"}}])
    assert m.to_variant({"name": "a", "arguments": {}})["name"] == "b"
    assert m.to_canonical({"name": "a", "arguments": {}})["name"] == "b"
    assert m.tool_names() == {"a": "b", "b": "a"}


def test_json_round_trip():
    """to_dict -> JSON -> from_dict gives an equal mapping (derived name tables are ignored on read)."""
    m = Mapping(STEPS)
    again = Mapping.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again == m
    assert Mapping.from_dict(json.dumps(m.to_dict())) == m
    assert Mapping.from_dict(None) == Mapping.identity()


def test_nest_and_flatten_paths():
    """Path pairs of different lengths express nesting and flattening."""
    args = {"city": "Paris", "zip": "1", "opts": {"unit": "C"}}
    nested = move_paths(args, [(("city",), ("where", "city")), (("zip",), ("where", "zip")),
                               (("opts", "unit"), ("opts_unit",))])
    assert nested == {"where": {"city": "Paris", "zip": "1"}, "opts_unit": "C"}
    back = move_paths(nested, [(("where", "city"), ("city",)), (("where", "zip"), ("zip",)),
                               (("opts_unit",), ("opts", "unit"))])
    assert back == args


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                           max_leaves=10)


@given(st.dictionaries(st.sampled_from(["address", "days", "unit", "q"]), json_values, max_size=4))
def test_round_trip_property(arguments):
    """For any arguments, to_canonical(to_variant(call)) == call (invariant 2 at the mapping level)."""
    m = Mapping(STEPS[:2])
    call = {"name": "get_weather", "arguments": arguments}
    assert m.to_canonical(m.to_variant(call)) == call
