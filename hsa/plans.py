"""Slot plans: the harness-level work of one harness-variant pool slot, done once and held by one table.

Under a harness-variant pool (``--harness-pool``, docs/design.md) a variant's :class:`hsa.transform.SlotRng` is
seeded from (seed, harness digest, slot), so the leaves a slot runs, in which order and with which leaf seeds,
are a function of (seed, harness digest, slot, recipe) alone (docs/design-slot-plans.md, section 2). A
:class:`SlotPlan` holds, for each leaf run of the slot in that order (:class:`LeafRun`), what the leaves that
work on the harness gave:

- a leaf that samples and applies on the harness (:meth:`hsa.transform.Transform.sample_harness`,
  :meth:`~hsa.transform.Transform.apply_harness`): its params (or its skip) and the parts it made, by the harness
  parts it read and its answers to the questions it asked of the rest of the record (``LeafRun.harness``, with
  the draws of the next kind);
- a leaf that makes mapping steps (:meth:`~hsa.transform.Transform.mapping_steps`): the harness parts and the
  steps its apply gave, by its params and the parts it read (:data:`hsa.renames.STEP_PARTS`), kept from the second
  record that asks for them on (a slot that serves one variant pays no check), each checked once against the plain
  apply;
- a leaf that samples on the harness (:meth:`hsa.transform.Transform.sample_harness`): its draws, each with the
  harness parts it read and the questions it asked of the rest of the record, with their answers
  (:func:`hsa.transform.sample_reusing`).

The first variant of a slot builds the plan as it runs those leaves; every later variant of the slot takes
what they gave from the plan, and runs every other leaf as a record leaf (sampled and applied on the record).
What a leaf read is compared, not assumed: the parts a plan entry was made from are held with it and a record
uses the entry only when its parts are those objects (the parts a plan entry made, or the source's harness parts,
which the harness digest pins), or else equal to them exactly (:func:`hsa.cache.exact_key`: key order, ``1`` /
``1.0`` / ``True`` told apart). A leaf run that another record reaches with other parts or facts (a record leaf
before it changed them) gets its own branch, up to :data:`BRANCHES` of them, the oldest dropped. So a plan
never changes a byte: what it gives is what the leaf gives.

The plan table of a process (:class:`PlanTable`, ``hsa.context.current().plans``: one per
:class:`hsa.context.WorkerContext`) is keyed by (harness digest, slot, seed, recipe key) and bounded by a count of plans (least recently used dropped first): ``HSA_PLANS`` in the environment sets it (default
:data:`DEFAULT_PLANS`), ``HSA_PLANS=0`` or ``HSA_CACHE=0`` builds a fresh plan for every variant and keeps none.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["SlotPlan", "LeafRun", "PlanTable", "size_from_env", "DEFAULT_PLANS", "BRANCHES", "MEMO", "SEEN", "DIGEST_KEYS",
           "pinned", "held", "ABSENT", "PINNED"]

#: The default bound of a plan table: 8 slots of 64 harnesses.
DEFAULT_PLANS = 8 * 64
#: How many branches (other parts read, other facts, other params) a leaf run keeps, the oldest dropped first.
BRANCHES = 4
#: How many results of the slot's checking work (:meth:`SlotPlan.recall`) a plan keeps, the oldest dropped first.
MEMO = 24
#: How many sets of objects a plan remembers by identity for each kind of work (:meth:`SlotPlan.same_as`), the oldest
#: dropped first.
SEEN = 4
#: The harness keys the harness digest covers exactly (:func:`hsa.pipeline.harness_digest`): two records of one
#: plan have equal values there. The prompt is not one: its section bodies are the trajectory's.
DIGEST_KEYS = frozenset({"tools", "skills", "skill_tool", "hooks"})


def pinned(key: str, value: Any, source: dict | None) -> bool:
    """Whether ``value``, a record's part under ``key``, is ``source``'s own (the record the variant is made from)
    under a key the harness digest covers (:data:`DIGEST_KEYS`): then it is the same in every record of the plan,
    whatever object it is."""
    return source is not None and key in DIGEST_KEYS and value is source.get(key, ABSENT)


#: What a record's ``get`` gives for a key it does not have, where the caller compares parts by identity
#: (:func:`pinned`): the same object on both sides, so two records without the key have it alike.
ABSENT = "\x00absent"
#: What :func:`held` gives for a part that is its source's own under a key the harness digest covers.
PINNED = ("the source's part",)


def held(record: dict, keys: tuple[str, ...], source: dict | None) -> tuple:
    """``record``'s parts under ``keys`` as a plan remembers them by identity (:meth:`SlotPlan.same_as`): the part
    itself, :data:`ABSENT` where the record lacks it, or :data:`PINNED` where it is ``source``'s own under a key the
    harness digest covers (:func:`pinned`: the same in every record of the plan, whatever object it is)."""
    out = []
    for k in keys:
        v = record.get(k, ABSENT)
        out.append(PINNED if pinned(k, v, source) else v)
    return tuple(out)


class LeafRun:
    """One leaf run of a slot: the leaf and its seed (the same for every variant of the slot), and the branches
    of what it gave, each with what it read (``[inputs, ...]``, newest last), and how many variants took what it
    gave from it (``taken``)."""

    __slots__ = ("leaf", "seed", "harness", "steps", "taken")

    def __init__(self, leaf: Any, seed: int):
        self.leaf = leaf
        self.seed = seed
        # a part read is [value, whether it is the source's own part of a DIGEST_KEYS key, its exact key or None]
        # a sample_harness leaf's draws: [keys read, parts read, questions, params or Skip, parts made (by an
        # apply_harness leaf) or None]
        self.harness: list = []
        self.steps: list = []  # [params key, parts read, (parts made, steps, their compiled carry) or None while seen once]
        self.taken = 0

    def is_for(self, leaf: Any, seed: int) -> bool:
        return self.seed == seed and (self.leaf is leaf or self.leaf == leaf)


class SlotPlan:
    """The leaf runs of one slot, in the order the slot's variants run them (:class:`LeafRun`), and what the slot's
    variants worked out after the leaves, on the harness: the restore step's undone harness parts and patches, and
    the variant check's added-names verdict and names-left harness half (:meth:`recall`, :meth:`keep`,
    :meth:`kept`).

    That work is a function of the harness parts and the mapping steps it reads, which a leaf that reads the
    record (``tool.values``) can make differ between two variants of a slot; so each result is kept by the digest
    of what it read, a branch of the plan, and at most :data:`MEMO` of them, the oldest dropped first. A result
    lives and goes with its plan: no table of its own."""

    __slots__ = ("runs", "memo", "served", "reused", "_seen")

    def __init__(self):
        self.runs: list[LeafRun] = []
        self.memo: OrderedDict = OrderedDict()
        self._seen: dict = {}  # kind -> OrderedDict(ids of objects -> (the objects, what they gave)): same_as
        self.served = 0  # variants made and checked with this plan (the pipeline counts them)
        # whether the restore step and the check keep their work here (hsa.context.WorkerContext.keeping): the
        # pipeline says so once the plan has served a variant, or its harness an earlier record's plans
        self.reused = False

    def recall(self, key: tuple, default: Any = None) -> Any:
        """What :meth:`keep` kept under ``key`` (``(kind, digest of what the work read)``), else ``default``."""
        hit = self.memo.get(key, _MISSING)
        if hit is _MISSING:
            return default
        self.memo.move_to_end(key)
        return hit

    def kept(self, key: tuple, make: Callable[[], Any]) -> Any:
        """What :meth:`keep` kept under ``key``, else ``make()``, kept under it now (None is a value like any)."""
        hit = self.recall(key, _MISSING)
        return self.keep(key, make()) if hit is _MISSING else hit

    def same_as(self, objects: tuple) -> Any:
        """What :meth:`remember` was given for these very ``objects`` (the same objects, compared by identity; the
        first names the kind of work, e.g. ``"variant key"``), else None. The objects are held with it, so their
        identities cannot be another object's while it is kept."""
        seen = self._seen.get(objects[0])
        hit = None if seen is None else seen.get(tuple(map(id, objects)))
        if hit is None or not all(a is b for a, b in zip(hit[0], objects)):
            return None
        return hit[1]

    def remember(self, objects: tuple, value: Any) -> Any:
        """Keep ``value`` for ``objects`` by their identity (``objects[0]``: the kind of work; the oldest of more than
        :data:`SEEN` of a kind dropped: the objects are held, and a record's own ones would otherwise outlive it);
        returns ``value``. For what is a function of the objects' contents, never changed in place."""
        seen = self._seen.get(objects[0])
        if seen is None:
            seen = self._seen[objects[0]] = OrderedDict()
        ids = tuple(map(id, objects))
        seen[ids] = (objects, value)
        seen.move_to_end(ids)
        if len(seen) > SEEN:
            seen.popitem(last=False)
        return value

    def keep(self, key: tuple, value: Any) -> Any:
        """Keep ``value`` under ``key`` (the oldest of more than :data:`MEMO` dropped); returns ``value``."""
        memo = self.memo
        memo[key] = value
        memo.move_to_end(key)
        if len(memo) > MEMO:
            memo.popitem(last=False)
        return value


_MISSING = object()


def size_from_env(memoising: bool = True) -> int:
    """The plan count ``HSA_PLANS`` sets (:data:`DEFAULT_PLANS` without it); 0 when ``memoising`` is off
    (``HSA_CACHE=0``, :func:`hsa.cache.enabled`)."""
    if not memoising:
        return 0
    raw = os.environ.get("HSA_PLANS", "").strip()
    if not raw:
        return DEFAULT_PLANS
    try:
        return max(0, int(raw))
    except ValueError:
        raise ValueError(f"HSA_PLANS must be a whole number of plans (got {raw!r})") from None


class PlanTable:
    """Slot plans by (harness digest, slot, seed, recipe key), at most ``max_plans`` of them (least recently used
    dropped first). A table of size 0 hands out a fresh plan each time and keeps none."""

    __slots__ = ("max_plans", "hits", "misses", "evictions", "_data", "_harnesses")

    def __init__(self, max_plans: int = DEFAULT_PLANS):
        self.max_plans = max(0, int(max_plans))
        self.hits = self.misses = self.evictions = 0
        self._data: OrderedDict = OrderedDict()
        self._harnesses: dict = {}  # harness digest (a key's first item) -> how many plans of it the table holds

    def holds_harness(self, digest: Any) -> bool:
        """Whether the table holds a plan of the harness ``digest`` (of any slot): an earlier record had it."""
        return digest in self._harnesses

    def get(self, key: tuple) -> SlotPlan:
        """The plan of ``key``, made empty on a miss (the variant that asked builds it as it runs)."""
        plan = self._data.get(key)
        if plan is not None:
            self._data.move_to_end(key)
            self.hits += 1
            return plan
        self.misses += 1
        plan = SlotPlan()
        if self.max_plans:
            self._data[key] = plan
            self._harnesses[key[0]] = self._harnesses.get(key[0], 0) + 1
            while len(self._data) > self.max_plans:
                old, _ = self._data.popitem(last=False)
                self.evictions += 1
                if self._harnesses[old[0]] == 1:
                    del self._harnesses[old[0]]
                else:
                    self._harnesses[old[0]] -= 1
        return plan

    def clear(self, max_plans: int | None = None) -> None:
        """Drop every plan (and, given ``max_plans``, take that bound)."""
        self._data.clear()
        self._harnesses.clear()
        self.hits = self.misses = self.evictions = 0
        if max_plans is not None:
            self.max_plans = max(0, int(max_plans))

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self):
        """The plans held, least recently used first."""
        return iter(list(self._data.values()))

    def stats(self) -> dict:
        """The table's counts, and over the plans it holds: their leaf runs, the branches that hold a leaf's work
        (``kept``), the leaf runs that a variant took from a plan instead of running the leaf (``taken``) and the
        results of the restore step and the variant check kept after the leaves (``memo``)."""
        runs = [r for p in self._data.values() for r in p.runs]
        kept = sum(sum(b[4] is not None for b in r.harness) + sum(b[2] is not None for b in r.steps) for r in runs)
        return {"plans": len(self._data), "max_plans": self.max_plans, "hits": self.hits, "misses": self.misses,
                "evictions": self.evictions, "leaf_runs": len(runs), "kept": kept,
                "taken": sum(r.taken for r in runs), "memo": sum(len(p.memo) for p in self._data.values())}

