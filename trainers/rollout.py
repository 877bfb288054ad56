"""Multi-turn HSA-RL rollouts: the model plays whole user turns inside each row's harness (:mod:`hsa.environment`).

``python -m trainers.rl --rollout multi_turn`` trains with trl's ``GRPOTrainer`` through its
``rollout_func`` hook, with this module's loop:

1. each prompt of the batch is an *episode*: a row (original or variant) and one of its
   user turns; the prompt is the conversation up to that turn, rendered with the row's
   own tools (:func:`build_episodes`);
2. the model writes an assistant message (trl's own single-turn generator: transformers,
   or vLLM with ``--use_vllm``); it is parsed (Hermes-style tool calls by default) and
   given to the row's :class:`~hsa.environment.Environment`, whose answer — tool results,
   errors, hook messages — is rendered with the chat template and appended as
   environment tokens (masked out of the loss: trl's ``env_mask``);
3. until the environment ends the episode (an accepted reply, or ``--max_turns``) or the
   completion budget (``--max_completion_length`` tokens, model and environment tokens
   together) runs out.

The episode (:meth:`~hsa.environment.Environment.summary`) goes to the rewards as the
``episode`` column. With a harness mix, the rollouts of one GRPO group are played under
different harnesses of the same task (original and variants), so the group baseline
compares harnesses. With segment credit, the tokens of call turns and of reply turns get
advantages from different rewards. Every rollout is appended to ``OUTPUT_DIR/rollouts.jsonl``.

Why not trl's ``environment_factory`` / ``tools``: trl exposes an environment's *Python
methods* as tools, one fixed set per environment class, with schemas built from type hints,
while every row here has its own tool names and JSON Schemas; trl calls ``tool(**arguments)``
(an invalid call raises a Python ``TypeError`` instead of getting the harness's schema error);
and its tool loop ends at the first message without a tool call, so a reply hook cannot refuse
a reply and ask for another. ``rollout_func`` lets this loop do all three.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trainers.common import TrainerInputError, log

__all__ = ["Episode", "build_episodes", "group_tasks", "MultiTurnRollout", "segment_advantages", "recording",
           "env_suffix_text"]


@dataclasses.dataclass
class Episode:
    """One playable (row, user turn): what the rollout needs to start it."""

    id: str  # "<row id>#<start>"
    row: dict
    start: int
    variant: int
    source_id: str
    prompt: str  # rendered text, ending in the generation prompt
    tools: list | None


def build_episodes(rows: Iterable[dict], tokenizer, *, turns: str = "all", max_prompt_length: int | None = None,
                   max_prompts: int | None = None, compat: Sequence[str] = ()) -> list[Episode]:
    """The episodes of ``rows``: one per user turn (``turns``: all, first or last) that an assistant answers."""
    from hsa.environment import episode_starts, read_record
    from trainers.common import check_template_renders_harness, to_chat
    from trainers.render import strip_bos

    if turns not in ("all", "first", "last"):
        raise TrainerInputError(f"--turns {turns} does not apply to --rollout multi_turn, where an episode plays a "
                                "whole user turn; use all, first or last")
    if "split_parallel_calls" in compat:
        raise TrainerInputError("--chat_compat split_parallel_calls changes the message list and cannot be used "
                                "with --rollout multi_turn (the environment answers parallel calls as they come)")
    out: list[Episode] = []
    too_long = checked = unplayable = 0
    for n, row in enumerate(rows, 1):
        where = f"row {n} ({row.get('id', 'no id')})" if isinstance(row, dict) else f"row {n}"
        chat = to_chat(row, where=where, compat=compat)
        record = read_record(row, where=where)
        if not checked and chat["tools"]:
            check_template_renders_harness(
                lambda m, t: tokenizer.apply_chat_template(list(m), tools=t, tokenize=False), chat, where=where)
            checked = True
        starts = episode_starts(record)
        unplayable += not starts
        starts = starts[:1] if turns == "first" else starts[-1:] if turns == "last" else starts
        for start in starts:
            text = tokenizer.apply_chat_template(chat["messages"][:start], tools=chat["tools"],
                                                 add_generation_prompt=True, tokenize=False)
            text = strip_bos(tokenizer, text)
            if max_prompt_length is not None and \
                    len(tokenizer(text, add_special_tokens=False)["input_ids"]) > max_prompt_length:
                too_long += 1
                continue
            out.append(Episode(id=f"{record['id']}#{start}", row=row, start=start,
                               variant=int(row.get("variant") or 0),
                               source_id=str(row.get("source_id") or record["id"]), prompt=text, tools=chat["tools"]))
            if max_prompts is not None and len(out) >= max_prompts:
                break
        if max_prompts is not None and len(out) >= max_prompts:
            break
    if unplayable:
        log(f"skipped {unplayable} rows without an assistant message after a user message (nothing to play)")
    if too_long:
        log(f"dropped {too_long} episodes whose prompt is longer than max_prompt_length={max_prompt_length} tokens")
    if not out:
        raise TrainerInputError("no RL episodes: no row has an assistant turn after a user message"
                                + (f" within max_prompt_length={max_prompt_length}" if too_long else ""))
    return out


def group_tasks(episodes: Sequence[Episode]) -> dict[str, list[Episode]]:
    """Episodes by task: the same source record and user turn, under its original and varied harnesses."""
    tasks: dict[str, list[Episode]] = {}
    for ep in episodes:
        tasks.setdefault(f"{ep.source_id}#{ep.start}", []).append(ep)
    return tasks


# --------------------------------------------------------------------------- rendering environment turns


def env_suffix_text(tokenizer, assistant: dict, env_messages: list[dict], tools: list | None) -> str:
    """The text the chat template writes after an assistant message for ``env_messages``, generation prompt included.

    As trl's tool loop does: render a short conversation ending in the assistant message,
    with and without the environment's messages, and keep what the second adds after the
    assistant message's end-of-turn token (the model wrote that token itself)."""
    dummy = [{"role": "user", "content": "hi"}, assistant]
    prefix = tokenizer.apply_chat_template(dummy, tools=tools, tokenize=False)
    full = tokenizer.apply_chat_template(dummy + env_messages, tools=tools, add_generation_prompt=True,
                                         tokenize=False)
    eos = tokenizer.eos_token or ""
    cut = prefix.rfind(eos) + len(eos) if eos and eos in prefix else len(prefix)
    if not full.startswith(prefix[:cut]):
        raise TrainerInputError("the chat template renders an assistant message differently when messages follow "
                                "it, so environment turns cannot be appended to generated tokens; pass "
                                "--chat_template_path with a template that renders conversations incrementally")
    return full[cut:]


# --------------------------------------------------------------------------- advantages per segment


def segment_advantages(rewards, weights, segments: Sequence[str], num_generations: int, *,
                       aggregation: str = "sum_then_normalize", scale_rewards: str = "group"):
    """Advantages of the ``calls`` and ``reply`` segments, shape (N, 2), from rewards (N, K) with NaN for "does
    not apply"; reward k counts in a segment when ``segments[k]`` is that segment or ``episode``.

    The same arithmetic as trl's ``GRPOTrainer`` (``multi_objective_aggregation`` and
    ``scale_rewards``), once per segment with the other segment's rewards left out."""
    import torch

    n, k = rewards.shape
    out = torch.zeros(n, 2)
    for col, seg in enumerate(("calls", "reply")):
        keep = torch.tensor([s in (seg, "episode") for s in segments], dtype=torch.bool)
        if not keep.any():
            keep = torch.ones(k, dtype=torch.bool)
        r, w = rewards[:, keep], weights[keep]
        unscorable = torch.isnan(r).all(dim=1)
        if aggregation == "normalize_then_sum":
            grouped = r.view(-1, num_generations, r.shape[1])
            mean = torch.nanmean(grouped, dim=1, keepdim=True)
            std = _nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean)
            total = (((grouped - mean) / (std + 1e-4)).view(-1, r.shape[1]) * w).nansum(dim=1)
            total[unscorable] = torch.nan
            std_all = _nanstd(total) if total.numel() > 1 else torch.zeros(())
            adv = (total - torch.nanmean(total)) / (std_all + 1e-4)
        else:
            total = (r * w).nansum(dim=1)
            total[unscorable] = torch.nan
            grouped = total.view(-1, num_generations)
            mean = torch.nanmean(grouped, dim=1).repeat_interleave(num_generations)
            if scale_rewards == "batch":
                std = (_nanstd(total) if total.numel() > 1 else torch.zeros(())).expand_as(total)
            else:
                std = (_nanstd(grouped, dim=1) if num_generations > 1 else torch.zeros(len(grouped)))
                std = std.repeat_interleave(num_generations)
            adv = total - mean
            if scale_rewards not in ("none", False):
                adv = adv / (std + 1e-4)
        out[:, col] = torch.nan_to_num(adv, nan=0.0)
    return out


def _nanstd(x, dim=None, keepdim=False):
    import torch

    mean = torch.nanmean(x, dim=dim, keepdim=True) if dim is not None else torch.nanmean(x)
    count = (~torch.isnan(x)).sum(dim=dim, keepdim=True) if dim is not None else (~torch.isnan(x)).sum()
    var = torch.nansum((x - mean) ** 2, dim=dim, keepdim=True) if dim is not None else torch.nansum((x - mean) ** 2)
    var = var / (count - 1).clamp(min=1)
    out = var.sqrt()
    return out if keepdim or dim is None else out.squeeze(dim)


# --------------------------------------------------------------------------- rewards that keep their values


def recording(func: Callable, name: str, store: dict) -> Callable:
    """``func`` under trl's reward signature, keeping its last output in ``store[name]`` (for the rollout log and
    segment credit); trl names and logs it ``name``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        out = func(*args, **kwargs)
        store[name] = list(out)
        return out

    wrapper.__name__ = name
    return wrapper


# --------------------------------------------------------------------------- the rollout


class MultiTurnRollout:
    """trl ``rollout_func`` for :class:`trainers.rl.HarnessGRPOTrainer` (see the module docstring)."""

    def __init__(self, episodes: Sequence[Episode], tokenizer, *, options, parser: Callable | None = None,
                 harness_mix: float | None = None, seed: int = 0, compat: Sequence[str] = (),
                 reward_names: Sequence[str] = (), reward_segments: Sequence[str] = (), segment_credit: bool = False,
                 log_path: str | None = None):
        from trainers.rewards import parse_hermes

        self.episodes = {ep.id: ep for ep in episodes}
        self.tasks = group_tasks(episodes)
        self.task_of = {ep.id: key for key, eps in self.tasks.items() for ep in eps}
        self.tokenizer = tokenizer
        self.options = options
        self.parser = parser or parse_hermes
        self.harness_mix = harness_mix
        self.seed = seed
        self.compat = tuple(compat)
        self.reward_names = list(reward_names)
        self.reward_segments = list(reward_segments)
        self.segment_credit = segment_credit
        self.log_path = log_path
        self.rewards: dict[str, list] = {}  # filled by the recording reward functions
        self._last: list[dict] = []
        self._log_started = False

    # -- which harness each rollout of a group plays

    def _member(self, episode_id: str, copy: int, group: int, step: int) -> Episode:
        """With a harness mix, copy ``copy`` of a group of ``group`` rollouts plays the original harness for the
        first round(mix * group) copies, the task's variants (in a seeded order) for the others."""
        ep = self.episodes[episode_id]
        if self.harness_mix is None:
            return ep
        members = self.tasks[self.task_of[episode_id]]
        originals = [m for m in members if m.variant == 0]
        variants = [m for m in members if m.variant != 0]
        n_orig = round(self.harness_mix * group)
        if originals and (copy < n_orig or not variants):
            return originals[0]
        if not variants:
            return ep
        order = sorted(variants, key=lambda m: m.id)
        random.Random(f"{self.seed}|{self.task_of[episode_id]}|{step}").shuffle(order)
        return order[(copy - (n_orig if originals else 0)) % len(order)]

    def _adapted(self, messages: list[dict]) -> list[dict]:
        """The model's message and the environment's answer through the template's rewrites (the run's
        ``compat``: 9-character ids, arguments as JSON text, a hook's late system message folded), as the prompts
        were, so the template renders them; the model's message stays first."""
        if not self.compat:
            return list(messages)
        from hsa.chat_template import adapt

        return adapt(list(messages), [True] * len(messages), self.compat)[0]

    def _environment(self, ep: Episode):
        from hsa.environment import Environment

        options = self.options
        if "system_as_user" in self.compat and options.hook_role in (None, "system"):
            options = dataclasses.replace(options, hook_role="user")
        env = Environment.from_row(ep.row, start=ep.start, options=options)
        if "system_as_user" in self.compat and env.hook_role == "system":
            env.hook_role = "user"
        return env

    # -- generation

    def _generate(self, trainer, ids: list[list[int]]) -> tuple[list[list[int]], list | None]:
        """One assistant message per prompt, from trl's own single-turn generator (transformers or vLLM)."""
        vllm = getattr(trainer, "use_vllm", False)
        collective = vllm and (getattr(trainer, "vllm_mode", None) == "server" or getattr(
            getattr(trainer, "vllm_generation", None), "tensor_parallel_size", 1) > 1)
        if not ids and not collective:  # vLLM server mode and tensor parallelism gather prompts from every process
            return [], None
        return trainer._generate_single_turn(ids, None, {}, num_generations=1)

    def __call__(self, prompts: list, trainer) -> dict[str, Any]:
        inputs = getattr(trainer, "_hsa_inputs", None)
        if inputs is None or len(inputs) != len(prompts):
            raise RuntimeError("MultiTurnRollout runs inside trainers.rl.HarnessGRPOTrainer, which hands it the "
                               "batch's rows; with a plain GRPOTrainer it cannot tell which row a prompt is")
        tok = self.tokenizer
        budget = trainer.max_completion_length
        group = trainer.num_generations if trainer.model.training else getattr(trainer, "num_generations_eval",
                                                                               trainer.num_generations)
        offset = trainer.accelerator.process_index * len(prompts)
        step = trainer.state.global_step
        members = [self._member(x["episode_id"], (offset + i) % group, group, step) for i, x in enumerate(inputs)]
        envs = [self._environment(m) for m in members]
        prompt_ids = [tok(m.prompt, add_special_tokens=False)["input_ids"] for m in members]
        completion = [[] for _ in members]
        mask = [[] for _ in members]
        segments = [[] for _ in members]
        logprobs: list[list[float]] | None = [[] for _ in members]
        truncated = [False] * len(members)
        active = list(range(len(members)))
        max_len = self._max_model_len(trainer)
        while self._any_active(trainer, active):
            new_ids, new_lps = self._generate(trainer, [prompt_ids[i] + completion[i] for i in active])
            if new_lps is None and active:  # the generator keeps no sampling log-probabilities (transformers)
                logprobs = None
            still = []
            for k, i in enumerate(active):
                ids = list(new_ids[k])[: max(0, budget - len(completion[i]))]
                text = tok.decode(ids, skip_special_tokens=True)
                ended = bool(ids) and ids[-1] in self._eos_ids(trainer)
                parsed = self.parser(text)
                is_call = parsed.ok and bool(parsed.calls)
                completion[i] += ids
                mask[i] += [1] * len(ids)
                segments[i] += [1 if is_call or not parsed.ok and "<tool_call>" in text else 2] * len(ids)
                if logprobs is not None:
                    logprobs[i] += list(new_lps[k][: len(ids)])
                if not ended:  # the completion budget ran out inside this message
                    truncated[i] = True
                    continue
                message = ({"content": parsed.content, "tool_calls": list(parsed.calls)} if parsed.ok
                           else {"content": text, "error": parsed.error or "unreadable"})
                step_out = envs[i].step(message)
                if step_out.done:
                    continue
                played = self._adapted(step_out.messages)
                suffix = env_suffix_text(tok, played[0], played[1:], members[i].tools)
                env_ids = tok(suffix, add_special_tokens=False)["input_ids"]
                if len(completion[i]) + len(env_ids) >= budget or len(prompt_ids[i]) + len(completion[i]) + \
                        len(env_ids) >= max_len:
                    truncated[i] = True
                    continue
                completion[i] += env_ids
                mask[i] += [0] * len(env_ids)
                segments[i] += [0] * len(env_ids)
                if logprobs is not None:
                    logprobs[i] += [0.0] * len(env_ids)
                still.append(i)
            active = still
        episodes = []
        for i, (env, m) in enumerate(zip(envs, members)):
            summary = env.summary()
            if summary["end"] is None:
                summary["end"] = "truncated" if truncated[i] else "stopped"
            summary.update({"episode_id": m.id, "source_id": m.source_id, "variant": m.variant,
                            "question": _question(env)})
            episodes.append(summary)
        self._last = episodes
        self.rewards.clear()
        return {"prompt_ids": prompt_ids, "completion_ids": completion, "logprobs": logprobs, "env_mask": mask,
                "episode": episodes, "hsa_segments": segments}

    @staticmethod
    def _eos_ids(trainer) -> set[int]:
        ids = set(getattr(trainer, "eos_token_ids", None) or ())
        pad = trainer.processing_class.pad_token_id if hasattr(trainer.processing_class, "pad_token_id") else None
        if pad is not None:
            ids.add(pad)
        return ids

    @staticmethod
    def _max_model_len(trainer) -> int:
        if getattr(trainer, "use_vllm", False) and getattr(trainer, "vllm_mode", None) == "colocate":
            try:
                return trainer.vllm_generation.llm.llm_engine.model_config.max_model_len
            except AttributeError:
                pass
        config = trainer.model.config
        return int(getattr(getattr(config, "text_config", config), "max_position_embeddings", 1 << 30))

    @staticmethod
    def _any_active(trainer, active: list[int]) -> bool:
        """True while an episode on any process still runs (all processes generate in step, as vLLM server mode
        gathers prompts from every process)."""
        if trainer.accelerator.num_processes == 1:
            return bool(active)
        import torch

        count = trainer.accelerator.gather(torch.tensor([len(active)], device=trainer.accelerator.device))
        return bool(count.sum().item())

    # -- after trl scored the rollouts

    def after_scoring(self, trainer, inputs: list[dict], output: dict) -> None:
        """Segment credit (per-token advantages) and the rollout log, once trl has computed rewards and advantages."""
        import torch

        n = len(inputs)
        local = torch.tensor([[float("nan") if v is None else float(v)
                               for v in (self.rewards.get(name) or [None] * n)] for name in self.reward_names],
                             dtype=torch.float32).T.reshape(n, len(self.reward_names))
        scalar = output["advantages"].detach().cpu()
        both = None
        if self.segment_credit and self.reward_names:
            everything = trainer.accelerator.gather(local.to(trainer.accelerator.device)).cpu()
            group = trainer.num_generations if trainer.model.training else getattr(
                trainer, "num_generations_eval", trainer.num_generations)
            both = segment_advantages(everything, trainer.reward_weights.cpu(), self.reward_segments, group,
                                      aggregation=trainer.multi_objective_aggregation,
                                      scale_rewards=trainer.scale_rewards)
            start = trainer.accelerator.process_index * n
            both = both[start:start + n]
            width = output["completion_ids"].size(1)
            per_token = torch.zeros(n, width)
            for i, x in enumerate(inputs):
                seg = torch.tensor((list(x["hsa_segments"]) + [0] * width)[:width])
                per_token[i] = torch.where(seg == 1, both[i, 0], torch.where(seg == 2, both[i, 1], 0.0))
            output["advantages"] = per_token.to(output["advantages"].device)
        self._write_log(trainer, local, scalar, both)

    def _write_log(self, trainer, local, scalar, both) -> None:
        if not self.log_path:
            return
        records = []
        for i, ep in enumerate(self._last):
            rewards = {name: (None if local[i, k].isnan() else round(float(local[i, k]), 6))
                       for k, name in enumerate(self.reward_names)}
            record = {"step": trainer.state.global_step, "mode": "train" if trainer.model.training else "eval",
                      "row_id": ep["row_id"], "episode_id": ep["episode_id"],
                      "source_id": ep["source_id"], "variant": ep["variant"], "question": ep["question"],
                      "messages": ep["messages"], "hook_events": ep["hook_events"], "end": ep["end"],
                      "turns": ep["turns"], "calls": ep["calls"], "rewards": rewards,
                      "advantage": round(float(scalar[i]), 6)}
            if both is not None:
                record["segment_advantages"] = {"calls": round(float(both[i, 0]), 6),
                                                "reply": round(float(both[i, 1]), 6)}
            records.append(record)
        if trainer.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            records = gather_object(records)
        if not trainer.accelerator.is_main_process:
            return
        os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
        append = self._log_started or trainer.state.global_step > 0  # a resumed run keeps the earlier rollouts
        with open(self.log_path, "a" if append else "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        self._log_started = True


def _question(env) -> str:
    """The user message the episode answers (for the rollout log)."""
    from hsa.environment import content_text, hook_message_indices

    hooked = hook_message_indices(env.record)
    for i in range(env.start - 1, -1, -1):
        m = env.record["messages"][i]
        if m.get("role") == "user" and i not in hooked:
            return content_text(m.get("content"))
    return ""
