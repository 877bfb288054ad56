"""The fast paths of invariant 7's replay (issue 18) give the verdicts of the plain code."""

from __future__ import annotations

import random

import pytest

from hsa import cache
from hsa import sandbox as sb
from hsa.sandbox import invariant as sbi
from hsa.sandbox import pool as sbp
from hsa.records import clone, normalize


def _variants(n_records=6, harnesses=2, k=3, seed=5):
    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    out = []
    for raw in generate(n_records, seed=seed, harnesses=harnesses):
        src = normalize(raw)
        if not src.get("hooks"):
            continue
        for j in range(k):
            var, applied, _ = run(recipe, src, random.Random(j))  # the same draws on records of one harness
            if applied and var.get("hooks"):
                out.append((src, var))
    return out


def _broken(source, variant):
    """``variant`` with its first hook rewritten to answer differently on every payload."""
    bad = clone(variant)
    h = bad["hooks"][0]
    h["source"] = h["source"] + "\n\n_real = globals().get(%r)\n" % h.get("entry", "f")
    h["source"] += ("def _wrap(*a, **k):\n    out = _real(*a, **k) if _real else None\n"
                    "    return {'changed': True, 'was': out}\n")
    if h.get("entry") and "." not in h["entry"] and h["entry"] != "__main__":
        h["source"] += f"{h['entry']} = _wrap\n"
    return bad


def _verdicts(pairs):
    return [[(v.invariant, v.reason, v.detail) for v in sb.check_hooks(s, v)] for s, v in pairs]


def test_verdicts_with_the_caches_are_the_verdicts_without(monkeypatch):
    """check_hooks on variants of records that share harnesses (restore steps included), and on variants whose
    hook was broken: the same verdicts cold, warm (equivalence and payload caches hit) and with HSA_CACHE=0."""
    pairs = _variants()
    pairs += [(s, _broken(s, v)) for s, v in pairs[:4]]
    assert any(any(st["op"] == "restore" for st in v["mapping"]) for _, v in pairs)
    cache.clear()
    cold = _verdicts(pairs)
    warm = _verdicts(pairs)
    assert cold == warm
    assert any(cold[-4:]) and not any(cold[:-4])  # the broken hooks are caught, the others pass
    monkeypatch.setenv("HSA_CACHE", "0")
    cache.clear()
    assert _verdicts(pairs) == cold
    monkeypatch.delenv("HSA_CACHE")
    cache.clear()


def test_a_restore_patch_does_not_split_the_equivalence_cache():
    """Two variants whose steps differ only in their restore step's patch (which neither the payload nor the
    output mapping reads) share their equivalence checks; a variant whose other steps differ does not."""
    src, var = next((s, v) for s, v in _variants() if any(st["op"] == "restore" for st in v["mapping"])
                    and any(st["op"] == "tools" for st in v["mapping"]))
    eq = cache.lru("hook.equivalent", 16 << 20)
    cache.clear()
    assert sb.check_hooks(src, var) == []

    def misses_of(variant):  # lookups that miss (pairs the check does not keep, e.g. unchanged, miss every time)
        before = eq.misses
        assert sb.check_hooks(src, variant) == []
        return eq.misses - before

    again = misses_of(var)
    other = clone(var)
    restore = next(st for st in other["mapping"] if st["op"] == "restore")
    restore["patch"] = {"d": {"meta": {"v": {"unread": 1}}}}
    assert misses_of(other) == again  # as if the same variant were checked again
    renamed = clone(var)
    tools = next(st for st in renamed["mapping"] if st["op"] == "tools")
    tools["map"] = {**tools["map"], "no_such_tool": "still_none"}
    assert misses_of(renamed) > again



def test_a_pair_checked_equivalent_on_some_payloads_is_checked_on_the_others(monkeypatch):
    """The equivalence memo keeps, per hook pair, the payloads the pair was checked equivalent on: a rewritten hook
    that agrees with its source on one payload and not on another is caught on the other after the first was
    noted (the memo holds for those payloads alone), and checked again it is caught again."""
    src, var = next((s, v) for s, v in _variants() if v["hooks"][0].get("entry") and "." not in v["hooks"][0]["entry"]
                    and v["hooks"][0]["entry"] != "__main__")
    odd = clone(var)
    h = odd["hooks"][0]
    h["source"] += "\n\n_real = globals().get(%r)\n" % h["entry"]
    h["source"] += ("def _wrap(*a, **k):\n    out = _real(*a, **k) if _real else None\n"
                    "    return {'changed': True} if 'hsa_probe' in repr((a, k)) else out\n"
                    f"{h['entry']} = _wrap\n")
    hook = src["hooks"][0]
    payloads, digests = sbi._payloads_for(src, hook, b"x" * 32, 96)
    assert payloads
    first = dict(payloads[0])
    probe = {**first, "hsa_probe": 1}
    given = {"payloads": [first]}
    real = sbi._payloads_for

    def payloads_for(source, h, digest, limit):
        if h is not hook:
            return real(source, h, digest, limit)
        return given["payloads"], [sbp.payload_digest(p) for p in given["payloads"]]

    monkeypatch.setattr(sbi, "_payloads_for", payloads_for)
    cache.clear()
    assert sb.check_hooks(src, odd) == []  # agrees on the payload without the probe: noted equivalent
    given["payloads"] = [first, probe]
    caught = sb.check_hooks(src, odd)
    assert caught and caught[0].reason == "rewritten hook behaves differently", caught
    assert sb.check_hooks(src, odd) == caught
    cache.clear()


@pytest.mark.parametrize("with_digests", [False, True])
def test_replay_with_the_callers_digests_is_replay_many(with_digests):
    """replay_items with the digests _payloads_for made gives what replay_many gives on the same items."""
    src, _ = _variants(n_records=2, harnesses=1, k=1)[0]
    digest = b"x" * 32
    items, digests = [], []
    for h in src["hooks"]:
        payloads, keys = sbi._payloads_for(src, h, digest, 96)
        assert keys == [sbp.payload_digest(p) for p in payloads]
        items += [(h, p) for p in payloads]
        digests += keys
    sbp._RESULTS.clear()
    want = sb.replay_many(items, hooks=src["hooks"])
    sbp._RESULTS.clear()
    assert sbp.replay_items(items, digests if with_digests else None, sbp.hook_set_key(src["hooks"])) == want


def _canonical_unique(values, limit):
    """What hooks_model._unique did before its orjson key: dedupe by _json.canonical."""
    from hsa import _json

    seen, out = set(), []
    for v in values:
        k = _json.canonical(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out[:limit]


_NAN = float("nan")
_ODD = [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1.0, "b": 2}, {"a": True, "b": 2}, {"a": None}, {"a": _NAN},
        {"a": float("inf")}, {"a": -0.0}, {"a": 0.0}, {"a": 2 ** 70}, {"a": 2 ** 70 + 1}, {"a": "\ud800"},
        {"a": "null"}, {"a": [1, {"y": 1, "x": 2}]}, {"a": [1, {"x": 2, "y": 1}]}, {"a": (1, 2)}, {"a": [1, 2]},
        {"reply": "OK.", "loaded_skills": []}, {"loaded_skills": [], "reply": "OK."}, {}]


def test_payload_dedupe_keys_agree_with_canonical_json():
    """hooks_model._unique (orjson key-sorted bytes, canonical JSON where orjson cannot say) keeps exactly the values
    the canonical-JSON dedupe keeps: key order, 1 / 1.0 / True, NaN / None / infinity, -0.0, big ints, tuples."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hsa.hooks_model import _unique

    for limit in (3, 96):
        got = _unique(_ODD + _ODD[::-1], limit)
        want = _canonical_unique(_ODD + _ODD[::-1], limit)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))

    values = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, -0.0, 1.0, _NAN]) |
                          st.sampled_from(["", "a", "null"]),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner,
                                                                                      max_size=3), max_leaves=8)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(values, max_size=8))
    def check(vs):
        got, want = _unique(vs + vs, 96), _canonical_unique(vs + vs, 96)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))

    check()


def test_schema_examples_from_the_cache_are_the_examples_and_the_callers_own():
    from hsa.hooks_model import _schema_examples, schema_examples

    schemas = [t["parameters"] for s, _ in _variants(n_records=3, harnesses=1, k=1) for t in s["tools"]]
    schemas += [{"type": "object", "properties": {"n": {"type": "number", "minimum": _NAN}}},
                {"type": "object", "properties": {"n": {"type": "integer", "default": 2 ** 70}}},
                {"type": "object", "properties": {"k": {"enum": [1, 1.0, True]}, "o": {"type": "null"}}}]
    for rounds in range(2):
        for sch in schemas:
            want = _schema_examples(sch, 6)
            got = schema_examples(sch)
            assert repr(got) == repr(want)
            if got and got[0]:
                got[0]["mutated"] = 1
    assert cache.caches()["schema.facts"].hits > 0


def test_payloads_for_gives_private_exact_copies():
    from hsa.hooks_model import generated_payloads

    src, _ = _variants(n_records=2, harnesses=1, k=1)[0]
    for h in src["hooks"]:
        payloads, _ = sbi._payloads_for(src, h, b"y" * 32, 96)
        want = generated_payloads(src, h, limit=96)
        assert repr(payloads) == repr(want)
        assert all(a is not b for a, b in zip(payloads, want))


def test_schema_examples_stay_within_the_schema_facts_byte_budget(monkeypatch):
    """A stream of distinct schemas (a long input with its own tools per record) fills schema.facts up to its
    budget (here scaled down to 3.2 MiB) and no further."""
    from hsa.context import WorkerContext, use
    from hsa.hooks_model import schema_examples

    monkeypatch.setenv("HSA_CACHE_SCALE", "0.05")
    with use(WorkerContext()):
        c = cache.lru("schema.facts", 64 << 20)
        for k in range(3000):
            schema_examples({"type": "object", "properties": {f"p{k}": {"type": "string", "enum": ["x" * 500, "y"]},
                                                              "q": {"type": "integer", "minimum": k}}})
        assert 0 < c.bytes <= c.max_bytes == int((64 << 20) * 0.05) and c.evictions > 0
