"""Reward functions for HSA-RL that understand harness variants.

Each function has trl's reward signature, ``f(completions, **columns) -> list[float | None]``,
and works on its own. ``None`` means "does not apply to this row" (trl turns it into NaN
and leaves it out). The columns are those :func:`trainers.rl.build_prompts` writes; each
may be a JSON string or the decoded object:

``reference``
    the expected assistant turn in the *source* (canonical) harness:
    ``{"content": str, "tool_calls": [{"name", "arguments"}, ...]}``.
``mapping``
    the row's mapping (``hsa augment`` output); the completion's calls, made under the
    variant harness, are carried back with it before they are compared.
``tools``
    the variant's tools (OpenAI form): names and schemas the completion may use.
``skill_tool``
    ``{"name", "argument"}`` of the variant's skill tool.
``hooks`` / ``hook_context``
    the variant's hooks, and ``{"loaded_skills": [...]}`` before the turn.

A call counts only where it is right *under the variant*: its tool must be one of the
variant's and map back and forth unchanged, and an argument that does not survive
``to_variant(to_canonical(call))`` counts as wrong. So a completion that uses the
canonical name of a renamed tool or parameter is wrong under the variant, even though
mapping it back would leave it looking right.

Completions are text in the model's tool-call format (Hermes / Qwen2.5:
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; pass another ``parser``
for other formats), or conversational completions whose ``tool_calls`` trl already parsed.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from hsa.mapping import argument_leaves

__all__ = [
    "Parsed",
    "parse_hermes",
    "parse_completion",
    "tool_call_reward",
    "skill_reward",
    "format_reward",
    "reply_reward",
    "instruction_reward",
    "episode_calls_reward",
    "episode_skill_reward",
    "episode_hooks_reward",
    "episode_format_reward",
    "episode_turns_reward",
    "reasoning_length_penalty",
    "REWARDS",
    "EPISODE_ALIASES",
    "reward_segment",
    "get_reward",
    "MissingColumnError",
]


class MissingColumnError(ValueError):
    """A reward needs a dataset column (or a value in it) that the rows do not have."""


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A completion read in the model's tool-call format."""

    content: str
    calls: tuple[dict, ...]  # {"name": str, "arguments": dict}
    ok: bool  # False when a tool-call block is unclosed or not a JSON call
    error: str = ""


_TAIL = re.compile(r"(?:\s*(?:<\|im_end\|>|<\|endoftext\|>|</s>|<\|eot_id\|>))+\s*$")
_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def _call_from(obj: Any) -> dict | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function") if isinstance(obj.get("function"), dict) else obj
    name = fn.get("name")
    args = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if args is None:
        args = {}
    if not isinstance(name, str) or not name or not isinstance(args, dict):
        return None
    return {"name": name, "arguments": args}


def parse_hermes(text: str) -> Parsed:
    """Read ``<tool_call>{json}</tool_call>`` blocks (Hermes, Qwen2.5, the tiny model) from ``text``."""
    text = _TAIL.sub("", text)
    blocks = _BLOCK.findall(text)
    content = _BLOCK.sub("", text).strip()
    if text.count("<tool_call>") != len(blocks) or text.count("</tool_call>") != len(blocks):
        return Parsed(content, (), False, "unbalanced <tool_call> tags")
    calls = []
    for b in blocks:
        try:
            obj = json.loads(b.strip())
        except ValueError as exc:
            return Parsed(content, (), False, f"tool call is not JSON: {exc}")
        call = _call_from(obj)
        if call is None:
            return Parsed(content, (), False, "tool call lacks a string name or object arguments")
        calls.append(call)
    return Parsed(content, tuple(calls), True)


def parse_completion(completion: Any, parser: Callable[[str], Parsed] = parse_hermes) -> Parsed:
    """A completion as text, as one message, or as trl's list of messages."""
    if isinstance(completion, str):
        return parser(completion)
    if isinstance(completion, list):
        msgs = [m for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
        if not msgs:
            return Parsed("", (), False, "no assistant message in the completion")
        completion = msgs[-1]
    if isinstance(completion, dict):
        content = completion.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        raw_calls = completion.get("tool_calls")
        if not raw_calls:
            return parser(content)
        calls = [_call_from(c) for c in raw_calls]
        if any(c is None for c in calls):
            return Parsed(content, (), False, "a parsed tool call lacks a name or object arguments")
        return Parsed(content.strip(), tuple(calls), True)
    return Parsed("", (), False, f"unsupported completion type {type(completion).__name__}")


# --------------------------------------------------------------------------- helpers


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _column(kwargs: dict, name: str, reward: str, n: int, *, required: bool) -> list:
    values = kwargs.get(name)
    if values is None:
        if required:
            raise MissingColumnError(
                f"the {reward} reward needs a {name!r} column, one value per completion; build the RL dataset with "
                f"`trainers.rl.build_prompts` from `hsa augment` output (or add the column yourself)")
        return [None] * n
    if len(values) != n:
        raise MissingColumnError(f"the {name!r} column has {len(values)} values for {n} completions")
    return [_decode(v) for v in values]


def _mapping(value: Any, reward: str, i: int):
    from hsa.mapping import Mapping

    if value is None:
        raise MissingColumnError(
            f"row {i} has no mapping, which the {reward} reward needs to carry the completion's calls back to the "
            "source harness. Use rows written by `hsa augment` (every row has one; originals carry the identity), "
            "or give canonical rows an empty mapping {}.")
    return Mapping.from_dict(value)


def _tool_names(tools: Any) -> set[str] | None:
    if not tools:
        return None if tools is None else set()
    names = set()
    for t in tools:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def _schemas(tools: Any) -> dict[str, dict]:
    out = {}
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, dict) else {}
        schema = fn.get("parameters", fn.get("input_schema", fn.get("inputSchema")))
        if isinstance(fn.get("name"), str):
            out[fn["name"]] = schema if isinstance(schema, dict) else {"type": "object"}
    return out


_INVALID = "\x00invalid under the variant"


def _canonical(call: dict, mapping, names: set[str] | None) -> dict | None:
    """The call carried back to the source harness; ``None`` when its tool is unknown under the variant.

    Argument leaves that do not survive the round trip ``to_variant(to_canonical(.))``
    (a name of the source harness that the variant renamed) are replaced by a value that
    matches nothing, so they cost like wrong values instead of passing as canonical.
    """
    from hsa import _json

    name = call["name"]
    if (names is not None and name not in names) or mapping.tool_to_variant(mapping.tool_to_canonical(name)) != name:
        return None
    back = argument_leaves(mapping.to_variant(mapping.to_canonical(call))["arguments"])
    args = _json.copy(call["arguments"])
    for path, value in argument_leaves(call["arguments"]).items():
        if path not in back or not _json.strict_equal(back[path], value):
            _set(args, path, _INVALID)
    return mapping.to_canonical({"name": name, "arguments": args})


def _set(value: Any, path: tuple, new: Any) -> None:
    for _, key in path[:-1]:
        value = value[key]
    if path:
        value[path[-1][1]] = new


def _argument_score(expected: dict, predicted: dict) -> float:
    from hsa import _json

    le, lp = argument_leaves(expected), argument_leaves(predicted)
    keys = set(le) | set(lp)
    if not keys:
        return 1.0
    return sum(1 for k in keys if k in le and k in lp and _json.strict_equal(le[k], lp[k])) / len(keys)


def _best_total(scores: list[list[float]]) -> float:
    """The largest sum of scores over one-to-one pairings of rows (expected) and columns (predicted)."""
    n = len(scores)
    m = len(scores[0]) if scores else 0
    if n == 0 or m == 0:
        return 0.0
    if n > m:
        scores = [list(col) for col in zip(*scores)]
        n, m = m, n
    if m <= 7:
        return max(sum(scores[i][j] for i, j in enumerate(perm)) for perm in itertools.permutations(range(m), n))
    total, used = 0.0, set()  # greedy for very many parallel calls
    for i in range(n):
        j = max((j for j in range(m) if j not in used), key=lambda j: scores[i][j])
        used.add(j)
        total += scores[i][j]
    return total


def _reference(value: Any, i: int, reward: str) -> dict:
    if not isinstance(value, dict):
        raise MissingColumnError(f"row {i}: the {reward} reward needs 'reference' as an object "
                                 f"{{\"content\", \"tool_calls\"}}, got {type(value).__name__}")
    return value


# --------------------------------------------------------------------------- rewards


def tool_call_reward(completions: Sequence[Any], *, partial_credit: bool = True, name_weight: float = 0.5,
                     parser: Callable[[str], Parsed] = parse_hermes, **kwargs) -> list[float]:
    """Tool-call correctness after mapping the completion's calls back to the source harness.

    Calls are paired with the reference's calls order-free (best one-to-one pairing).
    With ``partial_credit`` a pair scores ``name_weight`` for the right tool plus the rest
    in proportion to the argument leaves that match exactly, JSON type included
    (``1`` is not ``"1"``); the total is divided by the larger of the two call counts,
    so missing and extra calls cost. Without it the reward is 1 for exactly the
    reference's calls and 0 otherwise. An invalid call (unknown under the variant)
    scores 0. A reference without calls wants none: 1 for a completion without calls.
    """
    n = len(completions)
    refs = _column(kwargs, "reference", "tool_call", n, required=True)
    maps = _column(kwargs, "mapping", "tool_call", n, required=True)
    tools = _column(kwargs, "tools", "tool_call", n, required=False)
    out = []
    for i, completion in enumerate(completions):
        ref = _reference(refs[i], i, "tool_call")
        mapping = _mapping(maps[i], "tool_call", i)
        expected = [_call_from(c) for c in ref.get("tool_calls") or ()]
        parsed = parse_completion(completion, parser)
        if not parsed.ok:
            out.append(0.0)
            continue
        if not expected or not parsed.calls:
            out.append(1.0 if not expected and not parsed.calls else 0.0)
            continue
        names = _tool_names(tools[i])
        predicted = [_canonical(c, mapping, names) for c in parsed.calls]
        out.append(_calls_score(expected, predicted, partial_credit, name_weight))
    return out


def _calls_score(expected: list[dict], predicted: list[dict | None], partial_credit: bool,
                 name_weight: float) -> float:
    """Canonical predicted calls (``None``: invalid under the variant) against the expected ones (see
    :func:`tool_call_reward`)."""
    if not expected or not predicted:
        return 1.0 if not expected and not predicted else 0.0
    scores = []
    for e in expected:
        row = []
        for canon in predicted:
            if canon is None or canon["name"] != e["name"]:
                row.append(0.0)
            elif partial_credit:
                row.append(name_weight + (1.0 - name_weight) * _argument_score(e["arguments"], canon["arguments"]))
            else:
                row.append(1.0 if _argument_score(e["arguments"], canon["arguments"]) == 1.0 else 0.0)
        scores.append(row)
    total = _best_total(scores) / max(len(expected), len(predicted))
    return total if partial_credit else (1.0 if total == 1.0 else 0.0)


def _skill_tool_canonical(skill_tool: Any, mapping) -> tuple[str, str]:
    st = skill_tool if isinstance(skill_tool, dict) else {}
    name = st.get("name") or (skill_tool if isinstance(skill_tool, str) else "load_skill")
    arg = st.get("argument") or "skill"
    probe = mapping.to_canonical({"name": name, "arguments": {arg: "\x00probe"}})
    canon_arg = next((k[-1][1] for k, v in argument_leaves(probe["arguments"]).items() if v == "\x00probe"), arg)
    return probe["name"], canon_arg


def skill_reward(completions: Sequence[Any], *, parser: Callable[[str], Parsed] = parse_hermes,
                 **kwargs) -> list[float | None]:
    """Skill selection: the right skills loaded through the variant's skill tool, under their variant names.

    Applies where the reference loads a skill (else ``None``). The score is the overlap
    (intersection over union) of the canonical skills loaded by valid calls of the
    skill tool and the reference's.
    """
    n = len(completions)
    refs = _column(kwargs, "reference", "skill", n, required=True)
    maps = _column(kwargs, "mapping", "skill", n, required=True)
    skill_tools = _column(kwargs, "skill_tool", "skill", n, required=False)
    tools = _column(kwargs, "tools", "skill", n, required=False)
    out: list[float | None] = []
    for i, completion in enumerate(completions):
        ref = _reference(refs[i], i, "skill")
        mapping = _mapping(maps[i], "skill", i)
        tool, arg = _skill_tool_canonical(skill_tools[i], mapping)
        expected = {c["arguments"].get(arg) for c in map(_call_from, ref.get("tool_calls") or ())
                    if c and c["name"] == tool}
        if not expected:
            out.append(None)
            continue
        parsed = parse_completion(completion, parser)
        if not parsed.ok:
            out.append(0.0)
            continue
        names = _tool_names(tools[i])
        loaded = set()
        for call in parsed.calls:
            canon = _canonical(call, mapping, names)
            if canon is not None and canon["name"] == tool:
                loaded.add(json.dumps(canon["arguments"].get(arg)))
        want = {json.dumps(s) for s in expected}
        out.append(len(want & loaded) / len(want | loaded))
    return out


def format_reward(completions: Sequence[Any], *, parser: Callable[[str], Parsed] = parse_hermes,
                  **kwargs) -> list[float]:
    """The completion parses in the model's tool-call format: 1.0 when it parses and every call names a
    tool of the variant and validates against its schema, 0.5 when it parses but a call does not, 0.0
    when it does not parse. Without a ``tools`` column only parsing counts."""
    from hsa.invariants import validator_for

    n = len(completions)
    tools = _column(kwargs, "tools", "format", n, required=False)
    out = []
    for i, completion in enumerate(completions):
        parsed = parse_completion(completion, parser)
        if not parsed.ok:
            out.append(0.0)
            continue
        if tools[i] is None or not parsed.calls:
            out.append(1.0)
            continue
        schemas = _schemas(tools[i])
        valid = all(c["name"] in schemas and not any(True for _ in validator_for(schemas[c["name"]])
                                                     .iter_errors(c["arguments"]))
                    for c in parsed.calls)
        out.append(1.0 if valid else 0.5)
    return out


def reply_reward(completions: Sequence[Any], *, event: str = "pre_reply",
                 parser: Callable[[str], Parsed] = parse_hermes, **kwargs) -> list[float | None]:
    """Reply checks run through the harness's own reply hooks (event ``pre_reply``).

    Applies where the reference is a final reply (no tool calls; else ``None``). The
    payload is ``{"reply": text, "loaded_skills": [...]}`` (the HAT harness convention);
    the reward is the fraction of the row's reply hooks whose decision is ``"allow"``.
    A completion that calls a tool or does not parse scores 0; a row without reply hooks
    scores 1 for any non-empty reply. Hooks run in hsa's sandbox (:mod:`hsa.sandbox`: a
    separate process with time and memory limits; results cached per payload), so every
    hook style hsa reads (functions, Claude Code scripts, Agents SDK methods) works; a
    hook that fails counts as not allowing the reply.
    """
    from hsa.hooks_model import decision_of
    from hsa.sandbox import replay_many

    n = len(completions)
    refs = _column(kwargs, "reference", "reply", n, required=True)
    hooks = _column(kwargs, "hooks", "reply", n, required=False)
    contexts = _column(kwargs, "hook_context", "reply", n, required=False)
    out: list[float | None] = [None] * n
    items, owners = [], []
    for i, completion in enumerate(completions):
        ref = _reference(refs[i], i, "reply")
        if ref.get("tool_calls"):
            continue
        parsed = parse_completion(completion, parser)
        if not parsed.ok or parsed.calls or not parsed.content.strip():
            out[i] = 0.0
            continue
        reply_hooks = [h for h in hooks[i] or () if isinstance(h, dict) and h.get("event") == event]
        if not reply_hooks:
            out[i] = 1.0
            continue
        ctx = contexts[i] if isinstance(contexts[i], dict) else {}
        payload = {"reply": parsed.content, "loaded_skills": list(ctx.get("loaded_skills") or [])}
        for h in reply_hooks:
            items.append((h, payload))
            owners.append(i)
    allowed: dict[int, list[bool]] = {}
    outcomes: list[dict] = []
    for i in dict.fromkeys(owners):  # each row's hooks run in that row's own worker (hsa.sandbox)
        mine = [item for item, owner in zip(items, owners) if owner == i]
        outcomes.extend(replay_many(mine, hooks=hooks[i]))
    for (hook, _), i, outcome in zip(items, owners, outcomes):
        decision = decision_of(hook, outcome)
        if decision.get("decision") == "error":
            warnings.warn(f"reply hook {hook.get('name')!r} failed on completion {i}: "
                          f"{outcome.get('error')}: {outcome.get('detail', '')}", stacklevel=2)
        allowed.setdefault(i, []).append(decision.get("decision") == "allow")
    for i, flags in allowed.items():
        out[i] = sum(flags) / len(flags)
    return out


def instruction_reward(completions: Sequence[Any], *, parser: Callable[[str], Parsed] = parse_hermes,
                       **kwargs) -> list[float | None]:
    """The fraction of verifiable instructions (``checks`` column, :mod:`trainers.ifcheck`) the reply follows."""
    from trainers.ifcheck import score

    n = len(completions)
    checks = _column(kwargs, "checks", "instruction", n, required=True)
    out: list[float | None] = []
    for i, completion in enumerate(completions):
        if checks[i] is None:
            out.append(None)
            continue
        parsed = parse_completion(completion, parser)
        out.append(score(parsed.content if parsed.ok else "", checks[i]))
    return out


# --------------------------------------------------------------------------- episode rewards (multi-turn)
#
# These read the ``episode`` column: :meth:`hsa.environment.Environment.summary` of the rollout, which
# ``python -m trainers.rl --rollout multi_turn`` forwards to the rewards. Each has a ``segment``: the
# part of the episode it credits when segment credit is on (``calls``: the assistant turns with tool
# calls, ``reply``: the turns without, ``episode``: both).


def _episodes(kwargs: dict, reward: str, n: int) -> list[dict]:
    values = _column(kwargs, "episode", reward, n, required=False)
    if any(v is None for v in values):
        raise MissingColumnError(
            f"the {reward} reward scores a whole episode and needs the 'episode' column that "
            "`python -m trainers.rl --rollout multi_turn` gives the rewards (hsa.environment.Environment.summary())")
    for i, ep in enumerate(values):
        if not isinstance(ep, dict) or "calls" not in ep:
            raise MissingColumnError(f"completion {i}: the {reward} reward needs 'episode' as an object from "
                                     f"hsa.environment.Environment.summary(), got {type(ep).__name__}")
    return values


def _episode_calls(ep: dict) -> tuple[list[dict], list[dict | None]]:
    """(expected, predicted) canonical calls of an episode; predicted ``None`` where invalid under the variant."""
    from hsa.mapping import Mapping

    mapping = Mapping.from_dict(ep.get("mapping"))
    names = set(ep.get("tool_names") or ())
    expected = [c for c in map(_call_from, ep.get("recorded_calls") or ()) if c is not None]
    predicted = []
    for c in ep["calls"]:
        ok = c.get("status") not in ("unknown_tool", "invalid") and isinstance(c.get("arguments"), dict)
        predicted.append(_canonical({"name": c["name"], "arguments": c["arguments"]}, mapping, names) if ok else None)
    return expected, predicted


def episode_calls_reward(completions: Sequence[Any], *, partial_credit: bool = True, name_weight: float = 0.5,
                         **kwargs) -> list[float]:
    """The calls made in the episode, mapped back with the row's mapping, against the calls recorded for the turn.

    Scored as :func:`tool_call_reward` scores one turn (order-free best pairing, partial
    credit, missing and extra calls cost), over all the episode's calls: a call repeated
    after an error counts as an extra call, an invalid one as a wrong one."""
    out = []
    for ep in _episodes(kwargs, "episode_calls", len(completions)):
        expected, predicted = _episode_calls(ep)
        out.append(_calls_score(expected, predicted, partial_credit, name_weight))
    return out


def episode_skill_reward(completions: Sequence[Any], **kwargs) -> list[float | None]:
    """Skill selection over the episode: the skills loaded (canonical names) against the recorded ones
    (intersection over union); ``None`` where the recorded turn loads no skill."""
    from hsa.mapping import Mapping

    out: list[float | None] = []
    for ep in _episodes(kwargs, "episode_skill", len(completions)):
        mapping = Mapping.from_dict(ep.get("mapping"))
        tool, arg = _skill_tool_canonical(ep.get("skill_tool"), mapping)
        want = {json.dumps(c["arguments"].get(arg)) for c in map(_call_from, ep.get("recorded_calls") or ())
                if c and c["name"] == tool}
        if not want:
            out.append(None)
            continue
        _, predicted = _episode_calls(ep)
        loaded = {json.dumps(c["arguments"].get(arg)) for c, e in zip(predicted, ep["calls"])
                  if c is not None and c["name"] == tool and e.get("status") == "skill"}
        out.append(len(want & loaded) / len(want | loaded))
    return out


def episode_hooks_reward(completions: Sequence[Any], **kwargs) -> list[float | None]:
    """Hook pass rate: the share of hook runs in the episode (``pre_tool_use`` on every valid call, ``pre_reply``
    on every reply) that allowed; a hook that fails counts as not allowing. ``None`` where no hook ran."""
    out: list[float | None] = []
    for ep in _episodes(kwargs, "episode_hooks", len(completions)):
        checks = ep.get("hook_checks") or []
        out.append(sum(c.get("decision") == "allow" for c in checks) / len(checks) if checks else None)
    return out


def episode_format_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    """Reply format over the episode: each assistant turn scores 1 when it parses in the tool-call format and its
    calls name tools of the variant with valid arguments, 0.5 when it parses but a call does not, 0 when it does
    not parse; the reward is their mean."""
    out = []
    for ep in _episodes(kwargs, "episode_format", len(completions)):
        turns = int(ep.get("turns") or 0)
        if turns == 0:
            out.append(0.0)
            continue
        bad = {c.get("turn") for c in ep["calls"] if c.get("status") in ("unknown_tool", "invalid")}
        out.append(max(0.0, (turns - int(ep.get("malformed") or 0) - 0.5 * len(bad)) / turns))
    return out


def episode_turns_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    """Turns used: 0 when the episode ended at max_turns without an accepted reply; 1 for an accepted reply within
    the recorded number of assistant turns, falling linearly to 0 at max_turns."""
    out = []
    for ep in _episodes(kwargs, "episode_turns", len(completions)):
        if ep.get("end") != "reply":
            out.append(0.0)
            continue
        recorded, limit, used = int(ep.get("recorded_turns") or 1), int(ep.get("max_turns") or 1), int(ep["turns"])
        out.append(max(0.0, 1.0 - max(0, used - recorded) / max(1, limit - recorded)))
    return out


_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)


def _reasoning_chars(messages: Sequence[dict]) -> int:
    """Characters of reasoning in assistant messages: ``<think>`` blocks, and the text of turns that call tools."""
    n = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        text = m.get("content") or ""
        text = text if isinstance(text, str) else ""
        n += sum(len(t.strip()) for t in _THINK.findall(text))
        if m.get("tool_calls"):
            n += len(_THINK.sub("", text).strip())
    return n


def reasoning_length_penalty(completions: Sequence[Any], *, budget: int = 600, **kwargs) -> list[float]:
    """A penalty for overlong reasoning: 0 within ``budget`` characters of reasoning (``<think>`` blocks, and the
    text beside tool calls), falling linearly to -1 at twice the budget. Reads the episode's assistant turns
    when there is an ``episode`` column, else the completion itself (single-turn)."""
    n = len(completions)
    episodes = _column(kwargs, "episode", "reasoning_length", n, required=False)
    out = []
    for completion, ep in zip(completions, episodes):
        if isinstance(ep, dict):
            chars = _reasoning_chars(ep.get("messages") or [])
        else:
            text = completion if isinstance(completion, str) else parse_completion(completion).content
            parsed = parse_hermes(text) if isinstance(completion, str) else None
            calls = bool(parsed and parsed.calls)
            chars = _reasoning_chars([{"role": "assistant", "content": text if not calls else parsed.content,
                                       "tool_calls": [1] if calls else None}])
        out.append(-min(1.0, max(0.0, (chars - budget) / max(1, budget))))
    return out


for _f, _segment in ((tool_call_reward, "calls"), (skill_reward, "calls"), (format_reward, "episode"),
                     (reply_reward, "reply"), (instruction_reward, "reply"), (episode_calls_reward, "calls"),
                     (episode_skill_reward, "calls"), (episode_hooks_reward, "episode"),
                     (episode_format_reward, "episode"), (episode_turns_reward, "episode"),
                     (reasoning_length_penalty, "episode")):
    _f.segment = _segment  # type: ignore[attr-defined]


#: Rewards by the names ``python -m trainers.rl --rewards`` accepts.
REWARDS: dict[str, Callable[..., list]] = {
    "tool_call": tool_call_reward,
    "tool_call_strict": functools.partial(tool_call_reward, partial_credit=False),
    "skill": skill_reward,
    "format": format_reward,
    "reply": reply_reward,
    "instruction": instruction_reward,
    "episode_calls": episode_calls_reward,
    "episode_calls_strict": functools.partial(episode_calls_reward, partial_credit=False),
    "episode_skill": episode_skill_reward,
    "episode_hooks": episode_hooks_reward,
    "episode_format": episode_format_reward,
    "episode_turns": episode_turns_reward,
    "reasoning_length": reasoning_length_penalty,
}

#: What the single-turn names mean in ``--rollout multi_turn``: the same check, over the whole episode.
EPISODE_ALIASES: dict[str, str] = {"tool_call": "episode_calls", "tool_call_strict": "episode_calls_strict",
                                   "skill": "episode_skill", "reply": "episode_hooks", "format": "episode_format"}


def reward_segment(func: Callable) -> str:
    """The segment a reward credits under segment credit: ``calls``, ``reply`` or ``episode`` (the default)."""
    base = func.func if isinstance(func, functools.partial) else func
    return getattr(base, "segment", "episode")


def get_reward(name: str) -> Callable[..., list]:
    """A reward by registry name or dotted path (``package.module.function``)."""
    if name in REWARDS:
        return REWARDS[name]
    if "." in name:
        import importlib

        module, _, attr = name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"reward {name!r}: cannot import it ({exc})") from None
    raise ValueError(f"unknown reward {name!r}; expected one of {sorted(REWARDS)} or a dotted path "
                     "package.module.function")
