"""HSA-SFT: supervised fine-tuning on trajectories under original and varied harnesses.

``python -m trainers.sft --model_name_or_path DIR --dataset SHARDS --output_dir OUT``

Rows (original and variant, as the shards hold them) become trl's conversational
format with their own ``tools``; each conversation is rendered with the model's chat
template and tokenized here, so that the loss covers exactly the assistant turns and
skips messages marked ``"train": false``. trl's ``SFTTrainer`` then trains on the
``input_ids``/``labels`` columns as they are.

The assistant spans come from the template's ``{% generation %}`` markers (one span
per assistant message). A template without markers is swapped for trl's training
version of it where trl ships one (Qwen, Llama 3, Gemma, ...); otherwise pass
``--chat_template_path`` with a template that has them.
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
    iter_rows,
    log,
    parse_args,
    check_template_renders_harness,
    to_chat,
)

__all__ = ["SFTArguments", "tokenize_chat", "training_template", "build_dataset", "main", "DEFAULT_LEARNING_RATE"]

DEFAULT_LEARNING_RATE = 2e-5


@dataclasses.dataclass
class SFTArguments:
    """The SFT data."""

    dataset: str | None = dataclasses.field(
        default=None, metadata={"help": "hsa shard folder (hsa augment --out), JSONL file or hub dataset id. "
                                        "Required."})
    dataset_split: str = dataclasses.field(default="train", metadata={"help": "Split of a hub or DatasetDict."})
    max_rows: int | None = dataclasses.field(default=None, metadata={"help": "Use only the first N rows."})
    max_length: int | None = dataclasses.field(
        default=8192, metadata={"help": "Truncate each conversation to this many tokens (the start is kept); rows "
                                        "left without any assistant token are dropped."})


def training_template(tokenizer) -> str:
    """The tokenizer's chat template if it has ``{% generation %}`` markers, else trl's training version."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if template and has_generation_markers(template):
        return template
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        patched = None
    if patched and has_generation_markers(patched):
        return patched
    raise TrainerInputError(
        "the chat template has no {% generation %} markers, so the assistant tokens cannot be found, and trl has "
        "no training version of it. Pass --chat_template_path with a template that wraps each assistant turn in "
        "{% generation %}...{% endgeneration %} (see trainers/data/hsa_chatml_tools.jinja).")


def tokenize_chat(tokenizer, messages: Sequence[dict], tools: Sequence[dict] | None = None,
                  train: Sequence[bool] | None = None, *, chat_template: str | None = None,
                  max_length: int | None = None) -> dict[str, list[int]]:
    """Token ids of one conversation and its labels (-100 outside trained assistant turns).

    ``train`` has one flag per message; an assistant message with ``False`` gets no
    loss. The k-th ``{% generation %}`` span of the rendered text is the k-th assistant
    message; a template that renders a different number of spans is an error when any
    flag is ``False`` (the spans could not be told apart).
    """
    from transformers.utils.chat_template_utils import render_jinja_template

    template = chat_template or training_template(tokenizer)
    rendered, spans = render_jinja_template(conversations=[list(messages)], tools=list(tools) if tools else None,
                                            chat_template=template, return_assistant_tokens_mask=True,
                                            **tokenizer.special_tokens_map)
    text, spans = rendered[0], spans[0]
    train = list(train) if train is not None else [True] * len(messages)
    assistant = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if len(spans) == len(assistant):
        spans = [s for s, i in zip(spans, assistant) if train[i]]
    elif not all(train[i] for i in assistant):
        raise TrainerInputError(
            f"the chat template rendered {len(spans)} generation spans for {len(assistant)} assistant messages, so "
            "messages marked \"train\": false cannot be excluded; use a template with one {% generation %} block per "
            "assistant message")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    labels = [-100] * len(ids)
    k = 0
    for t, (start, end) in enumerate(offsets):
        while k < len(spans) and start >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if end > spans[k][0] and end > start:
            labels[t] = ids[t]
    if max_length is not None:
        ids, labels = ids[:max_length], labels[:max_length]
    return {"input_ids": ids, "labels": labels}


def build_dataset(rows: Iterable[dict], tokenizer, *, max_length: int | None = None, compat: Sequence[str] = ()):
    """A ``datasets.Dataset`` of ``input_ids``/``labels`` from hsa (or plain conversational) rows.

    The first row with tools and calls also checks that the template renders both
    (:func:`trainers.common.check_template_renders_harness`)."""
    import datasets
    from transformers.utils.chat_template_utils import render_jinja_template

    template = training_template(tokenizer)

    def render(messages, tools):
        return render_jinja_template(conversations=[list(messages)], tools=list(tools) if tools else None,
                                     chat_template=template, **tokenizer.special_tokens_map)[0][0]

    checked = False
    ids, labels, dropped, n = [], [], 0, 0
    for n, row in enumerate(rows, 1):
        where = f"row {n} ({row.get('id', 'no id')})" if isinstance(row, dict) else f"row {n}"
        chat = to_chat(row, where=where, compat=compat)
        if not checked and chat["tools"] and any(m.get("tool_calls") for m in chat["messages"]):
            check_template_renders_harness(render, chat, where=where)
            checked = True
        out = tokenize_chat(tokenizer, chat["messages"], chat["tools"], chat["train"], chat_template=template,
                            max_length=max_length)
        if all(x == -100 for x in out["labels"]):
            dropped += 1
            continue
        ids.append(out["input_ids"])
        labels.append(out["labels"])
    if not ids:
        raise TrainerInputError(f"none of the {n} rows has an assistant token to learn from within max_length="
                                f"{max_length}; raise --max_length or check the rows' messages")
    if dropped:
        log(f"dropped {dropped} of {n} rows without a trained assistant token within max_length={max_length}")
    return datasets.Dataset.from_dict({"input_ids": ids, "labels": labels})


def _parse(argv: Sequence[str] | None):
    return parse_args(argv, "python -m trainers.sft", __doc__.splitlines()[0],
                      [ModelArguments, SFTArguments, RunArguments, LoraArguments],
                      defaults={"learning_rate": DEFAULT_LEARNING_RATE}, trl_config_name="trl.SFTConfig")


def build_trainer(model_args: ModelArguments, sft_args: SFTArguments, run: RunArguments, lora: LoraArguments,
                  extras: Any):
    """The configured ``SFTTrainer`` (data tokenized), ready for ``.train()``."""
    from trl import SFTConfig, SFTTrainer

    from trainers.common import load_tokenizer, model_init_kwargs, peft_config, resolve_model_path, trl_config

    model_path = resolve_model_path(model_args.model_name_or_path)
    tokenizer = load_tokenizer(model_args)
    config = trl_config(SFTConfig, run, {"max_length": sft_args.max_length,
                                         "model_init_kwargs": model_init_kwargs(model_args)},
                        extras, DEFAULT_LEARNING_RATE)
    rows = iter_rows(sft_args.dataset, split=sft_args.dataset_split, max_rows=sft_args.max_rows)
    train_dataset = build_dataset(rows, tokenizer, max_length=sft_args.max_length,
                                  compat=model_args.chat_compat or ())
    log(f"SFT on {len(train_dataset)} rows, {sum(len(x) for x in train_dataset['input_ids'])} tokens")
    return SFTTrainer(model=model_path, args=config, train_dataset=train_dataset, processing_class=tokenizer,
                      peft_config=peft_config(lora))


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import run_stage

    return run_stage(_parse, build_trainer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
