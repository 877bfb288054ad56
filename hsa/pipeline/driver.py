"""The driver of ``hsa augment``: check the options, read the inputs, prepare the output folder (or pick up the run it
holds), hand this rank's input lines to an engine (:mod:`hsa.pipeline.local`, or :mod:`hsa.pipeline.ray_engine`), and
write the manifest (:func:`hsa.pipeline.shards.end_run`)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from hsa.io import InputLine
from hsa.pipeline.executor import Progress, count_items
from hsa.pipeline.local import run_local
from hsa.pipeline.record import CALL_ARGUMENTS, DEFAULT_HARNESS_POOL
from hsa.pipeline.shards import (STATE_DIR, AugmentError, end_run, id_digest, prepare_out, recorded_revision,
                                 run_config)
from hsa.records import RecordError
from hsa.recipes import recipe_to_dict
from hsa.transform import Transform, modules_of

__all__ = ["ENGINES", "augment"]


#: The engines of ``hsa augment --engine``: they write the same bytes.
ENGINES = ("local", "ray")


def augment(inputs: list[str | Path], out: str | Path, recipe: Transform, *, seed: int = 0, variants: int = 4,
            keep_original: bool = False, workers: int = 1, shard_size: int = 1000, batch_size: int = 16,
            strict: bool = False, overwrite: bool = False, resume: bool = False, rank: int = 0,
            world_size: int = 1, progress: bool | None = None, hold_out: list[str] | None = None,
            command: str | None = None, exec_hooks: bool = True, call_arguments: str = "object",
            tools_file: str | Path | None = None, engine: str = "local", ray_address: str | None = None,
            harness_pool: int = DEFAULT_HARNESS_POOL, strict_hooks: bool = False, hook_sandbox: str = "best") -> dict:
    """Augment ``inputs`` into the dataset folder ``out``; returns the manifest (or, for one rank
    of several, that rank's summary: ``hsa merge`` writes the manifest), with ``this_run`` added (not written
    to manifest.json): ``resumed``, ``shards_kept`` and ``records_kept`` (what a ``resume`` kept of the
    interrupted run) and ``records_augmented`` (by this invocation).

    ``shard_size`` counts input records per shard. ``engine`` is ``"local"`` (a process pool of
    ``workers``) or ``"ray"`` (:mod:`hsa.pipeline.ray_engine`: one actor per CPU, each harness's lines on one, on the
    cluster at ``ray_address``, or on a local Ray of ``workers`` CPUs); both write the same bytes.
    ``harness_pool`` is the number of harness variants of each distinct harness (0: every variant draws its
    own, as before the pool); it is recorded in the manifest and each row's slot is its ``slot`` column.
    ``strict_hooks`` rejects the records with a hook that cannot run on its own payloads (otherwise counted
    and noted on their rows). ``hook_sandbox`` (``require``, ``best``, ``off``) is the policy of the hook workers
    (:mod:`hsa.sandbox.layers`); the manifest's ``hook_sandbox`` says which layers stood. Raises :class:`AugmentError` for a missing input, an output folder that is not
    empty (unless ``resume`` or ``overwrite``), a missing Ray and, with ``strict``, the first rejected line.
    """
    from hsa.io import InputSource, iter_inputs

    if engine not in ENGINES:
        raise AugmentError(f"--engine must be one of {list(ENGINES)} (got {engine!r})")
    if engine == "ray":
        from hsa.pipeline import ray_engine

        ray_engine.require_ray()
        if ray_engine.is_remote(out):
            return ray_engine.augment_remote(augment, inputs, out, recipe, seed=seed, variants=variants,
                                             keep_original=keep_original, workers=workers, shard_size=shard_size,
                                             batch_size=batch_size, strict=strict, overwrite=overwrite,
                                             resume=resume, rank=rank, world_size=world_size, progress=progress,
                                             hold_out=hold_out, command=command, exec_hooks=exec_hooks,
                                             call_arguments=call_arguments, tools_file=tools_file,
                                             harness_pool=harness_pool, strict_hooks=strict_hooks,
                                             hook_sandbox=hook_sandbox, ray_address=ray_address)
    elif "://" in str(out):
        raise AugmentError(f"--out {out}: the local engine writes a local folder; object storage (s3://, gs://, "
                           "file://) is written by --engine ray (on one machine too: it starts a local Ray)")
    out = Path(out)
    if variants < 0:
        raise AugmentError(f"--variants must be >= 0 (got {variants})")
    if variants == 0 and not keep_original:
        raise AugmentError("--variants 0 without --keep-original would write nothing")
    if call_arguments not in CALL_ARGUMENTS:
        raise AugmentError(f"--call-arguments must be one of {list(CALL_ARGUMENTS)} (got {call_arguments!r})")
    if isinstance(harness_pool, bool) or not isinstance(harness_pool, int) or harness_pool < 0:
        raise AugmentError(f"--harness-pool must be a whole number >= 0 (got {harness_pool!r}); 0 draws every "
                           "variant's harness afresh")
    sandbox_status = _hook_sandbox(hook_sandbox, exec_hooks)
    if shard_size < 1 or batch_size < 1 or workers < 1:
        raise AugmentError("--shard-size, --batch-size and --workers must be at least 1")
    if not 0 <= rank < world_size:
        raise AugmentError(f"--rank must be within [0, --world-size) (got rank {rank}, world size {world_size})")
    try:
        sources = [InputSource.resolve(p) for p in inputs]
    except FileNotFoundError as exc:
        raise AugmentError(str(exc)) from None
    sources = [s.pinned(recorded_revision(out, s) if resume else None) for s in sources]
    if progress is None:
        progress = sys.stderr.isatty()

    harness = None
    if tools_file is not None:
        from hsa.records import read_harness_file

        try:
            harness = read_harness_file(tools_file)
        except RecordError as exc:
            raise AugmentError(f"--tools {tools_file}: {exc.detail}") from None
    options = {"seed": seed, "variants": variants, "keep_original": keep_original, "exec_hooks": exec_hooks,
               "call_arguments": call_arguments, "harness_pool": harness_pool, "strict_hooks": strict_hooks,
               **({"harness": harness} if harness else {}), "hook_sandbox": hook_sandbox}
    recipe_config = recipe_to_dict(recipe)
    modules = tuple(modules_of(recipe))
    tools_entry = ({"tools_file": {"path": str(tools_file),
                                   "sha256": hashlib.sha256(Path(tools_file).read_bytes()).hexdigest()}}
                   if harness else {})
    config = run_config(sources, recipe_config, seed, variants, keep_original, shard_size, hold_out,
                         {"world_size": world_size, "exec_hooks": exec_hooks,
                          **({"call_arguments": call_arguments} if call_arguments != "keep" else {}),
                          **({"harness_pool": harness_pool} if harness_pool else {}),
                          **({"strict_hooks": True} if strict_hooks else {}),
                          **tools_entry})
    done = prepare_out(out, config, resume=resume, overwrite=overwrite)

    seen_ids: set[int] = set()  # 64-bit digests of the ids seen: memory stays small on long inputs
    kept_records = 0
    for k in sorted(done):  # ids of shards written before a resume
        marker = json.loads((out / STATE_DIR / f"shard-{k:05d}.done.json").read_text(encoding="utf-8"))
        seen_ids.update(id_digest(i) for i in marker["ids"])
        kept_records += int(marker["stats"].get("input_records", 0))

    n_items = 0

    def mine() -> Iterator[InputLine]:
        nonlocal n_items
        for item in iter_inputs(sources):
            n_items = item.pos + 1
            k = item.pos // shard_size
            if k % world_size == rank and k not in done:
                yield item

    bar = Progress(progress, count_items(sources) if progress and world_size == 1 else None,
                   kept_records=kept_records, kept_shards=len(done))
    run_kwargs = {"shard_size": shard_size, "seen_ids": seen_ids, "recipe_config": recipe_config,
                  "options": options, "modules": modules, "batch_size": batch_size, "workers": workers,
                  "strict": strict, "progress": bar}
    if engine == "ray":
        total = ray_engine.run_shards(out, mine(), address=ray_address, **run_kwargs)
    else:
        total = run_local(out, mine(), **run_kwargs)
    if exec_hooks:  # as it stands at the end: a layer a worker of this process could not apply is off
        from hsa.sandbox import status

        sandbox_status = status().to_dict()
    result = end_run(out, rank, world_size, n_items, shard_size, total, command, engine, hook_sandbox=sandbox_status)
    # what this invocation did, beside the manifest (not written to it: a resumed run's manifest equals an
    # uninterrupted one's): the shards a resume kept and the records augmented now
    result["this_run"] = {"resumed": bool(done), "shards_kept": len(done), "records_kept": kept_records,
                          "records_augmented": total.input_records}
    return result


def _hook_sandbox(policy: str, exec_hooks: bool) -> dict:
    """Set this process's hook-sandbox policy and say what stands (the manifest's ``hook_sandbox``); with
    ``require``, refuse a machine where the file, network or process wall is missing."""
    from hsa.sandbox import POLICIES, set_policy, status

    if policy not in POLICIES:
        raise AugmentError(f"--hook-sandbox must be one of {list(POLICIES)} (got {policy!r})")
    if not exec_hooks:
        return {"policy": policy, "exec_hooks": False}
    set_policy(policy)
    st = status()
    if policy == "require" and st.missing_walls():
        raise AugmentError(f"--hook-sandbox require: no layer keeps {'; '.join(st.missing_walls())}. {st.line()}. "
                           "Run `hsa sandbox check` for details, or --hook-sandbox best to replay with the layers "
                           "this machine has")
    return st.to_dict()
