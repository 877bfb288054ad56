"""benchmarks/bench_augment.py: the peak memory it reports is the run's own, not the benchmark's."""

from __future__ import annotations

import resource
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_augment  # noqa: E402


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_the_peak_rss_of_a_run_is_its_own_not_that_of_the_process_that_started_it(tmp_path):
    ballast = bytearray(400 << 20)  # this process's high-water mark, which a child inherits in ru_maxrss
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    mine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    assert mine >= 400
    _, peak = bench_augment.run_cli(["augment", str(ROOT / "examples" / "my-data.jsonl"), "--out",
                                     str(tmp_path / "out"), "--recipe", "identity", "--workers", "1"])
    del ballast
    assert 20 < peak < mine - 200, (peak, mine)  # hsa on 8 records: a few dozen MiB to a couple of hundred
    assert (tmp_path / "out" / "manifest.json").exists()


def test_the_peer_column_masks_the_records_hsa_is_timed_on_as_hammer_reads_them():
    """benchmarks/peers/hammer.py: each record becomes the xLAM row Hammer's code reads (the first user message,
    every call, each tool's top-level parameters), and Hammer's masking of it renames every tool its calls name."""
    import json
    import random
    import re

    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    import hammer
    import hammer_masking

    from hsa.records import normalize

    lines = (ROOT / "examples" / "my-data.jsonl").read_text().splitlines()
    rows = hammer.read_rows(ROOT / "examples" / "my-data.jsonl", len(lines))
    assert len(rows) == len(lines)
    called = 0
    for line, row in zip(lines, rows):
        rec = normalize(json.loads(line))
        calls = [c["function"] for m in rec["messages"] for c in m.get("tool_calls") or ()]
        answers = json.loads(row["answers"])
        assert [(a["name"], a["arguments"]) for a in answers] == [(c["name"], c["arguments"]) for c in calls]
        tools = json.loads(row["tools"])
        assert [t["name"] for t in tools] == [t["name"] for t in rec["tools"]]
        for t, src in zip(tools, rec["tools"]):
            assert list(t["parameters"]) == list(src["parameters"].get("properties") or {})
            assert all("description" in p for p in t["parameters"].values())
        assert row["query"] == next(m["content"] for m in rec["messages"] if m["role"] == "user")
        if not answers:
            continue
        called += 1
        random.seed(12)
        out = hammer_masking.masked(row)
        masked_calls = json.loads(out["output"].strip("`\n"))
        listed = re.search(r"\[BEGIN OF AVAILABLE TOOLS\]\n(.*)\n\[END OF AVAILABLE TOOLS\]", out["instruction"],
                           re.S).group(1)
        masked_names = {t["name"] for t in json.loads(listed)}
        assert len(masked_calls) == len(answers)
        for before, after in zip(answers, masked_calls):
            assert after["name"] in masked_names and after["name"] != before["name"]
    assert called >= 4
