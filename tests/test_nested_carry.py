"""Renames of a name that is part of a longer one (``list_items`` of ``list_items_page``) through the slot plans.

A tool or skill rename's applier renames a compound name in texts, but not inside the longer names of the harness
it is applied to (its ``keep``, :func:`hsa.rename_texts.harness_names`). The messages' carry then depends on those
names, not on the steps alone: :func:`hsa.renames.carry_keeps` gives them for each step, and the slot plan's branch
(:func:`hsa.transform._apply_carried`) and the split undo (:func:`hsa.renames._undo`) carry the messages with them.
Before, such records took the whole-record apply and the plain undo loop every time (80% of ``tool.rename``'s
applications on the shared tool-only benchmark input). Each test compares with the plain appliers, and fails if the
keeps are dropped (the carry renames ``list_items`` inside ``list_items_page``, so the plan keeps nothing or the
undo differs).
"""

from __future__ import annotations

import copy

from hsa.context import current
from hsa.mapping import Mapping
from hsa.plans import LeafRun, SlotPlan
from hsa.records import clone, normalize
from hsa.renames import _apply_step_in_place, _undo, carry_keeps, rename_skills, rename_tools
import hsa
from hsa.transform import _apply_carried
from tests.exact_support import exact


def _tool(name: str, prop: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": f"{name} over the {prop}.",
                                             "parameters": {"type": "object", "properties": {prop: {"type": "string"}},
                                                            "required": [prop]}}}


def _record(rid: str, words: str) -> dict:
    """Tools ``list_items`` and ``list_items_page`` (the first is part of the second), texts naming both."""
    return normalize({
        "id": rid,
        "tools": [_tool("list_items", "query"), _tool("list_items_page", "page"), _tool("get_item", "item_id")],
        "messages": [
            {"role": "system", "content": "Use list_items first; list_items_page only for more."},
            {"role": "user", "content": f"{words}: run list_items, then list_items_page if needed."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "list_items", "arguments": {"query": words}}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "list_items",
             "content": "3 items; call list_items_page for the rest"},
            {"role": "assistant", "content": f"list_items found {words}; list_items_page was not needed."},
        ]})


def test_carry_keeps_are_the_harness_names_before_each_name_step():
    rec = _record("a", "pens")
    steps = [{"op": "tools", "map": {"list_items": "fetch_items"}},
             {"op": "params", "tool": "get_item", "paths": [[["item_id"], ["itemId"]]]},
             {"op": "tools", "map": {"get_item": "read_item"}}]
    keeps = carry_keeps(rec, steps)
    assert keeps is not None and len(keeps) == 3
    assert {"list_items_page", "fetch_items", "get_item", "item_id"} <= keeps[0]
    assert keeps[1] == frozenset()  # a parameter rename keeps nothing
    assert {"fetch_items", "itemId", "read_item"} <= keeps[2] and "item_id" not in keeps[2]
    assert carry_keeps(rec, [{"op": "tools", "map": {"get_item": "read_item"}}]) is None  # nothing nested


def test_a_nested_rename_is_kept_in_the_plan_and_gives_the_plain_apply():
    t = hsa.get_transform("tool.rename")()
    params = {"renames": {"list_items": "fetch_items"}}
    records = [_record(f"r{i}", w) for i, w in enumerate(["pens", "cups", "list_items_page", "bags"])]
    run = LeafRun(t, 0)
    for rec in records:
        before = copy.deepcopy(rec)
        want = t.apply(rec, params)
        got = _apply_carried(t, rec, params, run)
        assert exact(got, want)
        assert exact(rec, before)  # the input is never modified
        texts = " ".join(m["content"] or "" for m in got["messages"])
        assert "list_items_page" in texts and "fetch_items_page" not in texts
    # the first record noted the branch, the second checked and kept it, the last two took it from the plan
    assert run.steps[0][2] is not None
    assert run.taken == 2


def _plain_undo(record: dict, n: int) -> dict:
    out = clone(record)
    for step in Mapping(record["mapping"][len(record["mapping"]) - n:]).inverse().steps:
        out = _apply_step_in_place(out, step)
    out["mapping"] = record["mapping"][:len(record["mapping"]) - n]
    return out


def test_the_undo_of_a_nested_rename_splits_and_equals_the_plain_loop():
    """The variant renames ``get_item`` to ``list_items``, part of ``list_items_page``: undoing it renames
    ``list_items`` back, but not inside ``list_items_page``."""
    plan = current().plan
    try:
        current().plan = SlotPlan()
        current().plan.reused = True  # the undo keeps its harness half (hsa.context.WorkerContext.keeping)
        for i, words in enumerate(["pens", "get_item and list_items_page", "cups"]):
            rec = _record(f"u{i}", words)
            rec = rename_tools(rec, {"list_items": "find_items"})
            rec["mapping"] = []
            v = rename_tools(rec, {"get_item": "list_items"})
            v = rename_tools(v, {"find_items": "find-items"})
            want = _plain_undo(v, 2)
            got = _undo(v, 2, owned=False)
            assert exact(got, want)
            assert "list_items_page" in got["messages"][0]["content"]
            kept = [k for k in current().plan.memo if isinstance(k, tuple) and k[0] == "undone"]
            assert kept, "the undo did not split (its harness half is kept in the plan when it does)"
    finally:
        current().plan = plan


def test_a_nested_skill_rename_carries_with_its_keeps():
    rec = normalize({
        "id": "s", "tools": [_tool("get_item", "item_id")],
        "skills": [{"name": "pdf_tools", "description": "PDF work."}, {"name": "pdf_tools_extra", "description": "More."}],
        "messages": [{"role": "user", "content": "load pdf_tools, not pdf_tools_extra"},
                     {"role": "assistant", "content": "pdf_tools loaded; pdf_tools_extra stays off."}]})
    v = rename_skills(rec, {"pdf_tools": "pdf-kit"})
    steps = v["mapping"][-1:]
    keeps = carry_keeps(rec, steps)
    assert keeps is not None and "pdf_tools_extra" in keeps[0]
    from hsa.renames import carry_messages
    from hsa.step_carry import compile_carry

    assert exact(carry_messages(rec["messages"], steps, entries=compile_carry(steps, keeps)), v["messages"])
    assert not exact(carry_messages(rec["messages"], steps), v["messages"])  # without them: renamed inside
