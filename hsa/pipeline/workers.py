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
"""

from __future__ import annotations

import hashlib
import pickle
import queue
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hsa.io import InputLine

__all__ = ["WorkerSet", "WorkerError", "harness_key", "route"]

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


def _serve(tasks, results, recipe_config: dict, options: dict, modules: tuple[str, ...]) -> None:
    """A worker's life: set up (:func:`hsa.pipeline.executor.init_worker`), then run each batch of its task queue
    and put what :func:`~hsa.pipeline.executor.work` gives, or the error, on the result queue, until ``None``."""
    from hsa.pipeline.executor import init_worker, work

    try:
        init_worker(recipe_config, options, True, modules)
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, which stops the run
        results.put((-1, None, _portable(exc)))
        return
    while True:
        job = tasks.get()
        if job is None:
            return
        jid, batch = job
        try:
            out = work(batch)
        except BaseException as exc:  # noqa: BLE001
            results.put((jid, None, _portable(exc)))
            continue
        results.put((jid, out, None))


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else a :class:`WorkerError` with its type, text and traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        pickle.loads(pickle.dumps(exc))
        exc.__hsa_traceback__ = text  # type: ignore[attr-defined]
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure
        return WorkerError(f"a worker raised {type(exc).__name__}: {exc}\n{text}")


class WorkerSet:
    """``workers`` processes of ``ctx`` (a multiprocessing context), each set up once with the run's recipe and
    options, with input lines routed to them by harness (:func:`route`). Use as a context manager: leaving it
    before :meth:`results` has given everything (an error, Ctrl-C) terminates the workers at once."""

    def __init__(self, ctx, workers: int, recipe_config: dict, options: dict, modules: tuple[str, ...], *,
                 batch_size: int):
        self.batch_size = batch_size
        self.results_q = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(workers)]
        self.procs = [ctx.Process(target=_serve, args=(q, self.results_q, recipe_config, options, modules),
                                  name=f"hsa-worker-{i}", daemon=True) for i, q in enumerate(self.tasks)]
        self.sticky: dict = {}
        self.routed = [0] * workers  # lines sent to each worker (for tests and benchmarks)
        self._ended = False

    def __enter__(self) -> WorkerSet:
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if not self._ended:
            for p in self.procs:
                if p.is_alive():
                    p.terminate()  # SIGTERM, the system's action: ends a worker wherever it waits
            for p in self.procs:
                p.join()
        for q in (*self.tasks, self.results_q):
            q.close()
            q.cancel_join_thread()

    def results(self, items: Iterable[InputLine], *, chunk: int | None = None,
                meanwhile: Callable[[], None] | None = None) -> Iterator[tuple[int, Any, list]]:
        """What :func:`~hsa.pipeline.executor.work` gives for each of ``items``, in their order. Lines are read and
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
                in_flight.append(deque(x.pos for x in lines))
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
            for pos, res, encoded in self._next_result():
                done[pos] = (pos, res, encoded)
        self._end()

    def _dispatch(self, lines: list[InputLine], jid: int) -> int:
        workers = route([harness_key(x) for x in lines], len(self.procs), self.sticky)
        per: list[list[InputLine]] = [[] for _ in self.procs]
        for x, w in zip(lines, workers):
            per[w].append(x)
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
                                      "work was done (killed, or out of memory?); the shards finished before it "
                                      "are kept: rerun the same command to resume") from None
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
