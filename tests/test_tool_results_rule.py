"""Issue 16 item 9: one rule for tool results (docs/design.md, "Tool results").

A tool result is what the environment returned. Parameter renames and value changes never
touch it (keys, values and text stay as recorded, in the results of every tool); tool and
skill renames reach it where it names the tool or skill (whole tokens), because the model
must be able to call what a result points to. Tested on multi-turn trajectories.
"""

from __future__ import annotations

import copy
import json
import random

import pytest

import hsa
from hsa.names import replace_tokens
from hsa.transform import run
from tests.harness_cases import AIRLINE, RETAIL, record, tool
from transforms import tool as T


def _call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


ORDERS = {
    "id": "orders-1",
    "tools": [
        tool("get_order_details", "Get an order; detail full_history adds the event log.",
             {"order_id": {"type": "string"}, "detail": {"type": "string", "enum": ["brief", "full_history"]}},
             ["order_id"]),
        tool("list_orders", "List a user's orders.",
             {"user_id": {"type": "string"}, "detail": {"type": "string"}}, ["user_id"]),
    ],
    "messages": [
        {"role": "system", "content": "Pass detail full_history only when the user asks for the history."},
        {"role": "user", "content": "Show the full history of order #W1, then my other orders."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("a", "get_order_details", {"order_id": "#W1", "detail": "full_history"})]},
        {"role": "tool", "tool_call_id": "a", "content": json.dumps(
            {"order_id": "#W1", "detail": "full_history", "events": ["placed", "shipped"]})},
        {"role": "assistant", "content": "", "tool_calls": [_call("b", "list_orders", {"user_id": "u1"})]},
        {"role": "tool", "tool_call_id": "b", "content": json.dumps(
            {"orders": ["#W1", "#W2"], "detail": "full_history", "hint": "call get_order_details per order"})},
        {"role": "assistant", "content": "Order #W1 was placed and shipped; you also have #W2."},
    ],
}


def _results(rec) -> list:
    return [m["content"] for m in rec["messages"] if m["role"] == "tool"]


def test_values_leave_every_tool_result_as_recorded():
    """An enum rename changes the schema, the calls and the prompt text, but no tool result: not the renamed
    tool's result, not another tool's result that holds the same string."""
    src = record(ORDERS)
    step = {"op": "values", "tool": "get_order_details", "path": ["detail"], "map": [["full_history", "FULL-HIST"]],
            "texts": True}
    out = T.Values().apply(src, {"steps": [step]})
    assert out["tools"][0]["parameters"]["properties"]["detail"]["enum"] == ["brief", "FULL-HIST"]
    assert out["messages"][2]["tool_calls"][0]["function"]["arguments"]["detail"] == "FULL-HIST"
    assert "FULL-HIST" in out["messages"][0]["content"] and "FULL-HIST" in out["tools"][0]["description"]
    assert _results(out) == _results(src)
    assert hsa.Mapping(out["mapping"]).to_canonical(
        {"name": "get_order_details", "arguments": {"order_id": "#W1", "detail": "FULL-HIST"}})["arguments"][
        "detail"] == "full_history"


def test_param_rename_leaves_result_keys_and_tool_rename_reaches_result_text():
    """A parameter rename leaves the keys of results alone; a tool rename reaches a result that names the tool."""
    src = record(ORDERS)
    out = T.ParamRename().apply(src, {"renames": [{"tool": "get_order_details", "path": ["detail"],
                                                   "new": "detailLevel"}]})
    assert "detailLevel" in out["tools"][0]["parameters"]["properties"]
    assert _results(out) == _results(src)
    out = T.ToolRename().apply(src, {"renames": {"get_order_details": "fetchOrder"}})
    assert _results(out)[0] == _results(src)[0]
    assert "call fetchOrder per order" in _results(out)[1]


@pytest.mark.parametrize("raw", [ORDERS, AIRLINE, RETAIL], ids=lambda r: r["id"])
def test_tools_recipe_keeps_results_but_for_tool_and_skill_names(raw):
    """Over the tools recipe on multi-turn trajectories, every variant's results are the source's results with
    only renamed tool and skill names replaced (whole tokens)."""
    recipe = hsa.load_recipe("tools")
    src = record(raw)
    changed = 0
    for seed in range(25):
        out, applied, _ = run(recipe, copy.deepcopy(src), random.Random(seed))
        m = hsa.Mapping(out["mapping"])
        names = {**m.tool_names(), **m.skill_names()}
        expected = [replace_tokens(c, names) if isinstance(c, str) else c for c in _results(src)]
        assert _results(out) == expected, [a.name for a in applied]
        changed += any(a.name in ("tool.values", "tool.param_rename") for a in applied)
    assert changed
