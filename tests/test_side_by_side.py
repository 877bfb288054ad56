"""benchmarks/side_by_side.py: two trees timed at once, and whether they wrote the same bytes."""

from __future__ import annotations

import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import side_by_side  # noqa: E402


def test_a_tree_beside_itself_writes_the_same_bytes_and_each_run_is_timed(tmp_path, capsys):
    """One pair of this checkout against itself: both runs timed by their own resource usage, the same bytes."""
    out = tmp_path / "figures.json"
    rc = side_by_side.main([str(ROOT), str(ROOT), str(ROOT / "examples" / "my-data.jsonl"), "--pairs", "1",
                            "--no-compile", "--json", str(out), "--", "--recipe", "tools"])
    printed = capsys.readouterr().out
    assert rc == 0 and "output: the same bytes" in printed and "lower in" in printed
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["extra"] == ["--recipe", "tools"] and figures["same_output"] is True
    (pair,) = figures["pairs"]
    assert pair["before"]["cpu"] > 0.1 and pair["after"]["cpu"] > 0.1  # an interpreter start and a run, each


def test_output_that_differs_is_named(tmp_path):
    """A shard that differs, or a file one side lacks, is named; the manifest (it holds the command) is not read."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d, shard, manifest in ((a, b"one", b"x"), (b, b"one", b"y")):
        d.mkdir()
        (d / "shard-00000.arrow").write_bytes(shard)
        (d / "manifest.json").write_bytes(manifest)
        (d / "rejects.jsonl").write_bytes(b"")
    assert side_by_side.same_output(a, b) == (True, [])
    (b / "shard-00000.arrow").write_bytes(b"two")
    (a / "state.json").write_bytes(b"{}")
    assert side_by_side.same_output(a, b) == (False, ["shard-00000.arrow", "state.json"])
