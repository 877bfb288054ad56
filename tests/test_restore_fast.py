"""The fast paths of the restore step and the per-variant check (issue 18) give what the plain code gives."""

from __future__ import annotations

import math
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import _patch, cache
from hsa.context import WorkerContext, use
from hsa.plans import SlotPlan
from hsa.records import clone, normalize
from hsa.renames import apply_step, canonicalize, undo
from tests.exact_support import exact


def _slow_same(a, b) -> bool:
    """The exact walk, without the fast path: what :func:`hsa._patch.same` promises (NaN the same as NaN)."""
    return exact(a, b, nan_equal=True)


NAN = float("nan")
PAIRS = [
    ({"a": 1}, {"a": 1.0}), ({"a": 1}, {"a": True}), ({"a": 0}, {"a": False}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ([NAN], [NAN]), ({"x": NAN}, {"x": None}), ([None], [None]),
    ([{"t": "banana", "v": None}], [{"t": "banana", "v": None}]), ([-0.0], [0.0]), ([2 ** 70], [2 ** 70]),
    ([2 ** 70], [2 ** 70 + 1]), (["\ud800"], ["\ud800"]), ([[1, [2, {"k": "v"}]]], [[1, [2, {"k": "v"}]]]),
    ([1, 2], (1, 2)), ([[1]], [(1,)]), ({"a": [1.5e300]}, {"a": [1.5e300]}),
]


@pytest.mark.parametrize("a, b", PAIRS)
def test_same_agrees_with_the_exact_walk(a, b):
    """1 / 1.0 / True, key order, NaN (the same as NaN, never as None), -0.0, big ints, surrogates, tuples."""
    assert _patch.same(a, b) is _slow_same(a, b)
    assert _patch.same(b, a) is _slow_same(b, a)


def test_nan_is_the_same_as_nan_shared_or_not():
    """A NaN given back is the source given back: no patch for it (before, every NaN was patched, and the inversion
    check, which compares with same(), still failed: variants of rows with a NaN in a schema were rejected)."""
    x = [NAN]
    assert _patch.same([x], [x]) and _patch.same([[NAN]], [[float("nan")]])
    assert _patch.diff({"k": [x]}, {"k": [[float("nan")]]}) is None
    assert not _patch.same([NAN], [None]) and _patch.patch({"k": NAN}, _patch.diff({"k": NAN}, {"k": None})) == {"k": None}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, NAN, 2.5]) |
    st.sampled_from(["", "a", "nan", "null", "b" * 70]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_diff_then_patch_gives_the_target_and_same_matches_the_walk(a, b):
    """Drawn values: same() is the exact walk, and patch(a, diff(a, b)) is b as the walk sees it."""
    assert _patch.same(a, b) is _slow_same(a, b)
    assert _patch.same(a, _patch.patch(a, None)) is _slow_same(a, a)
    got = _patch.patch(a, _patch.diff(a, b))
    assert _same_or_nan(got, b)


def _same_or_nan(a, b) -> bool:
    """The exact walk, NaN equal to NaN."""
    return exact(a, b, nan_equal=True)


def _variant():
    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.transform import run
    import random

    rec = normalize(generate(1, seed=3)[0])
    out, applied, _ = run(load_recipe("default"), rec, random.Random(7))
    assert applied and len(out["mapping"]) > 2
    return rec, out


def test_undo_leaves_its_input_alone_and_equals_the_step_by_step_inverse():
    """undo copies once and renames in place: same result as applying each inverse step to a copy, input unchanged."""
    from hsa.mapping import Mapping

    source, variant = _variant()
    before = clone(variant)
    got = undo(variant, len(variant["mapping"]))
    assert _slow_same(variant, before)
    want = variant
    for step in Mapping(variant["mapping"]).inverse().steps:
        if step["op"] != "opaque":
            want = apply_step(want, step)
    want = clone(want)
    want["mapping"] = []
    assert _slow_same(got, want)
    assert _slow_same({k: got[k] for k in ("messages", "tools")}, {k: source[k] for k in ("messages", "tools")})
    assert _slow_same(canonicalize(variant)["messages"], source["messages"])


@contextmanager
def _in_a_slot_plan():
    """A fresh worker context whose variant in progress has a fresh slot plan (as hsa.pipeline.record sets it), one
    that an earlier variant was made with (so the restore step and the check keep their work in it)."""
    with use(WorkerContext()) as ctx:
        ctx.plan = SlotPlan()
        ctx.plan.reused = True
        yield ctx.plan


def test_added_names_verdict_is_the_same_from_the_slot_plan(monkeypatch):
    """The added-names verdict kept in the slot plan: a variant whose distractor is named like a source tool is
    rejected when the plan gives the verdict too, and without a plan (hsa validate) it is checked each time."""
    from hsa import invariants
    from hsa.invariants import check_variant

    source = normalize({"id": "r", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                               "function": {"name": "fetch", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {}}}},
                  {"type": "function", "function": {"name": "fetch", "parameters": {"type": "object", "properties": {}}}}]})
    variant = clone(source)
    variant = apply_step(variant, {"op": "tools", "map": {"get": "grab"}})
    extra = clone(variant["tools"][0])
    extra["name"] = "get_v2"
    variant["tools"].append(extra)
    bad = clone(variant)
    bad["tools"][-1]["name"] = "get"  # maps back onto source tool 'get'
    checked = []
    plain = invariants._check_added_names
    monkeypatch.setattr(invariants, "_check_added_names", lambda *a: checked.append(1) or plain(*a))

    def reasons(v):
        return [x.reason for x in check_variant(source, v, closure=False) if x.reason == "added name equals a source name"]

    with _in_a_slot_plan() as plan:
        first = [reasons(bad), reasons(variant)]
        assert len(checked) == 2 and sum(k[0] == "added names" for k in plan.memo) == 2
        assert [reasons(bad), reasons(variant)] == first == [["added name equals a source name"], []]
        assert len(checked) == 2  # the plan gave both verdicts
    assert [reasons(bad), reasons(variant)] == first and len(checked) == 4  # no plan: checked afresh


def test_validators_told_apart_by_exact_schema():
    """Schemas equal in == but not in JSON (1 vs 1.0 vs True in a const) get their own validators."""
    from hsa.invariants import validator_for

    base = {"type": "object", "properties": {"n": {"const": 1}}}
    floats = {"type": "object", "properties": {"n": {"const": True}}}
    assert validator_for(base).is_valid({"n": 1})
    assert not validator_for(floats).is_valid({"n": 1})
    assert validator_for(floats).is_valid({"n": True})
    reordered = {"properties": {"n": {"const": 1}}, "type": "object"}
    assert validator_for(reordered).is_valid({"n": 1}) and not validator_for(reordered).is_valid({"n": 2})


def test_string_edits_from_the_cache_are_the_edits_and_the_cache_is_bounded():
    """patch.str_edits (with_restore's cache of string edits): a hit gives the uncached edits (a copy: changing it
    leaves the cache alone), and a stream of distinct long strings stays within the byte budget."""
    from hsa.renames import _str_edits

    a = "The viewer asks about the price of item 42 before the live room closes tonight.\n" * 3
    b = a.replace("price", "cost", 2)
    want = _patch.str_edits(a, b)
    assert want
    first = _patch.diff(a, b, str_edits=_str_edits)
    c = cache.caches()["patch.str_edits"]
    hits = c.hits
    assert first == {"s": want} == _patch.diff(a, b)
    first["s"][0][2] = "changed"
    assert _patch.diff(a, b, str_edits=_str_edits) == {"s": want} and c.hits == hits + 1
    assert _patch.patch(a, _patch.diff(a, b, str_edits=_str_edits)) == b
    for i in range(3000):
        _patch.diff(a + str(i), b + str(i), str_edits=_str_edits)
    assert 0 < c.bytes <= c.max_bytes


def test_restored_view_is_what_the_restore_step_gives():
    """with_restore keeps a shared view of the restored record for the check; it equals the applier's copy."""
    from hsa.renames import _apply_restore, _as_written, _restored_view, content_of

    source, variant = _variant()
    restore = next(s for s in variant["mapping"] if s["op"] == "restore")
    k = variant["mapping"].index(restore)
    back = undo(_as_written(variant), len(variant["mapping"]) - k - 1)
    assert _slow_same(content_of(_restored_view(back, restore)), content_of(_apply_restore(back, restore)))
    assert _slow_same(content_of(_apply_restore(back, restore)), content_of(source))


def test_param_paths_from_the_cache_are_the_walk_and_the_callers_own():
    """param_paths, a fact of the schema (schema.facts): the kept paths equal the walk's, a caller may change its
    list, and key order (which orders the paths) makes another entry."""
    from hsa.record_texts import _param_paths, param_paths

    schema = {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"default": 1}}},
                                               "a": {"type": "array", "items": {"properties": {"d": {}}}}}}
    want = _param_paths(schema)
    first = param_paths(schema)
    assert first == want == [("b",), ("b", "c"), ("a",), ("a", "[]", "d")]
    first.append(("x",))
    assert param_paths(_json_copy(schema)) == want
    flipped = {"type": "object", "properties": {"a": schema["properties"]["a"], "b": schema["properties"]["b"]}}
    assert param_paths(flipped) == [("a",), ("a", "[]", "d"), ("b",), ("b", "c")]
    assert param_paths(schema["properties"]["b"], ("b",)) == [("b", "c")]
    assert param_paths({"properties": {"n": {"minimum": 2 ** 70}}}) == [("n",)]  # not JSON orjson writes: walked


def test_tool_words_from_the_cache_are_the_words():
    """transforms._domains.tool_words: the cached words equal the uncached ones, and a caller may change its dict."""
    from transforms._domains import _tool_words, tool_words

    tool = {"name": "search_flights", "description": "Find flights between two airports.",
            "parameters": {"type": "object", "properties": {"origin": {"type": "string", "description": "IATA code",
                                                                       "enum": ["JFK", "LHR"]}}}}
    want = _tool_words(tool)
    got = tool_words(tool)
    assert got == want and "flight" in got["name"]
    got["all"] = frozenset()
    assert tool_words(_json_copy(tool)) == want


def _json_copy(v):
    import json

    return json.loads(json.dumps(v))


def test_content_patch_is_the_diff_of_the_whole_from_the_slot_plan_too():
    """with_restore's patch (harness keys kept in the slot plan) is _patch.diff of the two contents, for variants
    of records that share a harness (kept patches), in a fresh plan and without one."""
    import random

    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.renames import _as_written, _content_patch, content_of
    from hsa.transform import run

    recipe = load_recipe("default")
    pairs = []
    for rec in generate(6, seed=5, harnesses=2):
        src = normalize(rec)
        for k in range(3):
            out, applied, _ = run(recipe, src, random.Random(k))  # the same draws on records of one harness
            if applied:
                n = len(out["mapping"]) - len(src["mapping"])
                back = undo(_as_written(out), n - (1 if any(s["op"] == "restore" for s in out["mapping"]) else 0))
                pairs.append((content_of(back), content_of(src)))
    assert len(pairs) > 6
    for a, b in pairs:
        assert _content_patch(a, b) == _patch.diff(a, b)  # no plan
    for fresh in range(2):
        with _in_a_slot_plan() as plan:
            for rounds in range(2):
                for a, b in pairs:
                    assert _content_patch(a, b) == _patch.diff(a, b)
                if rounds == 0:
                    kept = dict(plan.memo)
            assert kept and all(k[0] == "patch" for k in kept)
            assert all(plan.memo[k] is v for k, v in kept.items() if k in plan.memo)  # the kept patches, reused


def test_restored_view_in_a_slot_plan_keeps_the_patched_harness_and_is_what_the_restore_step_gives():
    """In a slot plan, with_restore's view takes each harness key's patched value from the plan (made once per
    value and patch, by the patch's digest): the same content as the applier's copy for every variant of records
    that share a harness, one kept value shared by the variants whose undone harness and source agree, another for
    a variant whose undone harness differs (its digest differs)."""
    import random

    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.renames import _apply_restore, _as_written, _content_patch, _restored_view, content_of
    from hsa.transform import run

    recipe = load_recipe("default")
    cases = []
    for rec in generate(6, seed=5, harnesses=2):
        src = normalize(rec)
        for k in range(3):
            out, applied, _ = run(recipe, src, random.Random(k))
            if applied and any(s["op"] == "restore" for s in out["mapping"]):
                n = len(out["mapping"]) - len(src["mapping"]) - 1
                back = undo(_as_written(out), n)
                cases.append((back, src))
    assert len(cases) > 6
    with _in_a_slot_plan() as plan:
        views = 0
        for rounds in range(2):
            for back, src in cases:
                kept: dict = {}
                p = _content_patch(content_of(back), content_of(src), kept)
                assert p is not None
                step = {"op": "restore", "patch": p}
                want = content_of(_apply_restore(back, step))
                assert _slow_same(want, content_of(src))
                view = _restored_view(back, step, kept)
                assert _slow_same(content_of(view), want)
                views += any(k in p.get("o", {}) for k in kept)
        patched = [k for k in plan.memo if k[0] == "patched"]
        assert views and patched  # the path ran, and what it made is kept
        # a value patched alike is the one kept (shared), not made again
        back, src = next((b, s) for b, s in cases if any(k in _content_patch(content_of(b), content_of(s), {}).get("o", {})
                                                           for k in ("tools", "skills", "skill_tool", "hooks")))
        kept = {}
        step = {"op": "restore", "patch": _content_patch(content_of(back), content_of(src), kept)}
        first, again = _restored_view(back, step, kept), _restored_view(back, step, kept)
        assert any(first[k] is again[k] for k in kept if k in step["patch"]["o"])
        # another source harness (one tool's description changed): another key, its own patched value
        other = clone(src)
        other["tools"][0]["description"] = "zq another description"
        kept2: dict = {}
        step2 = {"op": "restore", "patch": _content_patch(content_of(back), content_of(other), kept2)}
        assert _slow_same(content_of(_restored_view(back, step2, kept2)), content_of(other))


@pytest.mark.parametrize("hooks,recipe", [(False, "tools"), (True, "tools"), (True, "skills")])  # skills: below
def test_the_undo_split_in_a_slot_plan_gives_the_plain_undo(hooks, recipe):
    """The restore step's undo in a slot plan: the first sighting of (steps, harness parts) undoes by the plain
    loop, the next ones split the harness half (kept in the plan, the hooks with it on records with hooks and no
    hook events) from the messages; every one gives what the plain undo gives, notes included, and the plan keeps
    at most MEMO results."""
    import random

    from fixtures.livestream.generate import generate
    from hsa.plans import MEMO
    from hsa.recipes import load_recipe
    from hsa.renames import _as_written
    from hsa.transform import from_config, run

    skills = recipe == "skills"
    recipe = load_recipe("tools") if not skills else from_config(  # skill and tool renames: no restore step
        {"transform": "meta.sequence", "transforms": [{"transform": "skill.rename", "p": 1.0},
                                                       {"transform": "tool.rename", "p": 0.5}]})
    cases = []
    for rec in generate(8, seed=3, harnesses=1):
        src = normalize({k: v for k, v in rec.items() if k not in (("hook_events",) if hooks else ("hooks", "hook_events"))})
        assert bool(src.get("hooks")) is hooks
        for k in range(2):
            out, applied, _ = run(recipe, src, random.Random(k))  # the same draws on records of one harness
            if applied:
                cases.append((_as_written(out), len(out["mapping"]) - len(src["mapping"])))
    if skills:  # the variants with a skill rename: a kept undo below is one of a skills step
        cases = [(r, n) for r, n in cases if any(s["op"] == "skills" for s in r["mapping"][-n:])]
    assert len(cases) >= 8
    want = [undo(r, n) for r, n in cases]  # no plan: the plain loop
    with _in_a_slot_plan() as plan:
        for rounds in range(3):
            for (r, n), w in zip(cases, want):
                assert _slow_same(undo(r, n), w)
        kept = [v for k, v in plan.memo.items() if k[0] == "undone"]
        assert any(v is not None for v in kept) and len(plan.memo) <= MEMO
        assert all((b'"hooks"' in v[0]) is hooks for v in kept if v is not None)


def test_the_undo_split_leaves_a_skill_step_of_another_skill_tool_to_the_plain_loop():
    """A skills step names the skill tool its applier carried the calls of; where the record's skill tool at that
    point is another one (a mapping not made by hsa, say), the plain loop, which carries with the record's, undoes
    it every time: the plan keeps that, and every undo gives what the plain undo gives."""
    import json

    from fixtures.livestream.generate import generate
    from hsa.renames import _PLAIN, _as_written, rename_skills

    src = next(r for r in map(normalize, generate(40, seed=5)) if r.get("skills") and any(
        c["function"]["name"] == r["skill_tool"]["name"] for m in r["messages"] for c in m.get("tool_calls") or ()))
    src = {**src, "hooks": [], "hook_events": []}
    old = src["skills"][0]["name"]
    variant = rename_skills(src, {old: old + "-renamed"})
    step = variant["mapping"][-1]
    variant["mapping"][-1] = {**step, "tool": "some_other_tool"}  # the calls it renamed are the skill tool's
    case = _as_written(variant)
    want = undo(case, 1)
    assert json.dumps(want["messages"]) != json.dumps(case["messages"])  # the plain undo carries the calls back
    with _in_a_slot_plan() as plan:
        for _ in range(3):
            assert _slow_same(undo(case, 1), want)
        assert list(plan.memo.values()) == [_PLAIN]


def test_a_shared_restore_patch_is_not_changed_by_canonicalize():
    """Variants of one slot share their harness patches: canonicalizing one (and changing what it gives) leaves
    the patch, and so the other variants' canonical records, as they were."""
    import random

    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    srcs = [normalize(r) for r in generate(4, seed=8, harnesses=1)]
    outs = [run(recipe, s, random.Random(3))[0] for s in srcs]
    snapshot = [clone(o["mapping"]) for o in outs]
    for o, s in zip(outs, srcs):
        back = canonicalize(o)
        assert _slow_same(back["tools"], s["tools"]) and _slow_same(back["messages"], s["messages"])
        back["tools"][0]["name"] = "changed"
        back["tools"].append({"name": "x"})
    assert all(_slow_same(o["mapping"], m) for o, m in zip(outs, snapshot))


def test_a_row_with_nan_in_a_tool_schema_gets_its_variants():
    """Regression: a NaN default in a tool schema made canonicalize 'not give the source back' (NaN is not equal to
    itself), so half the default-recipe variants of such a row were rejected for inversion."""
    import json

    from hsa.io import InputLine
    from hsa.pipeline.record import augment_record
    from hsa.recipes import load_recipe

    row = {"id": "nan", "tools": [{"type": "function", "function": {
        "name": "calc", "description": "d",
        "parameters": {"type": "object", "properties": {"x": {"type": "number", "default": NAN}}}}}],
        "messages": [{"role": "user", "content": "please compute"}, {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": json.dumps({"x": 1.5})}}]}]}
    res = augment_record(InputLine("in.jsonl", 1, json.dumps(row).encode(), 0), load_recipe("default"), seed=1,
                         variants=4, keep_original=True)
    assert not res.rejects, res.rejects
    assert len(res.rows) == 5
