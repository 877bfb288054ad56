"""HSA-SFT with the tiny model on CPU: the loss mask and a few optimisation steps."""

from __future__ import annotations

import re

import pytest

from tests.trainers_support import CPU, changed, logged, mini_shards, parameters, shards, tiny_model  # noqa: F401
from trainers.common import iter_rows, to_chat
from trainers.sft import _parse, build_dataset, build_trainer, tokenize_chat

ASSISTANT = re.compile(r"<\|im_start\|>assistant\n(.*?<\|im_end\|>)", re.S)


def _expected_mask(tok, text: str, keep: list[bool]) -> list[int]:
    """Tokens inside the assistant turns of ``text`` (found by regex, independently of the template markers)."""
    spans = [m.span(1) for m in ASSISTANT.finditer(text)]
    spans = [s for s, k in zip(spans, keep) if k]
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return [int(any(a <= s and e <= b for a, b in spans) and e > s) for s, e in offsets]


@pytest.fixture(scope="module")
def tokenizer(tiny_model):  # noqa: F811
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def test_loss_mask_covers_exactly_the_assistant_tokens(tokenizer, shards):  # noqa: F811
    """Labels are set on exactly the tokens of the assistant turns (content, tool calls, end token) of every row."""
    for row in iter_rows(str(shards)):
        chat = to_chat(row)
        out = tokenize_chat(tokenizer, chat["messages"], chat["tools"], chat["train"])
        text = tokenizer.apply_chat_template(chat["messages"], tools=chat["tools"], tokenize=False)
        assert out["input_ids"] == tokenizer(text, add_special_tokens=False)["input_ids"]
        n_assistant = sum(m["role"] == "assistant" for m in chat["messages"])
        expected = _expected_mask(tokenizer, text, [True] * n_assistant)
        assert [int(x != -100) for x in out["labels"]] == expected
        assert all(lab in (-100, i) for lab, i in zip(out["labels"], out["input_ids"]))
        trained = tokenizer.decode([i for i, lab in zip(out["input_ids"], out["labels"]) if lab != -100])
        assert trained == "".join(m.group(1) for m in ASSISTANT.finditer(text))


def test_loss_mask_skips_messages_marked_train_false(tokenizer, shards):  # noqa: F811
    """An assistant message with "train": false gets no loss; the other assistant turns keep theirs."""
    row = next(r for r in iter_rows(str(shards)) if r["variant"] == 1)
    assistant = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant"]
    row["messages"][assistant[0]]["train"] = False
    chat = to_chat(row)
    out = tokenize_chat(tokenizer, chat["messages"], chat["tools"], chat["train"])
    text = tokenizer.apply_chat_template(chat["messages"], tools=chat["tools"], tokenize=False)
    keep = [False] + [True] * (len(assistant) - 1)
    assert [int(x != -100) for x in out["labels"]] == _expected_mask(tokenizer, text, keep)
    first = ASSISTANT.search(text).group(1)
    trained = tokenizer.decode([i for i, lab in zip(out["input_ids"], out["labels"]) if lab != -100])
    assert not trained.startswith(first) and trained


def test_build_dataset_drops_rows_without_trained_tokens(tokenizer, shards):  # noqa: F811
    """Rows cut by max_length before any assistant token are dropped; none left is a clear error."""
    rows = list(iter_rows(str(shards)))
    ds = build_dataset(rows, tokenizer, max_length=8192)
    assert len(ds) == len(rows) and set(ds.column_names) == {"input_ids", "labels"}
    with pytest.raises(ValueError, match="no.*assistant token.*max_length=50"):
        build_dataset(rows, tokenizer, max_length=50)


def test_sft_trains_a_few_steps(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """Three SFT steps on original and variant rows log a loss and change the weights; trl keeps our labels."""
    args = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir",
                   str(tmp_path / "out"), "--max_steps", "3", "--per_device_train_batch_size", "2",
                   "--max_length", "4096", "--learning_rate", "1e-3", *CPU])
    trainer = build_trainer(*args)
    mine = build_dataset(iter_rows(str(mini_shards)), trainer.processing_class, max_length=4096)
    assert trainer.train_dataset["labels"] == mine["labels"]
    before = parameters(trainer.model)
    trainer.train()
    losses = logged(trainer)
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    assert changed(before, trainer.model)


def test_sft_main_saves_a_model_that_loads(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """python -m trainers.sft's main trains one step and saves a model and tokenizer that load again."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainers.sft import main

    out = tmp_path / "saved"
    assert main(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir", str(out),
                 "--max_steps", "1", "--per_device_train_batch_size", "1", "--max_length", "4096", *CPU]) == 0
    assert AutoModelForCausalLM.from_pretrained(out).num_parameters() > 0
    assert AutoTokenizer.from_pretrained(out).chat_template


def test_sft_with_lora_trains_only_the_adapter(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """--use_peft trains LoRA matrices and leaves the base weights as they were."""
    args = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir",
                   str(tmp_path / "out"), "--max_steps", "2", "--max_length", "4096",
                   "--learning_rate", "1e-2", "--use_peft", "--lora_r", "4", *CPU])
    trainer = build_trainer(*args)
    before = parameters(trainer.model)
    trainer.train()
    moved = changed(before, trainer.model)
    assert moved and all("lora_" in name for name in moved)
    assert logged(trainer)


def test_sft_train_top_layers_moves_only_the_top_layers(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """--train_top_layers 1 trains the last decoder layer and the final norm; the embeddings (tied to the head) and
    the layers below keep their weights. A number of layers the model does not have is an error that says the
    range, and so is LoRA beside it."""
    from trainers.common import TrainerInputError

    argv = ["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir",
            str(tmp_path / "out"), "--max_steps", "2", "--max_length", "4096", "--learning_rate", "1e-2", *CPU]
    trainer = build_trainer(*_parse([*argv, "--train_top_layers", "1"]))
    layers = trainer.model.config.num_hidden_layers
    before = parameters(trainer.model)
    trainer.train()
    moved = changed(before, trainer.model)
    top = f"model.layers.{layers - 1}."
    assert moved and all(name.startswith(top) or name == "model.norm.weight" for name in moved)
    assert any(name.startswith(top) for name in moved) and "model.norm.weight" in moved
    assert logged(trainer)
    with pytest.raises(TrainerInputError, match=rf"pass 1\.\.{layers}"):
        build_trainer(*_parse([*argv, "--train_top_layers", str(layers + 1)]))
    with pytest.raises(TrainerInputError, match="--use_peft"):
        build_trainer(*_parse([*argv, "--train_top_layers", "1", "--use_peft"]))


def test_sft_reports_missing_inputs(tiny_model, tmp_path):  # noqa: F811
    """A missing model folder and a dataset without messages are errors that say what to do."""
    missing = _parse(["--model_name_or_path", str(tmp_path / "nope"), "--dataset", "x.jsonl",
                      "--output_dir", str(tmp_path / "o"), *CPU])
    with pytest.raises(FileNotFoundError, match="trainers.tiny"):
        build_trainer(*missing)
    data = tmp_path / "plain.jsonl"
    data.write_text('{"text": "no conversation here"}\n')
    bad = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(data), "--output_dir",
                  str(tmp_path / "o"), *CPU])
    with pytest.raises(ValueError, match="no 'messages' column"):
        build_trainer(*bad)


def test_cpu_loss_is_trl_loss_without_the_fused_head(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """On a CPU the trainer computes the model's own loss (trl's fused LM head is slower there), and it is the
    same token-averaged loss over the assistant tokens that trl's fused head gives."""
    import torch
    from trl import SFTTrainer

    from trainers.common import has_accelerator

    args = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir",
                   str(tmp_path / "out"), "--max_steps", "1", "--per_device_train_batch_size", "2",
                   "--max_length", "4096", *CPU])
    trainer = build_trainer(*args)
    if has_accelerator():  # pragma: no cover - the CI has no GPU
        pytest.skip("a GPU keeps trl's fused head")
    assert type(trainer).__name__ == "CpuSFTTrainer"
    import inspect

    assert "logits_to_keep" in inspect.signature(trainer.model.forward).parameters  # the head-at-labels path ran
    batch = next(iter(trainer.get_train_dataloader()))
    assert int((batch["labels"] != -100).sum()) > 0
    with torch.no_grad():
        ours = trainer.compute_loss(trainer.model, dict(batch))
        trl_loss = SFTTrainer.compute_loss(trainer, trainer.model, dict(batch))
    assert float(ours) == pytest.approx(float(trl_loss), rel=1e-5)


def test_bf16_on_a_cpu_with_bf16_instructions(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """--bf16 true trains under the CPU autocast where the CPU has bf16 instructions (fp32 weights kept) and
    writes the logged losses beside the model; elsewhere it is a clear error."""
    import json

    from trainers.common import TrainerInputError, cpu_bf16_supported, has_accelerator
    from trainers.sft import main

    if has_accelerator():  # pragma: no cover - the CI has no GPU
        pytest.skip("the CPU path only")
    out = tmp_path / "bf16"
    argv = ["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir", str(out),
            "--max_steps", "2", "--per_device_train_batch_size", "1", "--max_length", "4096", "--logging_steps", "1",
            "--save_strategy", "no", "--report_to", "none", "--bf16", "true"]
    if not cpu_bf16_supported():
        with pytest.raises(TrainerInputError, match="bf16 instructions"):
            build_trainer(*_parse(argv))
        return
    trainer = build_trainer(*_parse(argv))
    assert trainer.args.bf16 and trainer.accelerator.mixed_precision == "bf16"
    assert main(argv) == 0
    history = json.loads((out / "log_history.json").read_text())
    losses = [h["loss"] for h in history if "loss" in h]
    assert len(losses) == 2 and all(x > 0 for x in losses)
    from transformers import AutoModelForCausalLM

    import torch

    assert AutoModelForCausalLM.from_pretrained(out).dtype == torch.float32  # master weights stay fp32
