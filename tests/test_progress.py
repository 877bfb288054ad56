"""hsa augment's progress line and summary: a resumed run counts the shards it kept; the ETA waits for a warm-up."""

from __future__ import annotations

import json

from hsa.cli import main
from hsa.pipeline.executor import Progress
from hsa.pipeline.record import Stats
from tests.trainers_support import FIXTURES


def _stats(records: int) -> Stats:
    s = Stats()
    s.input_records = records
    s.rows_written = 4 * records
    return s


def test_progress_counts_kept_shards_and_shows_an_eta_after_a_warm_up():
    """A run resumed with 3 shards (1,500 records) kept reads 1510/2000, names the kept shards, shows no ETA
    until 5 s after the first records came back, then one from the rate since then (before: 10/2000, and a
    first ETA from the time since the start, workers' start-up included: 57 minutes for a 72-second run)."""
    bar = Progress(True, 2000, kept_records=1500, kept_shards=3)
    t = bar.start + 30.0  # a slow start: workers forked, transforms loaded
    first = bar.line(_stats(10), t)
    assert first.startswith("1510/2000 records (1500 kept from 3 shards of the interrupted run)")
    assert "ETA after warm-up" in first
    assert "ETA after warm-up" in bar.line(_stats(60), t + 4.0)
    later = bar.line(_stats(130), t + 6.0)  # 120 records in 6 s since the first: 20/s, 370 left
    assert "(20/s)" in later and later.endswith("ETA 0m18s")
    assert "kept" not in Progress(True, 80).line(_stats(8), 0.0)


def test_resume_summary_says_what_was_kept(tmp_path, capsys):
    """hsa augment --resume prints how many shards and records the interrupted run left, and how many it
    augmented now."""
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(FIXTURES.read_text(encoding="utf-8").splitlines()[:24]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    cmd = ["augment", str(src), "--out", str(out), "--variants", "1", "--shard-size", "8", "--workers", "1"]
    assert main(cmd) == 0
    assert "resumed" not in capsys.readouterr().out
    reference = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").unlink()  # as a run killed before its last shard leaves the folder
    (out / ".hsa" / "shard-00002.done.json").unlink()
    assert main(cmd + ["--resume"]) == 0
    assert "resumed: 2 shards (16 records) kept from the interrupted run, 8 records augmented now" in \
        capsys.readouterr().out
    again = json.loads((out / "manifest.json").read_text())
    assert {k: v for k, v in again.items() if k != "command"} == \
        {k: v for k, v in reference.items() if k != "command"}  # the manifest does not record the resume


def test_stats_add_in_place_is_add():
    """A run's total grows with ``+=`` (in place); it counts what ``+`` counts, and the right side is unchanged."""
    from collections import Counter

    from hsa.pipeline.record import Stats

    a, b = Stats(input_records=3, rows_written=7), Stats(input_records=2, rejected=1)
    a.applied.update({"tool.rename": 2})
    a.skipped[("tool.nest", "no object")] += 1
    b.applied.update({"tool.rename": 1, "tool.values": 4})
    b.reject_reasons["bad line"] += 1
    expected = (a + b).to_json()
    before_b = b.to_json()
    total = a
    total += b
    assert total is a and total.to_json() == expected and b.to_json() == before_b
    assert total.applied == Counter({"tool.values": 4, "tool.rename": 3}) and total.input_records == 5
