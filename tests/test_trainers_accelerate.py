"""trainers.sft under `accelerate launch` with the config file checked into docs/ (one process, CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.trainers_support import CPU, ROOT, mini_shards, tiny_model  # noqa: F401

CONFIG = ROOT / "docs" / "accelerate" / "single_process.yaml"


def test_accelerate_launch_runs_sft_from_the_docs_config(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """`accelerate launch --config_file docs/accelerate/single_process.yaml -m trainers.sft` trains two steps in one
    process and saves a model whose weights moved from the start."""
    pytest.importorskip("accelerate")
    import torch
    from transformers import AutoModelForCausalLM

    out = tmp_path / "sft"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"), "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIG), "-m", "trainers.sft",
           "--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir", str(out),
           "--max_steps", "2", "--per_device_train_batch_size", "2", "--max_length", "4096",
           "--learning_rate", "1e-2", *CPU]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SFT on 6 rows" in proc.stderr
    before = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    after = AutoModelForCausalLM.from_pretrained(out).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
