"""A leaf's params reused within a pool slot (``Transform.sample_parts``, ``transform.slot_params``; issue 18) are
the params its sampler draws.

For records that share a harness but not a trajectory (texts that name the drawn names, other calls, other system
prompts), the params looked up after another record's draw equal a fresh draw with the same seed, exactly; the
answers recorded are the ones a draw needs; whole pipeline runs at a pool give the same rows with the caches on
and off.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings

from hsa import cache
from hsa.cache import digest, lru
from hsa.records import clone, normalize
from hsa.recipes import load_recipe
from hsa.testing import records
from hsa.transform import Skip, _sample_reusing, asked_set
from tests.conftest import normalized_fixtures, without_hooks
from tests.exact_support import exact

_ALL = normalized_fixtures(5)


FIXTURE = [without_hooks(r) for r in _ALL] + _ALL[:4]


def _leaves():
    out = []
    for name in ("default", "tools", "hammer"):
        out += [t for t in load_recipe(name).leaves() if t.reuses_params()]
    assert {t.name for t in out} >= {"tool.rename", "tool.param_rename", "tool.distractors"}
    return out


def _names_in(params) -> list[str]:
    """The names a draw made: new tool and parameter names, distractor names."""
    if isinstance(params, Skip):
        return []
    out = list((params.get("renames") or {}).values()) if isinstance(params.get("renames"), dict) else []
    out += [e["new"] for e in params.get("renames") or () if isinstance(e, dict)]
    out += [e["tool"]["name"] for e in params.get("tools") or ()]
    return out


def _trajectories(record, drawn, rng):
    """Other trajectories under ``record``'s harness: texts naming what was drawn (the answers change), texts
    naming nothing new (they do not), calls dropped, another system prompt."""
    out = []
    for extra in (" ".join(drawn), "nothing new here", " ".join(rng.sample(drawn, min(1, len(drawn))))):
        r = clone(record)
        for m in r["messages"]:
            if isinstance(m.get("content"), str) and m.get("role") in ("user", "tool", "system"):
                m["content"] = f"{m['content']} {extra}"
        out.append(r)
    r = clone(record)
    r["messages"] = [m for m in r["messages"] if not m.get("tool_calls")] or r["messages"]
    out.append(r)
    r = clone(record)
    for m in r["messages"]:
        if m.get("role") == "system":
            m["content"] = "You are a weather and travel booking agent for flights and hotels."
    out.append(r)
    for domain in ("coding", "finance", "airline"):  # another domain: other distractors first
        r = clone(record)
        r["meta"] = {**(r.get("meta") or {}), "domain": domain}
        out.append(r)
    return out


def _same(a, b):
    if isinstance(a, Skip) or isinstance(b, Skip):
        return isinstance(a, Skip) and isinstance(b, Skip) and a.reason == b.reason
    return exact(a, b)


def _check(t, record, seed, rng, memo):
    first = _sample_reusing(t, record, seed, digest, memo)
    assert _same(first, t.sample(record, random.Random(seed)))
    reused = 0
    for other in _trajectories(record, _names_in(first), rng):
        fresh = t.sample(other, random.Random(seed))
        hits = memo.hits
        got = _sample_reusing(t, other, seed, digest, memo)
        assert _same(got, fresh), (t.name, got, fresh)
        reused += memo.hits > hits and got is first
    return reused


def test_reused_params_equal_a_fresh_draw(caches):
    memo = lru("test.slot_params", 8 << 20)
    reused = seen = 0
    for i, rec in enumerate(FIXTURE):
        rng = random.Random(i)
        for k, t in enumerate(_leaves()):
            reused += _check(t, rec, rng.getrandbits(64), rng, memo)
            seen += 1
    assert seen > 40
    if caches == "on":
        assert reused > 20  # the lookup is taken, not only the fresh draw


def test_answers_that_change_force_a_draw():
    """A record whose texts hold a name the first draw picked does not get that draw (it is taken there)."""
    memo = lru("test.slot_params_changed", 8 << 20)
    t = next(t for t in load_recipe("tools").leaves() if t.name == "tool.rename")
    rec = next(r for r in FIXTURE if not r.get("hooks") and len(r["tools"]) >= 2)
    for seed in range(30):
        first = _sample_reusing(t, rec, seed, digest, memo)
        if isinstance(first, Skip):
            continue
        other = clone(rec)
        other["messages"][0]["content"] = f"{other['messages'][0].get('content') or ''} " + " ".join(_names_in(first))
        got = _sample_reusing(t, other, seed, digest, memo)
        assert got is not first and _same(got, t.sample(other, random.Random(seed)))
        assert not set(_names_in(got)) & set(_names_in(first))
        return
    pytest.fail("no draw renamed a tool")


def test_a_word_use_forces_a_draw(caches):
    """A plain-word tool name that one record's hook uses as data (ambiguous there, so kept) and another's does not."""
    from hsa.renames import rename_tools

    t = next(t for t in load_recipe("tools").leaves() if t.name == "tool.rename")
    rec = next(r for r in FIXTURE if not r.get("hooks") and len(r["tools"]) >= 2)
    rec = rename_tools(rec, {rec["tools"][0]["name"]: "Quokka"})
    worded = clone(rec)
    worded["hooks"] = [{"name": "note", "event": "pre_tool_use", "entry": "check",
                        "source": "def check(p):\n    mode = 'Quokka'\n    return {'decision': 'allow', 'mode': mode}\n"}]
    memo = lru("test.slot_params_words", 8 << 20)
    differ = 0
    for seed in range(40):
        for a, b in ((rec, worded), (worded, rec)):
            _sample_reusing(t, a, seed, digest, memo)
            got = _sample_reusing(t, b, seed, digest, memo)
            fresh = t.sample(b, random.Random(seed))
            assert _same(got, fresh)
            differ += not _same(fresh, t.sample(a, random.Random(seed)))
    assert differ  # the word use changes some draws: the test can tell


def test_asked_set_records_each_membership_test():
    from hsa.transform import _ASKING

    log: list = []
    token = _ASKING.set(log)
    try:
        taken = asked_set(lambda r: {"a", "b"}, {})
        assert "a" in taken and "z" not in taken
    finally:
        _ASKING.reset(token)
    assert log[0][0] is True and log[0][3] == {"a": True, "z": False}
    assert asked_set(lambda r: {"a"}, {}) == {"a"}  # not recording: the set itself


@settings(max_examples=25, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_reused_params_on_generated_records(raw):
    rec = normalize(raw)
    memo = lru("test.slot_params_generated", 8 << 20)
    rng = random.Random(len(rec["messages"]))
    for t in _leaves():
        _check(t, rec, rng.getrandbits(64), rng, memo)


def test_pool_runs_give_the_same_rows_with_the_caches_on_and_off(monkeypatch):
    from hsa.context import current
    from hsa.transform import SlotRng, run

    recipe = load_recipe("default")

    def rows():
        cache.clear()
        out = []
        for i, rec in enumerate(FIXTURE[:12]):
            for k in range(3):
                for other in (rec, _trajectories(rec, ["zq_word"], random.Random(k))[k]):
                    plan = current().plans.get(("test", i, k))  # one slot plan for both trajectories (none kept when off)
                    v = run(recipe, other, SlotRng(k, random.Random(i * 10 + k), plan))[0]
                    out.append(json.dumps(v, sort_keys=False, default=repr))
        return out

    on = rows()
    monkeypatch.setenv("HSA_CACHE", "0")
    off = rows()
    monkeypatch.delenv("HSA_CACHE")
    cache.clear()
    assert on == off


def test_cache_entries_are_sized_from_their_json_within_a_factor_of_the_walk():
    """The leaf caches size their entries from the JSON text (no walk): close to what hsa.cache.sizeof counts."""
    from hsa.cache import sizeof
    from hsa.transform import _json_size

    for rec in FIXTURE[:10]:
        for value in (rec["tools"], {"tools": rec["tools"], "skill_tool": rec["skill_tool"]}, rec["mapping"]):
            walked = sizeof(value)
            assert walked / 4 <= _json_size(value) <= walked * 4
    assert _json_size(Skip("why")) > 0  # not JSON: its repr


def test_describe_under_a_pool_draws_per_domain(monkeypatch):
    """Regression: tool.describe's pool lookup was keyed by the tools alone, but its paraphrases depend on the
    harness's domain (meta.domain, the system prompt): records sharing tools in other domains got each other's
    draws, so output depended on record order and on HSA_CACHE. The lookup key now holds the domain."""
    import transforms.tool as TT
    from hsa.plans import SlotPlan
    from hsa.transform import SlotRng, _run_leaf

    t = TT.Describe(modes=("paraphrase",), p=1.0)
    differ = 0
    for rec in FIXTURE[:8]:
        variants = []
        for domain in ("airline", "coding", "retail"):
            r = clone(rec)
            r["meta"] = {**(r.get("meta") or {}), "domain": domain}
            variants.append(r)
        for seed in range(3):
            def tools(off):
                if off:
                    monkeypatch.setenv("HSA_CACHE", "0")
                cache.clear()
                plan = None if off else SlotPlan()  # one slot plan for the three domains when on
                out = [json.dumps(_run_leaf(t, v, SlotRng(seed, random.Random(0), plan), [], [])["tools"])
                       for v in variants]
                monkeypatch.delenv("HSA_CACHE", raising=False)
                cache.clear()
                return out

            on, off = tools(False), tools(True)
            assert on == off
            differ += len(set(off)) > 1
    assert differ  # the domains do change some draws: the test can tell
