"""HSA-RL: GRPO rollouts under original and varied harnesses, with rewards that map calls back.

``python -m trainers.rl --model_name_or_path SFT_DIR --dataset SHARDS --output_dir OUT``

Each assistant turn of each row (original or variant) becomes a prompt: the
trajectory up to that turn, rendered with the model's chat template and *the row's
own tools* (trl's ``GRPOTrainer`` only knows a trainer-level tool list, so the prompt
is passed as text). Beside the prompt, the row carries what the rewards need
(:mod:`trainers.rewards`): the expected turn in the source harness (``reference``),
the ``mapping``, the variant's ``tools``, ``skill_tool``, ``hooks`` and the
``hook_context`` (skills loaded so far). These columns are JSON strings.

``--rollout multi_turn`` plays whole user turns instead, inside each row's harness
(:mod:`hsa.environment`, :mod:`trainers.rollout`): the model's calls are answered from the
recorded trajectory, hooks check calls and replies, and the rewards score the episode.
``--hat_defaults`` sets the HSA-RL recipe of the HAT write-up (see ``HAT_DEFAULTS``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
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
from trainers.render import strip_bos

__all__ = ["RLArguments", "build_prompts", "build_dataset", "reward_functions", "reward_weights", "main",
           "DEFAULT_LEARNING_RATE", "HAT_DEFAULTS", "HAT_REWARD_WEIGHTS", "SINGLE_TURN_REWARDS", "MULTI_TURN_REWARDS"]

DEFAULT_LEARNING_RATE = 1e-6
TURNS = ("all", "first", "last", "calls", "replies")
ROLLOUTS = ("single_turn", "multi_turn")
SINGLE_TURN_REWARDS = ["tool_call", "skill", "format", "reply"]
MULTI_TURN_REWARDS = ["episode_calls", "episode_skill", "episode_hooks", "episode_format", "episode_turns"]

#: ``--hat_defaults``: GSPO (sequence-level importance sampling, with the loss and clipping of the GSPO paper as trl's
#: paper index gives them) and GDPO (each reward normalised in its group before the weighted sum). Any of them can be
#: overridden with its own flag (``--loss_type dapo``, ...).
HAT_DEFAULTS = {"importance_sampling_level": "sequence", "loss_type": "grpo", "epsilon": 3e-4, "epsilon_high": 4e-4,
                "multi_objective_aggregation": "normalize_then_sum"}
#: ``--hat_defaults`` weights by reward name (a reward not named here weighs 1): accuracy (the calls) and skill
#: selection first, then tool rationality (hooks, turns) and the reply format. The HAT write-up names the rewards,
#: not their weights; these are ours.
HAT_REWARD_WEIGHTS = {"episode_calls": 1.0, "episode_skill": 1.0, "episode_hooks": 0.5, "episode_format": 0.5,
                      "episode_turns": 0.25, "tool_call": 1.0, "skill": 1.0, "reply": 0.5, "format": 0.5}


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
                                         "with tool calls) or replies (final replies). multi_turn: which user turns "
                                         "become episodes: all, first or last.", "choices": TURNS})
    max_prompt_length: int | None = dataclasses.field(
        default=None, metadata={"help": "Drop prompts longer than this many tokens (GRPO does not truncate)."})
    max_prompts: int | None = dataclasses.field(default=None, metadata={"help": "Keep only the first N prompts."})
    rewards: list[str] | None = dataclasses.field(
        default=None,
        metadata={"help": "Reward functions: tool_call, tool_call_strict, skill, format, reply, instruction, "
                          "episode_calls, episode_calls_strict, episode_skill, episode_hooks, episode_format, "
                          "episode_turns, reasoning_length, or dotted paths package.module.function. Unset: "
                          f"{' '.join(SINGLE_TURN_REWARDS)} (single_turn), {' '.join(MULTI_TURN_REWARDS)} "
                          "(multi_turn, where tool_call, skill, reply and format mean their episode_ versions)."})
    reward_weights: list[str] | None = dataclasses.field(
        default=None, metadata={"help": "One weight per reward (1 0.5 ...), or weights by name (episode_calls=1 "
                                        "episode_turns=0.25; unnamed rewards weigh 1). Unset: every reward weighs "
                                        "1, or the HAT_REWARD_WEIGHTS with --hat_defaults."})
    num_generations: int = dataclasses.field(default=4, metadata={"help": "Completions sampled per prompt."})
    max_completion_length: int | None = dataclasses.field(
        default=None, metadata={"help": "Tokens per completion; in multi_turn the whole episode after the prompt, "
                                        "environment turns included. Unset: 256 (single_turn), 1024 (multi_turn)."})
    temperature: float = dataclasses.field(default=1.0, metadata={"help": "Sampling temperature."})
    beta: float = dataclasses.field(default=0.0, metadata={"help": "KL coefficient towards the reference model."})
    rollout: str | None = dataclasses.field(
        default=None, metadata={"help": "single_turn: one assistant turn per prompt, scored against the recorded "
                                        "turn. multi_turn: whole user turns inside the row's harness (calls "
                                        "answered from the recorded trajectory, hooks run). Unset: single_turn, "
                                        "or multi_turn with --hat_defaults.", "choices": ROLLOUTS})
    hat_defaults: bool = dataclasses.field(
        default=False, metadata={"help": "The HAT HSA-RL recipe: multi_turn rollouts, GSPO (importance_sampling_level="
                                         "sequence, loss_type=grpo, epsilon=3e-4, epsilon_high=4e-4), GDPO "
                                         "(multi_objective_aggregation=normalize_then_sum) with HAT_REWARD_WEIGHTS, "
                                         "harness_mix 0.5 and segment credit. Each can be overridden by its flag."})
    max_turns: int = dataclasses.field(
        default=8, metadata={"help": "multi_turn: assistant messages per episode before it is cut."})
    harness_mix: str | None = dataclasses.field(
        default=None, metadata={"help": "multi_turn: share of each GRPO group's rollouts played under the original "
                                        "harness, the others under the same task's variants (0 to 1), or none "
                                        "(a group plays one row). Unset: none, or 0.5 with --hat_defaults."})
    segment_credit: bool | None = dataclasses.field(
        default=None, metadata={"help": "multi_turn: tokens of call turns get advantages from the call rewards, "
                                        "tokens of reply turns from the reply rewards (each reward's segment: "
                                        "docs/training.md). Unset: off, or on with --hat_defaults."})
    no_result_message: str | None = dataclasses.field(
        default=None, metadata={"help": "multi_turn: the tool message for a valid call that matches no recorded "
                                        "call ({name} is the tool). Unset: hsa.environment.DEFAULT_NO_RESULT."})
    error_style: str = dataclasses.field(
        default="auto", metadata={"help": "multi_turn: errors for invalid calls as json ({\"error\": ...}), text "
                                          "(Error: ...), or auto (json when the row's results are JSON objects).",
                                  "choices": ("auto", "json", "text")})
    hook_role: str | None = dataclasses.field(
        default=None, metadata={"help": "multi_turn: role of injected hook messages. Unset: the role of the row's "
                                        "recorded hook messages, else user."})
    tool_parser: str | None = dataclasses.field(
        default=None, metadata={"help": "multi_turn: dotted path of a function text -> trainers.rewards.Parsed "
                                        "reading the model's tool calls. Unset: Hermes <tool_call> blocks."})
    reasoning_budget: int = dataclasses.field(
        default=600, metadata={"help": "reasoning_length reward: characters of reasoning before the penalty starts."})
    hook_sandbox: str = dataclasses.field(
        default="best", metadata={"help": "walls around the processes that run the rows' hooks (reply rewards, "
                                          "multi_turn episodes): best uses every layer this machine gives, require "
                                          "refuses to start without the file, network and process walls, off keeps "
                                          "only the limits (docs/hooks.md).", "choices": ("require", "best", "off")})

    def resolve(self) -> RLArguments:
        """Fill the unset options from --rollout and --hat_defaults (a copy)."""
        rollout = self.rollout or ("multi_turn" if self.hat_defaults else "single_turn")
        multi = rollout == "multi_turn"
        rewards = list(self.rewards) if self.rewards else list(MULTI_TURN_REWARDS if multi else SINGLE_TURN_REWARDS)
        if multi:
            from trainers.rewards import EPISODE_ALIASES

            rewards = [EPISODE_ALIASES.get(r, r) for r in rewards]
        mix = self.harness_mix if self.harness_mix is not None else ("0.5" if self.hat_defaults else "none")
        return dataclasses.replace(
            self, rollout=rollout, rewards=rewards, harness_mix=mix,
            segment_credit=self.hat_defaults if self.segment_credit is None else self.segment_credit,
            max_completion_length=self.max_completion_length or (1024 if multi else 256))


def reward_weights(names: Sequence[str], values: Sequence[Any] | None, *, hat: bool = False) -> list[float] | None:
    """``--reward_weights`` for ``names``: numbers in order, or ``name=value`` pairs (unnamed rewards weigh 1);
    unset: ``None`` (trl weighs every reward 1), or :data:`HAT_REWARD_WEIGHTS` with ``hat``."""
    if not values:
        return [_lookup(HAT_REWARD_WEIGHTS, n, 1.0) for n in names] if hat else None
    texts = [str(v) for v in values]
    named = ["=" in t for t in texts]
    if any(named) and not all(named):
        raise TrainerInputError(f"--reward_weights {' '.join(texts)}: give numbers for every reward in order, or "
                                "name=value pairs, not both")
    try:
        pairs = [t.partition("=") for t in texts]
        values = [float(v) for _, _, v in pairs] if any(named) else [float(t) for t in texts]
    except ValueError:
        raise TrainerInputError(f"--reward_weights {' '.join(texts)}: expected numbers or name=number pairs") from None
    if not any(named):
        if len(values) != len(names):
            raise TrainerInputError(f"--reward_weights has {len(values)} values for {len(names)} rewards")
        return values
    table = {key.strip(): v for (key, _, _), v in zip(pairs, values)}
    unknown = sorted(set(table) - set(names) - {n.removesuffix("_reward") for n in names})
    if unknown:
        raise TrainerInputError(f"--reward_weights names {unknown}, which are not among the rewards {list(names)}")
    base = HAT_REWARD_WEIGHTS if hat else {}
    return [_lookup(table, n, _lookup(base, n, 1.0)) for n in names]


def _lookup(table: dict, name: str, default: float) -> float:
    """``table[name]``, where a function's name also matches without its ``_reward`` suffix."""
    return table.get(name, table.get(name.removesuffix("_reward"), default))


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
            text = strip_bos(tokenizer, text)
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


def reward_functions(names: Sequence[str], rl: RLArguments | None = None) -> list:
    """The reward callables for ``names`` (registry names or dotted paths); ``reasoning_length`` gets
    ``--reasoning_budget``."""
    from trainers.rewards import get_reward

    out = []
    for n in names:
        f = get_reward(n)
        if n == "reasoning_length" and rl is not None:
            f = functools.partial(f, budget=rl.reasoning_budget)
        out.append(f)
    return out


def _parse(argv: Sequence[str] | None):
    model, rl, run, lora, extras = parse_args(argv, "python -m trainers.rl", __doc__.splitlines()[0],
                                              [ModelArguments, RLArguments, RunArguments, LoraArguments],
                                              defaults={"per_device_train_batch_size": 4,
                                                        "learning_rate": DEFAULT_LEARNING_RATE},
                                              trl_config_name="trl.GRPOConfig")
    return model, rl.resolve(), run, lora, extras


def _hook_sandbox(policy: str) -> None:
    """Set the hook sandbox's policy for this run and say which layers stand (``require``: refuse when a wall is
    missing)."""
    from hsa.sandbox import set_policy, status

    set_policy(policy)
    st = status()
    log(st.line())
    if policy == "require" and st.missing_walls():
        raise SystemExit(f"--hook_sandbox require: no layer keeps {'; '.join(st.missing_walls())}; run `hsa sandbox "
                         "check` for details, or --hook_sandbox best")


def build_trainer(model_args: ModelArguments, rl: RLArguments, run: RunArguments, lora: LoraArguments, extras: Any,
                  reward_funcs: list | None = None):
    """The configured ``GRPOTrainer`` (:class:`HarnessGRPOTrainer` for multi_turn), ready for ``.train()``."""
    from trl import GRPOConfig, GRPOTrainer

    from trainers.common import load_tokenizer, model_init_kwargs, peft_config, resolve_model_path, trl_config

    rl = rl.resolve()
    _hook_sandbox(rl.hook_sandbox)
    model_path = resolve_model_path(model_args.model_name_or_path)
    tokenizer = load_tokenizer(model_args, padding_side="left")
    funcs = reward_funcs if reward_funcs is not None else reward_functions(rl.rewards, rl)
    names = list(rl.rewards) if reward_funcs is None else [_callable_name(f) for f in funcs]
    weights = reward_weights(names, rl.reward_weights, hat=rl.hat_defaults)
    stage = {"num_generations": rl.num_generations, "max_completion_length": rl.max_completion_length,
             "temperature": rl.temperature, "beta": rl.beta, "reward_weights": weights,
             "model_init_kwargs": model_init_kwargs(model_args)}
    if rl.hat_defaults:
        stage.update(HAT_DEFAULTS)
    config = trl_config(GRPOConfig, run, stage, extras, DEFAULT_LEARNING_RATE)
    rows = iter_rows(rl.dataset, split=rl.dataset_split, max_rows=rl.max_rows, tools=rl.tools)
    if rl.rollout == "multi_turn":
        return _multi_turn_trainer(model_path, tokenizer, funcs, config, rows, model_args, rl, run, lora)
    train_dataset = build_dataset(rows, tokenizer, turns=rl.turns, max_prompt_length=rl.max_prompt_length,
                                  max_prompts=rl.max_prompts, compat=model_args.chat_compat or ())
    log(f"GRPO on {len(train_dataset)} prompts with rewards {[getattr(f, '__name__', f) for f in funcs]}")
    return GRPOTrainer(model=model_path, reward_funcs=funcs, args=config, train_dataset=train_dataset,
                       processing_class=tokenizer, peft_config=peft_config(lora))


def _callable_name(func: Any) -> str:
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


@functools.lru_cache(maxsize=1)
def _harness_trainer_class():
    from trl import GRPOTrainer

    if not hasattr(GRPOTrainer, "_generate_and_score_completions"):  # pragma: no cover - other trl versions
        import trl

        raise TrainerInputError(f"--rollout multi_turn needs trl's GRPOTrainer._generate_and_score_completions, which "
                                f"trl {trl.__version__} does not have; install trl 1.16 (pip install 'hsa[train]')")

    class HarnessGRPOTrainer(GRPOTrainer):
        """``GRPOTrainer`` whose ``rollout_func`` (:class:`trainers.rollout.MultiTurnRollout`) sees the batch's rows,
        and whose advantages get segment credit and the rollout log once trl has scored the batch."""

        hsa_rollout = None

        def _generate_and_score_completions(self, inputs):
            self._hsa_inputs = inputs
            try:
                output = super()._generate_and_score_completions(inputs)
            finally:
                self._hsa_inputs = None
            if self.hsa_rollout is not None:
                self.hsa_rollout.after_scoring(self, inputs, output)
            return output

    return HarnessGRPOTrainer


def _tool_parser(path: str | None):
    if not path:
        return None
    import importlib

    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise TrainerInputError(f"--tool_parser {path!r}: cannot import it ({exc}); pass package.module.function") \
            from None


def _harness_mix(text: str) -> float | None:
    if str(text).strip().lower() in ("none", "off", ""):
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise TrainerInputError(f"--harness_mix {text}: expected a share between 0 and 1, or none")
    return value


def _multi_turn_compat(tokenizer, asked) -> tuple[str, ...]:
    """The template rewrites of a multi-turn run: ``--chat_compat`` plus what the template's probes show it needs,
    as in the single-turn path (:func:`trainers.common.template_compat`), less ``split_parallel_calls``, which the
    episodes cannot use (the model's own turns are played as it writes them); a probe that asks for it is logged."""
    from trainers.common import template_compat

    def render(messages, tools):
        return tokenizer.apply_chat_template(list(messages), tools=tools, tokenize=False)

    chosen = template_compat(render, asked)
    if "split_parallel_calls" in chosen and "split_parallel_calls" not in asked:
        log("multi_turn cannot split parallel calls: rows with several calls in one turn may not render with "
            "this template")
        chosen = tuple(c for c in chosen if c != "split_parallel_calls")
    return chosen


def _multi_turn_trainer(model_path, tokenizer, funcs, config, rows, model_args, rl, run, lora):
    import datasets

    from hsa.environment import DEFAULT_NO_RESULT, EnvironmentOptions
    from trainers.common import peft_config
    from trainers.rewards import reward_segment
    from trainers.rollout import MultiTurnRollout, build_episodes, group_tasks, recording

    mix = _harness_mix(rl.harness_mix)
    compat = _multi_turn_compat(tokenizer, model_args.chat_compat or ())
    options = EnvironmentOptions(max_turns=rl.max_turns, no_result=rl.no_result_message or DEFAULT_NO_RESULT,
                                 error_style=rl.error_style, hook_role=rl.hook_role)
    episodes = build_episodes(rows, tokenizer, turns=rl.turns, max_prompt_length=rl.max_prompt_length,
                              max_prompts=rl.max_prompts, compat=compat)
    tasks = group_tasks(episodes)
    chosen = [eps[0] for eps in tasks.values()] if mix is not None else episodes
    train_dataset = datasets.Dataset.from_list([{"prompt": ep.prompt, "episode_id": ep.id, "variant": ep.variant,
                                                 "source_id": ep.source_id} for ep in chosen])
    names, seen = [], {}
    for f in funcs:
        name = _callable_name(f)
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    rollout = MultiTurnRollout(episodes, tokenizer, options=options, parser=_tool_parser(rl.tool_parser),
                               harness_mix=mix, seed=run.seed, compat=compat,
                               reward_names=names, reward_segments=[reward_segment(f) for f in funcs],
                               segment_credit=bool(rl.segment_credit),
                               log_path=os.path.join(run.output_dir, "rollouts.jsonl"))
    wrapped = [recording(f, name, rollout.rewards) for f, name in zip(funcs, names)]
    log(f"GRPO multi_turn on {len(train_dataset)} {'tasks' if mix is not None else 'episodes'} "
        f"({len(episodes)} episodes, {len(tasks)} tasks) with rewards {names}"
        + (f", harness mix {mix}" if mix is not None else "") + (", segment credit" if rl.segment_credit else ""))
    cls = _harness_trainer_class()
    trainer = cls(model=model_path, reward_funcs=wrapped, args=config, train_dataset=train_dataset,
                  processing_class=tokenizer, peft_config=peft_config(lora), rollout_func=rollout)
    trainer.hsa_rollout = rollout
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.common import run_stage

    return run_stage(_parse, build_trainer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
