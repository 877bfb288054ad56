"""Hook replay in this process: one worker per hook set, and results cached by content.

A *hook set* is the hooks of one record (their code and sibling files); its calls — the source hooks, their
rewrites in every variant, the hooks of a row in the RL environment — run in a worker that serves that set only,
so a hook that patches its interpreter can change nothing but its own record's outcomes. Records that share a
harness share its set, its worker and its cached results; up to :data:`MAX_WORKERS` workers stay alive, the least
recently used is stopped. What is cached is the outcome (verdicts, not processes): results are keyed by (hook
set, hook, payload), timeouts and limits included, so a hostile record costs its timeout once, not once per variant.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from hsa import cache as _cache
from hsa.cache import exact_key
from hsa.context import current
from hsa.sandbox import layers
from hsa.sandbox.process import Sandbox, files_key, hook_key

__all__ = ["configure", "set_execution", "execution_enabled", "replay", "replay_many", "replay_items", "stats",
           "reset_stats", "close_all", "hook_set_key", "payload_key", "payload_digest", "COUNTERS", "MAX_WORKERS",
           "worker_for"]

#: Workers kept alive at once (one per hook set, least recently used stopped first): enough for the harnesses a
#: dataset interleaves (a worker and its bwrap are about 13 MiB resident, much of it shared; 4 made every record of
#: 8 round-robin harnesses start a worker: 120 starts for 120 records, 8 with 16).
MAX_WORKERS = 16

_STATE: dict[str, Any] = {"pid": None, "boxes": OrderedDict(), "enabled": True, "limits": {}}
# Bounded by bytes (hsa.cache); keys are digests, so memory stays flat however long the input.
_RESULTS = _cache.lru("hook.results", 48 << 20)  # (hook set, hook key, payload digest) -> outcome
#: Counters of hook replay in this process (:func:`stats`).
COUNTERS: dict[str, Any] = {"calls": 0, "cache_hits": 0, "executed": 0, "seconds": 0.0,
                            "worker_starts": 0, "start_seconds": 0.0}


def set_execution(enabled: bool) -> None:
    """Turn hook execution on or off in this process, whatever a run asks (``hsa augment --no-exec-hooks`` turns it
    off for its run only: the worker context's ``exec_hooks``)."""
    _STATE["enabled"] = bool(enabled)


def execution_enabled() -> bool:
    """Whether hooks may be executed now: this process allows it (:func:`set_execution`) and the current worker
    context's run does (:class:`hsa.context.WorkerContext` ``exec_hooks``)."""
    return bool(_STATE["enabled"]) and current().exec_hooks


def configure(*, time_limit: float = 2.0, memory_mb: int = 512, policy: str | None = None) -> None:
    """Set the limits (and, with ``policy``, the ``--hook-sandbox`` policy) of this process's workers; the running
    workers are stopped; cached results are kept (a policy change drops them)."""
    Sandbox(time_limit=time_limit, memory_mb=memory_mb)  # validates
    _STATE["limits"] = {"time_limit": time_limit, "memory_mb": memory_mb}
    if policy is not None and policy != layers.policy():
        layers.set_policy(policy)
        _RESULTS.clear()
    close_all()


def _boxes() -> OrderedDict:
    """This process's workers (a fork forgets its parent's: the parent stops them)."""
    if _STATE["pid"] != os.getpid():
        if _STATE["pid"] is not None:
            for box in [*_STATE["boxes"].values(), *filter(None, [_STATE.pop("spare", None)])]:
                box.forget()
            _RESULTS.clear()
        _STATE["boxes"] = OrderedDict()
        _STATE["sets"] = 0
        _STATE["pid"] = os.getpid()
    return _STATE["boxes"]


def worker_for(hook_set: bytes) -> Sandbox:
    """The worker of ``hook_set`` (:func:`hook_set_key`), started on its first call.

    Once a process has seen a second hook set, a spare worker is kept started: a fresh process that no hook has
    reached, confined while hsa works on, handed to the next new set (so many sets, as in a dataset whose records
    each carry their own hooks, do not wait for each start). It still serves one set only."""
    boxes = _boxes()
    box = boxes.get(hook_set)
    if box is None:
        spare = _STATE.pop("spare", None)
        box = boxes[hook_set] = spare if spare is not None else Sandbox(**_STATE["limits"])
        while len(boxes) > MAX_WORKERS:
            _, old = boxes.popitem(last=False)
            _retire(old)
        _STATE["sets"] = _STATE.get("sets", 0) + 1
        if _STATE["sets"] >= 2:
            _STATE["spare"] = Sandbox(**_STATE["limits"])
            _STATE["spare"].prestart()
    else:
        boxes.move_to_end(hook_set)
    return box


def _retire(box: Sandbox) -> None:
    COUNTERS["worker_starts"] += box.starts
    COUNTERS["start_seconds"] += box.start_seconds
    box.close()


def close_all() -> None:
    """Stop every worker of this process and remove their folders."""
    if _STATE["pid"] != os.getpid():
        _boxes()
        return
    boxes = _STATE["boxes"]
    while boxes:
        _, box = boxes.popitem()
        _retire(box)
    spare = _STATE.pop("spare", None)
    if spare is not None:
        spare.close()


atexit.register(close_all)


def stats() -> dict:
    """Counters of hook replay in this process: calls asked, cache hits, calls executed, seconds in the sandbox,
    worker starts and the seconds they took."""
    live = list(_boxes().values())
    return dict(COUNTERS, cached_results=len(_RESULTS),
                worker_starts=COUNTERS["worker_starts"] + sum(b.starts for b in live),
                start_seconds=COUNTERS["start_seconds"] + sum(b.start_seconds for b in live))


def reset_stats() -> None:
    for k in COUNTERS:
        COUNTERS[k] = 0.0 if isinstance(COUNTERS[k], float) else 0
    for b in _boxes().values():
        b.starts, b.start_seconds = 0, 0.0


def payload_key(obj: Any) -> bytes:
    """A cache key for a JSON value that tells apart any two values a hook could tell apart: key
    order (a hook may iterate a payload), ``1``/``1.0``/``True``, NaN/``None`` (see :func:`hsa.cache.exact_key`)."""
    k = exact_key(obj)
    return k if isinstance(k, bytes) else b"\x00" + k.encode("utf-8", "surrogatepass")


def payload_digest(obj: Any) -> bytes:
    """128-bit digest of :func:`payload_key` (what the result cache keeps, so its keys stay small)."""
    return hashlib.blake2b(payload_key(obj), digest_size=16).digest()


def hook_set_key(hooks: Sequence[dict]) -> bytes:
    """The key of the set ``hooks`` (a record's hooks): what their code and files are, in order."""
    parts = [[h.get("source", ""), h.get("entry"), h.get("style"), h.get("files"), h.get("path")]
             for h in hooks if isinstance(h, dict)]
    return hashlib.blake2b(payload_key(parts), digest_size=16).digest()


def _matches(hook: dict, payload: dict) -> bool:
    matcher = hook.get("matcher")
    if not isinstance(matcher, str) or matcher in ("", "*"):
        return True
    import re

    name = payload.get("tool_name")
    return isinstance(name, str) and re.fullmatch(matcher, name) is not None


def replay_many(items: Sequence[tuple[dict, dict]], *, hooks: Sequence[dict] | None = None) -> list[dict]:
    """Outcomes of running each ``(hook, payload)``; cached, and the misses run as one batch.

    ``hooks`` is the hook set the items come from (the hooks of their record): they run in that set's worker.
    By default the set is the distinct hooks of ``items``; a caller that mixes records' hooks passes each record's
    items with its own ``hooks``.
    """
    if hooks is None:
        seen: dict[int, dict] = {}
        for hook, _ in items:
            seen.setdefault(id(hook), hook)
        hooks = list(seen.values())
    return replay_items(items, None, hook_set_key(hooks))


def replay(hook: dict, payload: dict, *, hooks: Sequence[dict] | None = None) -> dict:
    """The outcome of running ``hook`` on ``payload`` in the sandbox (cached); ``hooks``: see :func:`replay_many`."""
    return replay_many([(hook, payload)], hooks=hooks)[0]


def replay_items(items: Sequence[tuple[dict, dict]], digests: Sequence[bytes | None] | None,
                 hook_set: bytes, *, stop_at_limit: bool = False) -> list[dict]:
    """:func:`replay_many` for the set ``hook_set``; ``digests[i]``, where not None, is :func:`payload_digest` of
    item i's payload, made once by a caller whose payloads many checks read. With ``stop_at_limit``, the calls
    after the first that a limit stops are not run: their outcome is None (see :meth:`Sandbox.run`)."""
    from hsa.hooks_model import entry_of, hook_style

    out: list[dict | None] = [None] * len(items)
    todo: list[int] = []
    calls: list[dict] = []
    keys: list[bytes] = []
    pending: dict[bytes, int] = {}  # the same call twice in one batch runs once
    dupes: list[tuple[int, int]] = []
    known_hooks: dict[int, tuple] = {}  # id(hook) -> entry, style, key: the items hold the hooks, so ids stay unique
    for i, (hook, payload) in enumerate(items):
        COUNTERS["calls"] += 1
        known = known_hooks.get(id(hook))
        if known is None:
            entry, style = entry_of(hook), hook_style(hook)
            known = known_hooks[id(hook)] = (entry, style, None if entry is None else
                                             hook_key(hook.get("source", ""), entry, style,
                                                      files_key(hook.get("files"), hook.get("path"))))
        entry, style, hkey = known
        if not _matches(hook, payload):
            out[i] = {"ok": True, "value": {"exit_code": 0, "stdout": "", "stderr": ""} if style == "script" else None,
                      "matched": False}
            continue
        if entry is None:
            out[i] = {"ok": False, "error": "no entry", "detail": "the hook has no entry and none can be inferred",
                      "limit": True}
            continue
        d = digests[i] if digests is not None else None
        key = hook_set + hkey.encode() + (d if d is not None else payload_digest(payload))
        hit = _RESULTS.get(key)
        if hit is not None:
            COUNTERS["cache_hits"] += 1
            out[i] = hit
            continue
        if key in pending:
            COUNTERS["cache_hits"] += 1
            dupes.append((i, pending[key]))
            continue
        pending[key] = i
        todo.append(i)
        keys.append(key)
        calls.append({"source": hook.get("source", ""), "entry": entry, "style": style, "payload": payload,
                      "files": hook.get("files"), "path": hook.get("path")})
    if calls:
        box = worker_for(hook_set)
        t0 = time.perf_counter()
        results = box.run(calls, stop_at_limit=stop_at_limit)
        COUNTERS["seconds"] += time.perf_counter() - t0
        COUNTERS["executed"] += sum(r is not None for r in results)
        for i, key, res in zip(todo, keys, results):
            out[i] = res
            if res is not None and res.get("error") != "sandbox":  # a limit is a verdict; a failed start is not
                _RESULTS.put(key, res)
    for i, j in dupes:
        out[i] = out[j]
    return out  # type: ignore[return-value]
