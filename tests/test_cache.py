"""hsa.cache (issue 18): byte-bounded LRU caches, and the data path gives the same bytes with them on or off."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hsa import cache
from hsa.cache import ByteLRU, digest, memoize, sizeof

ROOT = Path(__file__).resolve().parents[1]


def test_lru_keeps_within_its_byte_budget_and_drops_the_least_recent():
    """Entries past max_bytes evict the least recently used ones; a get makes an entry recent."""
    c = ByteLRU("t", 10_000)
    for i in range(100):
        c.put(i, "x" * 100, size=936)  # + 64 per entry: 1000 bytes each
        assert c.bytes <= 10_000
        assert c.get(0) is not None  # read after every put: always the most recent but one, never dropped
    assert len(c) == 10 and c.bytes == 10_000
    assert c.get(99) == "x" * 100 and c.get(50) is None
    assert c.stats()["evictions"] == 90


def test_an_entry_larger_than_a_quarter_of_the_budget_is_not_kept():
    """One huge value cannot flush the whole cache."""
    c = ByteLRU("t", 1000)
    c.put("small", 1, size=10)
    assert c.put("big", "y", size=400) == "y"
    assert "big" not in c and c.get("small") == 1


def test_memory_stays_bounded_on_a_long_stream_of_distinct_keys():
    """100,000 distinct entries measured by sizeof stay under the budget (the memory bound of every cache)."""
    c = ByteLRU("t", 1 << 20)
    for i in range(100_000):
        c.put(digest(i), {"value": [i, str(i) * 3]})
    assert c.bytes <= 1 << 20
    assert sum(n for _, n in c._data.values()) == c.bytes
    assert 1000 < len(c) < 100_000


def test_digest_tells_apart_values_that_compare_equal():
    """Key order, 1 / 1.0 / True and NaN / None give different digests; equal values the same one."""
    assert digest({"a": 1, "b": 2}) != digest({"b": 2, "a": 1})
    assert len({digest(1), digest(1.0), digest(True)}) == 3
    assert digest([float("nan")]) != digest([None])
    assert digest(["x", {"k": [1]}]) == digest(["x", {"k": [1]}])
    assert digest("ab", "c") != digest("a", "bc")  # parts are length-prefixed


def test_memoize_returns_the_cached_result_and_counts_hits():
    """A memoized pure function runs once per distinct argument."""
    calls = []

    @memoize("test.memoize", 1 << 16)
    def f(x, y=0):
        calls.append((x, y))
        return [x, y]

    assert f(1) == f(1) == [1, 0] and f(1, y=2) == [1, 2]
    assert calls == [(1, 0), (1, 2)]
    assert f.cache.hits == 1


def test_hsa_cache_off_turns_every_cache_off(monkeypatch):
    """HSA_CACHE=0: puts keep nothing and gets miss."""
    monkeypatch.setenv("HSA_CACHE", "0")
    c = ByteLRU("t", 1 << 20)
    c.put("k", "v")
    assert c.get("k") is None and len(c) == 0


def test_sizeof_counts_nested_json():
    """sizeof grows with the content of nested values."""
    small, big = {"a": "x"}, {"a": "x" * 10_000, "b": [list(range(100))]}
    assert sizeof(big) > sizeof(small) + 10_000


def test_sizeof_of_containers_is_close_to_a_walk_of_their_parts():
    """sizeof measures containers by their JSON text; on tool lists, schemas and odd values it stays within a
    factor of 2 of the walk that sums every part's sys.getsizeof, and what orjson cannot write is walked."""
    from hsa.cache import _walk_size

    tool = {"name": "get_weather", "description": "Weather for a city " * 3, "parameters": {
        "type": "object", "properties": {f"p{i}": {"type": "string", "description": f"param {i}", "enum": ["a", "b"]}
                                         for i in range(12)}, "required": ["p0", "p3"]}, "dialect": "openai",
            "extra": {}, "outer": {}}
    values = [[tool] * 5, (tool, {"op": "tools", "map": {"a": "b"}}), {"value": [1, "11" * 3, 2.5, None, True]},
              {1: {"x", "y"}, 2.0: frozenset({"z"})}, [float("nan"), float("inf")]]
    for v in values:
        assert 0.5 < sizeof(v) / _walk_size(v) < 2, v
    odd = [{"big": 2 ** 70, "k": ["x" * 500]}, {(1, 2): "tuple key " * 50}]  # orjson cannot write these: walked
    for v in odd:
        assert sizeof(v) == _walk_size(v)
    assert sizeof("x" * 1000) == sys.getsizeof("x" * 1000) and sizeof(b"ab") == sys.getsizeof(b"ab")

    class Opaque:
        pass

    o = Opaque()
    assert sizeof([o, o]) >= 2 * sys.getsizeof(o)  # other objects count their own size


def _run(args: list[str], env: dict) -> None:
    subprocess.run([sys.executable, "-m", "hsa.cli", *args, "--quiet"], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def _shard_hashes(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("shard-*.arrow"))}


@pytest.mark.parametrize("pool", ["0", "2"])
def test_caches_never_change_bytes(tmp_path, pool):
    """The default recipe on records sharing harnesses writes the same shards with every cache on and off."""
    from fixtures.livestream.generate import generate

    src = tmp_path / "in.jsonl"
    recs = generate(6, seed=1, harnesses=2) + generate(4, seed=2)
    for i, r in enumerate(recs):
        r["id"] = f"r{i}"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    outs = {}
    for flag in ("1", "0"):
        out = tmp_path / f"out-{flag}"
        _run(["augment", str(src), "--out", str(out), "--variants", "3", "--workers", "1", "--harness-pool", pool],
             {"HSA_CACHE": flag})
        outs[flag] = _shard_hashes(out)
    assert outs["1"] == outs["0"] and outs["1"]
