"""benchmarks/design_floor.py: the per-record floor of a verified variant, with the harness work left out."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import design_floor  # noqa: E402

PHASES = ["read", "carry", "closure", "calls valid", "map back", "undo", "mentions", "row of a variant", "encode rows"]


def test_every_variant_of_a_tool_dataset_is_carried_and_undone_in_one_pass(capsys):
    """On tool-calling records every variant is timed: the one-pass carry of its steps gives the messages the
    pipeline wrote, and the one-pass undo (with the restore patch) gives the source's; the floor is its phases."""
    figures = design_floor.main([str(ROOT / "examples" / "my-data.jsonl"), "--repeats", "1", "--target", "1.5",
                                 "--recipe", "tools"])
    assert figures["checked"] > 20 and figures["timed"] == figures["checked"] and figures["not_timed"] == {}
    assert figures["plan_messages"] == 0  # no prompt transform in this recipe: the carry gives every message
    assert list(figures["phases"]) == PHASES
    assert all(v[1] > 0 for v in figures["phases"].values())
    assert abs(figures["floor"] - sum(v[1] for v in figures["phases"].values())) < 1e-9
    assert figures["floor"] < figures["whole_ms"]  # the floor leaves the harness work and the leaves out
    printed = capsys.readouterr().out
    assert "target 1.5 ms: the floor is" in printed and "not timed" not in printed


def test_a_variant_the_floor_does_not_cover_is_counted_with_its_reason():
    """Full harnesses (hook events, prompt transforms that add a message): every variant the pipeline checked is
    either timed or counted under a reason; none is lost."""
    figures = design_floor.main([str(ROOT / "fixtures" / "livestream" / "trajectories.jsonl"), "--records", "12",
                                 "--repeats", "1", "--no-exec-hooks"])
    assert figures["timed"] > 0 and figures["not_timed"]
    assert figures["timed"] + sum(figures["not_timed"].values()) == figures["checked"]
    assert set(figures["not_timed"]) <= {
        "steps that do not carry through messages alone (or hook events)",
        "a transform changed the number of messages",
        "the one-pass carry does not give the variant's messages, and no restore patch says why",
        "the one-pass undo (and the restore patch) does not give the source's messages"}
