"""tau2-bench results files as records (``hsa import tau2``): one record per simulation.

A results file (``tau2 run ... --save-to``; ``data/simulations/*.json``) is one JSON object
``{"timestamp", "info", "tasks", "simulations"}``. ``info.environment_info`` holds the domain's ``policy`` (the
agent's system prompt) and, when saved with them, its ``tool_defs``; each simulation holds the ``messages`` of one
conversation between the agent and the user simulator, with the agent's calls as ``{"id", "name", "arguments",
"requestor"}`` and tool messages answering them by ``id``, and the ``task_id`` of the task it ran.

A record gets the policy as its system message, the agent's messages, the domain's tools when the file has them
(else pass them with ``hsa augment --tools``), the simulation's task under ``task`` and its outcome under ``meta``.
Left out and counted: each message's bookkeeping (``turn_idx``, ``timestamp``, ``cost``, ``usage``, ``raw_data``:
the raw model response, which would keep the source's tool names after a rename), and the user simulator's own
tool calls and their results (``requestor: "user"``, telecom's device actions), which the agent never sees.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hsa.formats.agent_logs import log_files

__all__ = ["Tau2Error", "results_files", "read_results"]

#: Per-message keys of tau2's messages that are the run's bookkeeping, not the conversation.
_BOOKKEEPING = ("turn_idx", "timestamp", "cost", "usage", "raw_data", "requestor", "error")


class Tau2Error(ValueError):
    """A results file that cannot be read: the message names the file and what it holds instead."""


def results_files(paths: Iterable[str | Path]) -> list[Path]:
    """The results files of ``paths``: a file as it is, a folder's ``.json`` files, in path order."""
    return log_files(paths, Tau2Error, what="tau2-bench result", suffix=".json",
                     home="tau2 writes them to data/simulations/ (tau2 run ... --save-to NAME)")


def _tools(tool_defs: Any) -> list[dict] | None:
    """The domain's tools as OpenAI function definitions, from ``tool_defs`` (a name -> tool map or a list; each an
    OpenAI tool, a bare function definition, or tau2's ``{"name", "short_desc"/"long_desc", "params"}``)."""
    items = list(tool_defs.values()) if isinstance(tool_defs, dict) else tool_defs
    if not isinstance(items, list) or not items:
        return None
    out = []
    for t in items:
        if not isinstance(t, dict):
            return None
        if "function" in t or "parameters" in t or "input_schema" in t or "inputSchema" in t:
            out.append(t)
        elif isinstance(t.get("name"), str) and isinstance(t.get("params"), dict):
            desc = " ".join(str(t[k]) for k in ("short_desc", "long_desc") if t.get(k))
            out.append({"type": "function", "function": {"name": t["name"], "description": desc,
                                                         "parameters": t["params"]}})
        else:
            return None
    return out


def _message(m: dict, left: Counter) -> dict | None:
    """One message without its bookkeeping; None for the user simulator's own calls and their results."""
    if m.get("role") == "tool" and m.get("requestor") == "user":
        left["user-side tool results"] += 1
        return None
    out = {k: v for k, v in m.items() if k not in _BOOKKEEPING and k != "id"}
    dropped = sum(1 for k in _BOOKKEEPING if k in m)
    if dropped:
        left["message bookkeeping fields"] += dropped
    if m.get("role") == "tool" and isinstance(m.get("id"), str):
        out["tool_call_id"] = m["id"]
    calls = m.get("tool_calls")
    if m.get("role") == "user" and calls:
        left["user-side tool calls"] += len(calls) if isinstance(calls, list) else 1
        out.pop("tool_calls", None)
        if not out.get("content"):
            return None
    elif calls is None:
        out.pop("tool_calls", None)
    elif isinstance(calls, list):
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "requestor"} if isinstance(c, dict) else c
                             for c in calls]
    return out


def read_results(path: str | Path) -> tuple[list[dict], list[dict], Counter]:
    """``(records, rejects, left_out)`` of one results file: a record per simulation with messages, a reject
    ``{"file", "reason"}`` for a file that is not a results file or holds none, and the counts of what was left
    out."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Tau2Error(f"{path}: not JSON ({exc}); a tau2-bench results file is one JSON object") from None
    if not (isinstance(data, dict) and isinstance(data.get("simulations"), list)):
        what = sorted(data)[:8] if isinstance(data, dict) else type(data).__name__
        raise Tau2Error(f"{path}: not a tau2-bench results file (expected an object with 'simulations', found "
                        f"{what})")
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    policy = env.get("policy") if isinstance(env.get("policy"), str) else None
    tools = _tools(env.get("tool_defs"))
    tasks = {str(t.get("id")): t for t in data.get("tasks") or () if isinstance(t, dict)}
    left: Counter = Counter()
    records, rejects = [], []
    for i, sim in enumerate(data["simulations"]):
        msgs = sim.get("messages") if isinstance(sim, dict) else None
        if not isinstance(msgs, list) or not msgs:
            rejects.append({"file": str(path), "reason": f"simulations[{i}] holds no messages"})
            continue
        messages = [m for m in (_message(m, left) for m in msgs if isinstance(m, dict)) if m is not None]
        if policy:
            messages.insert(0, {"role": "system", "content": policy})
        reward = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
        meta = {"source": "tau2-bench", "file": path.name, "domain": env.get("domain_name"),
                "task_id": sim.get("task_id"), "trial": sim.get("trial"), "reward": reward.get("reward"),
                "termination_reason": sim.get("termination_reason"), "agent_llm": agent.get("llm")}
        rec: dict[str, Any] = {"id": str(sim.get("id") or f"{path.stem}-{i}"), "messages": messages,
                               "meta": {k: v for k, v in meta.items() if v is not None}}
        if tools:
            rec["tools"] = tools
        task = tasks.get(str(sim.get("task_id")))
        if task is not None:
            rec["task"] = task
        records.append(rec)
    if policy is None and records:
        left["results without a policy (no system prompt)"] += 1
    return records, rejects, left
