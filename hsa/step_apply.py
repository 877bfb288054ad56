"""The mapping steps a transform makes, applied to a whole record.

A transform whose change is the steps it makes (:meth:`hsa.transform.Transform.mapping_steps`: a rename of tools,
skills or parameters, a value step, a structural parameter step) returns them and hsa applies them here, with the
mapping's own appliers (:data:`hsa.renames.STEP_APPLIERS`), so the variant means what its mapping says. The one
difference from replaying a mapping is a rename of declared parameters made now: its mentions are worked out on
the record and recorded in its steps (:func:`rename_declared_params`), where a recorded step without them is a
step written before hsa recorded them.
"""

from __future__ import annotations

from collections.abc import Iterable

from hsa.records import Record
from hsa.rename_texts import SchemaReads
from hsa.renames import STEP_APPLIERS, owned_copy, param_paths, rename_params
from hsa.step_carry import carry_messages

__all__ = ["apply_new_steps", "rename_declared_params", "renamed_alike"]


def apply_new_steps(record: Record, steps: Iterable[dict]) -> Record:
    """``record`` with ``steps`` applied and appended to its mapping: the steps a transform makes now
    (:meth:`hsa.transform.Transform.mapping_steps`), not a mapping's recorded ones. Each step is applied by its
    applier (:data:`hsa.renames.STEP_APPLIERS`; a ``params`` step with a ``kind`` by ``params:<kind>``) as a
    mapping's steps are, but renames of declared parameters: a run of plain ``params`` steps (no ``kind``, no
    ``mentions``) is one rename of them all (:func:`rename_declared_params`), whose mentions are worked out on the
    record and recorded in each step it appends. In a mapping, a plain ``params`` step without ``mentions`` is a
    step written before hsa recorded them, and is replayed as one (:data:`hsa.rename_texts.LEGACY_MENTIONS`)."""
    steps = list(steps)
    out, i = record, 0
    while i < len(steps):
        step = steps[i]
        op = step.get("op")
        if op == "params" and not step.get("kind") and "mentions" not in step:
            j = i + 1
            while j < len(steps) and steps[j].get("op") == "params" and not steps[j].get("kind") and \
                    "mentions" not in steps[j]:
                j += 1
            out = rename_declared_params(out, [{"tool": s["tool"], "path": list(a), "new": b[-1]}
                                               for s in steps[i:j] for a, b in s["paths"]])
            i = j
            continue
        kind = f"params:{step['kind']}" if op == "params" else op
        if kind not in STEP_APPLIERS:
            raise ValueError(f"no applier for mapping step {kind!r}; known: {sorted(STEP_APPLIERS)}")
        out = STEP_APPLIERS[kind](out, step)
        i += 1
    return out


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
    also = renamed_alike(record, renames)
    at_once = not record.get("hook_events")  # the messages carried through all the steps in one pass
    n = len(out["mapping"])
    reads = SchemaReads()  # each tool's mentions read every schema: read once (replaced, never edited here)
    for tool, table in by_tool.items():
        out = rename_params(out, tool, table, copy=False, shared_schemas=True, also=also, messages=not at_once,
                            reads=reads)
    if at_once:
        carry_messages(out["messages"], out["mapping"][n:], sift=True)
    return out


def renamed_alike(record: Record, renames: list[dict]) -> dict[str, str]:
    """Parameter names that ``renames`` changes at every declaration in the record, each to one new name: their
    mentions follow in every text although several tools declare them (``path`` -> ``Path`` everywhere)."""
    news: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for entry in renames:
        news.setdefault(entry["path"][-1], set()).add(entry["new"])
        count[entry["path"][-1]] = count.get(entry["path"][-1], 0) + 1
    declared: dict[str, int] = {}
    for t in record["tools"]:
        for p in param_paths(t["parameters"]):
            declared[p[-1]] = declared.get(p[-1], 0) + 1
    return {k: next(iter(v)) for k, v in news.items() if len(v) == 1 and declared.get(k) == count[k]}
