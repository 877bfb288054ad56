"""How much of a record's work a slot plan would do once: the leaves' draws per pool slot, and the trajectory's rest.

    PYTHONPATH=. python benchmarks/plan_share.py INPUT.jsonl [--records 300] [--recipe default] [--variants 4] \
        [--pool 8] [--residue 400]

Issue 29 proposes a *slot plan*: the harness-level work of a pool slot (the variant harness, its mapping, undo,
restore patch, validators, hook rewrites and verdicts) made once, each record only carrying its trajectory through
it. This measures, on today's code, in one process (``augment_record`` as a worker runs it):

1. **Which draws a plan could share.** Every leaf run under a pool is grouped by (the slot's seed: seed, harness
   digest and slot; the leaf's place in the run). Within a group, today's leaves draw from the same rng; their
   params differ only where the sampler read something of the record that the harness does not fix (a word of a
   message, the domain, a call's keys, a prompt section's body). Per leaf: its runs, its groups, and the runs
   whose params (or skip reason) differ from their group's most common ones: what a plan keyed by the harness
   alone would get wrong, so what a plan must re-draw per record (or turn into a skip: a change of bytes).
2. **Where the CPU goes by phase** (``time.process_time`` around each, as ``benchmarks/phases.py``), the leaves'
   sample-and-apply time per leaf, and the share of it spent in groups seen before (what today's memo caches
   already try to save).
3. **The trajectory's rest**, measured on ``--residue`` of the written variants with today's functions, per
   variant: carrying the messages and hook events through the variant's steps (calls, tool-result names, text
   renames, payloads), checking the calls (the quick validator against the variant's schema, mapped back, equal
   to the source's), looking for renamed names left in the messages, carrying the messages back and comparing
   them with the source's (invariant 8's trajectory half), and the hook payloads that come from the trajectory
   (recorded events, calls, replies, user texts): what a slot plan cannot do once. With ``read``, ``check source``
   and the rows (from 2), it is an estimate of a planned record's cost; it leaves out the prompt's re-render and
   the work of leaves that read per-record content (prompt bodies, hook events), which stay per record.

CPU milliseconds on this machine (say how loaded it was); nothing is asserted.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

from profile_record import input_arguments, load_inputs, timed_phases  # this folder: the script's own


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    input_arguments(p, records=300)
    p.add_argument("--residue", type=int, default=400, help="variants whose trajectory rest is timed")
    a = p.parse_args()

    from hsa import _json, transform
    from hsa.pipeline import record as rec

    recipe, items = load_inputs(a)
    # -- 1 and 2: the leaves, grouped by slot draw and place
    slot_seed_of: dict[int, int] = {}
    init = transform.SlotRng.__init__

    def slot_init(self, seed, trajectory, *plan):  # plan: the slot's plan (hsa.plans), where the tree has them
        init(self, seed, trajectory, *plan)
        slot_seed_of[id(self)] = seed

    transform.SlotRng.__init__ = slot_init
    place = [0]
    runs: list[tuple] = []  # (leaf name, group key or None, params as JSON, cpu seconds)
    leaf = transform._run_leaf

    def run_leaf(t, record, rng, applied, skipped):
        n_applied, n_skipped = len(applied), len(skipped)
        key = (slot_seed_of.get(id(rng)), place[0]) if isinstance(rng, transform.SlotRng) else None
        place[0] += 1
        c = time.process_time()
        try:
            return leaf(t, record, rng, applied, skipped)
        finally:
            cpu = time.process_time() - c
            if len(applied) > n_applied:
                got = _json.dumps(applied[-1].params)
            elif len(skipped) > n_skipped:
                got = "skip: " + skipped[-1][1]
            else:
                got = "raised"
            runs.append((t.name, None if key is None else (t.name,) + key, got, cpu))

    transform._run_leaf = run_leaf
    run = rec.run

    def run_counted(recipe_, source, rng):
        place[0] = 0
        return run(recipe_, source, rng)

    spent, timed, encode = timed_phases(run_counted)
    pairs: list[tuple] = []  # (source, variant) of the written variants, for 3
    check_variant = rec.check_variant

    def keep_pair(source, variant, **kw):
        out = check_variant(source, variant, **kw)
        if not out and variant is not source and len(pairs) < a.residue:
            pairs.append((source, variant))
        return out

    rec.check_variant = keep_pair
    rows = 0
    t0 = time.process_time()
    for it in items:
        res = rec.augment_record(it, recipe, seed=0, variants=a.variants, keep_original=False,
                                 exec_hooks=not a.no_exec_hooks, harness_pool=a.pool)
        memo: dict = {}
        for r in res.rows:
            encode(r, memo)
            rows += 1
    total = time.process_time() - t0
    n, nv = len(items), len(items) * a.variants
    print(f"{n} records, {rows} rows, recipe {a.recipe}, pool {a.pool}: {1000 * total / n:.2f} CPU ms a record")
    phases = dict(spent)
    phases["transforms"] = phases.pop("run", 0.0) - phases.get("restore", 0.0)
    phases["other"] = total - sum(phases.values())
    print(f"{'phase':<15} {'ms/record':>10} {'ms/variant':>11}")
    for k, v in phases.items():
        print(f"{k:<15} {1000 * v / n:>10.3f} {1000 * v / nv:>11.3f}")

    # 1: params spread within groups
    by_group: dict = defaultdict(Counter)
    for name, key, got, _ in runs:
        if key is not None:
            by_group[key][got] += 1
    stats: dict[str, dict] = defaultdict(lambda: {"runs": 0, "groups": set(), "differ": 0, "cpu": 0.0,
                                                  "cpu_repeat": 0.0})
    first: set = set()
    for name, key, got, cpu in runs:
        s = stats[name]
        s["runs"] += 1
        s["cpu"] += cpu
        if key is None:
            continue
        s["groups"].add(key)
        if got != by_group[key].most_common(1)[0][0]:
            s["differ"] += 1
        if key in first:
            s["cpu_repeat"] += cpu
        first.add(key)
    print(f"\n{'leaf':<26} {'runs':>6} {'groups':>7} {'params differ':>14} {'ms/variant':>11} {'of it, repeats':>15}")
    for name, s in sorted(stats.items(), key=lambda kv: -kv[1]["cpu"]):
        print(f"{name:<26} {s['runs']:>6} {len(s['groups']):>7} {s['differ']:>8} ({s['differ'] / max(1, s['runs']):5.1%})"
              f" {1000 * s['cpu'] / nv:>11.3f} {1000 * s['cpu_repeat'] / nv:>15.3f}")

    # 3: the trajectory's rest
    residue = _residue(pairs)
    k = max(1, len(pairs))
    print(f"\ntrajectory rest, CPU ms per variant over {len(pairs)} written variants:")
    for name, v in residue.items():
        if name != "payloads":
            print(f"  {name:<34} {1000 * v / k:>8.3f}")
    print(f"  trajectory hook payloads per variant (each run by the source hook once a record and by the variant's "
          f"hook once a variant): {residue['payloads'] / k:.1f}")
    base = sum(phases.get(x, 0.0) for x in ("read", "check source", "rows", "encode")) / n
    per_variant = sum(v for name, v in residue.items() if name != "payloads") / k
    print(f"\nestimate of a planned record: base (read, check source, rows, encode) {1000 * base:.3f} ms + "
          f"{a.variants} x {1000 * per_variant:.3f} ms = {1000 * (base + a.variants * per_variant):.2f} ms "
          f"(+ hook replays of the trajectory payloads, + per-record leaves), against {1000 * total / n:.2f} ms now")


def _residue(pairs: list[tuple]) -> dict[str, float]:
    """CPU seconds of the trajectory half of each variant's work (see the module docstring), summed."""
    from hsa import _json
    from hsa.hooks_model import generated_payloads, map_content, map_payload, text_map
    from hsa.invariants import quick_valid
    from hsa.mapping import Mapping, carry_call
    from hsa.names import find_tokens, is_identifier_like, replace_tokens, text_tokens

    out = {"carry forward": 0.0, "check calls (validate, map back)": 0.0, "names left in the messages": 0.0,
           "carry back and compare (restore)": 0.0, "payloads": 0}

    def carry(messages, events, steps, forward):
        msgs = [dict(m) for m in messages]
        evs = [dict(e) for e in events]
        for step in steps if forward else reversed(steps):
            if step["op"] in ("restore", "opaque"):
                continue
            table = text_map(step) if forward else {v: k for k, v in text_map(step).items()}
            for m in msgs:
                if m.get("tool_calls"):
                    calls = []
                    for c in m["tool_calls"]:
                        fn = c["function"]
                        new = carry_call(step, {"name": fn["name"], "arguments": fn["arguments"]}, forward)
                        calls.append({**c, "function": {**fn, "name": new["name"], "arguments": new["arguments"]}})
                    m["tool_calls"] = calls
                if table and "content" in m:
                    m["content"] = map_content(m["content"], lambda s: replace_tokens(s, table))
                if step["op"] == "tools" and m.get("role") == "tool" and isinstance(m.get("name"), str):
                    names = step["map"] if forward else {v: k for k, v in step["map"].items()}
                    m["name"] = names.get(m["name"], m["name"])
            if forward:
                evs = [{**e, "payload": map_payload(e["payload"], step)} if isinstance(e.get("payload"), dict) else e
                       for e in evs]
        return msgs, evs

    for source, variant in pairs:
        steps = variant["mapping"][len(source["mapping"]):]
        events = source.get("hook_events") or []
        t = time.process_time()
        msgs, evs = carry(source["messages"], events, steps, True)
        out["carry forward"] += time.process_time() - t
        t = time.process_time()
        tools = {tl["name"]: tl for tl in variant["tools"]}
        mapping = Mapping(steps)
        src_calls = [c["function"] for m in source["messages"] for c in m.get("tool_calls") or ()]
        var_calls = [c["function"] for m in msgs for c in m.get("tool_calls") or ()]
        for s, v in zip(src_calls, var_calls):
            tool = tools.get(v["name"])
            if tool is not None:
                quick_valid(tool["parameters"], v["arguments"])
            back = mapping.to_canonical({"name": v["name"], "arguments": v["arguments"]})
            _json.strict_equal(back, {"name": s["name"], "arguments": s["arguments"]})
        out["check calls (validate, map back)"] += time.process_time() - t
        t = time.process_time()
        renamed = [old for old in {**mapping.tool_names(), **mapping.skill_names()} if is_identifier_like(old)]
        if renamed:
            for m in msgs:
                c = m.get("content")
                if isinstance(c, str) and not set(renamed).isdisjoint(text_tokens(c)):
                    find_tokens(c, renamed)
        out["names left in the messages"] += time.process_time() - t
        t = time.process_time()
        back, _ = carry(msgs, evs, steps, False)
        _json.strict_equal(back, source["messages"])
        out["carry back and compare (restore)"] += time.process_time() - t
        for h in source.get("hooks") or ():
            trajectory_only = {**source, "tools": [], "skills": []}
            out["payloads"] += len(generated_payloads(trajectory_only, h)) - 1  # less the fixed "OK." reply
    return out


if __name__ == "__main__":
    main()
