"""General on-policy distillation: the student samples on general prompts, the pre-SFT base model teaches.

``python -m trainers.distill --model_name_or_path SFT_DIR --teacher_model_name_or_path BASE_DIR --output_dir OUT``

Recovers the instruction following that harness SFT wears down (HAT stage 2). trl's
``DistillationTrainer`` is used: fully on-policy (the student generates every
completion), with the generalised JSD loss on the student's own tokens; ``beta`` 1.0
(the default here) is the reverse KL of the paper. trl's experimental ``GKDTrainer``
would add a mix of off-policy data (``lmbda``) that this stage does not want, and its
collator renders ``messages`` without tools.

``--dataset`` is any conversational dataset: rows with a ``prompt`` (a list of messages
or a string) or with ``messages`` (the prompt is everything before the last assistant
message). By default the bundled ``trainers/data/general_instructions.jsonl`` is used:
verifiable general instructions (formats, lengths, keywords, casing) whose checkers
are in :mod:`trainers.ifcheck`. Teacher and student must share the vocabulary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from trainers.common import (
    LoraArguments,
    ModelArguments,
    RunArguments,
    TrainerInputError,
    bundled_path,
    iter_rows,
    log,
    parse_args,
)

__all__ = ["DistillArguments", "prompt_of", "build_dataset", "main", "DEFAULT_LEARNING_RATE", "DEFAULT_DATASET"]

DEFAULT_LEARNING_RATE = 1e-6
DEFAULT_DATASET = str(bundled_path("general_instructions.jsonl"))


@dataclasses.dataclass
class DistillArguments:
    """The teacher and the general prompts."""

    teacher_model_name_or_path: str | None = dataclasses.field(
        default=None, metadata={"help": "The teacher: the base model from before SFT (a local folder or hub id). "
                                        "Required."})
    dataset: str = dataclasses.field(
        default=DEFAULT_DATASET, metadata={"help": "General (non-harness) prompts: a JSONL file, saved dataset "
                                                   "folder or hub id with 'prompt' or 'messages'."})
    dataset_split: str = dataclasses.field(default="train", metadata={"help": "Split of a hub or DatasetDict."})
    max_rows: int | None = dataclasses.field(default=None, metadata={"help": "Use only the first N prompts."})
    beta: float = dataclasses.field(
        default=1.0, metadata={"help": "Generalised JSD: 0 forward KL, 0.5 JSD, 1 reverse KL (the paper's)."})
    max_completion_length: int = dataclasses.field(default=256, metadata={"help": "Tokens the student generates."})
    temperature: float = dataclasses.field(default=1.0, metadata={"help": "Sampling and loss temperature."})


def prompt_of(row: dict, *, where: str = "row") -> list[dict]:
    """The conversational prompt of a general-instruction row."""
    if not isinstance(row, dict):
        raise TrainerInputError(f"{where}: expected an object, got {type(row).__name__}")
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, list) and prompt:
        return [{"role": m["role"], "content": m.get("content") or ""} for m in prompt]
    messages = row.get("messages")
    if isinstance(messages, list) and messages:
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages))
        prefix = [{"role": m["role"], "content": m.get("content") or ""} for m in messages[:last]
                  if m.get("role") in ("system", "user", "assistant")]
        if prefix and prefix[-1]["role"] == "user":
            return prefix
    raise TrainerInputError(f"{where} has neither a 'prompt' nor 'messages' ending in a user turn (found columns: "
                            f"{sorted(row)}); the distillation prompts must be conversational")


def build_dataset(rows: Iterable[dict]):
    """A ``datasets.Dataset`` with one conversational ``prompt`` column."""
    import datasets

    prompts = [prompt_of(r, where=f"row {i}") for i, r in enumerate(rows, 1)]
    if not prompts:
        raise TrainerInputError("the distillation dataset is empty")
    return datasets.Dataset.from_dict({"prompt": prompts})


def _parse(argv: Sequence[str] | None):
    return parse_args(argv, "python -m trainers.distill", __doc__.splitlines()[0],
                      [ModelArguments, DistillArguments, RunArguments, LoraArguments],
                      defaults={"learning_rate": DEFAULT_LEARNING_RATE}, trl_config_name="trl.DistillationConfig")


def build_trainer(model_args: ModelArguments, args: DistillArguments, run: RunArguments, lora: LoraArguments,
                  extras: Any):
    """The configured ``DistillationTrainer``, ready for ``.train()``."""
    from trl import DistillationConfig, DistillationTrainer

    from trainers.common import load_tokenizer, model_init_kwargs, peft_config, resolve_model_path, trl_config

    student = resolve_model_path(model_args.model_name_or_path)
    teacher = resolve_model_path(args.teacher_model_name_or_path, what="--teacher_model_name_or_path")
    tokenizer = load_tokenizer(model_args, padding_side="left")
    init = model_init_kwargs(model_args)
    stage = {"beta": args.beta, "max_completion_length": args.max_completion_length,
             "temperature": args.temperature, "model_init_kwargs": init, "teacher_model_init_kwargs": dict(init)}
    config = trl_config(DistillationConfig, run, stage, extras, DEFAULT_LEARNING_RATE)
    train_dataset = build_dataset(iter_rows(args.dataset, split=args.dataset_split, max_rows=args.max_rows))
    log(f"on-policy distillation on {len(train_dataset)} prompts, teacher {teacher}, beta {args.beta}")
    return DistillationTrainer(model=student, teacher_model=teacher, args=config, train_dataset=train_dataset,
                               processing_class=tokenizer, peft_config=peft_config(lora))


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import run_stage

    return run_stage(_parse, build_trainer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
