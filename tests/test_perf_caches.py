"""Caches on the data path give the same results as the uncached code (issue 8)."""
from __future__ import annotations

import json

from hsa import _json
from hsa.records import normalize
from hsa.tool_dialects import read_tool

TOOL = {"type": "function", "function": {"name": "lookup", "description": "Find.",
                                          "parameters": {"type": "object", "properties": {"n": {"type": "int"}}}}}


def _record(tools):
    return {"id": "r", "messages": [{"role": "user", "content": "hi"}], "tools": tools}


def test_cached_tool_normalisation_equals_uncached_and_keeps_notes():
    """A repeated tool normalises to the same tool with the same notes as the first time and as read_tool."""
    first, second = normalize(_record([TOOL])), normalize(_record([json.loads(json.dumps(TOOL))]))
    notes: list[str] = []
    assert first["tools"] == second["tools"] == [read_tool(TOOL, 0, notes)]
    assert first["notes"] == second["notes"] == notes and notes  # "int" -> "integer" is noted every time


def test_cached_tool_is_not_shared_between_records():
    """Changing one record's normalised tool leaves the next record's copy untouched."""
    a = normalize(_record([TOOL]))
    a["tools"][0]["parameters"]["properties"]["n"]["type"] = "string"
    b = normalize(_record([TOOL]))
    assert b["tools"][0]["parameters"]["properties"]["n"]["type"] == "integer"


def test_cache_tells_apart_values_that_compare_equal():
    """1, 1.0 and True in a schema are different tools to the cache (repr keys), as they are in JSON."""
    outs = []
    for v in (1, 1.0, True):
        t = _json.copy(TOOL)
        t["function"]["parameters"]["properties"]["n"]["default"] = v
        outs.append(normalize(_record([t]))["tools"][0]["parameters"]["properties"]["n"]["default"])
    assert [type(x) for x in outs] == [int, float, bool]


def test_json_copy_is_deep_and_exact():
    """_json.copy returns equal values of the same types, with no shared containers."""
    v = {"a": [1, 1.0, True, None, "s", {"b": [[]]}]}
    c = _json.copy(v)
    assert c == v and [type(x) for x in c["a"]] == [type(x) for x in v["a"]]
    c["a"][5]["b"][0].append(1)
    assert v["a"][5]["b"] == [[]]


def test_hook_result_cache_tells_apart_key_order_and_nan():
    """Payloads equal up to key order, or NaN against None, are separate entries of the hook result cache."""
    from hsa.sandbox import replay_many

    hook = {"name": "first_key", "event": "pre_tool_use", "entry": "check",
            "source": "def check(payload):\n    k = list(payload['tool_input'])[0]\n"
                      "    return {'decision': 'allow', 'first': k, 'v': repr(payload['tool_input'][k])}\n"}
    a = {"tool_name": "t", "tool_input": {"x": None, "y": 2}}
    b = {"tool_name": "t", "tool_input": {"y": 2, "x": None}}
    c = {"tool_name": "t", "tool_input": {"x": float("nan"), "y": 2}}
    ra, rb, rc = (r["value"] for r in replay_many([(hook, a), (hook, b), (hook, c)]))
    assert (ra["first"], rb["first"]) == ("x", "y")
    assert (ra["v"], rc["v"]) == ("None", "nan")
    again = replay_many([(hook, b), (hook, c)])  # from the cache, still told apart
    assert [r["value"] for r in again] == [rb, rc]


def test_single_process_augment_restores_gc_thresholds(tmp_path):
    """hsa.pipeline.augment in the caller's process raises the GC thresholds only while it runs."""
    import gc

    from hsa.pipeline import augment
    from hsa.recipes import load_recipe

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(_record([TOOL])) + "\n")
    outer = gc.get_threshold()  # an earlier test's init_worker may have left the run's thresholds in this process
    gc.set_threshold(700, 10, 10)
    try:
        augment([src], tmp_path / "out", load_recipe("identity"), variants=1, workers=1)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*outer)
