"""The evaluation entry point: rewards by harness group and instruction accuracy, with the tiny model."""

from __future__ import annotations

import json

import pytest

from tests.trainers_support import mini_shards, tiny_model  # noqa: F401
from trainers.eval import main


def test_eval_reports_rewards_by_group_and_instruction_accuracy(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """The report has mean rewards for all, original and variant prompts, and strict/loose instruction accuracy."""
    out = tmp_path / "report.json"
    assert main(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--max_new_tokens", "4",
                 "--max_instructions", "4", "--output", str(out)]) == 0
    report = json.loads(out.read_text())
    harness = report["harness"]
    assert harness["all"]["prompts"] == harness["original"]["prompts"] + harness["variant"]["prompts"] > 0
    assert set(harness["all"]) >= {"tool_call", "tool_call_strict", "skill", "format", "reply"}
    assert 0.0 <= harness["all"]["format"] <= 1.0
    inst = report["instructions"]
    assert inst["prompts"] == 4 and 0.0 <= inst["strict_accuracy"] <= inst["loose_accuracy"] <= 1.0


def test_eval_rejects_trl_options(tiny_model):  # noqa: F811
    """Options that evaluation does not have are reported instead of ignored."""
    with pytest.raises(ValueError, match="Unknown arguments"):
        main(["--model_name_or_path", str(tiny_model), "--warmup_steps", "3"])
