"""The fast paths of hook replay: pipelined sandbox batches, exact request encoding, and invariant 7's memos."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import sandbox as sb
from hsa.sandbox import invariant as sbi
from hsa.sandbox.process import request_line
from hsa.hooks_model import map_output, map_payload
from hsa.records import normalize
from tests.conftest import FIXTURES
from tests.test_hook_sandbox import fn


ECHO = "def f(p):\n    return [p.get('i'), len(p.get('pad', ''))]\n"
RAISE = "def f(p):\n    raise ValueError('no ' + str(p.get('i')))\n"
CRASH = "import os\ndef f(p):\n    os._exit(3)\n"
HANG = "def f(p):\n    while True:\n        pass\n"
MEMORY = "def f(p):\n    return len(bytearray(2 * 1024 ** 3))\n"


def test_a_pipelined_batch_gives_what_calls_one_by_one_give(box):
    """A batch with a crash, a hang, a memory limit and raises answers every call as single calls do, in order."""
    sources = [ECHO, RAISE, ECHO, CRASH, ECHO, HANG, ECHO, RAISE, ECHO, MEMORY, ECHO]
    calls = [fn(src, {"i": i, "pad": "x" * (i * 7)}) for i, src in enumerate(sources)]
    box.run([fn(ECHO)])
    starts = box.starts
    batch = box.run(calls)
    assert box.starts == starts + 3  # fresh workers after the crash, the hang (killed from outside) and the memory limit
    alone = sb.Sandbox(time_limit=0.5, memory_mb=256)
    try:
        single = [alone.run([c])[0] for c in calls]
    finally:
        alone.close()
    assert batch == single
    assert [o.get("value") for o in batch[::2]] == [[0, 0], [2, 14], [4, 28], [6, 42], [8, 56], [10, 70]]
    assert batch[3]["error"] == "crash" and batch[5]["error"] == "timeout" and batch[1]["error"] == "ValueError"
    assert batch[9]["error"] == "memory limit"


def test_code_that_does_not_compile_says_so_on_every_call(box):
    """hsa sends a hook's source once per worker: before, the worker kept nothing of code that did not compile, so
    every later call of it failed with the worker's own ``KeyError: 'src'``, reported as the hook's error (the "hook
    not replayed" note of 45 of 51 rows of records with such a hook said so). Every call now gives the SyntaxError,
    in one batch and in the next."""
    broken = "def f(p):\n    return (p\n"
    first = box.run([fn(broken, {"i": 1}), fn(broken, {"i": 2})])
    again = box.run([fn(broken, {"i": 3})])
    for out in (*first, *again):
        assert out["ok"] is False and out["error"] == "SyntaxError", out
        assert out["detail"] == first[0]["detail"] and "never closed" in out["detail"]
    nul = box.run([fn("x = 1\0", {"i": 1}), fn("x = 1\0", {"i": 2})])  # a NUL: SyntaxError or ValueError by version
    assert nul[0]["error"] in ("SyntaxError", "ValueError") and nul[0] == nul[1]


def test_a_batch_larger_than_the_pipes_does_not_block(box):
    """Requests and answers of several MiB each way flow at once without a deadlock."""
    src = "def f(p):\n    return p['s'][::-1] + str(p['i'])\n"
    calls = [fn(src, {"i": i, "s": "ab" * 10_000}) for i in range(300)]
    out = box.run(calls)
    assert [o["value"][-3:] for o in out[-3:]] == ["297", "298", "299"]
    assert all(o["ok"] and o["value"].startswith("ba" * 10_000) for o in out)


def test_requests_reach_the_hook_exactly(box):
    """NaN, infinities, ints beyond 64 bits, key order, non-ASCII text and 1.0 versus 1 reach the hook unchanged."""
    src = "def f(p):\n    return [list(p), [repr(v) for v in p.values()]]\n"
    payloads = [{"z": float("nan"), "c": float("-inf")}, {"b": 2 ** 70, "a": None},
                {"y": 1.0, "x": True, "w": 1, "s": "é\u2028\"null\"", "n": [{"k": -0.0}]}]
    out = box.run([fn(src, p) for p in payloads])
    assert out[0]["value"] == [["z", "c"], ["nan", "-inf"]]
    assert out[1]["value"] == [["b", "a"], [str(2 ** 70), "None"]]
    assert out[2]["value"] == [["y", "x", "w", "s", "n"], ["1.0", "True", "1", repr("é\u2028\"null\""),
                                                            "[{'k': -0.0}]"]]


def test_request_lines_decode_to_the_request():
    """Every request line, whichever encoder wrote it, is one line that json.loads reads back as the request."""
    for req in [{"k": "a", "p": {"x": 1.5, "y": [1, 2.0, True]}}, {"k": "a", "p": {"n": None}},
                {"k": "a", "p": {"big": 2 ** 64}}, {"k": "a", "p": {"t": "line\nbreak é"}}]:
        line = request_line(req)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        back = json.loads(line)
        assert back == req and repr(back) == repr(req)


# ---------------------------------------------------------------------------- invariant 7: carrying through steps

TOOLS = ["get_item", "check_stock", "load_skill"]
WORDS = TOOLS + ["getItem", "product_id", "pid", "item_qa", "itemQA", "S", "small", "the", "fs.get_item", "get_item."]


def _steps():
    tools = st.fixed_dictionaries({"op": st.just("tools"),
                                   "map": st.dictionaries(st.sampled_from(TOOLS), st.sampled_from(TOOLS + ["getItem",
                                                                                                          "stock_v2"]),
                                                          max_size=3)})
    params = st.fixed_dictionaries({"op": st.just("params"), "tool": st.sampled_from(TOOLS + ["getItem"]),
                                    "paths": st.sampled_from([[[["product_id"], ["pid"]]],
                                                              [[["qty"], ["amount"]], [["product_id"], ["item"]]],
                                                              [[["size"], ["opts", "size"]]]])})
    values = st.fixed_dictionaries({"op": st.just("values"), "tool": st.sampled_from(TOOLS),
                                    "path": st.just(["size"]), "map": st.just([["S", "small"], ["M", "medium"]])})
    skills = st.fixed_dictionaries({"op": st.just("skills"), "map": st.just({"item_qa": "itemQA"}),
                                    "tool": st.just("load_skill"), "argument": st.just("skill")})
    return st.lists(st.one_of(tools, params, values, skills, st.just({"op": "opaque"})), max_size=6)


_text = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
_args = st.dictionaries(st.sampled_from(["product_id", "qty", "size", "skill"]),
                        st.one_of(st.sampled_from(["P1", "S", "M", "item_qa"]), st.integers(0, 3)), max_size=4)
_payloads = st.one_of(
    st.fixed_dictionaries({"tool_name": st.sampled_from(TOOLS + ["getItem"]), "tool_input": _args},
                          optional={"note": _text}),
    st.fixed_dictionaries({"reply": _text, "loaded_skills": st.lists(st.sampled_from(WORDS), max_size=2)}),
    st.fixed_dictionaries({"text": _text}, optional={"tool_name": st.sampled_from(TOOLS), "tool_input": _text}),
)
_outputs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(0, 2), st.sampled_from([1.0, 0.5]), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["decision", "message", "updatedInput", "updated_input"]),
                                            st.one_of(inner, _args), max_size=3)),
    max_leaves=8)


def _one_by_one(payload: dict, value, steps: list[dict]):
    """What the check did before the memos: every step through map_payload and map_output, per pair."""
    mapped = payload
    for step in steps:
        mapped = map_payload(mapped, step)
    p = payload
    for step in steps:
        tool = p.get("tool_name")
        value = map_output(value, step, tool if isinstance(tool, str) else None)
        p = map_payload(p, step)
    return mapped, value


@settings(max_examples=60, deadline=None)
@given(steps=_steps(), items=st.lists(st.tuples(_payloads, _outputs), min_size=1, max_size=6))
def test_carrier_matches_mapping_each_pair_step_by_step(steps, items):
    """The per-variant memos give exactly (key order, 1 vs 1.0 vs True) what mapping each pair through each step gives."""
    carrier = sbi._Carrier(steps)
    for payload, value in items + items[::-1]:  # repeats hit the memos
        want_mapped, want_value = _one_by_one(payload, value, steps)
        mapped, tools = carrier.payload(payload)
        assert repr(mapped) == repr(want_mapped)
        got = carrier.expected({"ok": True, "value": value}, tools)
        assert repr(got) == repr({"ok": True, "value": want_value})


def test_carrier_keeps_key_order_and_tools_apart():
    """Equal payloads in another key order, and one rewritten input under two tools, are carried separately."""
    steps = [{"op": "params", "tool": "get_item", "paths": [[["product_id"], ["pid"]]]}]
    carrier = sbi._Carrier(steps)
    a, _ = carrier.payload({"tool_name": "get_item", "tool_input": {"product_id": "P1", "qty": 1}})
    b, _ = carrier.payload({"tool_input": {"qty": 1, "product_id": "P1"}, "tool_name": "get_item"})
    assert list(a) == ["tool_name", "tool_input"] and list(b) == ["tool_input", "tool_name"]
    assert list(a["tool_input"]) == ["pid", "qty"] and list(b["tool_input"]) == ["qty", "pid"]
    out = {"ok": True, "value": {"updatedInput": {"product_id": "P2"}}}
    assert carrier.expected(out, ("get_item",))["value"] == {"updatedInput": {"pid": "P2"}}
    assert carrier.expected(out, ("check_stock",))["value"] == {"updatedInput": {"product_id": "P2"}}
    x = carrier.expected({"ok": True, "value": {"m": "pid", "n": 1}}, ("get_item",))
    y = carrier.expected({"ok": True, "value": {"n": 1, "m": "pid"}}, ("get_item",))
    assert list(x["value"]) == ["m", "n"] and list(y["value"]) == ["n", "m"]


def _record_with_hooks(src_hook: str, var_hook: str) -> tuple[dict, dict]:
    rec = normalize(json.loads(FIXTURES.read_text().splitlines()[0]))
    hook = {"name": "echo_text", "event": "user_input", "entry": "f"}
    source = dict(rec, hooks=[dict(hook, source=src_hook)], hook_events=[])
    variant = dict(rec, hooks=[dict(hook, source=var_hook)], hook_events=[], messages=list(rec["messages"]))
    return source, variant


def test_generated_payloads_follow_a_source_changed_in_place():
    """Payloads are cached by the source's content: a user message added in place is replayed on the next check."""
    source, variant = _record_with_hooks("def f(p):\n    return {'m': p['text']}\n",
                                         "def f(p):\n    return {'m': p['text'] if p['text'] != 'MAGIC' else 'x'}\n")
    assert sb.check_hooks(source, variant) == []
    for rec in (source, variant):
        rec["messages"].append({"role": "user", "content": "MAGIC"})  # the same list objects, changed in place
    v = sb.check_hooks(source, variant)
    assert [x.reason for x in v] == ["rewritten hook behaves differently"] and "MAGIC" in v[0].detail
