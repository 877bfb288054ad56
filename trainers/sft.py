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
    adaptation_summary,
    iter_rows,
    log,
    parse_args,
    check_template_renders_harness,
    template_compat,
    to_chat,
)

__all__ = ["SFTArguments", "tokenize_chat", "training_template", "build_dataset", "split_windows", "LongRowStats",
           "LONG_ROWS", "main", "DEFAULT_LEARNING_RATE"]

DEFAULT_LEARNING_RATE = 2e-5


@dataclasses.dataclass
class SFTArguments:
    """The SFT data."""

    dataset: str | None = dataclasses.field(
        default=None, metadata={"help": "hsa shard folder (hsa augment --out), JSONL file or hub dataset id. "
                                        "Required."})
    dataset_split: str = dataclasses.field(default="train", metadata={"help": "Split of a hub or DatasetDict."})
    max_rows: int | None = dataclasses.field(default=None, metadata={"help": "Use only the first N rows."})
    tools: str | None = dataclasses.field(
        default=None, metadata={"help": "Harness for rows without one (trajectory dumps), as `hsa augment --tools`: "
                                        "a JSON list of tool definitions or an object with 'tools' (and 'skills', "
                                        "'prompt', 'system', ...)."})
    max_length: int | None = dataclasses.field(
        default=8192, metadata={"help": "Longest training row in tokens; what happens to longer conversations is "
                                        "--long_rows."})
    long_rows: str = dataclasses.field(
        default="split", metadata={"help": "Conversations longer than --max_length: split (default: several rows, "
                                           "each ending in assistant turns within the window with as much preceding "
                                           "context as fits, the system messages and tools always kept; every "
                                           "assistant token is trained once), truncate (keep the start, cut the "
                                           "rest) or drop (leave the row out). Rows and assistant tokens cut are "
                                           "reported on every run."})
    train_top_layers: int | None = dataclasses.field(
        default=None, metadata={"help": "Train only the top N decoder layers and the final norm; the embeddings, the "
                                        "LM head (tied to them in small models) and the lower layers stay frozen. "
                                        "About half the step time of full training on a CPU with N at half the "
                                        "layers (no backward through the frozen part, no optimizer state for it). "
                                        "Unset: every weight trains. Not with --use_peft."})


def training_template(tokenizer) -> str:
    """The tokenizer's chat template if it has ``{% generation %}`` markers, else trl's training version."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    from hsa.chat_template import tool_template

    template = tool_template(tokenizer.chat_template)  # of named templates, the one for tools
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


#: ``--long_rows`` choices.
LONG_ROWS = ("split", "truncate", "drop")


@dataclasses.dataclass
class LongRowStats:
    """What ``--max_length`` did to the rows: counted on every run, logged by :func:`build_dataset`."""

    rows: int = 0  #: conversations read
    trained_tokens: int = 0  #: assistant tokens to train, before any cut
    long_rows: int = 0  #: conversations longer than max_length
    rows_out: int = 0  #: training rows written
    split_rows: int = 0  #: long conversations split into windows (split)
    windows: int = 0  #: training rows made from those (split)
    cut_rows: int = 0  #: conversations that lost assistant tokens (truncate; split: a turn longer than the window)
    cut_tokens: int = 0  #: assistant tokens lost by cutting
    dropped_rows: int = 0  #: conversations left out (drop; any mode: no assistant token left)
    dropped_tokens: int = 0  #: assistant tokens of the conversations left out
    #: chat template rewrites: name -> (rows changed, items changed), e.g. split_parallel_calls -> (2, 3)
    adapted: dict = dataclasses.field(default_factory=dict)
    #: what the chat template leaves out of rows (:func:`hsa.chat_template.template_losses`): kind ("text beside
    #: calls", "reasoning") -> (rows, assistant turns)
    lost: dict = dataclasses.field(default_factory=dict)

    def summary(self, mode: str, max_length: int | None) -> str:
        lost = self.cut_tokens + self.dropped_tokens
        pct = f" ({100 * lost / self.trained_tokens:.1f}%)" if self.trained_tokens else ""
        text = (f"max_length={max_length}, --long_rows {mode}: {self.long_rows} of {self.rows} conversations are "
                f"longer; {lost} of {self.trained_tokens} assistant tokens lost{pct}")
        if self.split_rows:
            text += f"; {self.split_rows} split into {self.windows} rows"
        if self.cut_rows:
            text += f"; {self.cut_rows} rows cut ({self.cut_tokens} assistant tokens)"
        if self.dropped_rows:
            text += f"; {self.dropped_rows} rows dropped ({self.dropped_tokens} assistant tokens)"
        return text + f"; {self.rows_out} training rows"


def _trained(labels: Sequence[int]) -> int:
    return sum(x != -100 for x in labels)


def split_windows(tokenize, messages: Sequence[dict], train: Sequence[bool], max_length: int
                  ) -> tuple[list[tuple[list[int], list[bool]]], list[int]]:
    """Windows of one long conversation for ``--long_rows split``.

    ``tokenize(indices, train_flags) -> {"input_ids", "labels"}`` renders the messages at
    ``indices``. Each window is the leading system messages plus ``messages[j..k]``: ``k`` is the
    last message of a run of assistant turns, as far on as fits, ``j`` a user message (the one
    that asks for the window's first untrained turn, then as far back as fits), so every window
    ends in assistant turns and carries as much preceding context as fits. Each assistant turn is
    trained in exactly one window (earlier ones in a window are context, with no loss). Returns
    ``(windows, lost)``: ``(indices, train flags)`` per window, and the indices of trained turns
    that fit no window even with their own user message alone; each of those still gets a window
    (its question and the turn), longer than ``max_length``, which the caller cuts and counts.
    """
    n = len(messages)
    head = 0
    while head < n and messages[head].get("role") == "system":
        head += 1
    users = [i for i in range(head, n) if messages[i].get("role") == "user"]
    todo = [i for i in range(head, n) if messages[i].get("role") == "assistant" and train[i]]
    # a window may end at the last assistant message of a run (the next message is not an assistant one)
    ends = [i for i in range(head, n) if messages[i].get("role") == "assistant"
            and (i + 1 == n or messages[i + 1].get("role") != "assistant")]
    length_cache: dict[tuple[int, int], int] = {}

    def length(j: int, k: int) -> int:
        if (j, k) not in length_cache:
            idx = list(range(head)) + list(range(j, k + 1))
            length_cache[(j, k)] = len(tokenize(idx, [False] * len(idx))["input_ids"])
        return length_cache[(j, k)]

    windows: list[tuple[list[int], list[bool]]] = []
    lost: list[int] = []
    t = 0
    while t < len(todo):
        first = todo[t]
        starts = [u for u in users if u <= first] or [head]
        j0 = starts[-1]
        end_first = next(e for e in ends if e >= first)
        if length(j0, end_first) > max_length:
            lost.append(first)
            idx = list(range(head)) + list(range(j0, first + 1))
            windows.append((idx, [i == first for i in idx]))  # cut by the caller, counted
            t += 1
            continue
        k = end_first
        for e in ends:  # lengths grow with the end: the furthest end that fits
            if e > end_first:
                if length(j0, e) > max_length:
                    break
                k = e
        j = j0
        for u in reversed(starts[:-1]):  # as much preceding context as fits
            if length(u, k) > max_length:
                break
            j = u
        rest = set(todo[t:])
        idx = list(range(head)) + list(range(j, k + 1))
        windows.append((idx, [i in rest and i <= k for i in idx]))
        while t < len(todo) and todo[t] <= k:
            t += 1
    return windows, lost


def build_dataset(rows: Iterable[dict], tokenizer, *, max_length: int | None = None, compat: Sequence[str] = (),
                  long_rows: str = "split", stats: LongRowStats | None = None):
    """A ``datasets.Dataset`` of ``input_ids``/``labels`` from hsa (or plain conversational) rows.

    Conversations longer than ``max_length`` are split, truncated or dropped (``long_rows``,
    :data:`LONG_ROWS`); what that cost is counted in ``stats`` (a :class:`LongRowStats`) and
    logged on every run. The first row with tools and calls also checks that the template
    renders both (:func:`trainers.common.check_template_renders_harness`)."""
    import datasets
    from transformers.utils.chat_template_utils import render_jinja_template

    from hsa.chat import tally
    from hsa.chat_template import losses_summary, lost_turns, template_losses

    if long_rows not in LONG_ROWS:
        raise TrainerInputError(f"--long_rows must be one of {list(LONG_ROWS)} (got {long_rows!r})")
    template = training_template(tokenizer)
    stats = stats if stats is not None else LongRowStats()

    def render(messages, tools):
        return render_jinja_template(conversations=[list(messages)], tools=list(tools) if tools else None,
                                     chat_template=template, **tokenizer.special_tokens_map)[0][0]

    compat = template_compat(render, compat)
    losses = template_losses(render, compat)
    for found in losses.values():
        log(f"the chat template {found}: that part is not trained (counted below)")
    lost: dict[str, list[int]] = {}  # kind -> [rows, turns] the template leaves a part of out
    adapted: dict[str, list[int]] = {}
    checked = False
    ids, labels, n = [], [], 0
    for n, row in enumerate(rows, 1):
        where = f"row {n} ({row.get('id', 'no id')})" if isinstance(row, dict) else f"row {n}"
        chat = to_chat(row, where=where, compat=compat)
        tally(adapted, chat["adapted"])
        tally(lost, lost_turns(chat["messages"], losses))
        if not checked and chat["tools"] and any(m.get("tool_calls") for m in chat["messages"]):
            check_template_renders_harness(render, chat, where=where, final_turn=True)
            checked = True
        stats.rows += 1
        full = tokenize_chat(tokenizer, chat["messages"], chat["tools"], chat["train"], chat_template=template)
        want = _trained(full["labels"])
        stats.trained_tokens += want
        pieces = [full]
        if max_length is not None and len(full["input_ids"]) > max_length:
            stats.long_rows += 1
            if long_rows == "drop":
                stats.dropped_rows += 1
                stats.dropped_tokens += want
                continue
            if long_rows == "truncate":
                pieces = [{"input_ids": full["input_ids"][:max_length], "labels": full["labels"][:max_length]}]
            else:
                msgs, flags = chat["messages"], chat["train"]

                def tok(idx, train, msgs=msgs):
                    return tokenize_chat(tokenizer, [msgs[i] for i in idx], chat["tools"], train,
                                         chat_template=template)

                windows, _ = split_windows(tok, msgs, flags, max_length)
                pieces = []
                for idx, fl in windows:  # a window of a turn too long even alone with its question is cut
                    out = tok(idx, fl)
                    pieces.append({"input_ids": out["input_ids"][:max_length], "labels": out["labels"][:max_length]})
                stats.split_rows += 1
                stats.windows += sum(1 for p in pieces if _trained(p["labels"]))
            got = sum(_trained(p["labels"]) for p in pieces)
            if 0 < got < want:
                stats.cut_rows += 1
                stats.cut_tokens += want - got
        pieces = [p for p in pieces if _trained(p["labels"])]
        if not pieces:  # nothing left to learn from: counted as dropped, with all its assistant tokens
            stats.dropped_rows += 1
            stats.dropped_tokens += want
            continue
        for p in pieces:
            ids.append(p["input_ids"])
            labels.append(p["labels"])
            stats.rows_out += 1
    log(stats.summary(long_rows, max_length))
    stats.adapted = {k: tuple(v) for k, v in adapted.items()}
    if adapted:
        log(f"rows adapted to the chat template: {adaptation_summary(adapted)}")
    stats.lost = {kind: tuple(v) for kind, v in lost.items()}
    for phrase in losses_summary(lost):
        log(f"the chat template leaves out {phrase}: not trained")
    if not ids:
        raise TrainerInputError(f"none of the {n} rows has an assistant token to learn from within max_length="
                                f"{max_length} (--long_rows {long_rows}); raise --max_length or check the rows' "
                                "messages")
    return datasets.Dataset.from_dict({"input_ids": ids, "labels": labels})


def _parse(argv: Sequence[str] | None):
    return parse_args(argv, "python -m trainers.sft", __doc__.splitlines()[0],
                      [ModelArguments, SFTArguments, RunArguments, LoraArguments],
                      defaults={"learning_rate": DEFAULT_LEARNING_RATE}, trl_config_name="trl.SFTConfig")


def build_trainer(model_args: ModelArguments, sft_args: SFTArguments, run: RunArguments, lora: LoraArguments,
                  extras: Any):
    """The configured ``SFTTrainer`` (data tokenized), ready for ``.train()``."""
    from trl import SFTConfig, SFTTrainer

    from trainers.common import (has_accelerator, load_tokenizer, model_init_kwargs, peft_config, resolve_model_path,
                                 trl_config)

    model_path = resolve_model_path(model_args.model_name_or_path)
    tokenizer = load_tokenizer(model_args)
    init = model_init_kwargs(model_args)
    model: Any = model_path
    if sft_args.train_top_layers is not None:
        if lora.use_peft:
            raise TrainerInputError("--train_top_layers and --use_peft both choose which weights train; pass one")
        from trl.trainer.utils import create_model_from_path

        from trainers.common import train_top_layers

        model = create_model_from_path(model_path, **init)
        log(train_top_layers(model, sft_args.train_top_layers))
        init = None
    config = trl_config(SFTConfig, run, {"max_length": sft_args.max_length, "model_init_kwargs": init},
                        extras, DEFAULT_LEARNING_RATE)
    rows = iter_rows(sft_args.dataset, split=sft_args.dataset_split, max_rows=sft_args.max_rows,
                     tools=sft_args.tools)
    train_dataset = build_dataset(rows, tokenizer, max_length=sft_args.max_length,
                                  compat=model_args.chat_compat or (), long_rows=sft_args.long_rows)
    log(f"SFT on {len(train_dataset)} rows, {sum(len(x) for x in train_dataset['input_ids'])} tokens")
    trainer_cls = SFTTrainer if has_accelerator() else _cpu_trainer(SFTTrainer)
    return trainer_cls(model=model, args=config, train_dataset=train_dataset, processing_class=tokenizer,
                       peft_config=peft_config(lora))


def _cpu_trainer(sft_trainer: type) -> type:
    """``SFTTrainer`` with a plain loss on a CPU: the LM head applied only where a label is.

    trl's SFT loss runs a fused LM head that folds the vocabulary in fp32 tiles (written for Triton); on a CPU
    its forward and backward cost more than the whole backbone: a SmolLM2-135M step of 4 x 400 tokens under bf16
    autocast took 10.5-11.2 s with it and 6.4-6.9 s with the model's own head (same loss to 1e-6). The model's own
    loss still projects every position onto the vocabulary; here only the positions whose next token is trained
    are projected (``logits_to_keep`` with a boolean mask), which on these rows (about 40 trained tokens of
    400) saves most of the head. The loss is the same token-averaged cross-entropy over the assistant tokens;
    trl's entropy and token-accuracy metrics are not logged. A model whose forward has no ``logits_to_keep``
    gets the model's own loss."""
    import inspect

    import torch
    from transformers import Trainer

    keeps: dict[type, bool] = {}  # per model class: whether its forward takes logits_to_keep (asked once)

    class CpuSFTTrainer(sft_trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.get("labels")
            kind = type(model)
            if kind not in keeps:
                keeps[kind] = "logits_to_keep" in inspect.signature(model.forward).parameters
            if return_outputs or labels is None or not keeps[kind]:
                return Trainer.compute_loss(self, model, inputs, return_outputs=return_outputs,
                                            num_items_in_batch=num_items_in_batch)
            targets = labels[:, 1:]
            keep = torch.zeros_like(labels, dtype=torch.bool)
            keep[:, :-1] = targets != -100
            forward = {k: v for k, v in inputs.items() if k != "labels"}
            logits = model(**forward, logits_to_keep=keep, use_cache=False).logits
            logits = logits.reshape(-1, logits.shape[-1])
            total = torch.nn.functional.cross_entropy(logits.float(), targets[targets != -100], reduction="sum")
            count = num_items_in_batch if num_items_in_batch is not None else keep.sum()
            return total / torch.as_tensor(count, device=total.device).clamp(min=1)

    return CpuSFTTrainer


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import run_stage

    return run_stage(_parse, build_trainer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
