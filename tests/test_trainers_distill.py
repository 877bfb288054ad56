"""General on-policy distillation with the tiny model on CPU."""

from __future__ import annotations

import pytest

from tests.trainers_support import CPU, changed, logged, parameters, tiny_model, tiny_teacher  # noqa: F401
from trainers.common import TrainerInputError, iter_rows
from trainers.distill import DEFAULT_DATASET, _parse, build_dataset, build_trainer, prompt_of


def test_prompts_from_prompt_or_messages():
    """A prompt column (string or messages) is used as is; otherwise messages up to the last assistant turn."""
    assert prompt_of({"prompt": "hi"}) == [{"role": "user", "content": "hi"}]
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    assert prompt_of({"messages": msgs}) == msgs[:2]
    with pytest.raises(TrainerInputError, match="neither a 'prompt' nor 'messages'"):
        prompt_of({"text": "x"})


def test_bundled_dataset_is_the_default():
    """Without --dataset the bundled verifiable instructions are the prompts, one conversational prompt per row."""
    _, args, _, _, _ = _parse(["--model_name_or_path", "m", "--teacher_model_name_or_path", "t"])
    assert args.dataset == DEFAULT_DATASET and args.beta == 1.0
    ds = build_dataset(iter_rows(args.dataset))
    assert len(ds) >= 40 and ds[0]["prompt"][0]["role"] == "user"


def test_distill_trains_a_few_steps(tiny_model, tiny_teacher, tmp_path):  # noqa: F811
    """Two on-policy steps towards a teacher with other weights log a loss and change the student, not the teacher."""
    args = _parse(["--model_name_or_path", str(tiny_model), "--teacher_model_name_or_path", str(tiny_teacher),
                   "--output_dir", str(tmp_path / "out"), "--max_steps", "2", "--max_rows", "4",
                   "--per_device_train_batch_size", "2", "--max_completion_length", "8", "--learning_rate", "1e-3",
                   *CPU])
    trainer = build_trainer(*args)
    before, teacher_before = parameters(trainer.model), parameters(trainer.teacher_model)
    trainer.train()
    losses = logged(trainer)
    assert len(losses) == 2 and all(loss > 0 for loss in losses)
    assert changed(before, trainer.model)
    assert not changed(teacher_before, trainer.teacher_model)


def test_distill_needs_a_teacher(tiny_model, tmp_path):  # noqa: F811
    """Without a teacher the error says which model to pass."""
    args = _parse(["--model_name_or_path", str(tiny_model), "--output_dir", str(tmp_path / "o"), *CPU])
    with pytest.raises(TrainerInputError, match="--teacher_model_name_or_path is required"):
        build_trainer(*args)
