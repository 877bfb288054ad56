"""The augmentation pipeline: read -> validate -> sample -> apply -> verify -> write.

The rng of a variant derives from (seed, record id, variant index) alone, or, with a
harness-variant pool of K slots, its slot k from (seed, record id, variant index) and
its harness-level draws from (seed, digest of the record's harness, k); rows are
written in input order, so the output is byte-identical whatever the worker count or
shard size. Every input line either produces rows or is listed in
``rejects.jsonl`` with its line number and reason.

Its parts, from the bottom (docs/architecture.md):

- :mod:`hsa.pipeline.record`: the per-record work (:func:`augment_record`: one input line -> its rows,
  rejects and counters), pure, so any worker may run it;
- :mod:`hsa.pipeline.shards`: shards, resume and merge (where rows go, ``--resume``, :func:`finalize`,
  :func:`merge`);
- :mod:`hsa.pipeline.executor`: what every engine runs (a worker's set-up, a batch's work, one shard's work,
  the progress line);
- the engines: :mod:`hsa.pipeline.local` (this process or worker processes, routed by harness:
  :mod:`hsa.pipeline.workers`) and :mod:`hsa.pipeline.ray_engine` (Ray actors, routed by harness too);
- :mod:`hsa.pipeline.driver`: :func:`augment`, which checks the options, prepares the output and runs an engine.

This module holds none of it: it names the public parts, as before the split.
"""

from hsa.pipeline.executor import GC_THRESHOLDS, run_shard
from hsa.pipeline.record import (CALL_ARGUMENTS, DEFAULT_HARNESS_POOL, Result, Stats, augment_record,
                                 canonicalize_checked, canonicalize_record, harness_digest, rng_for, slot_for,
                                 slot_rng, source_row)
from hsa.pipeline.driver import ENGINES, augment
from hsa.pipeline.shards import STATE_DIR, AugmentError, ShardOutput, finalize, mark_done, merge

__all__ = ["rng_for", "slot_for", "harness_digest", "slot_rng", "DEFAULT_HARNESS_POOL", "augment_record", "augment",
           "Stats", "Result", "AugmentError", "source_row", "canonicalize_record", "canonicalize_checked", "finalize",
           "merge", "run_shard", "ShardOutput", "mark_done", "ENGINES", "CALL_ARGUMENTS", "STATE_DIR", "GC_THRESHOLDS"]
