"""Shared helpers of the trainers tests: the tiny model (built once per session) and small augmented shards."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"

#: CPU-only trl settings for tests (trl defaults to bf16 and gradient checkpointing).
CPU = ["--bf16", "false", "--gradient_checkpointing", "false", "--save_strategy", "no", "--logging_steps", "1",
       "--report_to", "none"]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny model folder (tokenizer trained on 60 fixture records), built once per session."""
    from trainers.tiny import build

    return build(tmp_path_factory.mktemp("tiny") / "model", records=60)


@pytest.fixture(scope="session")
def tiny_teacher(tmp_path_factory, tiny_model) -> Path:
    """A second tiny model: same tokenizer, other random weights (a teacher that differs from the student)."""
    from trainers.tiny import build

    return build(tmp_path_factory.mktemp("tiny") / "teacher", seed=1, tokenizer_from=tiny_model)


def augment_first(n: int, out: Path, *, variants: int = 1) -> Path:
    """Augment the first ``n`` fixture records into ``out`` (original and ``variants`` variants each)."""
    import hsa
    from hsa.pipeline import augment

    src = out.parent / f"{out.name}-in.jsonl"
    lines = FIXTURES.read_text(encoding="utf-8").splitlines()[:n]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    augment([src], out, hsa.load_recipe("default"), variants=variants, keep_original=True)
    return out


@pytest.fixture(scope="session")
def shards(tmp_path_factory) -> Path:
    """Shards of the first 3 fixture records: originals and one variant each (6 rows)."""
    return augment_first(3, tmp_path_factory.mktemp("shards") / "out")


#: Two small records (a short system prompt, one or two tools) for fast GRPO steps.
MINI_RECORDS = [
    {"id": "mini-1", "messages": [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "price of link 3?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_product_info_by_link_id", "arguments": "{\"link_id\": 3}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_product_info_by_link_id", "content": "{\"price\": 139}"},
        {"role": "assistant", "content": "Link 3 is 139 yuan."}],
     "tools": [{"type": "function", "function": {
         "name": "get_product_info_by_link_id", "description": "Product details by link number.",
         "parameters": {"type": "object", "properties": {"link_id": {"type": "integer"}}, "required": ["link_id"]}}}]},
    {"id": "mini-2", "messages": [
        {"role": "user", "content": "hi! first time here"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "load_skill", "arguments": {"skill": "chitchat_reply"}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "load_skill", "content": "Reply warmly in one sentence."},
        {"role": "assistant", "content": "Welcome to the room! Link 3 is on screen now."}],
     "tools": [{"type": "function", "function": {
         "name": "load_skill", "description": "Load a skill by name.",
         "parameters": {"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}}],
     "skills": [{"name": "chitchat_reply", "description": "Reply to greetings.",
                 "content": "Reply warmly in one sentence."}]},
]


@pytest.fixture(scope="session")
def mini_shards(tmp_path_factory) -> Path:
    """Shards of :data:`MINI_RECORDS`: originals and two variants each (6 rows, prompts of ~100 tokens)."""
    import json

    import hsa
    from hsa.pipeline import augment

    out = tmp_path_factory.mktemp("mini")
    src = out / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in MINI_RECORDS), encoding="utf-8")
    augment([src], out / "out", hsa.load_recipe("default"), variants=2, keep_original=True)
    return out / "out"


def parameters(model) -> dict:
    """A detached copy of every parameter."""
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def changed(before: dict, model) -> list[str]:
    """Names of parameters that differ from ``before``."""
    import torch

    return [k for k, v in model.named_parameters() if k in before and not torch.equal(before[k], v.detach())]


def logged(trainer, key: str = "loss") -> list[float]:
    """Values of ``key`` in the trainer's log history."""
    return [h[key] for h in trainer.state.log_history if key in h]
