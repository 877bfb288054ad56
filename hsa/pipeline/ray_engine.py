"""``hsa augment --engine ray``: the same pipeline on Ray Data, one task per shard.

The unit of work is the shard the local engine already defines by input position
(shard ``k`` holds input items ``[k * shard_size, (k + 1) * shard_size)``), and a task
runs :func:`hsa.pipeline.executor.run_shard`, the function whose output the local engine writes.
So the Arrow shards, ``rejects.jsonl`` and ``manifest.json`` (but for its ``engine``)
are byte-identical to ``--engine local`` for the same inputs, recipe and seed, whatever
the number of Ray workers.

How a run goes:

1. The driver reads the input once, in order, and puts each shard's items in Ray's
   object store (one object per shard).
2. A Ray Data dataset of shard descriptors is mapped with ``map_batches`` (one shard a
   batch, one CPU a task); each task augments its shard and writes ``shard-K.arrow``
   to the output (a local folder, shared by every node, or object storage), and
   returns the shard's completion record and rejects.
3. The driver takes the completion records in shard order: a source id already
   written by an earlier shard (a duplicate id, which a one-process run rejects) has
   its shard run again with that id marked as seen; then it writes the shard's
   rejects and completion record, the same files the local engine writes, so
   ``--resume`` and ``hsa merge`` work alike for both engines.

Fault tolerance is Ray's: Ray Data retries a task whose worker died (``max_retries``
-1 for system failures); a retried task writes the same bytes. A run stopped
part-way keeps its finished shards for ``--resume``.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hsa.io import InputLine, is_uri
from hsa.pipeline.executor import Progress, init_worker, run_shard
from hsa.pipeline.record import Stats
from hsa.pipeline.shards import STATE_DIR, AugmentError, id_digest, mark_done, shard_name, strict_message

__all__ = ["INSTALL", "require_ray", "is_remote", "run_shards", "augment_remote"]

#: What to run when Ray is missing.
INSTALL = "pip install 'hsa[ray]'"


def require_ray() -> None:
    """Fail with the install command when Ray Data cannot be imported (checked before anything is written)."""
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise AugmentError(f"--engine ray needs Ray Data, which is not installed here ({exc}); install it with: "
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


# --------------------------------------------------------------------------- the task

def _setup(recipe_config: dict, options: dict, modules: tuple[str, ...] = ()) -> None:
    """Set this Ray worker process up once per run configuration (the recipe built once; the plans and caches of
    its :class:`hsa.context.WorkerContext` stay warm from one task to the next)."""
    from hsa.context import current

    key = json.dumps([recipe_config, options], sort_keys=True)
    if current().key != key:
        init_worker(recipe_config, options, modules=modules)
        current().key = key


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


def _shard_task(k: int, items: list[InputLine], seen: set[int], recipe_config: dict, options: dict,
                batch_size: int, dest: str, modules: tuple[str, ...] = ()) -> tuple[int, dict, str]:
    _setup(recipe_config, options, modules)
    res = run_shard(k, items, set(seen), batch_size=batch_size)
    _write_shard(dest, k, res.data)
    return k, res.done, res.rejects


def _map_shards(batch: dict, *, recipe_config: dict, options: dict, batch_size: int, dest: str,
                modules: tuple[str, ...] = ()) -> dict:
    """Ray Data ``map_batches`` function: each row is one shard (its index and its items' object ref)."""
    import ray

    out: dict[str, list] = {"k": [], "done": [], "rejects": []}
    for k, ref in zip(batch["k"], batch["items"]):
        _, done, rejects = _shard_task(int(k), ray.get(ref), set(), recipe_config, options, batch_size, dest,
                                       modules)
        out["k"].append(int(k))
        out["done"].append(json.dumps(done, ensure_ascii=False))
        out["rejects"].append(rejects)
    return out


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
    import ray.data

    remote = _REMOTE.get()
    dest, upload = remote if remote else (str(out), None)
    started = _connect(address, workers)
    refs: dict[int, Any] = {}
    try:
        if upload:
            upload(out / STATE_DIR / "run.json")
        for k, group in itertools.groupby(items, key=lambda item: item.pos // shard_size):
            refs[k] = ray.put(list(group))
        total = Stats()
        if not refs:
            return total
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if len(refs) < cpus:
            print(f"hsa: note: {len(refs)} shard(s) for {cpus} CPUs: --engine ray runs one task per shard, so "
                  f"{cpus - len(refs)} CPU(s) stay idle; a smaller --shard-size uses them", file=sys.stderr)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # the run's own progress line says it (and Ray's bars would interleave)
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        ds = ray.data.from_items([{"k": k, "items": ref} for k, ref in refs.items()], override_num_blocks=len(refs))
        kwargs = {"recipe_config": recipe_config, "options": options, "batch_size": batch_size, "dest": dest,
                  "modules": modules}
        ds = ds.map_batches(_map_shards, batch_size=1, num_cpus=1, fn_kwargs=kwargs)
        order = sorted(refs)
        arrived: dict[int, tuple[dict, str]] = {}
        redo = ray.remote(num_cpus=1)(_shard_task)
        i = 0
        for row in ds.iter_rows():
            arrived[int(row["k"])] = (json.loads(row["done"]), row["rejects"])
            while i < len(order) and order[i] in arrived:  # completion records in shard order
                k = order[i]
                done, rejects = arrived.pop(k)
                digests = [id_digest(x) for x in done["ids"]]
                taken = {d for d in digests if d in seen_ids}
                if taken:  # ids written by an earlier shard: run it again as a one-process run sees it
                    _, done, rejects = ray.get(redo.remote(k, refs[k], taken, recipe_config, options, batch_size,
                                                           dest, modules))
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
                del refs[k]
                total = total + stats
                progress.update(total)
                i += 1
        progress.update(total, force=True)
        return total
    finally:
        if started:
            ray.shutdown()
        if not remote:
            for k in refs:  # shards written but not marked done (a stop part-way): --resume rewrites them
                (out / shard_name(k)).unlink(missing_ok=True)
            for f in out.glob("shard-*.arrow.*.tmp"):  # left by a worker killed while writing (its retry wrote
                f.unlink(missing_ok=True)              # the shard under its own temporary name)
        refs.clear()


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
