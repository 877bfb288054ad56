"""The local engine's worker processes, with each harness's records sent to the same worker.

A record's harness-level work (its slot plans, hook analyses, compiled validators: :mod:`hsa.plans`) is done once
per process that meets the harness. A pool that hands batches to whichever worker is free makes every worker meet
every harness, so each builds every plan. :class:`WorkerSet` instead routes each input line by a key of its
harness (:func:`harness_key`, read from the raw line in this process) to one worker, which keeps serving that
harness; a harness that alone would overload its worker spills to the least loaded one (each worker then builds
its own plans: the same bytes). Where a line goes changes no output byte: a record's rows depend on the record,
the recipe and the seed alone, and the rows come back in input order (:meth:`WorkerSet.results`).

Each worker has its own task queue; results come back on one queue. A worker that dies (killed, out of memory)
ends the run with an error naming it, where a ``multiprocessing.Pool`` would have waited for its lost task
forever.

What the workers do is a *job*: :class:`AugmentJob` (``hsa augment``), :class:`CanonicalizeJob` (``hsa canonicalize``)
and :class:`hsa.validate.ValidateJob` (``hsa validate``: each source's rows on one worker, where its variants find
it). A job has ``setup()`` (once in each worker), ``work(batch)`` (one tuple per input item, its position first),
``key(item)`` and ``route(keys, workers, sticky)`` (which worker takes each item of a chunk), and ``lost`` (what a
dead worker's error says is kept).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import queue
import signal
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hsa.context import GC_THRESHOLDS
from hsa.io import InputLine

__all__ = ["WorkerSet", "WorkerError", "AugmentJob", "CanonicalizeJob", "harness_key", "route", "split", "route_by_hash",
           "source_key", "process_context"]

#: The raw keys of a record's harness that :func:`harness_key` reads (the prompt's structure, which
#: :func:`hsa.pipeline.record.harness_digest` also covers, is left out: a coarser key routes the same way).
_KEYS = ("tools", "skills", "skill_tool", "hooks", "harness")

#: How many harness keys :func:`route` remembers before it starts again (a key only routes).
STICKY_KEYS = 1 << 16


class WorkerError(RuntimeError):
    """A worker process died, or its work raised (the worker's traceback is in the message)."""


def harness_key(item: InputLine) -> bytes | None:
    """A key of ``item``'s harness as written in its line (its tools, skills, skill tool and hooks), or None where
    the line does not parse as a JSON object (it is routed by position; its worker rejects it). Two lines of one
    harness written the same way get one key; the key only routes, so two writings of one harness cost a plan
    each, never a byte."""
    from hsa import _json

    data = item.data
    try:
        raw = _json.loads(data) if isinstance(data, (bytes, bytearray, str)) else data
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    try:
        text = _json.dumps_bytes([raw.get(k) for k in _KEYS])
    except (TypeError, ValueError):
        return None
    return hashlib.blake2b(text, digest_size=12).digest()


def route(keys: list[bytes | None], workers: int, sticky: dict, *, slack: float = 1.25) -> list[int]:
    """The worker of each line of one chunk, from their harness keys: a key keeps the worker it was first given
    (``sticky``, kept across chunks) while that worker holds under ``slack`` times its even share of the chunk;
    a new key, a line without a key, and a key whose worker is full go to the worker with the fewest lines.
    Deterministic: the same keys give the same workers."""
    if len(sticky) > STICKY_KEYS:  # inputs of many own harnesses: forget the old ones (they route, nothing more)
        sticky.clear()
    cap = max(1, int(slack * len(keys) / workers + 0.999))
    load = [0] * workers
    out = []
    for key in keys:
        w = sticky.get(key) if key is not None else None
        if w is None or load[w] >= cap:
            w = min(range(workers), key=load.__getitem__)
            if key is not None and key not in sticky:
                sticky[key] = w
        load[w] += 1
        out.append(w)
    return out


def split(items: list, workers: int, sticky: dict, *, key: Callable = harness_key, by: Callable = route) -> list[list]:
    """``items`` by the worker that takes each (``by`` of each one's ``key``: :func:`route`, ``sticky`` kept across
    chunks), each worker's items in input order: what the local engine's worker set and the Ray engine's driver
    send each worker or actor."""
    per: list[list] = [[] for _ in range(workers)]
    for item, w in zip(items, by([key(item) for item in items], workers, sticky)):
        per[w].append(item)
    return per


def route_by_hash(keys: list[bytes | None], workers: int, sticky: dict | None = None) -> list[int]:
    """The worker of each line from its key alone (the key's hash modulo ``workers``): a key never changes worker,
    however far apart its lines are; lines without a key go to the worker with the fewest lines of the chunk.
    For a job whose lines depend on earlier lines of the same key (``hsa validate``: a variant on its source)."""
    load = [0] * workers
    out = []
    for key in keys:
        w = int.from_bytes(key[:8], "little") % workers if key is not None else min(range(workers),
                                                                                   key=load.__getitem__)
        load[w] += 1
        out.append(w)
    return out


def source_key(record: object) -> bytes | None:
    """A routing key of a row's ``source_id`` (a row read as a dict), or None where it has none: the key of
    ``hsa validate`` and ``hsa canonicalize``, whose rows of one source go to one worker (:func:`route_by_hash`)."""
    sid = record.get("source_id") if isinstance(record, dict) else None
    return hashlib.blake2b(sid.encode("utf-8", "surrogatepass"), digest_size=12).digest() if isinstance(sid, str) \
        else None


def process_context():
    """The multiprocessing context of the worker set: fork, spawn on macOS (where fork is unsafe)."""
    import multiprocessing as mp

    return mp.get_context("spawn" if sys.platform == "darwin" else "fork")


class AugmentJob:
    """``hsa augment``'s work: each worker set up once with the run's recipe and options
    (:func:`hsa.pipeline.executor.init_worker`), each batch augmented by :func:`hsa.pipeline.executor.work`; lines
    routed by harness, a dominant harness spilling to other workers."""

    lost = "the shards finished before it are kept: rerun the same command to resume"

    def __init__(self, recipe_config: dict, options: dict, modules: tuple[str, ...]):
        self.recipe_config, self.options, self.modules = recipe_config, options, modules

    def setup(self) -> None:
        from hsa.pipeline.executor import init_worker

        init_worker(self.recipe_config, self.options, modules=self.modules)

    def work(self, batch: list[InputLine]) -> list:
        from hsa.pipeline import executor

        return executor.work(batch)

    key = staticmethod(harness_key)
    route = staticmethod(route)


class CanonicalizeJob:
    """``hsa canonicalize``'s work: each row mapped back to its source harness and checked
    (:func:`hsa.pipeline.record.canonicalize_checked`), or the reason it cannot be. Rows of one ``source_id`` go to
    one worker (their hooks' analyses are shared); any routing gives the same output."""

    lost = "nothing is written for the rows it held"

    def setup(self) -> None:
        gc.set_threshold(*GC_THRESHOLDS)

    def work(self, batch: Iterable[tuple]) -> Iterator[tuple]:
        """``(position, line, record or its RecordError)`` -> ``(position, line, record mapped back or None, the
        reason it is not)``, lazily."""
        from hsa.pipeline.record import canonicalize_checked
        from hsa.records import RecordError

        for pos, line, rec in batch:
            try:
                if isinstance(rec, RecordError):
                    raise rec
                yield pos, line, canonicalize_checked(rec), None
            except (RecordError, ValueError) as exc:
                yield pos, line, None, str(exc)

    @staticmethod
    def key(item) -> bytes | None:
        return source_key(item[2])

    route = staticmethod(route_by_hash)


def _serve(tasks, results, job) -> None:
    """A worker's life: set up (:func:`_as_pool_process`, then the job's ``setup``), then run each batch of its task
    queue and put what the job's ``work`` gives, or the error, on the result queue, until ``None``."""
    try:
        _as_pool_process()
        job.setup()
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, which stops the run
        results.put((-1, None, _portable(exc)))
        return
    while True:
        try:
            item = tasks.get()
        except BaseException as exc:  # noqa: BLE001 - a batch that does not unpickle here: the parent stops the run
            results.put((-1, None, _portable(exc)))
            return
        if item is None:
            return
        jid, batch = item
        try:
            out = list(job.work(batch))
        except BaseException as exc:  # noqa: BLE001
            results.put((jid, None, _portable(exc)))
            continue
        results.put((jid, out, None))


def _as_pool_process() -> None:
    """A worker leaves Ctrl-C to the parent (which stops the set and keeps what is finished), ends at once on
    SIGTERM (the set's terminate(); on Linux also when the parent dies, a kill -9 or the OOM killer), and stops its
    hook workers when it ends normally (the set's end, after the last result).

    SIGTERM keeps the system's action on purpose, not the parent's handler that the fork copied (:func:`hsa.cli.main`)
    nor one of its own: a Python handler runs only when the interpreter gets control back, and a worker that waits in
    native code may never give it back, so terminate() waited for it forever. It did: a worker idle in the task
    queue's semaphore wait, which a SIGTERM that arrived a moment before the wait began no longer interrupts. The hook
    workers of a worker so ended die with it (bubblewrap's ``--die-with-parent``, ``PR_SET_PDEATHSIG``), and the
    parent removes their folders (:func:`hsa.sandbox.process.sweep_stale_homes`)."""
    from multiprocessing import util

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked by WorkerSet.__enter__ across the fork
    util.Finalize(None, _stop_hook_workers, exitpriority=10)  # run by the worker's normal exit (os._exit skips atexit)
    if sys.platform.startswith("linux"):
        parent = os.getppid()
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before the call
            os._exit(1)


def _stop_hook_workers() -> None:
    """Stop this worker's hook workers and remove their folders (if it imported the sandbox at all)."""
    sandbox = sys.modules.get("hsa.sandbox")
    if sandbox is not None:
        sandbox.close_all()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else a :class:`WorkerError` with its type, text and traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        pickle.loads(pickle.dumps(exc))
        exc.__hsa_traceback__ = text  # type: ignore[attr-defined]
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure
        return WorkerError(f"a worker raised {type(exc).__name__}: {exc}\n{text}")


#: Seconds a terminated worker has to end before it is killed (SIGKILL).
_TERMINATE_WAIT = 5.0


def _pos(item) -> int:
    return item[0] if isinstance(item, tuple) else item.pos


class WorkerSet:
    """``workers`` processes of ``ctx`` (a multiprocessing context), each set up once for ``job``, with input items
    routed to them by the job's key (:class:`AugmentJob`: by harness, :func:`route`). Use as a context manager:
    leaving it before :meth:`results` has given everything (an error, Ctrl-C) terminates the workers at once."""

    def __init__(self, ctx, workers: int, job, *, batch_size: int):
        self.job, self.batch_size = job, batch_size
        self.results_q = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(workers)]
        self.procs = [ctx.Process(target=_serve, args=(q, self.results_q, job), name=f"hsa-worker-{i}", daemon=True)
                      for i, q in enumerate(self.tasks)]
        self.sticky: dict = {}
        self.routed = [0] * workers  # lines sent to each worker (for tests and benchmarks)
        self._ended = False

    def __enter__(self) -> WorkerSet:
        # SIGTERM stays blocked from before each fork until the worker has its own action for it (_as_pool_process):
        # a SIGTERM that came sooner ran the handler the fork copied (hsa.cli.main's sys.exit) in the new process, whose
        # SystemExit then climbed the caller's stack copied with it (under pytest: a second report of the test); or
        # Python dropped it between the fork and its after-fork set-up, and the worker waited for work for ever
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            for p in self.procs:
                p.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if not self._ended:
                for p in self.procs:
                    if p.is_alive():
                        p.terminate()  # SIGTERM, the system's action: ends a worker wherever it waits
                for p in self.procs:
                    # a worker that SIGTERM does not end (stopped, or stuck in the kernel) is not waited for without end
                    p.join(_TERMINATE_WAIT)
                    if p.is_alive():
                        p.kill()
                        p.join()
            for q in (*self.tasks, self.results_q):
                q.close()
                q.cancel_join_thread()
        finally:
            if "hsa.sandbox" in sys.modules:  # a terminated worker's hook workers died with it; their folders stay
                from hsa.sandbox.process import sweep_stale_homes

                sweep_stale_homes(again=True)

    def results(self, items: Iterable, *, chunk: int | None = None,
                meanwhile: Callable[[], None] | None = None) -> Iterator[tuple]:
        """What the job's ``work`` gives for each of ``items`` (each with a ``pos``, or a ``(pos, ...)`` tuple), in
        their order. Lines are read and
        routed a chunk at a time (``chunk``, default two batches a worker), with at most two chunks in flight, so
        memory does not grow with the input and every worker has the next chunk queued while the last one ends.
        ``meanwhile`` runs once in this process after the first lines are sent, while the workers start on them
        (the caller's own set-up, such as importing what writes the rows, then costs no wall time)."""
        n = len(self.procs)
        chunk = chunk or 2 * n * self.batch_size
        in_flight: deque = deque()  # each chunk's positions not yet given, in input order
        done: dict[int, tuple] = {}  # position -> result, until its turn
        jid = 0
        source = iter(items)
        exhausted = False
        while True:
            while not exhausted and len(in_flight) < 2:
                lines = [x for _, x in zip(range(chunk), source)]
                if not lines:
                    exhausted = True
                    break
                jid = self._dispatch(lines, jid)
                in_flight.append(deque(_pos(x) for x in lines))
            if meanwhile is not None:
                meanwhile()
                meanwhile = None
            if not in_flight:
                break
            order = in_flight[0]
            while order and order[0] in done:
                yield done.pop(order.popleft())
            if not order:
                in_flight.popleft()
                continue
            for out in self._next_result():
                done[out[0]] = out
        self._end()

    def _dispatch(self, lines: list, jid: int) -> int:
        per = split(lines, len(self.procs), self.sticky, key=self.job.key, by=self.job.route)
        for w, mine in enumerate(per):
            self.routed[w] += len(mine)
            for i in range(0, len(mine), self.batch_size):
                self.tasks[w].put((jid, mine[i:i + self.batch_size]))
                jid += 1
        return jid

    def _next_result(self) -> list:
        ended_seen = False
        while True:
            try:
                jid, out, exc = self.results_q.get(timeout=1.0)
            except queue.Empty:
                ended = [(i, p) for i, p in enumerate(self.procs) if p.exitcode is not None]
                if ended and ended_seen:
                    i, p = ended[0]
                    raise WorkerError(f"worker {i} (pid {p.pid}) ended with exit code {p.exitcode} before its "
                                      f"work was done (killed, or out of memory?); {self.job.lost}") from None
                ended_seen = bool(ended)  # wait once more: what a worker sent before it ended (its error) comes first
                continue
            if exc is not None:
                remote = getattr(exc, "__hsa_traceback__", None)
                if remote:
                    raise exc from WorkerError(f"in the worker:\n{remote}")
                raise exc
            return out

    def _end(self) -> None:
        """Every result is in: each worker ends by its own exit, which stops its hook workers and removes their
        folders."""
        for q in self.tasks:
            q.put(None)
        for p in self.procs:
            p.join()
        self._ended = True
