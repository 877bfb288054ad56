"""The undo's fast paths (issue 18) give what the plain loop of appliers gives.

The oracle is the plain loop (every inverse step by :func:`hsa.renames._apply_step_in_place` on the whole record),
compared with :func:`hsa.renames._undo` on the fixtures, default- and tools-recipe variants of them read back as
their rows read (what ``with_restore`` undoes), generated records with hooks, and hand-made cases, with the caches
on and off: the same record exactly (types, key order), or the same error.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings

from hsa.mapping import Mapping
from hsa.records import clone, normalize
from hsa.context import current
from hsa.renames import _apply_step_in_place, _as_written, _check_mapping_names, _splits, _undo, rename_params, rename_tools
from hsa.testing import records
from tests.conftest import THOROUGH, normalized_fixtures, without_hooks
from tests.exact_support import exact

_ALL = normalized_fixtures(6)
#: The fixtures as tool-only records (no hooks: the undo splits them), and a few as they are (it does not).
FIXTURE = [without_hooks(r) for r in _ALL] + _ALL[:3]


def _plain_undo(record, n):
    """:func:`hsa.renames._undo` as it was: every inverse step applied to the whole record, in place where it can."""
    steps = record["mapping"][len(record["mapping"]) - n:] if n else []
    _check_mapping_names(record, Mapping(steps))
    kept = list(record["mapping"][:len(record["mapping"]) - n])
    out = clone(record)
    for step in Mapping(steps).inverse().steps:
        if step["op"] != "opaque":
            out = _apply_step_in_place(out, step)
    out["mapping"] = kept
    return out


_SEEN = {"split": 0, "all": 0}


def _outcome(fn):
    try:
        return "ok", fn()
    except (ValueError, KeyError, StopIteration, TypeError) as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def _same(record, n):
    _SEEN["split"] += _splits(record, Mapping(record["mapping"][len(record["mapping"]) - n:]).inverse().steps) if n else 0
    _SEEN["all"] += 1
    want = _outcome(lambda: _plain_undo(record, n))
    for owned in (False, True):
        got = _outcome(lambda: _undo(clone(record) if owned else record, n, owned=owned))
        assert got[0] == want[0], (got, want)
        if want[0] == "ok":
            assert exact(got[1], want[1])
        else:
            assert got[1] == want[1]


#: variants drawn of each record by the comparisons on the recipes (two under the thorough profile: tests/conftest.py)
PER = 2 if THOROUGH else 1


def _variants(recipe_name, per=2):
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe(recipe_name)
    out = []
    for i, r in enumerate(FIXTURE):
        for k in range(per):
            v = run(recipe, r, random.Random(i * 11 + k))[0]
            out.append((v, len(v["mapping"]) - len(r["mapping"])))
    return out


@pytest.mark.parametrize("recipe", ["default", "tools"])
def test_undo_equals_the_plain_loop_on_variants(caches, recipe):
    seen = 0
    for v, own in _variants(recipe, per=PER):
        for rec in (v, _as_written(v)):
            for n in {own, len(rec["mapping"]), 1}:
                if n <= len(rec["mapping"]):
                    _same(rec, n)
                    seen += 1
    assert seen > 20
    assert 0 < _SEEN["split"] < _SEEN["all"]  # both paths taken
    undone = []
    for v, own in _variants(recipe, per=PER):  # again, from the plan (one plan for every record here: its memo turns over)
        _same(_as_written(v), own)
        if caches == "on":
            undone += [x for k, x in current().plan.memo.items() if k[0] == "undone"]
    if caches == "on":  # the split ran in the variant's slot plan, and (tool-only harnesses) kept its harness half
        assert undone and (recipe != "tools" or any(v is not None for v in undone))


def test_undo_leaves_a_record_it_does_not_own_alone(caches):
    for v, own in _variants("default", 2):
        before = json.dumps(v, sort_keys=False, default=repr)
        _undo(v, own, owned=False)
        assert json.dumps(v, sort_keys=False, default=repr) == before


def test_undo_of_hand_made_steps(caches):
    """Tool renames reach calls, tool-result names and every text; parameter renames only calls and the tool's own
    texts; value renames every text but tool results; a mapping that does not belong to the record fails alike."""
    base = next(r for r in FIXTURE if len(r["tools"]) >= 2 and any(m.get("tool_calls") for m in r["messages"])
                and any(m.get("role") == "tool" for m in r["messages"]))
    name = next(m["tool_calls"][0]["function"]["name"] for m in base["messages"] if m.get("tool_calls"))
    other = next(t["name"] for t in base["tools"] if t["name"] != name)
    texted = clone(base)
    for m in texted["messages"]:
        m["content"] = f"{m.get('content') or ''} `zq_renamed` and {other} with zq_gamma, see zq_beta"
        if m.get("role") == "tool":
            m["name"] = "zq_renamed"
    v = rename_tools(texted, {name: "zq_renamed", other: other})
    _same(v, 1)
    tool = next(t for t in v["tools"] if t["name"] == "zq_renamed")
    props = list(tool["parameters"].get("properties") or {})
    assert props
    v2 = rename_params(v, "zq_renamed", {(props[0],): "zq_beta"})
    _same(v2, 1)
    _same(v2, 2)
    steps = [{"op": "values", "tool": "zq_renamed", "path": [props[0]], "map": [["zq_alpha", "zq_gamma"]],
              "texts": True},
             {"op": "params", "tool": "zq_renamed", "paths": [[["a"], ["a"]]]},  # an unchanged name: no step
             {"op": "tools", "map": {"zq_renamed": "zq_renamed"}}]
    for step in steps:
        w = clone(v)
        w["mapping"] = w["mapping"] + [step]
        _same(w, 1)
        _same(w, 2)
    w = clone(v)
    w["mapping"] = w["mapping"] + steps
    undone = _undo(clone(w), len(w["mapping"]), owned=True)
    results = [m["content"] for m in undone["messages"] if m.get("role") == "tool"]
    assert results and all("zq_gamma" in c and name in c for c in results)  # values: never in a tool result
    assert all(m["name"] == name for m in undone["messages"] if m.get("role") == "tool")
    assert not any("zq_gamma" in m["content"] for m in undone["messages"] if m.get("role") != "tool")
    bad = clone(v)
    bad["mapping"] = bad["mapping"] + [{"op": "params", "tool": "zq_missing", "paths": [[["a"], ["b"]]]}]
    _same(bad, 1)
    bad["mapping"][-1] = {"op": "tools", "map": {name: "zq_not_there"}}
    _same(bad, 1)


@settings(max_examples=25, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_undo_equals_the_plain_loop_on_generated_records(raw):
    from hsa.recipes import load_recipe
    from hsa.transform import run

    rec = normalize(raw)
    if len(rec["messages"]) % 3:  # most of them without hooks: the undo splits those
        rec = without_hooks(rec)
    recipe = load_recipe("tools")
    for k in range(2):
        v = run(recipe, rec, random.Random(k))[0]
        own = len(v["mapping"]) - len(rec["mapping"])
        _same(v, own)
        _same(_as_written(v), own)


def test_undo_leaves_the_mapping_steps_alone(caches):
    """Regression: undoing a flatten rebuilt the object from the step's container schema sharing its nested dicts,
    and an older parameter rename then edited a description there in place: the variant's own mapping step (and,
    shared through the pool lookups, other records' steps) changed."""
    rec = normalize({
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                         "name": "ship", "arguments": json.dumps({"zq_new": 1, "addr_city": "Oslo"})}}]}],
        "tools": [{"type": "function", "function": {"name": "ship", "description": "Ship it.", "parameters": {
            "type": "object", "properties": {"zq_new": {"type": "integer", "description": "the zq_new count"},
                                             "addr_city": {"type": "string"}}}}}]})
    rec["mapping"] = [
        {"op": "params", "tool": "ship", "paths": [[["x"], ["zq_new"]]]},
        {"op": "params", "tool": "ship", "kind": "regroup", "paths": [[["addr", "city"], ["addr_city"]]],
         "container": {"path": ["addr"], "schema": {"type": "object", "not": {"description": "not the zq_new one"}},
                       "required": False}}]
    before = json.dumps(rec["mapping"])
    for _ in range(3):  # first sighting, the split and its lookup
        back = _undo(_as_written(rec), 2, owned=True)
        assert back["tools"][0]["parameters"]["properties"]["addr"]["not"] == {"description": "not the x one"}
    _same(rec, 2)
    assert json.dumps(rec["mapping"]) == before
