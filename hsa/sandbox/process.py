"""One hook worker: a confined Python process that runs hook calls sent over a pipe, one JSON line each.

A batch of calls is pipelined (requests are written while answers are read), so it costs about one round trip, not
one per call. The worker is started inside the layers of :mod:`hsa.sandbox.layers` and confines itself before it
reads a hook (:mod:`hsa.sandbox._worker`). Its environment is built from nothing (``PATH``, ``LANG``,
``HOME``/``TMPDIR`` in its own folder, ``PYTHONHASHSEED=0``), so no variable of hsa (tokens, keys) reaches it;
``-s -S -B -P`` is ``-I`` without ``-E``, which would ignore ``PYTHONHASHSEED`` and make set order (and so some
hooks' messages) change between runs.

The time limit is kept from outside: when an answer is late, hsa kills the worker's whole process group (it is a
session leader) with SIGKILL, so no hook can catch its stop and nothing it started outlives it. A hook that raises
gives an ``error`` outcome (part of its behaviour, compared like any output); one that times out, exceeds a limit or
kills the worker gives a ``limit`` outcome, and the calls after it go to a fresh worker.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.hooks_model import safe_relative_path
from hsa.sandbox import layers

__all__ = ["Sandbox", "LIMIT_ERRORS", "request_line", "hook_key", "files_key", "sweep_stale_homes"]

#: Outcome errors that mean the sandbox stopped the hook (the record is rejected), not that the hook raised.
LIMIT_ERRORS = ("timeout", "cpu limit", "memory limit", "crash", "output limit", "sandbox")

_HOME_PREFIX = "hsa-hook-"


@lru_cache(maxsize=1)
def _worker_source() -> str:
    return (Path(__file__).parent / "_worker.py").read_text(encoding="utf-8")


class Sandbox:
    """A worker process that runs hook calls inside the sandbox's layers; restarted when a call stops it.

    ``time_limit`` is per call (seconds, kept from outside), ``memory_mb`` the worker's address space,
    ``cpu_seconds`` the worker's whole CPU budget (a hard ``RLIMIT_CPU``: it ends a worker left running by a dead
    hsa). One ``Sandbox`` serves one set of hooks: :mod:`hsa.sandbox.pool` keeps one per hook set.
    """

    def __init__(self, *, time_limit: float = 2.0, memory_mb: int = 512, python: str | None = None,
                 cpu_seconds: int = 600):
        if time_limit <= 0:
            raise ValueError(f"time_limit must be positive (got {time_limit!r})")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be at least 64 (got {memory_mb!r}); the interpreter alone needs ~30 MiB")
        self.time_limit = float(time_limit)
        self.memory_mb = int(memory_mb)
        self.cpu_seconds = max(int(cpu_seconds), int(self.time_limit) + 1)
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self.loaded: set[str] = set()
        self.home: str | None = None
        self.home_fd: int | None = None
        self.folders: set[str] = set()  # sibling-file folders written into this worker's home
        self.layers: dict[str, str] = {}  # what the running worker reported applied
        self.ready = False  # the running worker's ready line was read
        self._spawned = 0.0  # when a prestarted worker was spawned (its start is timed from there)
        self.starts = 0
        self.calls = 0
        self.seconds = 0.0
        self.start_seconds = 0.0

    # -- process
    def prestart(self) -> None:
        """Start the worker without waiting for it: it confines itself while hsa works on (a spare worker that no
        hook has reached yet; its first call waits for its ready line)."""
        if self.proc is None:
            sweep_stale_homes()
            self._spawned = time.perf_counter()
            self._spawn()

    def _start(self) -> None:
        sweep_stale_homes()
        for _ in range(len(layers.LAYERS) + 1):
            t0 = self._spawned or time.perf_counter()
            if self.proc is None:
                self._spawn()
            self._spawned = 0.0
            failed = self._await_ready()
            self.start_seconds += time.perf_counter() - t0  # spawn to ready: the layers' cost is in here
            if failed is None:
                self.starts += 1
                self.ready = True
                return
            self._restart()
            layer, why = failed
            if layers.policy() == "require" or layer is None:
                raise layers.SandboxError(f"the hook worker could not be confined: {why}")
            layers.disable(layer, f"failed in the worker: {why}")  # best: go on without it, and say so
        raise layers.SandboxError("the hook worker could not be started")

    def _spawn(self) -> None:
        self.home = tempfile.mkdtemp(prefix=f"{_HOME_PREFIX}{os.getpid()}-")
        self.home_fd = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        plan = layers.spawn_plan(self.home, memory_mb=self.memory_mb, cpu_seconds=self.cpu_seconds)
        try:
            if plan.owner is not None:
                os.fchown(self.home_fd, plan.owner, plan.owner)
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": self.home,
                   "TMPDIR": self.home, "PYTHONHASHSEED": "0"}
            flags = ["-s", "-S", "-B"] + (["-P"] if sys.version_info >= (3, 11) else [])
            self.proc = subprocess.Popen([*plan.prefix, self.python, *flags, "-c", _worker_source(),
                                          json.dumps(plan.config)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         cwd=self.home, env=env, close_fds=True, pass_fds=plan.pass_fds,
                                         start_new_session=True)
        finally:
            for fd in plan.pass_fds:
                os.close(fd)
        os.set_blocking(self.proc.stdin.fileno(), False)  # requests are written as the pipe takes them
        self.loaded = set()
        self.folders = set()

    def _await_ready(self) -> tuple[str | None, str] | None:
        """Read the worker's first line; None when every layer it was asked for took, else (layer, why)."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        fd = proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + 30 + self.time_limit
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None, "no answer from the worker within 30 s of its start"
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                err = b""
                if select.select([proc.stderr.fileno()], [], [], 1)[0]:
                    err = os.read(proc.stderr.fileno(), 4096)
                text = err.decode("utf-8", "replace").strip().splitlines()
                ns = layers.status().on("namespaces")
                return ("namespaces" if ns else None), (f"the worker exited at its start: "
                                                       f"{text[-1] if text else 'no message'}")
            buf += chunk
        proc.stderr.close()
        line, _, rest = buf.partition(b"\n")
        assert not rest  # the worker answers nothing before it is asked
        ready = json.loads(line)["ready"]
        self.layers = ready
        names = {"landlock": "files", "seccomp": "syscalls", "identity": "identity", "limits": "limits",
                 "no_new_privs": "syscalls"}
        for key, result in ready.items():
            if result != "ok":
                return names.get(key), f"{key}: {result}"
        return None

    def close(self) -> None:
        """Stop the worker (its whole process group) and remove its folder."""
        self.ready, self._spawned = False, 0.0
        if self.proc is not None:
            self._kill(self.proc)
            self.proc = None
        if self.home_fd is not None:
            os.close(self.home_fd)
            self.home_fd = None
        if self.home:
            shutil.rmtree(self.home, ignore_errors=True)  # never follows a symbolic link planted in it
            self.home = None

    _restart = close

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        """SIGKILL the worker and everything in its process group, then reap the leader.

        Under bubblewrap the leader's child is the init of the worker's pid namespace: killing it first makes the
        kernel end every process of the namespace and bubblewrap exit after reaping it, so no zombie is handed to
        a pid 1 that may never reap it (containers). Then the whole group is killed (SIGKILL before the leader is
        reaped, so its id cannot have been reused)."""
        children = _children(proc.pid)
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if children:  # bubblewrap exits once its namespace's init is gone; a worker without bwrap is killed below
            try:     # (waiting here for a worker that was never told to stop cost a second per worker)
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for f in (proc.stdin, proc.stdout, proc.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        # the rest of the group (bwrap's children) dies asynchronously: wait until none is left, so that nothing
        # a hook started is running when close() returns (the id stays reserved while any member exists)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.002)

    def forget(self) -> None:
        """Drop this worker without stopping it: a forked child of hsa holds copies of the parent's workers, which
        only the parent stops."""
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if f is not None:
                    try:
                        f.close()
                    except OSError:
                        pass
        if self.home_fd is not None:
            os.close(self.home_fd)
        self.proc, self.home, self.home_fd = None, None, None

    # -- calls
    def run(self, calls: Sequence[dict], *, stop_at_limit: bool = False) -> list[dict | None]:
        """Run ``calls`` (``{"source", "entry", "style", "payload"}``, optionally ``files`` and ``path``) in order;
        one outcome each.

        An outcome is ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": ..., "detail": ...}``,
        with ``"limit": True`` when the sandbox stopped the hook.

        Calls are pipelined: requests are written while earlier answers are read, so a batch
        costs about one round trip instead of one per call. The worker still runs them one
        at a time, in order, each with its own limits and fresh namespace; when a call stops
        the worker (a limit or a crash), the calls after it go to a fresh worker, as they
        would one by one. With ``stop_at_limit`` they are not run at all (their outcome is None): a caller
        whose verdict the first limit decides does not wait for a hostile hook's every timeout.
        """
        out: list[dict | None] = [None] * len(calls)
        t0 = time.perf_counter()
        i, retried = 0, -1
        while i < len(calls):
            i, unsent = self._pipeline(calls, i, out)
            if stop_at_limit and i > 0 and (out[i - 1] or {}).get("limit"):
                break
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
        worker's home (by hsa, never through a link: see :func:`write_tree`); the hook runs as if it were the file
        ``path`` there (default ``hook.py``: ``__file__``), with the folder importable, so ``import rules`` and
        ``os.path.dirname(__file__)`` work as in its repository.
        """
        files = call.get("files") or None
        key = hook_key(call["source"], call["entry"], call["style"], files_key(files, call.get("path")))
        req: dict[str, Any] = {"k": key, "p": call["payload"]}
        if key not in self.loaded:
            req.update(src=call["source"], entry=call["entry"], style=call["style"])
            if files and self.home and self.home_fd is not None:  # one folder per set of files
                name = hashlib.sha256(files_key(files, None).encode()).hexdigest()[:24]
                folder = os.path.join(self.home, "hooks", name)
                if name not in self.folders:
                    write_tree(self.home_fd, ("hooks", name), files)
                    self.folders.add(name)
                rel = call.get("path") or "hook.py"
                req.update(dir=folder, file=os.path.join(folder, *rel.split("/")))
            self.loaded.add(key)
        return request_line(req)

    def _pipeline(self, calls: Sequence[dict], start: int, out: list) -> tuple[int, bool]:
        """Send ``calls[start:]`` to one worker and fill ``out`` in order until every call is answered
        or the worker must be replaced; returns the first call without an outcome and whether that
        call's request could not be written (the worker was gone before it)."""
        if self.proc is not None and self.ready and self.proc.poll() is not None:
            self._restart()
        if self.proc is None or not self.ready:
            self._start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
        n = len(calls)
        wait = self.time_limit
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
                try:
                    line = self._request(calls[nxt])
                except OSError as exc:  # the hook's files could not be written (a link where a folder should be)
                    self._restart()
                    out[answered] = {"ok": False, "error": "sandbox", "detail": f"hook files: {exc}", "limit": True}
                    return answered + 1, False
                pending += line
                queued += len(line)
                ends.append(queued)
                nxt += 1
            left = deadline - time.monotonic()
            if left <= 0:
                self._restart()
                out[answered] = {"ok": False, "error": "timeout", "detail": f"stopped after {self.time_limit:g} s",
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
                if code is not None and code < 0 and -code in (signal.SIGXCPU, signal.SIGKILL):
                    out[answered] = {"ok": False, "error": "cpu limit",
                                     "detail": f"the worker used its {self.cpu_seconds} s of CPU", "limit": True}
                else:
                    out[answered] = {"ok": False, "error": "crash", "detail": f"the worker died (exit status {code})",
                                     "limit": True}
                return answered + 1, False
            *lines, buf = (buf + chunk).split(b"\n")
            for line in lines:
                resp = _answer(line)
                if resp is None or answered >= n:  # the worker is the hook's: it may write anything
                    self._restart()
                    if answered < n:
                        out[answered] = {"ok": False, "error": "crash", "limit": True,
                                         "detail": "the worker broke its protocol (a hook wrote to it)"}
                        answered += 1
                    return answered, False
                if resp.get("lim"):
                    out[answered] = {"ok": False, "error": resp["e"], "detail": resp.get("d", ""), "limit": True}
                    answered += 1
                    if resp["e"] == "memory limit":  # the worker exits after it
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


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux ``/proc``; empty elsewhere or when it is gone)."""
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def _answer(line: bytes) -> dict | None:
    """One answer line of the worker, or None when it is not one (``{"ok": true, "v": ...}`` or ``{"ok": false,
    "e": str, ...}``)."""
    try:
        resp = json.loads(line)
    except ValueError:
        return None
    if not isinstance(resp, dict) or not isinstance(resp.get("ok"), bool):
        return None
    if (resp["ok"] and "v" not in resp) or (not resp["ok"] and not isinstance(resp.get("e"), str)):
        return None
    return resp


def request_line(req: dict) -> bytes:
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
def hook_key(source: str, entry: str | None, style: str, files: str = "") -> str:
    """The key of a hook's code in a worker (and in the result cache): its style, entry, source and files."""
    return hashlib.sha256(f"{style}\x00{entry}\x00{source}\x00{files}".encode()).hexdigest()[:32]


def files_key(files: dict | None, path: str | None) -> str:
    """What a hook's sibling files add to its key (``""`` without files)."""
    return _json.canonical({"files": files, "path": path}) if files else ""


def write_tree(root_fd: int, folder: Sequence[str], files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``folder`` of the directory open as ``root_fd``.

    Every step goes through a directory descriptor opened with ``O_NOFOLLOW``, every file is created with
    ``O_EXCL | O_NOFOLLOW``, and ``folder`` must not exist yet: a link the hook planted in its folder (which it may
    write) raises ``OSError`` instead of taking hsa's write elsewhere.
    """
    for rel, text in files.items():
        if not safe_relative_path(rel) or not isinstance(text, str):
            raise ValueError(f"hook file {rel!r}: expected a relative path inside the hook's folder and its text")
    opened: list[int] = []

    def enter(fd: int, name: str, create: bool) -> int:
        if create:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
        new = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        opened.append(new)
        return new

    try:
        fd = root_fd
        for i, name in enumerate(folder):
            if i == len(folder) - 1:
                os.mkdir(name, 0o755, dir_fd=fd)  # the set's own folder is new: FileExistsError otherwise
            fd = enter(fd, name, create=i < len(folder) - 1)
        base = fd
        for rel, text in files.items():
            *dirs, leaf = rel.split("/")
            d = base
            for name in dirs:
                d = enter(d, name, create=True)
            out = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=d)
            with os.fdopen(out, "w", encoding="utf-8") as fh:
                fh.write(text)
    finally:
        for fd in opened:
            os.close(fd)


_SWEPT: set[str] = set()


def sweep_stale_homes(*, again: bool = False) -> None:
    """Remove the worker folders (``$TMPDIR/hsa-hook-<pid>-*``) of hsa processes that are gone (killed before they
    could clean up); once per process and temporary folder, unless ``again`` (a pool's parent after its workers
    ended: those it terminated left theirs)."""
    tmp = tempfile.gettempdir()
    if tmp in _SWEPT and not again:
        return
    _SWEPT.add(tmp)
    for tries in (1, 0):
        stale = [path for path in glob.glob(os.path.join(glob.escape(tmp), _HOME_PREFIX + "*-*")) if _stale(path)]
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)  # never follows a symbolic link planted in it
        if not tries or not any(os.path.lexists(path) for path in stale):
            return
        time.sleep(0.1)  # a worker killed with its hsa a moment ago may still have been writing in its folder


def _stale(path: str) -> bool:
    """Whether ``path`` is the worker folder of an hsa process that is gone, of this user or of the workers'."""
    pid = os.path.basename(path)[len(_HOME_PREFIX):].split("-", 1)[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
        return False  # its hsa is still running
    except ProcessLookupError:
        pass
    except PermissionError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return os.path.isdir(path) and not os.path.islink(path) and st.st_uid in (os.geteuid(), layers.NOBODY)


try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None
