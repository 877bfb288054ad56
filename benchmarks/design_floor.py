"""The floor of a verified record under slot plans: what each record still costs when every piece of harness work
is free, timed with today's components.

    PYTHONPATH=. python benchmarks/design_floor.py INPUT.jsonl [--records 300] [--recipe default] [--variants 4] \
        [--pool 8] [--repeats 3] [--target MS]

Issue 29's design leaves a record one pass: carry its trajectory through the slot plan, check it, write it. This
script asks what that pass costs at best with the components hsa has. It first augments the records as
``hsa augment`` does (:func:`hsa.pipeline.augment_record`) and keeps each (source, variant) pair the pipeline
checks. Then, with everything a slot plan could hold made beforehand and left out of the timing (the compiled
message carry of the variant's steps and of their inverse, the mapping objects), it times only the per-record
work:

- ``read``: parse the line and normalise it (:func:`hsa.records.normalize`);
- ``carry``: the source's messages carried through the variant's steps in one pass
  (:func:`hsa.renames.carry_messages` with the compiled carry); a message the steps do not give (the system message
  a prompt transform rewrote) is the plan's, put in place;
- ``closure``: the variant written and read back as its row reads (:func:`hsa.records.read_back`; invariant 3). Its
  harness is read back too (tool lists from a cache), so this one holds some harness work;
- ``calls valid``: the variant's calls against its own schemas (:func:`hsa.invariants.check_record`; invariant 1);
- ``map back``: each variant call mapped back and compared with the source's (invariant 2);
- ``undo``: the variant's messages carried back through the inverse steps in one pass and compared with the
  source's, the ``restore`` step's patch of the messages applied (invariant 8 for the trajectory; the harness
  half, and the restore patch of the harness keys, are the plan's);
- ``mentions``: the messages' half of :func:`hsa.invariants.check_consistency` (invariant 6: no name left behind;
  the harness half, :func:`hsa.rename_texts.stale_names`, is the plan's);
- ``rows``: every row of the record written as the pipeline writes it (:func:`hsa.pipeline.record.source_row`,
  :func:`hsa.io.encode_row`).

Only variants whose steps all carry through messages alone are timed (tool, parameter, value and skill steps, and
a restore step; no hook events); the others are counted apart, and so are the pairs where the one-pass carry did not
give the pipeline's variant messages or the undo did not give the source's (the floor does not cover them). Each
figure is the fastest of ``--repeats`` passes, per record (a per-variant phase times the variants a record has on
average). It asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from profile_record import input_arguments, load_inputs  # this folder: the script's own


HARNESS_PARTS = ("tools", "skills", "skill_tool", "prompt", "hooks")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    input_arguments(p, records=300)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--target", type=float, default=None, help="a target in CPU ms per record, printed beside")
    args = p.parse_args(argv)
    figures = measure(args)
    print(f"{figures['records']} records, {figures['checked']} variants checked by the pipeline "
          f"({figures['whole_ms']:.2f} ms a record for the whole run); timed: {figures['timed']} variants of "
          f"{figures['timed_records']} records")
    if figures["plan_messages"]:
        print(f"  of them {figures['plan_messages']} with a message the carry does not give (a prompt transform's "
              "system message), put in place as the plan's")
    for why, n in figures["not_timed"].items():
        print(f"  not timed: {n} variants: {why}")
    if not figures["timed"]:
        print("no variant could be timed: the floor is not measured")
        return figures
    print(f"{'phase':<18}{'ms/variant':>11}{'ms/record':>11}")
    for name, (per_variant, per_record) in figures["phases"].items():
        print(f"{name:<18}{'' if per_variant is None else f'{per_variant:.3f}':>11}{per_record:>11.3f}")
    line = f"{'floor':<18}{'':>11}{figures['floor']:>11.3f}"
    if args.target:
        line += f"   target {args.target:g} ms: the floor is {figures['floor'] / args.target:.2f}x it"
    print(line)
    return figures


def measure(args: argparse.Namespace) -> dict:
    """The figures :func:`main` prints: ``records``, ``checked`` (variants the pipeline checked), ``whole_ms`` (CPU
    ms a record for the whole run), ``timed`` and ``timed_records``, ``plan_messages`` (timed variants with a message put in place as the
    plan's), ``not_timed`` (reason -> variants), ``phases``
    (name -> (ms a variant or None, ms a record)) and ``floor`` (their sum, ms a record); the phases and the floor
    are absent when no variant could be timed."""
    from hsa import _json, _patch
    from hsa.invariants import calls_of, check_record
    from hsa.io import encode_row, parse_line
    from hsa.mapping import Mapping
    from hsa.pipeline import augment_record
    from hsa.pipeline import record as rec
    from hsa.records import normalize, read_back
    from hsa.rename_texts import _StaleNames
    from hsa.renames import carries, carry_keeps, carry_messages
    from hsa.step_carry import compile_carry
    from hsa.steps import OpaqueStep

    recipe, items = load_inputs(args)
    pairs: list[tuple] = []
    plain_check = rec.check_variant

    def keeping(source, variant, **kw):
        pairs.append((source, variant))
        return plain_check(source, variant, **kw)

    rec.check_variant = keeping
    results = []
    t = time.process_time()
    for it in items:
        results.append(augment_record(it, recipe, seed=0, variants=args.variants, keep_original=True,
                                      exec_hooks=not args.no_exec_hooks, harness_pool=args.pool))
    whole = time.process_time() - t
    rec.check_variant = plain_check

    excluded: Counter = Counter()
    timed: list[dict] = []
    compiled: dict = {}  # what a slot plan would hold: by the steps and the harness they read (made once)

    def carry_of(record, steps):
        key = (_json.dumps(steps), _json.dumps({k: record.get(k) for k in ("tools", "skills", "skill_tool")}))
        if key not in compiled:
            compiled[key] = compile_carry(steps, carry_keeps(record, steps))
        return compiled[key]

    for source, variant in pairs:
        steps = variant["mapping"][len(source["mapping"]):]
        restores = [s for s in steps if s["op"] == "restore"]
        back_patch = None  # the restore step's patch of the messages (a prompt transform's system message)
        for r in restores:
            back_patch = r.get("patch", {}).get("o", {}).get("messages", back_patch)
        steps = [s for s in steps if s["op"] != "restore"]  # its patch of the harness keys: the plan's
        if not carries(source, steps):
            excluded["steps that do not carry through messages alone (or hook events)"] += 1
            continue
        mapping = Mapping(steps)
        inverse = [s.to_json() for s in mapping.inverse().typed() if not isinstance(s, OpaqueStep)]
        fwd, back = carry_of(source, steps), carry_of(variant, inverse)
        carried = carry_messages(source["messages"], steps, entries=fwd)
        if len(carried) != len(variant["messages"]):
            excluded["a transform changed the number of messages"] += 1
            continue
        # the messages the carry does not give (a prompt transform's system message): the plan's, put in place
        given = {i: m for i, (c, m) in enumerate(zip(carried, variant["messages"])) if repr(c) != repr(m)}
        if given and back_patch is None:
            excluded["the one-pass carry does not give the variant's messages, and no restore patch says why"] += 1
            continue
        undone = carry_messages(variant["messages"], inverse, entries=back)
        if back_patch is not None:
            undone = _patch.patch(undone, back_patch, share=True)
        if repr(undone) != repr(source["messages"]):
            excluded["the one-pass undo (and the restore patch) does not give the source's messages"] += 1
            continue
        timed.append({"source": source, "variant": variant, "steps": steps, "inverse": inverse, "fwd": fwd,
                      "back": back, "mapping": mapping, "given": given, "back_patch": back_patch,
                      "calls": list(zip(calls_of(source), calls_of(variant)))})
    covered = {id(d["source"]) for d in timed}

    def run_read():
        for it in items:
            normalize(parse_line(it), loaded=True)

    def run_carry():
        for d in timed:
            out = carry_messages(d["source"]["messages"], d["steps"], entries=d["fwd"])
            for i, m in d["given"].items():
                out[i] = m

    def run_closure():
        for d in timed:
            read_back(d["variant"])

    def run_valid():
        for d in timed:
            check_record(d["variant"])

    def run_map_back():
        for d in timed:
            to_canonical = d["mapping"].to_canonical
            for s, v in d["calls"]:
                _json.strict_equal(to_canonical(v), s)

    def run_undo():
        for d in timed:
            back = carry_messages(d["variant"]["messages"], d["inverse"], entries=d["back"])
            if d["back_patch"] is not None:
                back = _patch.patch(back, d["back_patch"], share=True)
            repr(back) == repr(d["source"]["messages"])  # noqa: B015 - the comparison is the work timed

    stale: dict = {}  # the harness half of the names-left check: a slot plan's (rename_texts.stale_names)
    for d in timed:
        key = _json.dumps([d["steps"], {k: d["variant"].get(k) for k in HARNESS_PARTS}])
        if key not in stale:
            stale[key] = _StaleNames(d["variant"], d["steps"])
        d["stale"] = stale[key]

    def run_mentions():
        for d in timed:
            d["stale"].left_behind(d["variant"])

    written = [r.rows for r in results]

    def run_rows():
        for rows in written:
            memo: dict = {}
            for row in rows:
                encode_row(row, memo)

    def run_source_rows():
        for d in timed:
            rec.source_row(d["variant"], 1, [])

    phases = [("read", run_read, len(items)), ("carry", run_carry, None), ("closure", run_closure, None),
              ("calls valid", run_valid, None), ("map back", run_map_back, None), ("undo", run_undo, None),
              ("mentions", run_mentions, None), ("row of a variant", run_source_rows, None),
              ("encode rows", run_rows, len(items))]
    figures: dict = {"records": len(items), "checked": len(pairs), "whole_ms": 1000 * whole / len(items),
                     "timed": len(timed), "timed_records": len(covered), "not_timed": dict(excluded.most_common()),
                     "plan_messages": sum(bool(d["given"]) for d in timed),
                     "phases": {}}
    if not timed:
        return figures
    per_record_variants = len(pairs) / len(items)  # a record's variants that the pipeline checks, on average
    for name, fn, per in phases:
        best = min(_cpu(fn) for _ in range(args.repeats))
        if per is None:  # a per-variant phase: per variant timed, times the variants a record has
            per_variant = 1000 * best / len(timed)
            figures["phases"][name] = (per_variant, per_variant * per_record_variants)
        else:
            figures["phases"][name] = (None, 1000 * best / per)
    figures["floor"] = sum(v[1] for v in figures["phases"].values())
    return figures


def _cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


if __name__ == "__main__":
    main()
