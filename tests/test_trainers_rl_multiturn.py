"""Multi-turn HSA-RL: the rollout loop, segment credit, --hat_defaults, and GRPO steps with the tiny model on CPU."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.trainers_support import CPU, changed, logged, parameters, tiny_model  # noqa: F401

REQUIRE_SKILL = '''def check(payload):
    if not payload["loaded_skills"]:
        return {"decision": "retry", "message": "Load a reply skill with load_skill before you reply."}
    return {"decision": "allow"}
'''
#: Two small records whose harness has a reply hook: a reply without a loaded skill is refused.
HOOKED_RECORDS = [
    {"id": "shop-1", "messages": [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "price of link 3?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "load_skill", "arguments": {"skill": "item_qa"}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "load_skill", "content": "Quote the price a tool returned."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {
            "name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "get_product_info_by_link_id", "content": "{\"price\": 139}"},
        {"role": "assistant", "content": "Link 3 is 139 yuan."}],
     "tools": [{"type": "function", "function": {
         "name": "get_product_info_by_link_id", "description": "Product details by link number.",
         "parameters": {"type": "object", "properties": {"link_id": {"type": "integer"}}, "required": ["link_id"]}}},
               {"type": "function", "function": {
                   "name": "load_skill", "description": "Load a skill by name.",
                   "parameters": {"type": "object", "properties": {"skill": {"type": "string"}},
                                  "required": ["skill"]}}}],
     "skills": [{"name": "item_qa", "description": "Answer product questions.",
                 "content": "Quote the price a tool returned."}],
     "hooks": [{"name": "require_skill", "event": "pre_reply", "entry": "check", "source": REQUIRE_SKILL}]},
    {"id": "shop-2", "messages": [
        {"role": "user", "content": "hi! first time here"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "load_skill", "arguments": {"skill": "chitchat_reply"}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "load_skill", "content": "Reply warmly in one sentence."},
        {"role": "assistant", "content": "Welcome to the room!"}],
     "tools": [{"type": "function", "function": {
         "name": "load_skill", "description": "Load a skill by name.",
         "parameters": {"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}}],
     "skills": [{"name": "chitchat_reply", "description": "Reply to greetings.",
                 "content": "Reply warmly in one sentence."}],
     "hooks": [{"name": "require_skill", "event": "pre_reply", "entry": "check", "source": REQUIRE_SKILL}]},
]

#: Generation settings for the random tiny model: end each message after a few tokens, so that episodes have turns.
GEN_YAML = "generation_kwargs:\n  exponential_decay_length_penalty: [2, 4.0]\n"


def hooked_mini_shards_at(out: Path) -> Path:
    """:data:`HOOKED_RECORDS` augmented into ``out`` (originals and two variants each; seed 3 draws a rename of the product tool, which the rollout tests need)."""
    import hsa
    from hsa.pipeline import augment

    if (out / "shards" / "manifest.json").is_file():
        return out / "shards"
    out.mkdir(parents=True, exist_ok=True)
    src = out / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in HOOKED_RECORDS), encoding="utf-8")
    augment([src], out / "shards", hsa.load_recipe("default"), variants=2, keep_original=True, seed=3)
    return out / "shards"


@pytest.fixture(scope="module")
def hooked_shards(tmp_path_factory) -> Path:
    return hooked_mini_shards_at(tmp_path_factory.mktemp("hooked"))


@pytest.fixture(scope="module")
def tokenizer(tiny_model):  # noqa: F811
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def _variant_with_renamed_tool(rows):
    from hsa import Mapping

    return next(r for r in rows if r["variant"] and "get_product_info_by_link_id" in
                Mapping.from_dict(r["mapping"]).tool_names())


# --------------------------------------------------------------------------- the rollout loop, scripted


class _ScriptedTrainer(SimpleNamespace):
    """What MultiTurnRollout reads from a GRPOTrainer, with a generator that writes scripted messages."""

    def _generate_single_turn(self, ids, images, fields, num_generations):
        out = []
        for _ in ids:
            text = self.script.pop(0)
            out.append(self.processing_class(text, add_special_tokens=False)["input_ids"])
        return out, None


def _trainer(tok, inputs, script, budget=400):
    return _ScriptedTrainer(
        _hsa_inputs=inputs, max_completion_length=budget, num_generations=1, processing_class=tok,
        model=SimpleNamespace(training=True, config=SimpleNamespace(max_position_embeddings=4096)),
        accelerator=SimpleNamespace(process_index=0, num_processes=1), state=SimpleNamespace(global_step=0),
        eos_token_ids=[tok.convert_tokens_to_ids("<|im_end|>")], script=list(script))


def test_rollout_interleaves_model_and_environment_tokens(tokenizer, hooked_shards):
    """A scripted model calls the variant's renamed tool, then replies: the completion is its tokens (mask 1) with
    the environment's rendered answer between them (mask 0), the answer carries the recorded result, the call turn
    and the reply turn are separate segments, and the episode summary goes to the rewards."""
    from hsa import Mapping
    from hsa.environment import EnvironmentOptions
    from trainers.common import iter_rows
    from trainers.rollout import MultiTurnRollout, build_episodes

    rows = list(iter_rows(str(hooked_shards)))
    row = _variant_with_renamed_tool(rows)
    mapping = Mapping.from_dict(row["mapping"])
    tool = mapping.tool_to_variant("get_product_info_by_link_id")
    (arg,) = mapping.to_variant({"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}})["arguments"]
    skill_tool = mapping.tool_to_variant("load_skill")
    skill = mapping.skill_to_variant("item_qa")
    episodes = build_episodes([row], tokenizer)
    rollout = MultiTurnRollout(episodes, tokenizer, options=EnvironmentOptions(max_turns=4))
    calls = (f'<tool_call>{{"name": "{skill_tool}", "arguments": {{"skill": "{skill}"}}}}</tool_call>\n'
             f'<tool_call>{{"name": "{tool}", "arguments": {{"{arg}": 3}}}}</tool_call><|im_end|>')
    trainer = _trainer(tokenizer, [{"episode_id": episodes[0].id}], [calls, "Link 3 is 139 yuan.<|im_end|>"])
    out = rollout([episodes[0].prompt], trainer)
    ids, mask, seg = out["completion_ids"][0], out["env_mask"][0], out["hsa_segments"][0]
    assert len(ids) == len(mask) == len(seg)
    model_text = tokenizer.decode([t for t, m in zip(ids, mask) if m])
    env_text = tokenizer.decode([t for t, m in zip(ids, mask) if not m])
    assert model_text == calls + "Link 3 is 139 yuan.<|im_end|>"
    assert '{"price": 139}' in env_text and env_text.endswith("<|im_start|>assistant\n")
    assert set(s for s, m in zip(seg, mask) if not m) == {0}
    first_reply = next(k for k, m in enumerate(mask) if not m and k > 0)
    assert set(seg[:first_reply]) == {1} and seg[-1] == 2
    episode = out["episode"][0]
    assert episode["end"] == "reply" and episode["variant"] == row["variant"]
    assert [c["status"] for c in episode["calls"]] == ["skill", "result"]
    from trainers.rewards import episode_calls_reward, episode_hooks_reward, episode_skill_reward

    assert episode_calls_reward(["x"], episode=[episode]) == [1.0]
    assert episode_skill_reward(["x"], episode=[episode]) == [1.0]
    assert episode_hooks_reward(["x"], episode=[episode]) == [1.0]


def test_rollout_stops_at_the_completion_budget(tokenizer, hooked_shards):
    """A message cut by the token budget ends the episode as truncated, with no environment turn after it."""
    from hsa.environment import EnvironmentOptions
    from trainers.common import iter_rows
    from trainers.rollout import MultiTurnRollout, build_episodes

    episodes = build_episodes(list(iter_rows(str(hooked_shards)))[:1], tokenizer)
    rollout = MultiTurnRollout(episodes, tokenizer, options=EnvironmentOptions())
    trainer = _trainer(tokenizer, [{"episode_id": episodes[0].id}], ["a long reply that goes on<|im_end|>"], budget=3)
    out = rollout([episodes[0].prompt], trainer)
    assert len(out["completion_ids"][0]) == 3 and out["env_mask"][0] == [1, 1, 1]
    assert out["episode"][0]["end"] == "truncated"


def test_harness_mix_plays_original_and_variants_in_one_group(tokenizer, hooked_shards):
    """With a harness mix, the copies of one group play the original harness and the task's variants."""
    from hsa.environment import EnvironmentOptions
    from trainers.common import iter_rows
    from trainers.rollout import MultiTurnRollout, build_episodes

    episodes = build_episodes(list(iter_rows(str(hooked_shards))), tokenizer)
    rollout = MultiTurnRollout(episodes, tokenizer, options=EnvironmentOptions(), harness_mix=0.5)
    first = next(e for e in episodes if e.variant == 0)
    picked = [rollout._member(first.id, g, 4, step=0) for g in range(4)]
    assert [p.variant == 0 for p in picked] == [True, True, False, False]
    assert {p.source_id for p in picked} == {first.source_id} and len({p.id for p in picked[2:]}) == 2


# --------------------------------------------------------------------------- segment credit and weights


def test_segment_advantages_credit_each_segment_with_its_rewards():
    """The calls segment's advantage comes from the call rewards (and episode-wide ones), the reply segment's from
    the reply rewards, each normalised within its group as trl does."""
    import torch

    from trainers.rollout import segment_advantages

    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, float("nan")]])  # 2 groups of 2
    adv = segment_advantages(rewards, torch.ones(2), ["calls", "reply"], 2)
    assert adv[:, 0].tolist() == pytest.approx([0.7071, -0.7071, 0.0, 0.0], abs=1e-3)
    assert adv[:, 1].tolist() == pytest.approx([-0.7071, 0.7071, 0.0, 0.0], abs=1e-3)
    both = segment_advantages(rewards, torch.ones(2), ["episode", "episode"], 2)
    assert both[:, 0].tolist() == both[:, 1].tolist()
    gdpo = segment_advantages(rewards, torch.ones(2), ["calls", "reply"], 2, aggregation="normalize_then_sum")
    assert gdpo[0, 0] > 0 > gdpo[1, 0] and gdpo[0, 1] < 0 < gdpo[1, 1]


def test_reward_weights_by_position_or_name():
    """--reward_weights takes numbers in order or name=value pairs; --hat_defaults fills the named HAT weights."""
    from trainers.common import TrainerInputError
    from trainers.rl import HAT_REWARD_WEIGHTS, reward_weights

    names = ["episode_calls", "episode_turns", "my.custom"]
    assert reward_weights(names, None) is None
    assert reward_weights(names, ["1", "0.5", "2"]) == [1.0, 0.5, 2.0]
    assert reward_weights(names, ["episode_turns=0.1"]) == [1.0, 0.1, 1.0]
    assert reward_weights(names, None, hat=True) == [HAT_REWARD_WEIGHTS["episode_calls"],
                                                     HAT_REWARD_WEIGHTS["episode_turns"], 1.0]
    assert reward_weights(["episode_calls_reward"], ["episode_calls=3"]) == [3.0]
    for bad, msg in ((["1"], "1 values for 3 rewards"), (["a=1", "2"], "not both"), (["nope=1"], "not among"),
                     (["x"], "expected numbers")):
        with pytest.raises(TrainerInputError, match=msg):
            reward_weights(names, bad)


def test_hat_defaults_set_gspo_gdpo_and_stay_overridable(tiny_model, hooked_shards, tmp_path):  # noqa: F811
    """--hat_defaults turns on multi_turn, GSPO, GDPO with named weights, the harness mix and segment credit; each
    can be overridden; without it, single_turn stays today's trainer."""
    from trl import GRPOTrainer

    from trainers.rl import HAT_REWARD_WEIGHTS, MULTI_TURN_REWARDS, _parse, build_trainer

    base = ["--model_name_or_path", str(tiny_model), "--dataset", str(hooked_shards), "--output_dir",
            str(tmp_path), "--num_generations", "2", "--per_device_train_batch_size", "2", *CPU]
    trainer = build_trainer(*_parse(base + ["--hat_defaults"]))
    args, rl = trainer.args, trainer.hsa_rollout
    assert (args.importance_sampling_level, args.loss_type, args.multi_objective_aggregation) == \
        ("sequence", "grpo", "normalize_then_sum")
    assert (args.epsilon, args.epsilon_high) == (3e-4, 4e-4)
    assert args.reward_weights == [HAT_REWARD_WEIGHTS[n] for n in MULTI_TURN_REWARDS]
    assert rl.harness_mix == 0.5 and rl.segment_credit
    trainer = build_trainer(*_parse(base + ["--hat_defaults", "--importance_sampling_level", "token",
                                            "--harness_mix", "none", "--segment_credit", "false",
                                            "--reward_weights", "episode_calls=2"]))
    assert trainer.args.importance_sampling_level == "token" and trainer.args.reward_weights[0] == 2.0
    assert trainer.hsa_rollout.harness_mix is None and not trainer.hsa_rollout.segment_credit
    plain = build_trainer(*_parse(base))
    assert type(plain) is GRPOTrainer and plain.args.importance_sampling_level == "token"


# --------------------------------------------------------------------------- GRPO steps


def token_hash(completions, completion_ids, **kwargs):
    """A test reward that varies between samples, so that GRPO advantages are not all zero."""
    return [(sum(i * (k + 1) for k, i in enumerate(ids)) % 997) / 997 for ids in completion_ids]


def test_grpo_multi_turn_trains_and_logs_rollouts(tiny_model, hooked_shards, tmp_path):  # noqa: F811
    """Two GRPO steps with --rollout multi_turn and the HAT defaults: a logged loss, changed weights, every reward
    logged on its own, and every rollout in rollouts.jsonl with the environment's turns under variant harnesses."""
    from trainers.rewards import get_reward
    from trainers.rl import MULTI_TURN_REWARDS, _parse, build_trainer

    config = tmp_path / "gen.yaml"
    config.write_text(GEN_YAML, encoding="utf-8")
    out = tmp_path / "out"
    args = _parse(["--model_name_or_path", str(tiny_model), "--dataset", str(hooked_shards), "--output_dir",
                   str(out), "--config", str(config), "--hat_defaults", "--max_steps", "2", "--num_generations", "2",
                   "--per_device_train_batch_size", "2", "--max_completion_length", "48", "--max_turns", "3",
                   "--learning_rate", "1e-2", *CPU])
    funcs = [get_reward(n) for n in MULTI_TURN_REWARDS] + [token_hash]
    trainer = build_trainer(*args, reward_funcs=funcs)
    before = parameters(trainer.model)
    trainer.train()
    assert len(logged(trainer)) == 2
    metrics = trainer.state.log_history[0]
    for name in ("episode_calls_reward", "episode_skill_reward", "episode_format_reward", "episode_turns_reward",
                 "token_hash"):
        assert f"rewards/{name}/mean" in metrics
    assert changed(before, trainer.model)
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rollouts) == 2 * 2
    assert {r["step"] for r in rollouts} == {0, 1}
    for r in rollouts:
        assert set(r["rewards"]) == {"episode_calls_reward", "episode_skill_reward", "episode_hooks_reward",
                                     "episode_format_reward", "episode_turns_reward", "token_hash"}
        assert r["messages"][0]["role"] == "assistant" and "segment_advantages" in r
    assert {r["variant"] == 0 for r in rollouts} == {True, False}  # groups mix original and variant harnesses
    env_turns = [m for r in rollouts if r["variant"] for m in r["messages"] if m["role"] != "assistant"]
    assert env_turns, "no environment turn under a variant harness"
    assert any(r["hook_events"] for r in rollouts)


def test_multi_turn_reports_bad_settings(tokenizer, hooked_shards, tiny_model, tmp_path):  # noqa: F811
    """Turn selections and chat rewrites that cannot apply to whole episodes, and a bad harness mix, are clear
    errors; on the command line they are one line and exit status 2."""
    from trainers.common import TrainerInputError, iter_rows
    from trainers.rl import main
    from trainers.rollout import build_episodes

    rows = list(iter_rows(str(hooked_shards)))
    with pytest.raises(TrainerInputError, match="--turns calls does not apply"):
        build_episodes(rows, tokenizer, turns="calls")
    with pytest.raises(TrainerInputError, match="split_parallel_calls"):
        build_episodes(rows, tokenizer, compat=["split_parallel_calls"])
    assert [e.start for e in build_episodes(rows[:1], tokenizer, turns="last")] == \
        [e.start for e in build_episodes(rows[:1], tokenizer)][-1:]
    code = main(["--model_name_or_path", str(tiny_model), "--dataset", str(hooked_shards), "--output_dir",
                 str(tmp_path), "--rollout", "multi_turn", "--harness_mix", "1.5", *CPU])
    assert code == 2


def test_multi_turn_takes_the_template_rewrites_its_probes_find(capsys):
    """The multi-turn path probes the template as the single-turn one does (a late system message folded for
    Qwen 3.5), and leaves out the one rewrite episodes cannot use (split_parallel_calls for Llama 3.1), saying so."""
    from pathlib import Path

    trl = pytest.importorskip("trl")
    from hsa.chat_template import render
    from trainers.rl import _multi_turn_compat

    class Template:  # what _multi_turn_compat asks of a tokenizer
        def __init__(self, name):
            self.text = (Path(trl.__file__).parent / "chat_templates" / name).read_text(encoding="utf-8")

        def apply_chat_template(self, messages, tools=None, tokenize=False):
            return render(self.text, messages, tools)

    assert "fold_system" in _multi_turn_compat(Template("qwen3_5_nothink.jinja"), ())
    assert "split_parallel_calls" not in _multi_turn_compat(Template("llama3_1.jinja"), ())
    assert "multi_turn cannot split parallel calls" in capsys.readouterr().err
    assert _multi_turn_compat(Template("llama3_1.jinja"), ("alnum9_call_ids",)) == ("alnum9_call_ids",)


def test_environment_turns_go_through_the_templates_rewrites(tokenizer):
    """The model's call and the environment's result are rendered through the run's rewrites, as the prompts were:
    with a template that joins arguments as a string (string_arguments) and wants 9-character ids, the suffix
    renders, the result's id the call's (before: the raw message, which such a template cannot render)."""
    from hsa.environment import EnvironmentOptions
    from trainers.rollout import MultiTurnRollout, env_suffix_text

    tok = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    tok.chat_template = (
        "{% for m in messages %}{% if m.tool_calls %}<calls>{% for c in m.tool_calls %}"
        "{% if c.id | length != 9 %}{{ raise_exception('ids of 9') }}{% endif %}"
        "{{ c.id + ':' + c.function.name + ' ' + c.function.arguments }}{% endfor %}</calls>"
        "{% elif m.role == 'tool' %}<result {{ m.tool_call_id }}>{{ m.content }}</result>"
        "{% else %}<{{ m.role }}>{{ m.content }}{% endif %}{{ eos_token }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}")
    played = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
              {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "3 degrees"}]
    rollout = MultiTurnRollout([], tok, options=EnvironmentOptions(), compat=("alnum9_call_ids", "string_arguments"))
    adapted = rollout._adapted(played)
    suffix = env_suffix_text(tok, adapted[0], adapted[1:], None)
    call_id = adapted[0]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and f"<result {call_id}>3 degrees</result>" in suffix
    from jinja2.exceptions import TemplateError

    with pytest.raises(TemplateError, match="ids of 9"):  # the raw messages: what the rollout rendered before
        env_suffix_text(tok, played[0], played[1:], None)
    assert MultiTurnRollout([], tok, options=EnvironmentOptions())._adapted(played) == played
