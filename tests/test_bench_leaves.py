"""benchmarks/leaves.py: CPU per leaf at steady state, and the kept draws a harness sampler takes."""

from __future__ import annotations

import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import leaves  # noqa: E402
from bench_augment import _shared_chunk, public_layout  # noqa: E402


def test_leaves_of_a_shared_harness_input_take_kept_draws(tmp_path, capsys):
    """80 tool-only records of 2 harnesses, the first 40 not counted: the harness samplers (nest, flatten and values
    among them) take kept draws, no more than they looked up; a record sampler has none to take; the leaves' time is
    part of the whole."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(public_layout(r)) + "\n" for r in _shared_chunk(80, 0, 2)))
    figures = leaves.main([str(path), "--records", "80", "--warm", "40", "--pool", "2", "--recipe", "tools"])
    assert figures["records"] == 40 and figures["warm"] == 40
    found = figures["leaves"]
    assert {"tool.rename", "tool.param_rename", "tool.values"} <= set(found)
    moved = {"tool.nest", "tool.flatten"} & set(found)
    assert moved  # the 80 records run at least one of the two
    for name in {"tool.rename", "tool.values"} | moved:
        assert found[name]["sampler"] == "harness" and found[name]["kept"][0] > 0, (name, found[name])
    for name, leaf in found.items():
        assert leaf["runs"] > 0 and leaf["ms_per_record"] >= 0
        assert (leaf["kept"] is None) == (leaf["sampler"] == "record"), (name, leaf)  # a record sampler keeps none
        if leaf["kept"] is not None:
            taken, looked = leaf["kept"]
            assert 0 <= taken <= looked <= leaf["runs"]
    taken, looked = found["tool.rename"]["kept"]
    assert looked > 0 and taken > looked // 2  # two harnesses, two slots: most records take a kept draw
    assert figures["leaves_ms_per_record"] <= figures["ms_per_record"]
    printed = capsys.readouterr().out
    assert "40 records counted after 40" in printed and f"{taken} of {looked}" in printed
