"""Benchmark of HSA-RL steps with the tiny model: single_turn against multi_turn, short and long prompts.

    python benchmarks/bench_rl.py --steps 5 --out bench_rl.json

Builds the tiny model (``trainers.tiny``), augments (a) the two short hooked records of
``tests/test_trainers_rl_multiturn.py`` (prompts of 125-333 tokens) and (b) the first 6 fixture
records (prompts of 2235-2895 tokens), originals and 2 variants each, then runs ``--steps`` GRPO
steps per setting in this process, torch on ``--threads`` threads. Reports trl's ``step_time``
(seconds per optimisation step) as the median over steps 2..N, the mean completion length
(model tokens; multi_turn completions also hold environment tokens) and the load average
before and after, since a shared machine changes these several-fold. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = {
    "short/single_turn": ("short", ["--rollout", "single_turn", "--max_completion_length", "16"]),
    "short/multi_turn": ("short", ["--rollout", "multi_turn", "--max_completion_length", "48", "--max_turns", "3"]),
    "short/multi_turn+hat": ("short", ["--hat_defaults", "--max_completion_length", "48", "--max_turns", "3"]),
    "long/single_turn": ("long", ["--rollout", "single_turn", "--max_completion_length", "32"]),
    "long/multi_turn+hat": ("long", ["--hat_defaults", "--max_completion_length", "96", "--max_turns", "3"]),
}


def run(model: Path, shards: Path, extra: list[str], steps: int, work: Path, config: Path) -> dict:
    from tests.trainers_support import CPU
    from trainers.rl import _parse, build_trainer

    out = work / f"out-{time.monotonic_ns()}"
    args = _parse(["--model_name_or_path", str(model), "--dataset", str(shards), "--output_dir", str(out),
                   "--config", str(config), "--max_steps", str(steps), "--num_generations", "2",
                   "--per_device_train_batch_size", "2", "--learning_rate", "1e-3", *extra, *CPU])
    trainer = build_trainer(*args)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "step_time" in h]
    times = [h["step_time"] for h in logs][1:] or [h["step_time"] for h in logs]
    return {"s_per_step_median": round(statistics.median(times), 3), "steps": len(logs),
            "mean_model_tokens": round(statistics.mean(h["completions/mean_length"] for h in logs), 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="settings to run (default: all)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from tests.test_trainers_rl_multiturn import GEN_YAML, hooked_mini_shards_at
    from tests.trainers_support import augment_first
    from trainers.tiny import build

    work = Path(tempfile.mkdtemp(prefix="bench-rl-"))
    model = build(work / "tiny", records=60)
    data = {"short": hooked_mini_shards_at(work / "short"), "long": augment_first(6, work / "long", variants=2)}
    config = work / "gen.yaml"
    config.write_text(GEN_YAML, encoding="utf-8")
    results = {"load_before": os.getloadavg(), "threads": args.threads, "steps": args.steps, "settings": {}}
    for name, (kind, extra) in SETTINGS.items():
        if args.only and name not in args.only:
            continue
        results["settings"][name] = run(model, data[kind], extra, args.steps, work, config)
        print(name, results["settings"][name], flush=True)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
