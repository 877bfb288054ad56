"""A variant as its output row reads back (what the restore step undoes), with the slot plan's help.

The restore step (:func:`hsa.renames.with_restore`) reads every variant back as its row reads
(:func:`hsa.records.read_back`: written, as JSON, and read again), because the reader can change a record on the way
(a tool read without a schema loses a marker, a skill tool written as a string becomes an object once its argument
is renamed). What the reader changes of a record whose trajectory it converts nothing of
(:func:`hsa.records.plain_trajectory`) is its harness's alone: the tools and skill tool as they read back, and how
they are written. Under a harness-variant pool the variants of a slot share those parts (the objects a plan's leaf
runs made, or the source's own, which the harness digest pins), so this module keeps that harness half in the slot
plan, found by the identity of the parts (:meth:`hsa.plans.SlotPlan.same_as`), and reads the trajectory per record
(:func:`hsa.records.read_back_trajectory`); and beside it the key of the split undo of those parts and steps
(``hsa.renames._undo_split`` works it out, a digest of them, and finds it here next time).
"""

from __future__ import annotations

from hsa import _json
from hsa.context import current as _current
from hsa.records import Record

__all__ = ["by_plan", "as_written", "HARNESS_FMT"]

#: The ``_fmt`` keys a record's tools and skill tool are written by: with the tools and the skill tool, what the
#: harness half of a read-back is a function of (:func:`hsa.records.harness_read_back`).
HARNESS_FMT = ("tools_str", "no_tools", "skill_tool_str", "skill_tool_default")
#: A harness half that JSON does not give back exactly: those variants are read back whole.
WHOLE = ("whole",)
#: A harness half asked for once: read back whole, and kept when it is asked for again.
ONCE = ("once",)


def by_plan(variant: Record, steps: list[dict], source: Record, parts: tuple[str, ...]) -> list | None:
    """Where the slot plan of the variant being made (:attr:`hsa.context.WorkerContext.keeping`) keeps what the
    restore step works out of ``variant``'s harness as its row reads back, found by identity (:meth:`SlotPlan.same_as
    <hsa.plans.SlotPlan.same_as>`): ``[harness half, undo key]``, each None until the first variant that needs it
    fills it in. The harness half (:func:`hsa.records.harness_read_back`) is a function of the tools, the skill tool
    and how they are written (:data:`HARNESS_FMT`); the undo's key (``hsa.renames._undo_split``) of those, the
    other ``parts`` (the harness parts the steps change: ``hsa.renames.STEP_PARTS`` and the hooks) as they read back
    (a JSON copy) and ``steps``. So an entry is held for these very objects, a part that is ``source``'s own under a
    key the harness digest covers standing for every record's (:func:`hsa.plans.pinned`): the parts a plan's leaf
    runs make and the steps they give are shared by the variants that take them.

    None where no plan keeps the work, where the reader may convert the trajectory
    (:func:`hsa.records.plain_trajectory`: then the read-back is the reader's whole, and may change the harness), and
    for a variant with hook events: its undo does not split (:func:`hsa.renames.carries`), and the whole read-back of
    its tools is looked up by their JSON bytes (``records.tools``) at about the cost of the trajectory's half
    (measured on full-harness records: 60 shared ones took 0.3% more instructions with it)."""
    from hsa.plans import ABSENT, pinned
    from hsa.records import plain_trajectory

    plan = _current().keeping
    if plan is None or variant.get("hook_events") or not plain_trajectory(variant):
        return None
    fmt = variant["_fmt"]
    how = tuple(fmt.get(k) for k in HARNESS_FMT)
    harness = ("read back", *(PINNED if pinned(k, variant.get(k, ABSENT), source) else variant.get(k, ABSENT)
                              for k in ("tools", "skill_tool")))
    halves = plan.same_as(harness)
    if halves is None:
        halves = plan.remember(harness, {})
    undo = ("undo", *steps, *(PINNED if pinned(k, variant.get(k, ABSENT), source) else variant.get(k, ABSENT)
                              for k in parts))
    keys = plan.same_as(undo)
    if keys is None:
        keys = plan.remember(undo, {})
    return [halves.setdefault(how, [None]), keys.setdefault(how, [None])]


#: What :func:`by_plan` holds for a part that is its source's own under a key the harness digest covers.
PINNED = ("the source's part",)


def as_written(record: Record, written: list | None = None, *, shared_tools: bool = False) -> Record:
    """``record`` as it reads back from its row (the input format and back, its mapping kept): what canonicalize will
    be given. It can differ from the record in memory: a tool read without a schema keeps a marker that its row loses
    once the tool has one, a skill tool given as a string is written as an object once its argument is renamed.

    ``written``: :func:`by_plan`'s entry for ``record``. Its harness half is read once (the second variant
    that asks for it reads back whole and keeps it: most entries asked for once are never asked for again), and the
    trajectory per record (:func:`hsa.records.read_back_trajectory`: the reader's own JSON, call normalizer and
    structure check). ``shared_tools``: the caller undoes the record with ``written`` and the split undo's result is
    in the plan (it replaces every harness part: ``hsa.renames._undo_from``), so the tools may be the plan's, read
    only, instead of a copy of them."""
    from hsa.records import harness_read_back, read_back, read_back_trajectory

    again = None
    if written is not None:
        slot = written[0]
        if slot[0] is None:  # seen once: a harness half no other variant takes is not worth its JSON
            slot[0] = ONCE
        elif slot[0] is ONCE:
            again = read_back(record)
            slot[0] = harness_read_back(again) or WHOLE
        elif slot[0] is not WHOLE:
            tools = None
            if shared_tools:
                if len(slot) == 1:
                    slot.append(_json.loads(slot[0][0]))
                tools = slot[1]
            again = read_back_trajectory(record, slot[0], tools=tools)
    if again is None:
        again = read_back(record)
    again["mapping"] = list(record["mapping"])
    again["transforms"] = list(record["transforms"])
    again["notes"] = list(record["notes"])
    return again
