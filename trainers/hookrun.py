"""Run harness hook functions on payloads, in a separate Python process with limits.

Hooks are Python source shipped with the data (``record["hooks"]``), so they run
outside the training process: one child process per batch (``python -I``), with a
CPU-time and memory limit and a wall-clock timeout. A hook that raises, or returns
something that is not a dict, gives ``{"decision": "error", ...}`` for that job only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["run_hooks", "hook_entry", "HookJob"]

HookJob = tuple[str, str, dict]  # (source, entry function name, payload)

_CHILD = r"""
import json, sys
jobs = json.loads(sys.stdin.read())
spaces = {}
out = []
for source, entry, payload in jobs:
    try:
        ns = spaces.get(source)
        if ns is None:
            ns = {"__name__": "hsa_hook", "__builtins__": __builtins__}
            exec(compile(source, "<hook>", "exec"), ns)
            spaces[source] = ns
        result = ns[entry](payload)
        if not isinstance(result, dict):
            result = {"decision": "error", "message": f"hook returned {type(result).__name__}, expected a dict"}
    except BaseException as exc:
        result = {"decision": "error", "message": f"{type(exc).__name__}: {exc}"}
    out.append(result)
sys.stdout.write(json.dumps(out, default=str))
"""


def hook_entry(hook: dict) -> str:
    """The function a hook's source defines as its entry point (``entry``, else its ``name``)."""
    return hook.get("entry") or hook["name"]


def _limits(cpu_seconds: int, memory_mb: int):
    def apply() -> None:  # runs in the child before exec
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        limit = memory_mb * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):  # some platforms refuse RLIMIT_AS
            pass

    return apply


def run_hooks(jobs: Sequence[HookJob], *, timeout: float = 20.0, memory_mb: int = 1024) -> list[dict[str, Any]]:
    """The result of each ``(source, entry, payload)`` job, in order."""
    if not jobs:
        return []
    payload = json.dumps([list(j) for j in jobs], ensure_ascii=False)
    preexec = _limits(int(timeout) + 1, memory_mb) if sys.platform != "win32" else None
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", _CHILD], input=payload, capture_output=True, text=True,
                              timeout=timeout, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return [{"decision": "error", "message": f"hooks timed out after {timeout}s"}] * len(jobs)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return [{"decision": "error", "message": f"hook process failed: {msg}"}] * len(jobs)
    results = json.loads(proc.stdout)
    if len(results) != len(jobs):  # pragma: no cover - the child writes one result per job
        raise RuntimeError(f"hook process returned {len(results)} results for {len(jobs)} jobs")
    return results
