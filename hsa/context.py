"""What a process keeps while it augments, in one object: :class:`WorkerContext`.

A worker (the process of a one-worker run, each process of the local engine's worker set, each augmenting actor of
the Ray engine) holds, between one record and the next:

- the recipe, built once, and the run's options (set by :func:`hsa.pipeline.executor.init_worker`), among them
  whether hooks run (``exec_hooks``: ``hsa augment --no-exec-hooks`` turns it off for the run, not for the
  process; :func:`hsa.sandbox.execution_enabled` reads it);
- the slot plan table (:class:`hsa.plans.PlanTable`): the harness-level work of each pool slot, and the plan of
  the variant being made and checked (``plan``: where the restore step and the variant check keep the slot's work);
- the memo caches (:mod:`hsa.cache`), each by name;
- the last undo that the restore step hands to the variant check (:func:`hsa.renames.undo_last`).

All of it is the process's current context (:func:`current`), not module-level variables of the modules that use
it. The context is made on first use and lives as long as the process; a worker process started by fork begins
with a copy of its parent's (read only until it writes: what the parent had built is warm there too). A test, a
benchmark or a library caller that needs a clean slate runs under a fresh one::

    from hsa.context import WorkerContext, use

    with use(WorkerContext()) as ctx:
        augment_record(...)
        print(ctx.plans.stats(), ctx.cache_stats())

What stays outside it, and why: the hook workers of :mod:`hsa.sandbox.pool` (processes of this process, stopped at
its exit and forgotten by a fork), the host's sandbox probes of :mod:`hsa.sandbox.layers` (facts of the machine),
and ``functools`` caches of pure functions of small values (regex compilation, word splits).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["WorkerContext", "current", "use", "memoising", "STACK", "GC_THRESHOLDS", "collecting_less"]


class WorkerContext:
    """The state of one worker process (see the module's docstring). Every field may be read; the engines set
    ``recipe`` and ``options``; the data path fills ``plans``, ``plan``, ``caches`` and ``last_undo``."""

    __slots__ = ("recipe", "options", "plans", "plan", "caches", "last_undo", "serial")

    _made = 0

    def __init__(self, recipe: Any = None, options: dict | None = None, *, max_plans: int | None = None):
        from hsa.plans import PlanTable, size_from_env

        WorkerContext._made += 1
        self.serial = WorkerContext._made  # tells the cache handles of :mod:`hsa.cache` their tables are stale
        self.recipe = recipe
        self.options: dict = dict(options or {})
        self.plans = PlanTable(size_from_env(memoising()) if max_plans is None else max_plans)
        self.caches: dict = {}  # name -> hsa.cache.ByteLRU, made on first use
        self.last_undo: list = []  # [variant, steps undone, what undoing them gives] (hsa.renames.with_restore)
        self.plan = None  # the slot plan of the variant being made and checked (hsa.plans.SlotPlan), else None

    @property
    def keeping(self):
        """The slot plan of the variant being made (:attr:`plan`) when its work may be asked for again, else None:
        where the restore step and the variant check recall and keep the slot's harness-level work by the digest of
        what it read. The pipeline says so (``SlotPlan.reused``) once the plan has served a variant, or when an
        earlier record had the harness: a record with a harness of its own, whose plans each serve one variant,
        works without keys."""
        plan = self.plan
        return plan if plan is not None and plan.reused else None

    @property
    def exec_hooks(self) -> bool:
        """Whether this run lets hooks run (its ``exec_hooks`` option, on by default); the process may still forbid
        it (:func:`hsa.sandbox.set_execution`)."""
        return bool(self.options.get("exec_hooks", True))

    def cache_stats(self) -> dict[str, dict]:
        """Hits, misses, evictions, entries and bytes of each cache of this context."""
        return {name: c.stats() for name, c in sorted(self.caches.items())}

    def clear(self) -> None:
        """Empty every cache and the plan table, and read ``HSA_CACHE`` and ``HSA_PLANS`` again."""
        from hsa.plans import size_from_env

        for c in self.caches.values():
            c.clear()
        self.plans.clear(size_from_env(memoising()))
        self.last_undo.clear()
        self.plan = None

    def __repr__(self) -> str:
        recipe = None if self.recipe is None else getattr(self.recipe, "name", None) or type(self.recipe).__name__
        return (f"WorkerContext(#{self.serial}, recipe={recipe}, {len(self.plans)} plans, "
                f"{sum(len(c) for c in self.caches.values())} cache entries)")


def memoising() -> bool:
    """Whether this process keeps what it worked out (caches and slot plans): False with ``HSA_CACHE=0`` in the
    environment (read when a cache or a context is made, and by :meth:`WorkerContext.clear`)."""
    return os.environ.get("HSA_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


#: The contexts in use, the current one last (:func:`use` pushes and pops; read it, do not change it).
STACK: list[WorkerContext] = []


def current() -> WorkerContext:
    """This process's context (made on first use)."""
    if not STACK:
        STACK.append(WorkerContext())
    return STACK[-1]


@contextlib.contextmanager
def use(ctx: WorkerContext) -> Iterator[WorkerContext]:
    """Run the block under ``ctx``; the context before it is current again after (whatever the block raised)."""
    STACK.append(ctx)
    depth = len(STACK)
    try:
        yield ctx
    finally:
        del STACK[depth - 1:]


#: Garbage-collector thresholds while records are worked one after another (``hsa augment``'s workers, ``hsa
#: validate``, ``hsa canonicalize``). The caches of analyses, parses and hook results make a large, long-lived heap,
#: and a hook's LibCST parse makes thousands of objects: with the default (700, 10, 10) full collections walk that
#: heap about every 70,000 allocations, which cost about 15% of a run (a third of a parse). Records are freed by
#: reference counting, so collecting cycles less often changes what is kept only briefly.
GC_THRESHOLDS = (10_000, 10, 10)


@contextlib.contextmanager
def collecting_less() -> Iterator[None]:
    """Run the block with :data:`GC_THRESHOLDS`; the thresholds before it are back after (whatever it raised)."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
