"""``hsa augment --engine ray``: the same pipeline on Ray, each harness's records on one actor.

The output is the local engine's: shard ``k`` holds input items ``[k * shard_size, (k + 1) * shard_size)``, its rows
are what :func:`hsa.pipeline.executor.work` gives for them, in position order, and it is put together by
:func:`hsa.pipeline.executor.assemble_shard`, the code of :func:`~hsa.pipeline.executor.run_shard`. So the Arrow shards,
``rejects.jsonl`` and ``manifest.json`` (but for its ``engine``) are byte-identical to ``--engine local`` for the same
inputs, recipe and seed, whatever the number of CPUs.

How a run goes:

1. The driver starts one augmenting actor per CPU (``--workers`` of a local Ray; on a cluster it joins, one per CPU
   of the cluster, or ``--workers`` where that is more: an autoscaler adds nodes for the actors that wait), each set
   up once with the recipe (:func:`hsa.pipeline.executor.init_worker`): its slot plans, hook analyses and compiled
   validators stay warm for the whole run, as in a worker process of the local engine. Lines go to the actors set
   up so far (:class:`_Ready`): one waiting for a CPU never holds the run up, and takes lines once it has one.
2. The driver reads the input once, in order. It sends each line of a shard to an actor by a key of the line's
   harness (:func:`hsa.pipeline.workers.harness_key`, :func:`~hsa.pipeline.workers.route`, as the local engine
   does): a harness keeps its actor from shard to shard, so its plans are built once, not once per CPU; a harness
   that alone would overload its actor spills to the others. A shard's lines are spread over the actors, so an
   input of one shard still uses every CPU.
3. A task of no CPU of its own per shard takes the actors' results of that shard (from Ray's object store, not
   through the driver), writes ``shard-K.arrow`` to the output (a local folder, shared by every node, or object
   storage) and returns the shard's completion record and rejects.
4. The driver takes the completion records in shard order: a source id already written by an earlier shard (a
   duplicate id, which a one-process run rejects) has its shard put together again with that id marked as seen (the
   lines are not augmented again); then it writes the shard's rejects and completion record, the same files the
   local engine writes, so ``--resume`` and ``hsa merge`` work alike for both engines. A few shards are in flight at
   a time (:func:`_window`), so the object store holds a few shards' lines and rows, not the input.

Fault tolerance is Ray's: an actor whose process died is started again and its unfinished work retried
(``max_restarts`` and ``max_task_retries`` -1), and so is a shard's task; a retried task gives the same bytes. A run
stopped part-way keeps its finished shards for ``--resume``.
"""

from __future__ import annotations

import contextlib
import contextvars
import heapq
import itertools
import json
import logging
import os
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hsa.io import InputLine, is_uri
from hsa.pipeline.executor import Progress, assemble_shard, init_worker, work
from hsa.pipeline.record import Stats
from hsa.pipeline.shards import STATE_DIR, AugmentError, id_digest, mark_done, shard_name, strict_message
from hsa.pipeline.workers import split

__all__ = ["INSTALL", "require_ray", "is_remote", "run_shards", "augment_remote"]

#: What to run when Ray is missing.
INSTALL = "pip install 'hsa[ray]'"


def require_ray() -> None:
    """Fail with the install command when Ray cannot be imported (checked before anything is written)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        raise AugmentError(f"--engine ray needs Ray, which is not installed here ({exc}); install it with: "
                           f"{INSTALL}   (or use --engine local)") from None


def is_remote(path: str | os.PathLike) -> bool:
    """True for a filesystem URI (``s3://``, ``gs://``, ``file://`` ...) that pyarrow opens; false for a local path."""
    return is_uri(path)


def _filesystem(uri: str):
    """The pyarrow filesystem and the path inside it of ``uri``, with a clear error when pyarrow cannot open it."""
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(uri)
    except (pafs.ArrowException if hasattr(pafs, "ArrowException") else Exception, ValueError, OSError) as exc:
        raise AugmentError(f"{uri}: pyarrow cannot open this location ({exc}); for s3:// and gs:// the bucket "
                           "must exist and credentials must be set as for pyarrow (AWS_* variables or "
                           "~/.aws; GOOGLE_APPLICATION_CREDENTIALS)") from None


# --------------------------------------------------------------------------- the actors and the shard task

class Augmenter:
    """A Ray actor (one CPU) that augments the lines the driver routes to it: set up once with the run's recipe and
    options, its :class:`hsa.context.WorkerContext` (slot plans, caches) kept from one call to the next."""

    def __init__(self, recipe_config: dict, options: dict, modules: tuple[str, ...] = ()):
        init_worker(recipe_config, options, modules=modules)

    def ready(self) -> bool:
        """True once set up (a call the driver waits on to know the actor can take lines)."""
        return True

    def work(self, items: list[InputLine]) -> list:
        """:func:`hsa.pipeline.executor.work` of ``items`` (the lines of one shard routed here)."""
        return work(items)


def _write_shard(dest: str, k: int, data: bytes) -> None:
    """Write shard ``k``'s bytes under ``dest``: a local folder (atomically: a temporary name, then a rename) or a
    filesystem URI (an object store writes an object whole when its stream closes)."""
    name = shard_name(k)
    if not is_remote(dest):
        path = Path(dest) / name
        tmp = path.with_name(f"{name}.{os.getpid()}.tmp")  # two attempts of one task may overlap
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return
    fs, root = _filesystem(dest)
    with fs.open_output_stream(f"{root.rstrip('/')}/{name}") as f:
        f.write(data)


def _shard_task(k: int, seen: list[int], slot: bool, dest: str, *parts: list) -> tuple[dict, str]:
    """Shard ``k`` put together from the actors' results (``parts``: Ray passes them resolved) and written under
    ``dest``; its completion record and rejects back. ``seen``: digests of ids written by earlier shards."""
    res = assemble_shard(k, heapq.merge(*parts, key=lambda r: r[0]), set(seen), slot=slot)  # each part in input order
    _write_shard(dest, k, res.data)
    return res.done, res.rejects


class _Ready:
    """The actors that have finished setting up, in the order they did (:meth:`now`): the first waited for, the
    others for as long again and a second more, then taken as they come. An actor that waits for a CPU (a busy
    cluster, one an autoscaler is adding) takes lines once it has one, and never holds the run up before; an actor
    whose set-up raised raises here."""

    def __init__(self, actors: list):
        import time

        import ray

        self._ray = ray
        self.up: list = []
        self._pending = {a.ready.remote(): a for a in actors}
        start = time.monotonic()
        self._take(ray.wait(list(self._pending), num_returns=1)[0])
        self._take(ray.wait(list(self._pending), num_returns=len(self._pending),
                            timeout=time.monotonic() - start + 1.0)[0] if self._pending else [])

    def _take(self, refs: list) -> None:
        for ref in refs:
            self._ray.get(ref)  # raises the actor's set-up error
            self.up.append(self._pending.pop(ref))

    def now(self) -> list:
        """The actors set up by now (the list only grows: an index the routing gave a harness stays its actor)."""
        if self._pending:
            self._take(self._ray.wait(list(self._pending), num_returns=len(self._pending), timeout=0)[0])
        return self.up


def _window(actors: int, shard_size: int, batch_size: int) -> int:
    """How many shards are in flight at once: three at least (an actor that is done with its lines of the shard the
    driver waits for has the next shard's to work on, and the one after), more where a shard gives each actor less
    than a few batches, and not many more than there are actors."""
    return max(3, min(2 * actors + 2, -(-4 * actors * batch_size // shard_size)))


# --------------------------------------------------------------------------- the driver

#: Set by :func:`augment_remote`: where the shards go (a URI) while the driver's state lives in a local folder.
_REMOTE: contextvars.ContextVar[tuple[str, Callable[[Path], None]] | None] = contextvars.ContextVar(
    "hsa_ray_remote", default=None)


@contextlib.contextmanager
def _keeping_sigterm():
    """Run a block that may start and stop Ray, and give the caller its SIGTERM handler back after: ``ray.init``
    sets one that raises SystemExit wherever the process is and ``ray.shutdown`` leaves it, so a library caller's
    process (a training script, a job under a scheduler) would end every later SIGTERM that way, and each process
    it forks would inherit it. A handler set outside Python (``getsignal`` gives None) cannot be put back."""
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is not None and threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) is not handler:
            signal.signal(signal.SIGTERM, handler)


def _connect(address: str | None, workers: int) -> bool:
    """Join the cluster at ``address`` (or ``RAY_ADDRESS``), or start a local Ray of ``workers`` CPUs; true when
    this call started the connection (and so shuts it down), false when Ray was already initialised."""
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS")
    try:
        if address:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        else:  # a private Ray for this run: its token-authentication notice says nothing to act on
            notice = logging.getLogger("ray._private.authentication.authentication_token_setup")
            level = notice.level
            notice.setLevel(logging.ERROR)
            try:
                ray.init(address="local", num_cpus=workers, include_dashboard=False,  # "local": not a cluster
                         logging_level=logging.WARNING, log_to_driver=False)      # that `ray start` left here
            finally:
                notice.setLevel(level)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise AugmentError(f"--engine ray: could not start or join {where} ({type(exc).__name__}: {exc}); check "
                           "--ray-address / RAY_ADDRESS ('ray status' on the head node shows it); a cluster with "
                           "token authentication also needs RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN or "
                           "~/.ray/auth_token)") from None
    return True


@_keeping_sigterm()  # ray.init (in _connect) replaces the caller's SIGTERM handler
def run_shards(out: Path, items: Iterable[InputLine], *, shard_size: int, seen_ids: set[int], recipe_config: dict,
               options: dict, batch_size: int, workers: int, address: str | None, strict: bool,
               progress: Progress, modules: tuple[str, ...] = ()) -> Stats:
    """Augment ``items`` (this rank's, not yet done, in position order) on Ray; mark each shard done in ``out``
    in shard order; return the run's stats. ``seen_ids`` (digests of the ids written by shards done before)
    grows with every shard marked."""
    import ray

    remote = _REMOTE.get()
    dest, upload = remote if remote else (str(out), None)
    started = _connect(address, workers)
    slot = options.get("harness_pool", 0) > 0
    actors: list = []
    flight: deque[tuple[int, list, Any]] = deque()  # (k, the actors' result refs, the shard task's ref)
    total = Stats()
    try:
        if upload:
            upload(out / STATE_DIR / "run.json")
        shards = itertools.groupby(items, key=lambda item: item.pos // shard_size)
        first = next(shards, None)
        if first is None:
            return total
        n = workers if started else max(workers, int(ray.cluster_resources().get("CPU", 0)))
        augmenter = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(Augmenter)
        actors = [augmenter.remote(recipe_config, options, modules) for _ in range(n)]
        ready = _Ready(actors)
        shard_task = ray.remote(num_cpus=0, max_retries=-1)(_shard_task)
        sticky: dict = {}

        def finish() -> None:
            nonlocal total
            k, parts, ref = flight[0]  # taken off once marked: a shard that stops the run is cleaned up below
            done, rejects = ray.get(ref)
            digests = [id_digest(x) for x in done["ids"]]
            taken = {d for d in digests if d in seen_ids}
            if taken:  # ids written by an earlier shard: put together again as a one-process run sees it
                done, rejects = ray.get(shard_task.remote(k, sorted(taken), slot, dest, *parts))
                digests = [id_digest(x) for x in done["ids"]]
            stats = Stats.from_json(done["stats"])
            if strict and stats.rejected:
                raise AugmentError(strict_message([json.loads(line) for line in rejects.splitlines()]))
            if not remote and not (out / shard_name(k)).exists():
                raise AugmentError(f"{out / shard_name(k)} was written on another machine of the cluster, "
                                   "where this folder is a different one: on several machines give --out on "
                                   "object storage (s3://..., gs://...) or on a filesystem every node mounts")
            seen_ids.update(digests)
            mark_done(out, k, done, rejects)
            if upload:
                upload(out / STATE_DIR / f"shard-{k:05d}.rejects.jsonl")
                upload(out / STATE_DIR / f"shard-{k:05d}.done.json")
            flight.popleft()
            total = total + stats
            progress.update(total)

        for k, group in itertools.chain([first], shards):
            up = ready.now()
            parts = [up[w].work.remote(lines) for w, lines in enumerate(split(list(group), len(up), sticky)) if lines]
            flight.append((k, parts, shard_task.remote(k, [], slot, dest, *parts)))
            while len(flight) >= _window(len(up), shard_size, batch_size):
                finish()
        while flight:
            finish()
        progress.update(total, force=True)
        return total
    finally:
        for actor in actors:  # they hold a CPU each, on a cluster that outlives this run too
            ray.kill(actor)
        if flight:  # a stop part-way (--strict, an error, Ctrl-C): the work of the killed actors fails, and with it
            # the shard tasks that wait for it; a shard task already writing ends before its shard is removed below.
            # (Not ray.cancel: cancelling a task whose arguments Ray is resolving crashed the driver, Ray 2.60's
            # reference_counter.cc "submitted_task_ref_count > 0".)
            refs = [ref for _, _, ref in flight]
            ray.wait(refs, num_returns=len(refs), timeout=30)
        if started:
            ray.shutdown()
        if not remote:
            for k, _, _ in flight:  # shards written but not marked done (a stop part-way): --resume rewrites them
                (out / shard_name(k)).unlink(missing_ok=True)
            for f in out.glob("shard-*.arrow.*.tmp"):  # left by a task killed while writing (its retry wrote
                f.unlink(missing_ok=True)              # the shard under its own temporary name)
        flight.clear()


# --------------------------------------------------------------------------- object storage


def augment_remote(augment: Callable[..., dict], inputs: list, out: str, recipe, *, overwrite: bool, resume: bool,
                   **options) -> dict:
    """``augment`` into a filesystem URI: the tasks write the shards there; the driver keeps the run's state in a
    local folder, sends each completion record as the shard is marked done, and the manifest, rejects and
    dataset metadata at the end. ``--resume`` reads the state back from ``out``."""
    import pyarrow.fs as pafs

    fs, root = _filesystem(str(out))
    root = root.rstrip("/")
    existing = [f for f in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
                if f.type == pafs.FileType.File]
    rel = [f.path[len(root) + 1:] for f in existing]
    state_files = [r for r in rel if r.startswith(STATE_DIR + "/")]
    if rel and len(state_files) == len(rel) and not any(r.endswith(".done.json") for r in rel):
        fs.delete_dir_contents(root)  # a run stopped before its first shard: nothing to keep
        rel = []
    if rel and not overwrite and not resume:
        raise AugmentError(f"output {out} is not empty; pass --resume to finish an interrupted run or --overwrite to "
                           "replace it")
    if rel and overwrite:
        fs.delete_dir_contents(root)
        rel = []
    if rel and f"{STATE_DIR}/run.json" not in rel:
        raise AugmentError(f"--resume: {out} holds no hsa run to resume ({out}/{STATE_DIR}/run.json is missing)")
    fs.create_dir(root, recursive=True)
    with tempfile.TemporaryDirectory(prefix="hsa-ray-state-") as tmp:
        stage = Path(tmp) / "out"
        for r in state_files if rel else []:
            (stage / r).parent.mkdir(parents=True, exist_ok=True)
            with fs.open_input_stream(f"{root}/{r}") as f:
                (stage / r).write_bytes(f.read())

        def upload(path: Path) -> None:
            target = f"{root}/{path.relative_to(stage).as_posix()}"
            if fs.type_name == "local":  # an object store has no folders to make
                fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(target) as f:
                f.write(path.read_bytes())

        token = _REMOTE.set((str(out).rstrip("/"), upload))
        try:
            result = augment(inputs, stage, recipe, overwrite=False, resume=bool(rel), engine="ray", **options)
        finally:
            _REMOTE.reset(token)
            for path in sorted(stage.rglob("*")) if stage.exists() else ():
                if path.is_file() and not path.name.endswith(".tmp"):
                    upload(path)
    return result
