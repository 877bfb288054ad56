"""The fast paths of invariant 7's replay (issue 18) give the verdicts of the plain code."""

from __future__ import annotations

import random

import pytest

from hsa import cache
from hsa import sandbox as sb
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
        sb._VERDICTS.clear()
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


@pytest.mark.parametrize("with_digests", [False, True])
def test_replay_with_the_callers_digests_is_replay_many(with_digests):
    """_replay with the digests _payloads_for made gives what replay_many gives on the same items."""
    src, _ = _variants(n_records=2, harnesses=1, k=1)[0]
    digest = b"x" * 32
    items, digests = [], []
    for h in src["hooks"]:
        payloads, keys = sb._payloads_for(src, h, digest, 96)
        assert keys == [sb._digest(p) for p in payloads]
        items += [(h, p) for p in payloads]
        digests += keys
    sb._RESULTS.clear()
    want = sb.replay_many(items)
    sb._RESULTS.clear()
    assert sb._replay(items, digests if with_digests else None) == want
