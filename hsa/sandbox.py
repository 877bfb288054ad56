"""Hook replay in a separate process, and the equivalence check of docs/design.md invariant 7.

The sandbox is one long-lived Python interpreter per hsa process that runs hook
calls sent over a pipe, one JSON line each, so thousands of calls share one
interpreter. A batch of calls is pipelined (requests are written while answers are
read), so it costs about one round trip, not one per call. Limits and isolation:

- a per-call wall-clock limit (``SIGALRM`` in the worker, and the parent kills the
  worker when an answer is late, e.g. a regular expression stuck in C code);
- a per-call CPU limit (``RLIMIT_CPU`` raised by the call's budget before each call,
  ``SIGXCPU`` stops it) and an address-space limit (``RLIMIT_AS``) for the worker;
- no core files, no file writes (``RLIMIT_FSIZE`` 0), few file descriptors, no new
  processes (``RLIMIT_NPROC`` 0 where the kernel enforces it);
- isolated mode: ``-s -S -B`` (and ``-P`` on 3.11+) with an environment built from
  nothing (``PATH``, ``LANG``, ``HOME``/``TMPDIR`` in a fresh empty folder, and
  ``PYTHONHASHSEED=0``) so no variable of the parent (API keys, tokens) reaches a
  hook. ``-I`` itself is not used because it implies ``-E``, which ignores
  ``PYTHONHASHSEED``: set iteration order, and so some hooks' messages, would then
  differ between runs and the output would not be deterministic.

Each call runs the hook's code (compiled once per worker) in a fresh namespace, so
no state leaks from one call to the next. A hook that raises gives an ``error``
outcome (part of its behaviour, compared like any output); a hook that times out,
exceeds a limit or kills the worker gives a ``limit`` outcome, which rejects the
record with the reason.

Results are cached per (hook source, entry, matcher, payload): every record that
shares a harness shares the source side of the check, and identical variant hooks
share the rest. Within one check, each distinct payload and each distinct output is
carried through the variant's mapping once (:class:`_Carrier`), and the payloads
generated from a source are made once for all its variants.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, deque
from functools import lru_cache

from hsa import cache as _cache
from hsa.cache import exact_key
from collections.abc import Sequence
from typing import Any

from hsa import _json
from hsa.hooks_model import safe_relative_path

__all__ = ["Sandbox", "sandbox", "configure", "replay", "replay_many", "check_hooks", "not_replayed", "set_execution",
           "execution_enabled", "stats", "reset_stats", "LIMIT_ERRORS", "NOT_REPLAYED_NOTE", "safe_relative_path"]

#: Outcome errors that mean the sandbox stopped the hook (the record is rejected), not that the hook raised.
LIMIT_ERRORS = ("timeout", "cpu limit", "memory limit", "crash", "output limit")

_WORKER = r'''
import builtins, io, json, os, resource, signal, sys, time, types

class _Stop(BaseException):
    def __init__(self, kind):
        self.kind = kind

def _alarm(signum, frame):
    raise _Stop("timeout")

def _xcpu(signum, frame):
    raise _Stop("cpu limit")

signal.signal(signal.SIGALRM, _alarm)
signal.signal(signal.SIGXCPU, _xcpu)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
LIMIT = float(sys.argv[1])
proto_in = os.fdopen(os.dup(0), "rb")
proto_out = os.fdopen(os.dup(1), "wb")
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
os.dup2(null, 2)
sys.stdin = io.StringIO("")
CODES = {}

def _agents_stub():
    try:
        import agents  # noqa: F401 (the real SDK, when installed)
        return
    except ImportError:
        pass
    m = types.ModuleType("agents")
    class _Base:
        def __class_getitem__(cls, item):
            return cls
    class RunHooks(_Base): pass
    class AgentHooks(_Base): pass
    class RunContextWrapper(_Base):
        def __init__(self, context=None):
            self.context = context
    class Agent(_Base):
        def __init__(self, name="assistant", **kw):
            self.name = name
            for k, v in kw.items():
                setattr(self, k, v)
    class Tool(_Base):
        def __init__(self, name="", description=""):
            self.name = name
            self.description = description
    class ToolContext(RunContextWrapper): pass
    for cls in (RunHooks, AgentHooks, RunContextWrapper, Agent, Tool, ToolContext):
        setattr(m, cls.__name__, cls)
    m.FunctionTool = Tool
    m.RunHooksBase = RunHooks
    m.AgentHooksBase = AgentHooks
    m.TContext = object
    sys.modules["agents"] = m
    lc = types.ModuleType("agents.lifecycle")
    lc.RunHooks, lc.AgentHooks = RunHooks, AgentHooks
    sys.modules["agents.lifecycle"] = lc

def _jsonable(v, depth=0):
    if depth > 50:
        return "<deep>"
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x, depth + 1) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_jsonable(x, depth + 1) for x in v), key=repr)
    return {"__object__": type(v).__name__}

def _call(req):
    key = req["k"]
    if key not in CODES:
        path = req.get("file") or os.path.join(os.getcwd(), "hook.py")
        CODES[key] = (compile(req["src"], path, "exec"), req["entry"], req["style"], path, req.get("dir"))
    code, entry, style, path, folder = CODES[key]
    payload = req["p"]
    out_buf, err_buf = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdout, sys.stderr = out_buf, err_buf
    if folder:  # the hook's sibling files: importable for this call only, fresh each call
        sys.path.insert(0, folder)
    try:
        return _run_hook(code, entry, style, path, payload, out_buf, err_buf)
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        if folder:
            sys.path.remove(folder)
            for name, mod in list(sys.modules.items()):
                f = getattr(mod, "__file__", None) or ""
                if f.startswith(folder + os.sep):
                    del sys.modules[name]

def _run_hook(code, entry, style, path, payload, out_buf, err_buf):
    if style == "script":
        sys.stdin = io.StringIO(json.dumps(payload))
        sys.argv = [path]
        ns = {"__name__": "__main__", "__builtins__": builtins, "__file__": path}
        code_ = 0
        try:
            exec(code, ns)
        except SystemExit as e:
            c = e.code
            if c is None:
                code_ = 0
            elif isinstance(c, int):
                code_ = c
            else:
                err_buf.write(str(c) + "\n")
                code_ = 1
        text = out_buf.getvalue()
        try:
            parsed = json.loads(text) if text.strip().startswith("{") else text
        except ValueError:
            parsed = text
        return {"exit_code": code_, "stdout": parsed, "stderr": err_buf.getvalue()}
    ns = {"__name__": "__hook__", "__builtins__": builtins, "__file__": path}
    if style == "method":
        _agents_stub()
    exec(code, ns)
    if style == "function":
        return ns[entry](payload)
    cls_name, _, meth = entry.partition(".")
    import inspect, asyncio
    obj = ns[cls_name]()
    fn = getattr(obj, meth)
    agents = sys.modules["agents"]
    ctx = agents.RunContextWrapper(payload.get("context"))
    ctx.tool_name = payload.get("tool_name")
    ctx.tool_arguments = json.dumps(payload.get("tool_input", {}))
    ctx.tool_call_id = payload.get("tool_call_id", "call_1")
    args = []
    params = list(inspect.signature(fn).parameters.values())
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if i == 0:
            args.append(ctx)
        elif p.name == "tool":
            args.append(agents.Tool(payload.get("tool_name", ""), payload.get("tool_description", "")))
        elif p.name in ("agent", "from_agent", "to_agent", "source"):
            args.append(agents.Agent(payload.get(p.name + "_name", payload.get("agent_name", "assistant"))))
        else:
            args.append(payload.get(p.name, payload.get("result")))
    ret = fn(*args)
    if inspect.iscoroutine(ret):
        ret = asyncio.run(ret)
    return {"return": ret, "context": ctx.context}

def main():
    while True:
        line = proto_in.readline()
        if not line:
            return
        req = json.loads(line)
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = used.ru_utime + used.ru_stime
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        want = int(cpu + LIMIT) + 1
        if hard == resource.RLIM_INFINITY or want <= hard:
            resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
        fatal = False
        try:
            signal.setitimer(signal.ITIMER_REAL, LIMIT)
            try:
                value = _call(req)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            resp = {"ok": True, "v": _jsonable(value)}
        except _Stop as e:
            resp = {"ok": False, "e": e.kind, "d": f"stopped after {LIMIT:g} s", "lim": True}
            fatal = e.kind == "cpu limit"
        except MemoryError:
            resp = {"ok": False, "e": "memory limit", "d": "the hook ran out of its memory limit", "lim": True}
            fatal = True
        except RecursionError as e:
            resp = {"ok": False, "e": "RecursionError", "d": str(e)[:200]}
        except BaseException as e:
            resp = {"ok": False, "e": type(e).__name__, "d": str(e)[:200]}
        try:
            data = json.dumps(resp, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError) as e:
            data = json.dumps({"ok": False, "e": "output limit", "d": str(e)[:200], "lim": True})
        proto_out.write(data.encode("utf-8") + b"\n")
        proto_out.flush()
        if fatal:
            return

main()
'''


def _limits(memory_mb: int) -> None:  # runs in the child before exec
    import resource

    os.setsid()
    mem = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    except (ValueError, OSError):
        pass


_ENV_KEEP = ("PATH",)


class Sandbox:
    """A worker process that runs hook calls with limits; restarted when a call kills it.

    ``time_limit`` is per call (seconds), ``memory_mb`` for the worker's address space.
    """

    def __init__(self, *, time_limit: float = 2.0, memory_mb: int = 512, python: str | None = None):
        if time_limit <= 0:
            raise ValueError(f"time_limit must be positive (got {time_limit!r})")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be at least 64 (got {memory_mb!r}); the interpreter alone needs ~30 MiB")
        self.time_limit = float(time_limit)
        self.memory_mb = int(memory_mb)
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self.loaded: set[str] = set()
        self.home: str | None = None
        self.starts = 0
        self.calls = 0
        self.seconds = 0.0

    # -- process
    def _start(self) -> None:
        self.home = tempfile.mkdtemp(prefix="hsa-hook-")
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": self.home,
               "TMPDIR": self.home, "PYTHONHASHSEED": "0"}
        flags = ["-s", "-S", "-B"] + (["-P"] if sys.version_info >= (3, 11) else [])
        self.proc = subprocess.Popen([self.python, *flags, "-c", _WORKER, repr(self.time_limit)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=self.home, env=env, close_fds=True,
                                     preexec_fn=lambda: _limits(self.memory_mb))
        os.set_blocking(self.proc.stdin.fileno(), False)  # requests are written as the pipe takes them
        self.loaded = set()
        self.starts += 1

    def close(self) -> None:
        """Stop the worker and remove its folder."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self._kill(proc)
        if self.home:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def _kill(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def _restart(self) -> None:
        if self.proc is not None:
            self._kill(self.proc)
            self.proc = None
        if self.home:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    # -- calls
    def run(self, calls: Sequence[dict]) -> list[dict]:
        """Run ``calls`` (``{"source", "entry", "style", "payload"}``) in order; one outcome each.

        An outcome is ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": ..., "detail": ...}``,
        with ``"limit": True`` when the sandbox stopped the hook.

        Calls are pipelined: requests are written while earlier answers are read, so a batch
        costs about one round trip instead of one per call. The worker still runs them one
        at a time, in order, each with its own limits and fresh namespace; when a call stops
        the worker (a limit or a crash), the calls after it go to a fresh worker, as they
        would one by one.
        """
        out: list[dict | None] = [None] * len(calls)
        t0 = time.perf_counter()
        i, retried = 0, -1
        while i < len(calls):
            i, unsent = self._pipeline(calls, i, out)
            if unsent:  # the worker was gone before it could read call i: one retry in a fresh worker
                if retried == i:
                    out[i] = {"ok": False, "error": "crash", "detail": "the sandbox worker could not be started",
                              "limit": True}
                    i += 1
                else:
                    retried = i
        self.seconds += time.perf_counter() - t0
        self.calls += len(calls)
        return out  # type: ignore[return-value]

    def _request(self, call: dict) -> bytes:
        """One request line; the hook's source travels only the first time this worker sees it.

        A hook with sibling files (``files``: relative path -> text) gets them written into a folder of the
        worker's home (the worker itself may not write files); the hook runs as if it were the file ``path``
        there (default ``hook.py``: ``__file__``), with the folder importable, so ``import rules`` and
        ``os.path.dirname(__file__)`` work as in its repository.
        """
        files = call.get("files") or None
        key = _hook_key(call["source"], call["entry"], call["style"], _files_key(files, call.get("path")))
        req: dict[str, Any] = {"k": key, "p": call["payload"]}
        if key not in self.loaded:
            req.update(src=call["source"], entry=call["entry"], style=call["style"])
            if files and self.home:  # one folder per set of files: a hook and its rewrite see the same __file__
                folder = os.path.join(self.home, "hooks", hashlib.sha256(_files_key(files, None).encode()).hexdigest()[:24])
                if not os.path.isdir(folder):
                    _write_tree(folder, files)
                name = call.get("path") or "hook.py"
                req.update(dir=folder, file=os.path.join(folder, *name.split("/")))
            self.loaded.add(key)
        return _request_line(req)

    def _pipeline(self, calls: Sequence[dict], start: int, out: list) -> tuple[int, bool]:
        """Send ``calls[start:]`` to one worker and fill ``out`` in order until every call is answered
        or the worker must be replaced; returns the first call without an outcome and whether that
        call's request could not be written (the worker was gone before it)."""
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self._restart()
            self._start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
        n = len(calls)
        wait = self.time_limit + max(1.0, self.time_limit)
        pending = bytearray()  # encoded requests not yet written
        ends: deque[int] = deque()  # stream offset where each queued request ends, in call order
        queued = written = 0
        nxt = start  # next call to encode
        sent = start  # calls [start, sent) are fully written
        broken = False
        answered = start
        buf = b""
        deadline = time.monotonic() + wait
        while answered < n:
            while nxt < n and len(pending) < _PIPE_AHEAD and not broken:
                line = self._request(calls[nxt])
                pending += line
                queued += len(line)
                ends.append(queued)
                nxt += 1
            left = deadline - time.monotonic()
            if left <= 0:
                self._restart()
                out[answered] = {"ok": False, "error": "timeout", "detail": f"no answer within {self.time_limit:g} s",
                                 "limit": True}
                return answered + 1, False
            readable, writable, _ = select.select([rfd], [wfd] if pending and not broken else [], [], left)
            if writable:
                try:
                    k = os.write(wfd, pending)
                except BlockingIOError:
                    k = 0
                except OSError:  # BrokenPipeError: the worker is gone; its end of file tells why
                    broken, k = True, 0
                if k:
                    del pending[:k]
                    written += k
                    while ends and ends[0] <= written:
                        ends.popleft()
                        sent += 1
            if not readable:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:  # the worker died
                if broken and sent <= answered:
                    self._restart()
                    return answered, True
                try:
                    code = proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = None
                self._restart()
                if code is not None and code < 0 and -code == 24:
                    out[answered] = {"ok": False, "error": "cpu limit", "detail": "stopped by RLIMIT_CPU",
                                     "limit": True}
                else:
                    out[answered] = {"ok": False, "error": "crash", "detail": f"the worker died (exit status {code})",
                                     "limit": True}
                return answered + 1, False
            *lines, buf = (buf + chunk).split(b"\n")
            for line in lines:
                resp = json.loads(line)
                if resp.get("lim"):
                    out[answered] = {"ok": False, "error": resp["e"], "detail": resp.get("d", ""), "limit": True}
                    answered += 1
                    if resp["e"] in ("memory limit", "cpu limit"):  # the worker exits after these
                        self._restart()
                        return answered, False
                elif resp["ok"]:
                    out[answered] = {"ok": True, "value": resp["v"]}
                    answered += 1
                else:
                    out[answered] = {"ok": False, "error": resp["e"], "detail": resp.get("d", "")}
                    answered += 1
                deadline = time.monotonic() + wait
        return answered, False


_PIPE_AHEAD = 1 << 16  # bytes of requests encoded ahead of the worker


def _request_line(req: dict) -> bytes:
    """``req`` as one JSON line; the worker reads it with ``json.loads``.

    orjson when its bytes decode to the same value: it writes NaN and infinities as
    ``null`` and refuses ints beyond 64 bits, so those requests (and any with a ``null``)
    take the standard library path.
    """
    if _orjson is not None:
        try:
            data = _orjson.dumps(req)
        except TypeError:
            pass
        else:
            if b"null" not in data:
                return data + b"\n"
    return json.dumps(req, ensure_ascii=False).encode("utf-8") + b"\n"


@lru_cache(maxsize=8192)
def _hook_key(source: str, entry: str | None, style: str, files: str = "") -> str:
    return hashlib.sha256(f"{style}\x00{entry}\x00{source}\x00{files}".encode()).hexdigest()[:32]


def _files_key(files: dict | None, path: str | None) -> str:
    """What a hook's sibling files add to its key (``""`` without files)."""
    return _json.canonical({"files": files, "path": path}) if files else ""


def _write_tree(folder: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        if not safe_relative_path(rel) or not isinstance(text, str):
            raise ValueError(f"hook file {rel!r}: expected a relative path inside the hook's folder and its text")
        target = os.path.join(folder, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)


try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

def _key(obj: Any) -> bytes:
    """A cache key for a JSON value that tells apart any two values a hook could tell apart: key
    order (a hook may iterate a payload), ``1``/``1.0``/``True``, NaN/``None`` (see :func:`hsa.cache.exact_key`)."""
    k = exact_key(obj)
    return k if isinstance(k, bytes) else b"\x00" + k.encode("utf-8", "surrogatepass")


def _digest(obj: Any) -> bytes:
    """128-bit digest of :func:`_key` (what the result cache keeps, so its keys stay small)."""
    return hashlib.blake2b(_key(obj), digest_size=16).digest()


# ---------------------------------------------------------------------------- process-wide sandbox and cache

_STATE: dict[str, Any] = {"pid": None, "box": None, "enabled": True}
# Bounded by bytes (hsa.cache); keys are digests, so memory stays flat however long the input.
_RESULTS = _cache.lru("hook.results", 48 << 20)  # (hook key, payload digest) -> result
_VERDICTS = _cache.lru("hook.verdicts", 8 << 20)  # whole checks, by everything they read
#: (source hook, variant hook, mapping steps, masked?, payload) -> True: the pair was checked equivalent on the
#: payload. Records that share a harness and a pool slot share most of their generated payloads (from the tool
#: schemas and skills), so each of those is mapped and compared once per harness variant, not once per record.
_EQUIVALENT = _cache.lru("hook.equivalent", 16 << 20)
_STATS = {"calls": 0, "cache_hits": 0, "executed": 0, "seconds": 0.0, "verdict_hits": 0}


def set_execution(enabled: bool) -> None:
    """Turn hook execution on or off in this process (``hsa augment --no-exec-hooks`` turns it off)."""
    _STATE["enabled"] = bool(enabled)


def execution_enabled() -> bool:
    """Whether hooks may be executed in this process."""
    return bool(_STATE["enabled"])


def sandbox() -> Sandbox:
    """This process's sandbox (a fresh one after a fork)."""
    if _STATE["pid"] != os.getpid() or _STATE["box"] is None:
        if _STATE["pid"] != os.getpid():
            _RESULTS.clear()
        _STATE["box"] = Sandbox(**_STATE.get("limits", {}))
        _STATE["pid"] = os.getpid()
    return _STATE["box"]


def configure(*, time_limit: float = 2.0, memory_mb: int = 512) -> None:
    """Set the limits of this process's sandbox (the running worker is replaced; cached results are kept)."""
    Sandbox(time_limit=time_limit, memory_mb=memory_mb)  # validates
    _STATE["limits"] = {"time_limit": time_limit, "memory_mb": memory_mb}
    box = _STATE.get("box")
    if box is not None and _STATE.get("pid") == os.getpid():
        box.close()
    _STATE["box"] = None


@atexit.register
def _close_sandbox() -> None:
    box = _STATE.get("box")
    if box is not None and _STATE.get("pid") == os.getpid():
        box.close()


def stats() -> dict:
    """Counters of hook replay in this process: calls asked, cache hits, calls executed, seconds in the sandbox."""
    return dict(_STATS, cached_results=len(_RESULTS))


def reset_stats() -> None:
    for k in _STATS:
        _STATS[k] = 0.0 if k == "seconds" else 0


def _matches(hook: dict, payload: dict) -> bool:
    matcher = hook.get("matcher")
    if not isinstance(matcher, str) or matcher in ("", "*"):
        return True
    import re

    name = payload.get("tool_name")
    return isinstance(name, str) and re.fullmatch(matcher, name) is not None


def replay_many(items: Sequence[tuple[dict, dict]]) -> list[dict]:
    """Outcomes of running each ``(hook, payload)``; cached, and the misses run as one batch."""
    return _replay(items, None)


def _replay(items: Sequence[tuple[dict, dict]], digests: Sequence[bytes | None] | None) -> list[dict]:
    """:func:`replay_many`; ``digests[i]``, where not None, is ``_digest`` of item i's payload, made once by the
    caller for payloads that many checks read (:func:`_payloads_for`)."""
    from hsa.hooks_model import entry_of, hook_style

    out: list[dict | None] = [None] * len(items)
    todo: list[int] = []
    calls: list[dict] = []
    keys: list[tuple[str, bytes]] = []
    pending: dict[tuple[str, bytes], int] = {}  # the same call twice in one batch runs once
    dupes: list[tuple[int, int]] = []
    hooks: dict[int, tuple] = {}  # id(hook) -> entry, style, key: the items hold the hooks, so ids stay unique
    for i, (hook, payload) in enumerate(items):
        _STATS["calls"] += 1
        known = hooks.get(id(hook))
        if known is None:
            entry, style = entry_of(hook), hook_style(hook)
            known = hooks[id(hook)] = (entry, style, None if entry is None else
                                       _hook_key(hook.get("source", ""), entry, style,
                                                 _files_key(hook.get("files"), hook.get("path"))))
        entry, style, hook_key = known
        if not _matches(hook, payload):
            out[i] = {"ok": True, "value": {"exit_code": 0, "stdout": "", "stderr": ""} if style == "script" else None,
                      "matched": False}
            continue
        if entry is None:
            out[i] = {"ok": False, "error": "no entry", "detail": "the hook has no entry and none can be inferred",
                      "limit": True}
            continue
        d = digests[i] if digests is not None else None
        key = hook_key.encode() + (d if d is not None else _digest(payload))
        hit = _RESULTS.get(key)
        if hit is not None:
            _STATS["cache_hits"] += 1
            out[i] = hit
            continue
        if key in pending:
            _STATS["cache_hits"] += 1
            dupes.append((i, pending[key]))
            continue
        pending[key] = i
        todo.append(i)
        keys.append(key)
        calls.append({"source": hook.get("source", ""), "entry": entry, "style": style, "payload": payload,
                      "files": hook.get("files"), "path": hook.get("path")})
    if calls:
        box = sandbox()
        t0 = time.perf_counter()
        results = box.run(calls)
        _STATS["seconds"] += time.perf_counter() - t0
        _STATS["executed"] += len(calls)
        for i, key, res in zip(todo, keys, results):
            out[i] = res
            if not res.get("limit"):
                _RESULTS.put(key, res)
    for i, j in dupes:
        out[i] = out[j]
    return out  # type: ignore[return-value]


def replay(hook: dict, payload: dict) -> dict:
    """The outcome of running ``hook`` on ``payload`` in the sandbox (cached)."""
    return replay_many([(hook, payload)])[0]


# ---------------------------------------------------------------------------- invariant 7


_REWORDED = "hook messages reworded by hook.message_format: "  # transforms.hook.REWORDED_NOTE


def _mask_messages(value: Any) -> Any:
    from hsa.codemods.analysis import MESSAGE_KEYS

    if isinstance(value, dict):
        return {k: ("<message>" if k in MESSAGE_KEYS or k == "stderr" else _mask_messages(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_messages(v) for v in value]
    return value


@lru_cache(maxsize=1)
def _updated_marks() -> tuple[bytes, ...]:
    from hsa.codemods.analysis import UPDATED_KEYS

    return tuple(_orjson.dumps(k) for k in sorted(UPDATED_KEYS)) if _orjson is not None else ()


class _Carrier:
    """One variant's mapping steps, applied to many payloads and outputs.

    Each step's text table is made once, and each distinct payload (and each distinct
    output along the same tools) is carried through the steps once, however many hooks
    read it: the memo keys are exact (:func:`hsa.cache.exact_key`), so a memo hit is a value that
    the per-pair mapping would have produced too.
    """

    __slots__ = ("steps", "tables", "payloads", "outputs")

    def __init__(self, steps: list[dict]):
        from hsa.hooks_model import text_map

        self.steps = steps
        self.tables = [text_map(step) for step in steps]
        self.payloads: dict[bytes | str | tuple, tuple[dict, tuple]] = {}
        self.outputs: dict[tuple, dict] = {}

    def payload(self, payload: dict, digest: bytes | None = None) -> tuple[dict, tuple]:
        """``payload`` after every step, and the tool it names before each step; ``digest``: its :func:`_digest`,
        where the caller has it (a key as exact as the payload's own)."""
        from hsa.hooks_model import map_payload

        key = ("d", digest) if digest is not None else exact_key(payload)
        hit = self.payloads.get(key)
        if hit is not None:
            return hit
        p = payload
        tool = p.get("tool_name")
        if not (isinstance(tool, str) and isinstance(p.get("tool_input"), dict)):
            # no tool call to carry: only the text of tool and skill renames changes, never tool_name or tool_input
            for step, table in zip(self.steps, self.tables):
                if step.get("op") in ("tools", "skills"):
                    p = map_payload(p, step, table=table)
            tools = (tool if isinstance(tool, str) else None,) * len(self.steps)
        else:
            names = []
            for step, table in zip(self.steps, self.tables):
                tool = p.get("tool_name")
                names.append(tool if isinstance(tool, str) else None)
                op = step.get("op")
                if op in ("opaque", "restore") or (op in ("params", "values") and not (
                        isinstance(tool, str) and isinstance(p.get("tool_input"), dict) and tool == step["tool"])):
                    continue  # map_payload would return an equal copy: a step for another tool changes no text
                p = map_payload(p, step, table=table)
            tools = tuple(names)
        hit = self.payloads[key] = (p, tools)
        return hit

    def expected(self, outcome: dict, tools: tuple) -> dict:
        """What the variant's hook must return: the source hook's ``outcome`` carried through the steps."""
        from hsa.hooks_model import map_output

        if not outcome.get("ok"):
            return {"ok": False, "error": outcome.get("error")}
        value = outcome.get("value")
        if value is None or type(value) in (bool, int, float):  # map_output leaves these as they are
            return {"ok": True, "value": value}
        vkey = exact_key(value)
        # the tools matter only to a rewritten tool input (map_output's UPDATED_KEYS)
        key = (vkey, tools if not isinstance(vkey, bytes) or any(m in vkey for m in _updated_marks()) else None)
        hit = self.outputs.get(key)
        if hit is None:
            for step, table, tool in zip(self.steps, self.tables, tools):
                value = map_output(value, step, tool, table=table)
            hit = self.outputs[key] = {"ok": True, "value": value}
        return hit


def _observed(outcome: dict) -> dict:
    if not outcome.get("ok"):
        return {"ok": False, "error": outcome.get("error")}
    return {"ok": True, "value": outcome.get("value")}


def _short(value: Any, n: int = 160) -> str:
    text = _json.dumps(value)
    return text if len(text) <= n else text[:n - 3] + "..."


_SOURCE_KEYS = ("tools", "skills", "skill_tool", "messages", "hook_events", "hooks")


def check_hooks(source: dict, variant: dict, *, execute: bool = True, max_payloads: int = 96) -> list:
    """Invariant 7 for ``variant`` made from ``source`` (internal records): a list of :class:`hsa.violations.Violation`.

    Each hook of the variant runs on the mapped payloads — the recorded hook events
    and payloads generated from the source's tool schemas, trajectory and skills —
    and must return the mapped output of the source's hook (messages excepted for
    hooks reworded by ``hook.message_format``). The variant's recorded hook events
    must also be what its hooks return. A hook that times out, exceeds a limit or
    crashes rejects the variant. ``execute=False`` (``--no-exec-hooks``) checks nothing.
    Verdicts are cached by everything the check reads, so records that repeat a
    harness, a trajectory and a mapping are checked once; the generated payloads are
    cached by the source's digest, so the variants of one record make them once.
    """
    from hsa.violations import Violation

    if not execute or not execution_enabled():
        return []
    src_hooks = source.get("hooks") or []
    var_hooks = variant.get("hooks") or []
    if not src_hooks and not var_hooks:
        return []
    if len(src_hooks) != len(var_hooks):
        return [Violation("hooks", "hook count changed", f"source has {len(src_hooks)} hooks, variant {len(var_hooks)}")]
    steps = list(variant["mapping"][len(source["mapping"]):])
    source_part = _key([source.get(k) for k in _SOURCE_KEYS])  # a whole JSON value: the concatenation is unambiguous
    verdict_key = hashlib.sha256(source_part + _key([var_hooks, variant.get("hook_events"), steps,
                                                     variant.get("notes", [])[len(source["notes"]):],
                                                     max_payloads])).digest()
    cached = _VERDICTS.get(verdict_key)
    if cached is not None:
        _STATS["verdict_hits"] += 1
        return list(cached)
    out = _check_hooks(source, variant, src_hooks, var_hooks, steps, max_payloads,
                       hashlib.sha256(source_part).digest())
    if not any(v.reason.startswith("hook ") and v.reason[5:] in LIMIT_ERRORS for v in out):
        _VERDICTS.put(verdict_key, list(out), 200 * len(out) + 100)
    return out


#: Errors that say a hook cannot run here (a module, a file or a name its folder would give it is missing),
#: not what it decided: a method hook that raises on every payload is replayed unless it raises one of these
#: (for the Agents SDK an exception is how a hook blocks).
_SETUP_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "NameError", "FileNotFoundError", "OSError",
                           "NotADirectoryError", "IsADirectoryError", "PermissionError"})
#: The note on each output row of a record with a hook that was not replayed (``hook not replayed: 'name': why``).
NOT_REPLAYED_NOTE = "hook not replayed: "


def not_replayed(record: dict, *, max_payloads: int = 96) -> dict[str, str]:
    """The hooks of ``record`` that cannot run on its own payloads (invariant 7 cannot be checked for them):
    hook name -> why. ``{}`` when every hook decides something on some payload, or when execution is off.

    A hook is not replayed when it has no payload (none recorded, none generated for its event), when no payload
    matches its matcher, or when it fails on every payload before deciding anything: a function or script hook
    that raises on each (a missing sibling module or package, ``__file__`` of a folder that is not there), a
    method hook that raises one of the setup errors on each. The calls are the ones :func:`check_hooks` makes
    for the source side, so they are cached for it.
    """
    from hsa.hooks_model import hook_style

    hooks = record.get("hooks") or []
    if not hooks or not execution_enabled():
        return {}
    digest = hashlib.sha256(_key([record.get(k) for k in _SOURCE_KEYS])).digest()
    out: dict[str, str] = {}
    items: list[tuple[dict, dict]] = []
    spans: list[tuple[dict, int, int]] = []
    digests: list[bytes] = []
    for h in hooks:
        payloads, keys = _payloads_for(record, h, digest, max_payloads)
        if not payloads:
            out[h.get("name", "?")] = f"no payloads (none recorded, none generated for event {h.get('event', '')!r})"
            continue
        spans.append((h, len(items), len(items) + len(payloads)))
        items.extend((h, p) for p in payloads)
        digests.extend(keys)
    outcomes = _replay(items, digests) if items else []
    for h, a, b in spans:
        ran = [o for o in outcomes[a:b] if o.get("matched", True)]
        if not ran:
            out[h.get("name", "?")] = f"no payload matches its matcher {h.get('matcher')!r}"
        elif not any(o.get("ok") or o.get("limit") for o in ran):
            if hook_style(h) != "method" or all(o.get("error") in _SETUP_ERRORS for o in ran):
                first = ran[0]
                out[h.get("name", "?")] = f"{first.get('error')}: {first.get('detail', '')}"[:300]
    return out


_PAYLOADS = _cache.lru("hook.payloads", 32 << 20)  # generated payloads, by source digest and hook


def _payloads_for(source: dict, hook: dict, source_digest: bytes, limit: int) -> tuple[list[dict], list[bytes]]:
    """``generated_payloads(source, hook, limit=limit)``, made once per source and hook (a private copy: read only),
    and the :func:`_digest` of each: the source's variants and :func:`not_replayed` key their checks with it."""
    from hsa.hooks_model import generated_payloads, hook_style

    # generated_payloads reads the source's hook_events, skills, skill_tool, tools and messages
    # (all in the digest) and the hook's event, name and style
    key = (source_digest, hook.get("event", ""), hook.get("name"), hook_style(hook), limit)
    hit = _PAYLOADS.get(key)
    if hit is None:  # each payload's key is its exact JSON where it can be: parsed, it is the private copy
        made = generated_payloads(source, hook, limit=limit)
        keys = [_key(p) for p in made]  # sized by these: a walk of the payloads would cost as much as a miss
        payloads = [_orjson.loads(k) if k[:1] != b"\x00" else _json.copy(p) for k, p in zip(keys, made)]
        hit = _PAYLOADS.put(key, (payloads, [hashlib.blake2b(k, digest_size=16).digest() for k in keys]),
                            300 + sum(3 * len(k) + 120 for k in keys))
    return hit


def _check_hooks(source: dict, variant: dict, src_hooks: list, var_hooks: list, steps: list,
                 max_payloads: int, source_digest: bytes) -> list:
    from hsa.violations import Violation

    reworded = set()
    for note in variant.get("notes", [])[len(source.get("notes", [])):]:
        if note.startswith(_REWORDED):  # left by hook.message_format: messages changed on purpose
            reworded.add(note[len(_REWORDED):].strip("'\""))
    carrier = _Carrier(steps)
    work: list[tuple[dict, dict]] = []
    checks: list[tuple[str, int, dict, tuple | None, dict | None]] = []  # (kind, hook index, payload, tools, event)
    known: list[bytes | None] = []  # per check: its key in _EQUIVALENT (equivalence checks)
    keys: list[bytes | None] = []  # per work item: its payload's digest, where made already
    steps_key = None
    for hi, (a, b) in enumerate(zip(src_hooks, var_hooks)):
        same = a.get("source") == b.get("source") and a.get("entry") == b.get("entry") and \
            a.get("matcher") == b.get("matcher")
        if same and not steps:
            continue
        if steps_key is None:  # a restore step's patch is read by neither the payload nor the output mapping
            steps_key = _key([{"op": "restore"} if s.get("op") == "restore" else s for s in steps])
        # everything the comparison of a and b on one payload reads, but the payload
        pair = hashlib.blake2b(_key([a, b, a.get("name") in reworded]) + steps_key, digest_size=16).digest()
        payloads, digests = _payloads_for(source, a, source_digest, max_payloads)
        for p, d in zip(payloads, digests):
            key = pair + d
            if _EQUIVALENT.get(key):
                continue  # checked equivalent on this payload before (another record of the harness variant)
            mapped, tools = carrier.payload(p, d)
            if same and mapped == p:  # the same hook on the same payload: equivalent, and a function of the key
                _EQUIVALENT.put(key, True, 120)
                continue
            checks.append(("equiv", hi, p, tools, None))
            known.append(key)
            work.append((a, p))
            work.append((b, mapped))
            keys.append(d)
            keys.append(None)
    events = [(i, ev) for i, ev in enumerate(variant.get("hook_events") or ())]
    src_events = source.get("hook_events") or []
    names_v = {h.get("name"): h for h in var_hooks}
    names_s = {h.get("name"): h for h in src_hooks}
    for i, ev in events:
        if i >= len(src_events) or not isinstance(ev.get("payload"), dict) or "decision" not in ev:
            continue
        sev = src_events[i]
        hv, hs = names_v.get(ev.get("hook")), names_s.get(sev.get("hook"))
        if hv is None or hs is None or not isinstance(sev.get("payload"), dict):
            continue
        checks.append(("event", i, sev["payload"], None, ev))
        known.append(None)
        work.append((hs, sev["payload"]))
        work.append((hv, ev["payload"]))
        keys.append(None)
        keys.append(None)
    if not work:
        return []
    outcomes = _replay(work, keys)
    out: list = []
    bad_hooks: set = set()
    for k, (kind, idx, p, tools, ev) in enumerate(checks):
        oa, ob = outcomes[2 * k], outcomes[2 * k + 1]
        for o in (oa, ob):
            if o.get("limit"):
                hook = src_hooks[idx] if kind == "equiv" else {"name": ev.get("hook")}
                return [Violation("hooks", f"hook {o['error']}", f"hook {hook.get('name')!r}: {o.get('detail', '')} "
                                                                   f"on payload {_short(p)}")]
        if kind == "equiv":
            if idx in bad_hooks:
                continue
            exp, got = carrier.expected(oa, tools), _observed(ob)
            name = src_hooks[idx].get("name")
            if name in reworded:
                exp, got = _mask_messages(exp), _mask_messages(got)
            if not _json.strict_equal(exp, got):
                bad_hooks.add(idx)
                out.append(Violation("hooks", "rewritten hook behaves differently",
                                     f"hook {name!r} on payload {_short(p)}: expected {_short(exp)}, "
                                     f"got {_short(got)}"))
            else:
                _EQUIVALENT.put(known[k], True, 120)
        else:
            sev = src_events[idx]
            hs, hv = names_s.get(sev.get("hook")), names_v.get(ev.get("hook"))
            if not oa.get("ok") or not _json.strict_equal(_event_value(hs, oa), sev.get("decision")):
                continue  # the source's event was not what its hook returns: nothing to keep
            if not ob.get("ok") or not _json.strict_equal(_event_value(hv, ob), ev.get("decision")):
                out.append(Violation("hooks", "hook event does not match its hook",
                                     f"hook_events[{idx}] ({ev.get('hook')!r}): recorded {_short(ev.get('decision'))}, "
                                     f"the variant's hook returns {_short(ob.get('value'))}"))
    return out


def _event_value(hook: dict, outcome: dict) -> Any:
    """What a recorded event's ``decision`` is compared with: the hook's return value, or its decision for scripts."""
    from hsa.hooks_model import decision_of, hook_style

    if hook_style(hook) == "script":
        return decision_of(hook, outcome)
    return outcome.get("value")
