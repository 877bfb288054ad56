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


def test_instruction_counts_of_every_process_are_added_up(tmp_path):
    """--instructions: each callgrind output file (one a process: the run and what it started) is read for its
    total, the totals added, and the files removed (a later pair writes the same folder)."""
    (tmp_path / "cg.101").write_text("version: 1\ncmd: python\nevents: Ir\nsummary: 1200\ntotals: 1200\n")
    (tmp_path / "cg.102").write_text("events: Ir\nfn=(1) main\n0 5\ntotals: 34\n")
    (tmp_path / "other.txt").write_text("summary: 999\n")
    assert side_by_side.callgrind_total(tmp_path) == 1234
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.txt"]


def test_instructions_without_valgrind_say_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(side_by_side.shutil, "which", lambda name: None)
    try:
        side_by_side.main([str(ROOT), str(ROOT), str(ROOT / "examples" / "my-data.jsonl"), "--instructions"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("no error without valgrind")
    assert "apt-get install valgrind" in capsys.readouterr().err
