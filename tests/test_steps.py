"""Typed mapping steps (:mod:`hsa.steps`, issue 29 step 2): one class per op, the JSON form unchanged.

A typed step wraps its JSON dict and gives that very dict back; its inverse is the JSON the mapping's inverse has
always had (key order included: the inverse is part of what the undo applies and compares); a step's carry of calls
undoes with its inverse; and the steps the built-in leaves make on the fixtures are all of a known class.
"""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import given, settings

from hsa.mapping import Mapping
from hsa.recipes import load_recipe
from hsa.steps import (OpaqueStep, ParamsStep, PermuteStep, RegroupStep, RequireStep, RestoreStep, SkillsStep, Step,
                       ToolsStep, UnknownStep, ValuesStep)
from hsa.step_carry import carry_messages
from hsa.testing import records
from hsa.transform import Skip
from tests.conftest import normalized_fixtures, without_hooks
from tests.exact_support import exact

_EXAMPLES = [
    ({"op": "tools", "map": {"get_weather": "fetchWeather", "same": "same"}}, ToolsStep,
     {"op": "tools", "map": {"fetchWeather": "get_weather", "same": "same"}}),
    ({"op": "skills", "map": {"pdf": "docs-pdf"}, "tool": "Skill", "argument": "skill"}, SkillsStep,
     {"op": "skills", "tool": "Skill", "argument": "skill", "map": {"docs-pdf": "pdf"}}),
    ({"op": "params", "tool": "t", "paths": [[["city"], ["location"]]], "mentions": {"own": {"city": "location"},
                                                                                      "all": {"city": "location"}}},
     ParamsStep,
     {"op": "params", "tool": "t", "paths": [[["location"], ["city"]]], "mentions": {"own": {"location": "city"},
                                                                                      "all": {"location": "city"}}}),
    ({"op": "params", "tool": "t", "kind": "regroup", "paths": [[["a"], ["g", "a"]], [["b"], ["g", "b"]]],
      "group": "g"}, RegroupStep,
     {"op": "params", "tool": "t", "kind": "regroup", "paths": [[["g", "a"], ["a"]], [["g", "b"], ["b"]]],
      "group": "g"}),
    ({"op": "params", "tool": "t", "kind": "permute", "paths": [[["a"], ["b"]], [["b"], ["a"]]]}, PermuteStep,
     {"op": "params", "tool": "t", "kind": "permute", "paths": [[["b"], ["a"]], [["a"], ["b"]]]}),
    ({"op": "params", "tool": "t", "kind": "require", "paths": [], "fill": [[["mode"], "fast"]], "x": 1}, RequireStep,
     {"op": "params", "tool": "t", "kind": "require", "paths": [], "x": 1, "drop": [[["mode"], "fast"]]}),
    ({"op": "values", "tool": "t", "path": ["unit"], "map": [["c", "C"], [1, 2]], "texts": True}, ValuesStep,
     {"op": "values", "tool": "t", "path": ["unit"], "map": [["C", "c"], [2, 1]], "texts": True}),
    ({"op": "restore", "patch": {"tools": []}}, RestoreStep, {"op": "restore", "patch": {"tools": []}}),
    ({"op": "opaque", "transform": "tool.irrelevance"}, OpaqueStep, {"op": "opaque", "transform": "tool.irrelevance"}),
]


@pytest.mark.parametrize("data,cls,inverse", _EXAMPLES, ids=[e[1].__name__ for e in _EXAMPLES])
def test_a_step_is_its_json_and_inverts_to_the_json_of_before(data, cls, inverse):
    frozen = copy.deepcopy(data)
    step = Step.from_json(data)
    assert type(step) is cls and step.to_json() is data
    inv = step.invert()
    assert json.dumps(inv.to_json()) == json.dumps(inverse)  # key order too
    assert json.dumps(Mapping([data]).inverse().steps) == json.dumps([inverse])
    assert Step.from_json(inv.to_json()).invert() == step  # and back (as JSON, key order aside)
    assert exact(data, frozen)  # never changed
    if cls in (RestoreStep, OpaqueStep):
        assert inv.to_json() is data


def test_what_readers_ask_of_a_step():
    tools, skills, params, values, restore, opaque = (Step.from_json(_EXAMPLES[i][0]) for i in (0, 1, 2, 6, 7, 8))
    assert tools.renames_tools and not tools.renames_skills and tools.tool is None
    assert tools.renamed() == {"get_weather": "fetchWeather"}
    assert skills.renames_skills and skills.renames_names and skills.tool == "Skill"
    assert (params.tool, values.tool) == ("t", "t") and not params.renames_names
    assert params.mentions() == ({"city": "location"}, {"city": "location"})
    assert not restore.changes_calls and restore.task_preserving and not opaque.task_preserving
    assert params.names() == {"t", "city", "location"} and skills.names() == {"pdf", "docs-pdf", "Skill"}


def test_an_unknown_op_is_kept_but_carries_no_call():
    step = Step.from_json({"op": "rot13", "x": 1})
    assert isinstance(step, UnknownStep) and step.op == "rot13" and step.invert() is step
    with pytest.raises(ValueError, match="unknown mapping step op 'rot13'"):
        step.carry_call({"name": "a", "arguments": {}}, True)
    with pytest.raises(ValueError, match="no message carry for mapping step op 'rot13'"):
        step.message_carry()


def _old_inverse(steps):
    """``Mapping.inverse`` as it was before the typed steps (the oracle: the same JSON, key order included)."""
    inv = []
    for step in reversed(steps):
        op = step["op"]
        if op == "tools":
            inv.append({"op": "tools", "map": {v: k for k, v in step["map"].items()}})
        elif op == "params":
            inv_step = {**step, "paths": [[b, a] for a, b in step["paths"]]}
            if isinstance(step.get("mentions"), dict):
                inv_step["mentions"] = {k: {v: o for o, v in table.items()} for k, table in step["mentions"].items()}
            inv_step.pop("fill", None), inv_step.pop("drop", None)
            if step.get("fill"):
                inv_step["drop"] = step["fill"]
            if step.get("drop"):
                inv_step["fill"] = step["drop"]
            inv.append(inv_step)
        elif op == "values":
            inv.append({**step, "map": [[b, a] for a, b in step["map"]]})
        elif op == "skills":
            inv.append({"op": "skills", "tool": step["tool"], "argument": step["argument"],
                        "map": {v: k for k, v in step["map"].items()}})
        else:
            inv.append(step)
    return inv


def _leaf_steps():
    """The steps the leaves of the built-in recipes make on some fixtures, with the record they made them on."""
    out = []
    leaves = [t for name in ("default", "tools", "rotbench-heavy") for t in load_recipe(name).leaves()]
    for i, rec in enumerate(normalized_fixtures(15)):
        for k, t in enumerate(leaves):
            params = t.sample(rec, random.Random(i * 101 + k))
            if isinstance(params, Skip):
                continue
            try:
                variant = t.apply(rec, params)
            except ValueError:
                continue
            out += [(rec, variant, s) for s in variant["mapping"][len(rec["mapping"]):]]
    return out


def test_the_leaves_steps_are_typed_and_carry_their_calls_back():
    seen: set[type] = set()
    calls = 0
    for rec, variant, data in _leaf_steps():
        steps = variant["mapping"]
        assert json.dumps(Mapping(steps).inverse().steps) == json.dumps(_old_inverse(steps))
        step = Step.from_json(data)
        assert not isinstance(step, UnknownStep), data
        seen.add(type(step))
        assert step.to_json() is data
        assert Step.from_json(step.invert().to_json()).invert() == step
        if not step.task_preserving:
            continue
        for m in rec["messages"]:
            for c in m.get("tool_calls") or ():
                call = {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                there = step.carry_call(call, True)
                assert exact(step.invert().carry_call(there, True), call) or isinstance(step, RequireStep)
                assert exact(step.carry_call(there, False), step.invert().carry_call(there, True))
                calls += 1
    assert {ToolsStep, ParamsStep, ValuesStep, RegroupStep} <= seen
    assert calls > 100


@settings(max_examples=20, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_generated_variants_mappings_invert_as_before(raw):
    """The mappings of the default and hooks recipes' variants of generated records (restore steps included, as
    :func:`hsa.transform.run` makes them): every step typed, the inverse the JSON it always was."""
    from hsa.records import normalize
    from hsa.transform import run

    rec = normalize(raw)
    for k, name in enumerate(("default", "hooks")):
        variant, _, _ = run(load_recipe(name), rec, random.Random(k))  # its restore step added
        steps = variant["mapping"]
        assert not any(isinstance(s, UnknownStep) for s in Mapping(steps).typed())
        assert json.dumps(Mapping(steps).inverse().steps) == json.dumps(_old_inverse(steps))


def test_the_message_carry_is_what_the_appliers_do_to_messages():
    """A tool rename, then a value rename with texts, carried over messages alone: calls, tool-result names and
    texts as :func:`hsa.renames.apply_step` leaves them on the whole record."""
    from hsa.renames import apply_step

    rec, call = next((without_hooks(r), c["function"]) for r in normalized_fixtures(3) for m in r["messages"]
                     for c in m.get("tool_calls") or ()
                     if any(isinstance(v, str) and v.isidentifier() for v in c["function"]["arguments"].values())
                     and any(m2.get("role") == "tool" for m2 in r["messages"]))
    name = call["name"]
    key, value = next((k, v) for k, v in call["arguments"].items() if isinstance(v, str) and v.isidentifier())
    for m in rec["messages"]:
        m["content"] = f"{m.get('content') or ''} {name} {value}"
    steps = [{"op": "tools", "map": {name: "zq_tool"}},
             {"op": "values", "tool": "zq_tool", "path": [key], "map": [[value, "zq_y"]], "texts": True}]
    want = rec
    for s in steps:
        want = apply_step(want, s)
    msgs = copy.deepcopy(rec["messages"])
    carry_messages(msgs, steps)
    assert exact(msgs, want["messages"])
    assert any(c["function"]["name"] == "zq_tool" and c["function"]["arguments"][key] == "zq_y"
               for m in msgs for c in m.get("tool_calls") or ())
    assert all(("zq_y" in m["content"]) == (m.get("role") != "tool") for m in msgs)  # values: not in tool results


def test_the_appliers_carry_messages_with_the_steps_own_carry(monkeypatch):
    """One carry per step: the tool-rename applier changes messages only through :meth:`ToolsStep.message_carry`
    (with a carry that does nothing, the tools are renamed and the calls, result names and texts stay)."""
    from hsa.renames import rename_tools

    rec = next(without_hooks(r) for r in normalized_fixtures(3) if any(m.get("tool_calls") for m in r["messages"]))
    name = next(m["tool_calls"][0]["function"]["name"] for m in rec["messages"] if m.get("tool_calls"))
    for m in rec["messages"]:
        m["content"] = f"{m.get('content') or ''} call {name} now"
    carried = rename_tools(rec, {name: "zq_tool"})
    assert not exact(carried["messages"], rec["messages"])
    monkeypatch.setattr(ToolsStep, "message_carry", lambda self: ())
    out = rename_tools(rec, {name: "zq_tool"})
    assert "zq_tool" in [t["name"] for t in out["tools"]]
    assert exact(out["messages"], rec["messages"])


def test_sifting_sees_the_names_a_parameter_mention_wrote():
    """carry_messages(sift=True) gives the bytes of the plain carry: a later step's names that an earlier step's
    parameter mentions (``all``) wrote into a text are looked for too (before, only ``own`` counted, and the later
    tool rename of `max` was skipped)."""
    import copy

    from hsa.step_carry import carry_messages

    steps = [{"op": "params", "tool": "t", "paths": [[["limit"], ["max"]]], "mentions": {"all": {"limit": "max"}}},
             {"op": "tools", "map": {"max": "maximum"}}]
    plain = [{"role": "user", "content": "Use the `limit` parameter."}]
    sifted = copy.deepcopy(plain)
    carry_messages(plain, steps)
    carry_messages(sifted, steps, sift=True)
    assert plain == sifted == [{"role": "user", "content": "Use the `maximum` parameter."}]
