"""The mapping steps a transform makes, applied to a whole record.

A transform whose change is the steps it makes (:meth:`hsa.transform.Transform.mapping_steps`: a rename of tools,
skills or parameters, a value step, a structural parameter step) returns them and hsa applies them here, with the
mapping's own appliers (:func:`hsa.renames.apply_step`), so the variant means what its mapping says. The one
difference from replaying a mapping is a rename of declared parameters made now: its mentions are worked out on
the record and recorded in its steps (:func:`rename_declared_params`), where a recorded step without them is a
step written before hsa recorded them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from hsa.records import Record
from hsa.rename_texts import SchemaReads
from hsa.renames import apply_step, owned_copy, rename_params
from hsa.step_carry import carry_messages

__all__ = ["apply_new_steps", "rename_declared_params", "renamed_alike"]


def apply_new_steps(record: Record, steps: Iterable[dict]) -> Record:
    """``record`` with ``steps`` applied and appended to its mapping: the steps a transform makes now
    (:meth:`hsa.transform.Transform.mapping_steps`), not a mapping's recorded ones. Each step is applied as a
    mapping's steps are (:func:`hsa.renames.apply_step`), but renames of declared parameters: a run of plain
    ``params`` steps (no ``kind``, no ``mentions``) is one rename of them all (:func:`rename_declared_params`), whose
    mentions are worked out on the record and recorded in each step it appends. In a mapping, a plain ``params``
    step without ``mentions`` is a step written before hsa recorded them, and is replayed as one
    (:data:`hsa.rename_texts.LEGACY_MENTIONS`)."""
    out = record
    for new_rename, run in itertools.groupby(steps, key=_new_param_rename):
        if new_rename:
            out = rename_declared_params(out, [{"tool": s["tool"], "path": list(a), "new": b[-1]}
                                               for s in run for a, b in s["paths"]])
        else:
            for step in run:
                out = apply_step(out, step)
    return out


def _new_param_rename(step: dict) -> bool:
    """Whether ``step`` is a rename of declared parameters whose mentions are still to be worked out."""
    return step.get("op") == "params" and not step.get("kind") and "mentions" not in step


def rename_declared_params(record: Record, renames: list[dict]) -> Record:
    """``record`` with declared parameters renamed (``renames``: ``{"tool", "path", "new"}`` entries; the tools
    and paths are the record's): one :func:`rename_params` per tool, in the order the entries first name them, each
    recording its step with its mentions, a name that ``renames`` changes alike at every declaration following in
    every text (:func:`renamed_alike`); on a record without hook events the messages are carried through all the
    steps in one pass."""
    by_tool: dict[str, dict[tuple, str]] = {}
    for entry in renames:
        by_tool.setdefault(entry["tool"], {})[tuple(entry["path"])] = entry["new"]
    out, _ = owned_copy(record, lambda t: True)  # one copy, then each rename in place (schemas replaced)
    reads = SchemaReads()  # each tool's mentions read every schema: read once (replaced, never edited here)
    also = renamed_alike(record, renames, reads)
    at_once = not record.get("hook_events")  # the messages carried through all the steps in one pass
    n = len(out["mapping"])
    for tool, table in by_tool.items():
        out = rename_params(out, tool, table, copy=False, shared_schemas=True, also=also, messages=not at_once,
                            reads=reads)
    if at_once:
        carry_messages(out["messages"], out["mapping"][n:], sift=True)
    return out


def renamed_alike(record: Record, renames: list[dict], reads: SchemaReads | None = None) -> dict[str, str]:
    """Parameter names that ``renames`` changes at every declaration in the record, each to one new name: their
    mentions follow in every text although several tools declare them (``path`` -> ``Path`` everywhere).
    ``reads``: the schemas' leaves, read once for the whole rename."""
    news: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for entry in renames:
        news.setdefault(entry["path"][-1], set()).add(entry["new"])
        count[entry["path"][-1]] = count.get(entry["path"][-1], 0) + 1
    reads = SchemaReads() if reads is None else reads
    declared: dict[str, int] = {}
    for t in record["tools"]:
        for leaf in reads.leaves(t["parameters"]):
            declared[leaf] = declared.get(leaf, 0) + 1
    return {k: next(iter(v)) for k, v in news.items() if len(v) == 1 and declared.get(k) == count[k]}
