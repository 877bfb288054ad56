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

from typing import NamedTuple

from hsa import _json
from hsa.context import current as _current
from hsa.harness import HARNESS_FMT_KEYS
from hsa.records import Record

__all__ = ["by_plan", "as_written", "Written", "Half", "UndoKey"]

#: How a record's tools and skill tool are written (its ``_fmt`` keys of :data:`hsa.harness.HARNESS_FMT_KEYS`, in a
#: fixed order): with the tools and the skill tool, what the harness half of a read-back is a function of.
_HOW = tuple(sorted(HARNESS_FMT_KEYS))
#: :attr:`Half.read` of a harness half asked for once: read back whole, and kept when it is asked for again.
ONCE = ("once",)
#: :attr:`Half.read` of a harness half that JSON does not give back exactly: those variants are read back whole.
WHOLE = ("whole",)


class Half:
    """The harness half of the read-back of the variants that share one entry: ``read`` is None (not asked for
    yet), :data:`ONCE`, :data:`WHOLE`, or what :func:`hsa.records.harness_read_back` gave, and ``tools`` its tools
    parsed once, given to those variants read only."""

    __slots__ = ("read", "tools")

    def __init__(self):
        self.read = None
        self.tools = None


class UndoKey:
    """The slot plan's key of the split undo (``hsa.renames._undo_split``) of the variants that share one entry:
    None until the first of them works it out; and what ``hsa.renames._undo_from`` works out of their steps and
    harness names before it undoes: the inverse steps (as JSON, read only) and whether they split, None until the
    first of them gets that far (a mapping whose names the record lacks raises there, and keeps nothing)."""

    __slots__ = ("key", "inverse")

    def __init__(self):
        self.key = None
        self.inverse: tuple[list[dict], bool] | None = None


class Written(NamedTuple):
    """:func:`by_plan`'s entry for one variant."""

    half: Half
    undo: UndoKey


def by_plan(variant: Record, steps: list[dict], source: Record, parts: tuple[str, ...]) -> Written | None:
    """Where the slot plan of the variant being made (:attr:`hsa.context.WorkerContext.keeping`) keeps what the
    restore step works out of ``variant``'s harness as its row reads back, found by identity (:meth:`SlotPlan.same_as
    <hsa.plans.SlotPlan.same_as>`, the parts as :func:`hsa.plans.held` gives them: a part that is ``source``'s own
    under a key the harness digest covers stands for every record's): the parts a plan's leaf runs make and the steps
    they give are shared by the variants that take them.

    - The harness half (:class:`Half`) is a function of the tools, the skill tool and how they are written.
    - The undo's key (:class:`UndoKey`) is a function of those, the other ``parts`` (the harness parts the steps
      change: ``hsa.renames.STEP_PARTS`` and the hooks) as they read back (a JSON copy) and ``steps``; so are the
      inverse steps and the check that the steps' names are the record's.

    None where no plan keeps the work, where the reader may convert the trajectory
    (:func:`hsa.records.plain_trajectory`: then the read-back is the reader's whole, and may change the harness), and
    for a variant with hook events: its undo does not split (:func:`hsa.renames.carries`), and the whole read-back of
    its tools is looked up by their JSON bytes (``records.tools``) at about the cost of the trajectory's half
    (measured on full-harness records: 60 shared ones took 0.3% more instructions with it)."""
    from hsa.plans import held
    from hsa.records import plain_trajectory

    plan = _current().keeping
    if plan is None or variant.get("hook_events") or not plain_trajectory(variant):
        return None
    fmt = variant["_fmt"]
    how = tuple(fmt.get(k) for k in _HOW)
    entries = []
    for ident, make in ((("read back", *held(variant, ("tools", "skill_tool"), source)), Half),
                        (("undo", *steps, *held(variant, parts, source)), UndoKey)):
        by_how = plan.same_as(ident)
        if by_how is None:
            by_how = plan.remember(ident, {})
        entry = by_how.get(how)
        if entry is None:
            entry = by_how[how] = make()
        entries.append(entry)
    return Written(*entries)


def as_written(record: Record, written: Written | None = None) -> Record:
    """``record`` as it reads back from its row (the input format and back, its mapping kept): what canonicalize will
    be given. It can differ from the record in memory: a tool read without a schema keeps a marker that its row loses
    once the tool has one, a skill tool given as a string is written as an object once its argument is renamed.

    ``written``: :func:`by_plan`'s entry for ``record``. Its harness half is read once (the second variant that asks
    for it reads back whole and keeps it: most entries asked for once are never asked for again), and the trajectory
    per record (:func:`hsa.records.read_back_trajectory`: the reader's own JSON, call normalizer and structure check).
    The tools of such a read-back are the entry's, read only: the caller's undo (``hsa.renames._undo_from``) replaces
    them, or copies them before it rewrites them in place."""
    from hsa.records import harness_read_back, read_back, read_back_trajectory

    again = None
    if written is not None:
        half = written.half
        if half.read is None:  # seen once: a harness half no other variant takes is not worth its JSON
            half.read = ONCE
        elif half.read is ONCE:
            again = read_back(record)
            half.read = harness_read_back(again) or WHOLE
            if half.read is not WHOLE:
                half.tools = _json.loads(half.read[0])
        elif half.read is not WHOLE:
            again = read_back_trajectory(record, half.read, tools=half.tools)
    if again is None:
        again = read_back(record)
    again["mapping"] = list(record["mapping"])
    again["transforms"] = list(record["transforms"])
    again["notes"] = list(record["notes"])
    return again
