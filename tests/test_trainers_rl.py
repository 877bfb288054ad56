"""HSA-RL prompts and GRPO with the tiny model on CPU."""

from __future__ import annotations

import json

import pytest

from hsa import Mapping
from tests.trainers_support import CPU, changed, logged, mini_shards, parameters, shards, tiny_model  # noqa: F401
from trainers.common import iter_rows
from trainers.rewards import format_reward, tool_call_reward
from trainers.rl import _parse, build_prompts, build_trainer, reward_functions


@pytest.fixture(scope="module")
def tokenizer(tiny_model):  # noqa: F811
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def test_prompts_render_each_rows_own_tools(tokenizer, shards):  # noqa: F811
    """Every assistant turn becomes a text prompt rendered with its row's (variant) tools, ending in a generation
    prompt; the reference is the turn in the source harness."""
    rows = list(iter_rows(str(shards)))
    prompts = build_prompts(rows, tokenizer)
    n_turns = sum(m["role"] == "assistant" for r in rows for m in r["messages"])
    assert len(prompts) == n_turns
    variant = next(r for r in rows if r["variant"] == 1 and Mapping.from_dict(r["mapping"]).tool_names())
    mine = [p for p in prompts if p["id"].startswith(variant["id"] + "#")]
    renamed = Mapping.from_dict(variant["mapping"]).tool_names()
    for p in mine:
        assert p["prompt"].endswith("<|im_start|>assistant\n")
        for old, new in renamed.items():
            assert f'"name": "{new}"' in p["prompt"] and f'"name": "{old}"' not in p["prompt"]
        assert json.loads(p["tools"]) == variant["tools"]
    # references are canonical: equal to the original row's turns
    original = next(r for r in rows if r["id"] == variant["source_id"] + "/0")
    canon = [p for p in prompts if p["id"].startswith(original["id"] + "#")]
    assert [json.loads(p["reference"]) for p in canon] == [json.loads(p["reference"]) for p in mine]


def test_reference_turns_score_full_reward(tokenizer, shards):  # noqa: F811
    """The rows' own next turns, rendered as the model would write them under the variant, score 1."""
    rows = list(iter_rows(str(shards)))
    prompts = build_prompts(rows, tokenizer, turns="calls")
    completions = []
    for p in prompts:
        rid, turn = p["id"].rsplit("#", 1)
        msg = next(r for r in rows if r["id"] == rid)["messages"][int(turn)]
        text = tokenizer.apply_chat_template([{"role": "user", "content": "x"}, _object_args(msg)], tokenize=False)
        completions.append(text.split("<|im_start|>assistant\n", 1)[1])
    cols = {k: [p[k] for p in prompts] for k in ("reference", "mapping", "tools", "skill_tool")}
    assert tool_call_reward(completions, **cols) == [1.0] * len(prompts)
    assert format_reward(completions, **cols) == [1.0] * len(prompts)


def test_turn_selection_and_length_filter(tokenizer, shards):  # noqa: F811
    """--turns picks first, last, call or reply turns; --max_prompt_length drops long prompts."""
    rows = list(iter_rows(str(shards)))
    first = build_prompts(rows, tokenizer, turns="first")
    replies = build_prompts(rows, tokenizer, turns="replies")
    assert len(first) == len(rows) and all(json.loads(p["reference"])["tool_calls"] for p in first)
    assert all(not json.loads(p["reference"])["tool_calls"] for p in replies)
    lengths = sorted(len(tokenizer(p["prompt"])["input_ids"]) for p in first)
    short = build_prompts(rows, tokenizer, turns="first", max_prompt_length=lengths[2])
    assert len(short) == sum(n <= lengths[2] for n in lengths) < len(rows)
    with pytest.raises(ValueError, match="no RL prompts"):
        build_prompts(rows, tokenizer, turns="first", max_prompt_length=10)


def _object_args(msg: dict) -> dict:
    msg = dict(msg)
    if msg.get("tool_calls"):
        msg["tool_calls"] = [{"type": "function", "function": {
            "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])
            if isinstance(c["function"]["arguments"], str) else c["function"]["arguments"]}}
            for c in msg["tool_calls"]]
    return msg


def token_hash(completions, completion_ids, **kwargs):
    """A test reward that varies between samples, so that GRPO advantages are not all zero."""
    return [(sum(i * (k + 1) for k, i in enumerate(ids)) % 997) / 997 for ids in completion_ids]


def test_grpo_trains_a_few_steps(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """Two GRPO steps with the hsa rewards log a loss and reward means, and change the weights."""
    args = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(mini_shards), "--output_dir",
                   str(tmp_path / "out"), "--max_steps", "2",
                   "--num_generations", "2", "--per_device_train_batch_size", "2", "--max_completion_length", "8",
                   "--learning_rate", "1e-2", *CPU])
    names = args[1].rewards
    funcs = [*reward_functions(names), token_hash]
    trainer = build_trainer(*args, reward_funcs=funcs)
    before = parameters(trainer.model)
    trainer.train()
    assert len(logged(trainer)) == 2
    metrics = trainer.state.log_history[0]
    for name in ("tool_call_reward", "skill_reward", "format_reward", "reply_reward", "token_hash"):
        assert f"rewards/{name}/mean" in metrics
    assert changed(before, trainer.model)


def test_rl_reports_bad_reward_settings(tiny_model, shards, tmp_path):  # noqa: F811
    """Unknown reward names and a wrong number of weights are clear errors."""
    base = ["--model_name_or_path", str(tiny_model), "--dataset", str(shards), "--output_dir", str(tmp_path), *CPU]
    with pytest.raises(ValueError, match="unknown reward 'accuracy'"):
        build_trainer(*_parse(base + ["--rewards", "accuracy"]))
    with pytest.raises(ValueError, match="2 values for 4 rewards"):
        build_trainer(*_parse(base + ["--reward_weights", "1", "2"]))
