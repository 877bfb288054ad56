"""A leaf that makes mapping steps (``Transform.mapping_steps``) applied through its slot plan's entry
(:class:`hsa.plans.LeafRun`, issues 18 and 29) gives what its plain apply gives.

The harness parts and steps are kept by the leaf run's branch of (params, parts read) from the second sighting
on, and the messages carried through the steps (:func:`hsa.renames.carry_messages`): compared with ``t.apply``
on the fixtures (without hooks, where it applies, and with them, where it does not), on records that share a
harness but not a trajectory (the case the plan is for: the branch was kept from another record), on generated
records, caches on and off; the input is never modified.
"""

from __future__ import annotations

import copy
import random

from hypothesis import given, settings

from hsa.records import clone, normalize
from hsa.recipes import load_recipe
from hsa.renames import carry_messages
from hsa.testing import records
from hsa.plans import LeafRun
from hsa.transform import Skip, _apply_carried, makes_steps
from tests.conftest import normalized_fixtures, sample, without_hooks
from tests.exact_support import exact

_ALL = normalized_fixtures(5)


FIXTURE = [without_hooks(r) for r in _ALL] + _ALL[:3]


def _leaves():
    out = []
    for name in ("default", "tools", "rotbench-heavy"):
        out += [t for t in load_recipe(name).leaves() if makes_steps(t)]
    assert {t.name for t in out} >= {"tool.rename", "tool.param_rename", "tool.values", "tool.nest", "tool.flatten"}
    return out


def _other_trajectory(record, rng):
    """``record`` with another trajectory: the messages reversed in part, texts that name its tools, parameters and
    values, tool results that do too (the harness parts the lookup is keyed by stay as they are)."""
    out = clone(record)
    words = [t["name"] for t in out["tools"]]
    for t in out["tools"]:
        words += list((t["parameters"].get("properties") or {}))
        for sub in (t["parameters"].get("properties") or {}).values():
            if isinstance(sub, dict) and isinstance(sub.get("enum"), list):
                words += [v for v in sub["enum"] if isinstance(v, str)]
    for m in out["messages"]:
        picked = " ".join(rng.sample(words, min(3, len(words)))) if words else ""
        if isinstance(m.get("content"), str):
            m["content"] = f"{m['content']} {picked}"
        elif m.get("content") is None and m.get("role") == "tool":
            m["content"] = picked
    calls = [m for m in out["messages"] if m.get("tool_calls")]
    if len(calls) > 1:  # one call turn dropped: other calls, other values
        out["messages"].remove(calls[rng.randrange(len(calls))])
    return out


def _check(t, record, params, other=None) -> bool:
    """``t``'s apply through one leaf run, three times on ``record`` (noted, checked and kept, taken from the
    plan) and once on ``other``; whether the plan kept what the apply gave."""
    before = copy.deepcopy(record)
    want = t.apply(record, params)
    run = LeafRun(t, 0)
    got = _apply_carried(t, record, params, run)  # seen once: noted
    assert exact(got, want)
    again = _apply_carried(t, record, params, run)  # seen twice: checked, kept when it carries
    assert exact(again, want)
    kept = bool(run.steps) and run.steps[0][2] is not None
    assert exact(_apply_carried(t, record, params, run), want)  # taken from the plan where kept
    assert exact(record, before)  # the input is never modified
    if other is not None:
        assert exact(_apply_carried(t, other, params, run), t.apply(other, params))
    return kept


def test_step_leaves_equal_their_plain_apply(caches):
    seen = kept = 0
    for i, rec in enumerate(sample(FIXTURE)):
        rng = random.Random(i)
        other = _other_trajectory(rec, rng)
        for t in _leaves():
            params = t.sample(rec, random.Random(i * 31 + seen))
            if isinstance(params, Skip):
                continue
            kept += _check(t, rec, params, other)
            seen += 1
    assert seen > 40
    assert kept > 20  # the plan's branch was taken, not only the plain apply


def test_carry_messages_copies_and_follows_the_steps():
    rec = next(r for r in FIXTURE if not r.get("hooks") and any(m.get("tool_calls") for m in r["messages"])
               and any(m.get("role") == "tool" for m in r["messages"]))
    name = next(m["tool_calls"][0]["function"]["name"] for m in rec["messages"] if m.get("tool_calls"))
    msgs = copy.deepcopy(rec["messages"])
    for m in msgs:
        m["content"] = f"{m.get('content') or ''} {name} zq_x"
        if m.get("role") == "tool":
            m["name"] = name
    steps = [{"op": "tools", "map": {name: "zq_tool"}},
             {"op": "values", "tool": "zq_tool", "path": ["q"], "map": [["zq_x", "zq_y"]], "texts": True}]
    frozen = copy.deepcopy(msgs)
    out = carry_messages(msgs, tuple(steps))
    assert exact(msgs, frozen)
    assert all(m["name"] == "zq_tool" for m in out if m.get("role") == "tool")
    assert all("zq_tool" in m["content"] and name not in m["content"].split() for m in out)
    assert all(("zq_x" in m["content"]) == (m.get("role") == "tool") for m in out)  # values: not in tool results
    assert all(c["function"]["name"] != name for m in out for c in m.get("tool_calls") or ())
    # a later step renames what an earlier one wrote (no text held it before)
    chained = carry_messages(msgs, steps + [{"op": "values", "tool": "zq_tool", "path": ["q"],
                                             "map": [["zq_tool", "zq_end"]], "texts": True}])
    assert all(("zq_end" in m["content"]) == (m.get("role") != "tool") for m in chained)


@settings(max_examples=25, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_step_leaves_on_generated_records(raw):
    rec = normalize(raw)
    if len(rec["messages"]) % 3:
        rec = without_hooks(rec)
    other = _other_trajectory(rec, random.Random(len(rec["messages"])))
    for k, t in enumerate(_leaves()):
        params = t.sample(rec, random.Random(k))
        if not isinstance(params, Skip):
            _check(t, rec, params, other)
