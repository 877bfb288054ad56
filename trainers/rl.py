"""HSA-RL: GRPO rollouts under original and varied harnesses, with rewards that map calls back.

``python -m trainers.rl --model_name_or_path SFT_DIR --dataset SHARDS --output_dir OUT``

Each assistant turn of each row (original or variant) becomes a prompt: the
trajectory up to that turn, rendered with the model's chat template and *the row's
own tools* (trl's ``GRPOTrainer`` only knows a trainer-level tool list, so the prompt
is passed as text). Beside the prompt, the row carries what the rewards need
(:mod:`trainers.rewards`): the expected turn in the source harness (``reference``),
the ``mapping``, the variant's ``tools``, ``skill_tool``, ``hooks`` and the
``hook_context`` (skills loaded so far). These columns are JSON strings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from trainers.common import (
    LoraArguments,
    ModelArguments,
    RunArguments,
    TrainerInputError,
    iter_rows,
    log,
    parse_args,
    check_template_renders_harness,
    template_compat,
    to_chat,
)

__all__ = ["RLArguments", "build_prompts", "build_dataset", "reward_functions", "main", "DEFAULT_LEARNING_RATE"]

DEFAULT_LEARNING_RATE = 1e-6
TURNS = ("all", "first", "last", "calls", "replies")


@dataclasses.dataclass
class RLArguments:
    """The RL prompts and rewards."""

    dataset: str | None = dataclasses.field(
        default=None, metadata={"help": "hsa shard folder (hsa augment --out), JSONL file or hub dataset id. "
                                        "Required."})
    dataset_split: str = dataclasses.field(default="train", metadata={"help": "Split of a hub or DatasetDict."})
    max_rows: int | None = dataclasses.field(default=None, metadata={"help": "Use only the first N rows."})
    tools: str | None = dataclasses.field(
        default=None, metadata={"help": "Harness for rows without one (trajectory dumps), as `hsa augment --tools`."})
    turns: str = dataclasses.field(
        default="all", metadata={"help": "Which assistant turns become prompts: all, first, last, calls (turns "
                                         "with tool calls) or replies (final replies).", "choices": TURNS})
    max_prompt_length: int | None = dataclasses.field(
        default=None, metadata={"help": "Drop prompts longer than this many tokens (GRPO does not truncate)."})
    max_prompts: int | None = dataclasses.field(default=None, metadata={"help": "Keep only the first N prompts."})
    rewards: list[str] = dataclasses.field(
        default_factory=lambda: ["tool_call", "skill", "format", "reply"],
        metadata={"help": "Reward functions: tool_call, tool_call_strict, skill, format, reply, instruction, or "
                          "dotted paths package.module.function."})
    reward_weights: list[float] | None = dataclasses.field(
        default=None, metadata={"help": "One weight per reward; unset, every reward weighs 1."})
    num_generations: int = dataclasses.field(default=4, metadata={"help": "Completions sampled per prompt."})
    max_completion_length: int = dataclasses.field(default=256, metadata={"help": "Tokens generated per completion."})
    temperature: float = dataclasses.field(default=1.0, metadata={"help": "Sampling temperature."})
    beta: float = dataclasses.field(default=0.0, metadata={"help": "KL coefficient towards the reference model."})


def _strip_bos(tokenizer, text: str) -> str:
    """Rendered prompts are tokenized again by GRPO with special tokens: drop a BOS the template wrote."""
    bos = tokenizer.bos_token
    if bos and text.startswith(bos) and tokenizer("", add_special_tokens=True)["input_ids"]:
        return text[len(bos):]
    return text


def _select(turns: list[int], train: list[bool], messages: list[dict], mode: str) -> list[int]:
    turns = [i for i in turns if train[i]]
    if mode == "first":
        return turns[:1]
    if mode == "last":
        return turns[-1:]
    if mode == "calls":
        return [i for i in turns if messages[i].get("tool_calls")]
    if mode == "replies":
        return [i for i in turns if not messages[i].get("tool_calls")]
    return turns


def build_prompts(rows: Iterable[dict], tokenizer, *, turns: str = "all", max_prompt_length: int | None = None,
                  max_prompts: int | None = None, compat: Sequence[str] = ()) -> list[dict[str, Any]]:
    """GRPO rows: one per selected assistant turn of each input row (see the module docstring).

    The first row with tools also checks that the chat template renders them
    (:func:`trainers.common.check_template_renders_harness`)."""
    from hsa.mapping import Mapping

    if turns not in TURNS:
        raise ValueError(f"turns must be one of {TURNS}, got {turns!r}")
    out: list[dict[str, Any]] = []
    too_long = 0
    checked = False

    def render(messages, tools):
        return tokenizer.apply_chat_template(list(messages), tools=tools, tokenize=False)

    compat = template_compat(render, compat)  # the rewrites the template's probes show it needs, logged

    for n, row in enumerate(rows, 1):
        where = f"row {n} ({row.get('id', 'no id')})" if isinstance(row, dict) else f"row {n}"
        chat = to_chat(row, where=where, compat=compat)
        if not checked and chat["tools"]:
            check_template_renders_harness(render, chat, where=where)
            checked = True
        record, messages = chat["record"], chat["messages"]
        mapping = Mapping(record["mapping"])
        st = record["skill_tool"]
        assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        for i in _select(assistant, chat["train"], messages, turns):
            prefix = messages[:i]
            if not any(m["role"] == "user" for m in prefix) or prefix[-1]["role"] == "assistant":
                continue
            text = tokenizer.apply_chat_template(prefix, tools=chat["tools"], add_generation_prompt=True,
                                                 tokenize=False)
            text = _strip_bos(tokenizer, text)
            if max_prompt_length is not None and len(tokenizer(text, add_special_tokens=False)["input_ids"]) \
                    > max_prompt_length:
                too_long += 1
                continue
            target = messages[i]
            calls = [mapping.to_canonical({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                     for c in target.get("tool_calls") or ()]
            loaded = [c["function"]["arguments"].get(st["argument"]) for m in prefix for c in m.get("tool_calls") or ()
                      if c["function"]["name"] == st["name"]]
            out.append({
                "prompt": text,
                "id": f"{record['id']}#{i}",
                "variant": int(row.get("variant") or 0) if isinstance(row, dict) else 0,
                "reference": json.dumps({"content": target.get("content") or "", "tool_calls": calls},
                                        ensure_ascii=False),
                "mapping": json.dumps(mapping.to_dict(), ensure_ascii=False),
                "tools": json.dumps(chat["tools"] or [], ensure_ascii=False),
                "skill_tool": json.dumps(st, ensure_ascii=False),
                "hooks": json.dumps(record.get("hooks") or [], ensure_ascii=False),
                "hook_context": json.dumps({"loaded_skills": loaded}, ensure_ascii=False),
            })
            if max_prompts is not None and len(out) >= max_prompts:
                break
        if max_prompts is not None and len(out) >= max_prompts:
            break
    if too_long:
        log(f"dropped {too_long} prompts longer than max_prompt_length={max_prompt_length} tokens")
    if not out:
        raise TrainerInputError("no RL prompts: no row has an assistant turn after a user message"
                                + (f" within max_prompt_length={max_prompt_length}" if too_long else ""))
    return out


def build_dataset(rows: Iterable[dict], tokenizer, **kwargs):
    """:func:`build_prompts` as a ``datasets.Dataset`` (all columns are strings)."""
    import datasets

    return datasets.Dataset.from_list(build_prompts(rows, tokenizer, **kwargs))


def reward_functions(names: Sequence[str]) -> list:
    """The reward callables for ``names`` (registry names or dotted paths)."""
    from trainers.rewards import get_reward

    return [get_reward(n) for n in names]


def _parse(argv: Sequence[str] | None):
    return parse_args(argv, "python -m trainers.rl", __doc__.splitlines()[0],
                      [ModelArguments, RLArguments, RunArguments, LoraArguments],
                      defaults={"per_device_train_batch_size": 4, "learning_rate": DEFAULT_LEARNING_RATE},
                      trl_config_name="trl.GRPOConfig")


def build_trainer(model_args: ModelArguments, rl: RLArguments, run: RunArguments, lora: LoraArguments, extras: Any,
                  reward_funcs: list | None = None):
    """The configured ``GRPOTrainer``, ready for ``.train()``."""
    from trl import GRPOConfig, GRPOTrainer

    from trainers.common import load_tokenizer, model_init_kwargs, peft_config, resolve_model_path, trl_config

    model_path = resolve_model_path(model_args.model_name_or_path)
    tokenizer = load_tokenizer(model_args, padding_side="left")
    funcs = reward_funcs if reward_funcs is not None else reward_functions(rl.rewards)
    if rl.reward_weights is not None and len(rl.reward_weights) != len(funcs):
        raise TrainerInputError(f"--reward_weights has {len(rl.reward_weights)} values for {len(funcs)} rewards")
    stage = {"num_generations": rl.num_generations, "max_completion_length": rl.max_completion_length,
             "temperature": rl.temperature, "beta": rl.beta, "reward_weights": rl.reward_weights,
             "model_init_kwargs": model_init_kwargs(model_args)}
    config = trl_config(GRPOConfig, run, stage, extras, DEFAULT_LEARNING_RATE)
    rows = iter_rows(rl.dataset, split=rl.dataset_split, max_rows=rl.max_rows, tools=rl.tools)
    train_dataset = build_dataset(rows, tokenizer, turns=rl.turns, max_prompt_length=rl.max_prompt_length,
                                  max_prompts=rl.max_prompts, compat=model_args.chat_compat or ())
    log(f"GRPO on {len(train_dataset)} prompts with rewards {[getattr(f, '__name__', f) for f in funcs]}")
    return GRPOTrainer(model=model_path, reward_funcs=funcs, args=config, train_dataset=train_dataset,
                       processing_class=tokenizer, peft_config=peft_config(lora))


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import run_stage

    return run_stage(_parse, build_trainer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
