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
