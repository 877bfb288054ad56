"""Evaluate a model under original and varied harnesses, and on verifiable general instructions.

``python -m trainers.eval --model_name_or_path DIR --dataset SHARDS --output report.json``

Harness part: the RL prompts of ``--dataset`` (:func:`trainers.rl.build_prompts`),
greedy completions, and the mean of each reward (:mod:`trainers.rewards`) over all
prompts, over the original rows (``variant`` 0: the paper's fixed-harness QA) and over
the variant rows (its Harness-Variant QA). Instruction part: the bundled general
instructions (or ``--instructions FILE``), scored with :mod:`trainers.ifcheck`: strict
accuracy (every check passes) and loose accuracy (share of checks passed).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers.common import ModelArguments, TrainerInputError, bundled_path, iter_rows, log, parse_args

__all__ = ["EvalArguments", "generate", "evaluate_harness", "evaluate_instructions", "main"]


@dataclasses.dataclass
class EvalArguments:
    """What to evaluate."""

    dataset: str | None = dataclasses.field(
        default=None, metadata={"help": "hsa shard folder or JSONL of trajectories (harness evaluation); "
                                        "unset: skip it."})
    instructions: str | None = dataclasses.field(
        default=str(bundled_path("general_instructions.jsonl")),
        metadata={"help": "JSONL of prompts with 'checks' (instruction evaluation); 'none' skips it."})
    max_rows: int | None = dataclasses.field(default=None, metadata={"help": "Read only the first N dataset rows."})
    max_instructions: int | None = dataclasses.field(
        default=None, metadata={"help": "Evaluate only the first N instructions."})
    max_prompts: int | None = dataclasses.field(default=200, metadata={"help": "Evaluate at most N harness prompts."})
    turns: str = dataclasses.field(default="all", metadata={"help": "Turns to evaluate (see trainers.rl --turns)."})
    rewards: list[str] = dataclasses.field(
        default_factory=lambda: ["tool_call", "tool_call_strict", "skill", "format", "reply"],
        metadata={"help": "Rewards to report (names or dotted paths)."})
    max_new_tokens: int = dataclasses.field(default=256, metadata={"help": "Tokens generated per prompt."})
    batch_size: int = dataclasses.field(default=8, metadata={"help": "Prompts per generation batch."})
    output: str | None = dataclasses.field(default=None, metadata={"help": "Write the JSON report here too."})


def load_model(model_args: ModelArguments):
    """The model (a LoRA adapter folder is loaded on its base) on the best device, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    from trainers.common import has_accelerator, model_init_kwargs, resolve_model_path

    path = resolve_model_path(model_args.model_name_or_path)
    kwargs = model_init_kwargs(model_args)
    if (Path(path) / "adapter_config.json").is_file():
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(path, **kwargs)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    if has_accelerator() and torch.cuda.is_available():
        model = model.to("cuda")
    return model.eval()


def generate(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int) -> list[str]:
    """Greedy completions of already-rendered text prompts (special tokens dropped, tool-call tags kept)."""
    import torch

    tokenizer.padding_side = "left"
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        batch = list(prompts[start:start + batch_size])
        enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.no_grad():
            ids = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
        out.extend(tokenizer.batch_decode(ids[:, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(kept) / len(kept) if kept else None


def evaluate_harness(model, tokenizer, rows, args: EvalArguments) -> dict[str, Any]:
    """Mean rewards over all prompts, original rows and variant rows."""
    from trainers.rewards import get_reward
    from trainers.rl import build_prompts

    prompts = build_prompts(rows, tokenizer, turns=args.turns, max_prompts=args.max_prompts)
    completions = generate(model, tokenizer, [p["prompt"] for p in prompts], max_new_tokens=args.max_new_tokens,
                           batch_size=args.batch_size)
    columns = {k: [p[k] for p in prompts] for k in prompts[0] if k != "prompt"}
    scores = {name: get_reward(name)(completions, **columns) for name in args.rewards}
    groups = {"all": lambda p: True, "original": lambda p: p["variant"] == 0, "variant": lambda p: p["variant"] > 0}
    report: dict[str, Any] = {}
    for group, keep in groups.items():
        idx = [i for i, p in enumerate(prompts) if keep(p)]
        report[group] = {"prompts": len(idx), **{name: _mean([s[i] for i in idx]) for name, s in scores.items()}}
    report["examples"] = [{"id": p["id"], "completion": c} for p, c in zip(prompts[:3], completions[:3])]
    return report


def evaluate_instructions(model, tokenizer, path: str, args: EvalArguments) -> dict[str, Any]:
    """Strict and loose accuracy on verifiable instructions."""
    from trainers.distill import prompt_of
    from trainers.ifcheck import check

    rows = [r for r in iter_rows(path, max_rows=args.max_instructions) if r.get("checks")]
    if not rows:
        raise TrainerInputError(f"{path} has no rows with 'checks'; expected the format of "
                                f"{bundled_path('general_instructions.jsonl')}")
    texts = [tokenizer.apply_chat_template(prompt_of(r), add_generation_prompt=True, tokenize=False) for r in rows]
    completions = generate(model, tokenizer, texts, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
    results = [check(c.strip(), r["checks"]) for c, r in zip(completions, rows)]
    return {"prompts": len(rows), "strict_accuracy": sum(all(r) for r in results) / len(rows),
            "loose_accuracy": sum(sum(r) / len(r) for r in results) / len(rows)}


def _parse(argv: Sequence[str] | None):
    return parse_args(argv, "python -m trainers.eval", __doc__.splitlines()[0], [ModelArguments, EvalArguments],
                      trl_config_name="(nothing: eval takes no trl options)")


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import load_tokenizer

    model_args, args, extras = _parse(argv)
    if extras.from_cli or extras.from_config:
        raise TrainerInputError(f"Unknown arguments: {extras.from_cli or sorted(extras.from_config)}; see --help")
    tokenizer = load_tokenizer(model_args, padding_side="left")
    model = load_model(model_args)
    report: dict[str, Any] = {"model": model_args.model_name_or_path}
    if args.dataset:
        report["harness"] = evaluate_harness(model, tokenizer, iter_rows(args.dataset, max_rows=args.max_rows), args)
    if args.instructions and args.instructions.lower() != "none":
        report["instructions"] = evaluate_instructions(model, tokenizer, args.instructions, args)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        log(f"report written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
