"""Count what renames do to real harnesses: sense, stale references, mixed conventions, plain-word tools.

    python benchmarks/names_audit.py VARIANTS.jsonl [--sources IN.jsonl ...] [--list renames.txt] [--json out.json]

``VARIANTS.jsonl`` is an ``hsa export`` of an ``hsa augment`` run (rows with their mapping), made by any version of
hsa, so one script measures before and after a change:

    hsa augment fixtures/mcp/records.jsonl --variants 36 --seed 0 --out /tmp/a && hsa export /tmp/a --out a.jsonl
    python benchmarks/names_audit.py a.jsonl --list renames.txt

It prints, over the variants:

* ``renames``: distinct tool, parameter and skill renames, and the word substitutions inside them
  (``status -> progress``); ``--list`` writes every distinct rename with its count, for reading by hand (the
  sense of a rename is a judgement: the script does not pretend to make it; ``KNOWN_BAD`` are the substitutions
  issue 27 and 33 reported, counted as a floor);
* ``stale``: references to an old name left in a text (:func:`hsa.rename_texts.stale_references`: quoted or
  backticked names, "the X parameter", ``X=``, compound names inside longer tokens, plain-word tool names in a
  reference form), as variants with one and as references;
* ``mixed``: variant namespaces (:func:`transforms._toolnames.namespaces` of the source names) whose tools do not
  share one naming convention, or where some tools carry a prefix and others do not; skill catalogues likewise;
* ``masked``: tool and parameter names that are random strings (no word of the name survives);
* ``plain``: for each plain-word tool name (``Read``, ``Bash``, ``think``), in how many variants it was renamed;
* ``swaps`` (with ``--sources``, the records the variants were made from): names swapped between a tool's
  parameters (``tool.swap_names``) whose tool description still reads as in the source although it refers to one
  of them ("Use the 'head' parameter" after head and tail traded places).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hsa.mapping import Mapping  # noqa: E402
from hsa.mentions import referenced  # noqa: E402
from hsa.names import is_identifier_like, namespace_of, split_words  # noqa: E402
from hsa.records import read_row  # noqa: E402
from hsa.rename_texts import stale_references  # noqa: E402
from transforms._toolnames import namespaces  # noqa: E402

#: Word substitutions the issues reported as meaning changes (a floor: the rest is read by hand).
KNOWN_BAD = {("status", "progress"), ("open", "launch"), ("type", "class"), ("key", "id"), ("query", "keywords"),
             ("table", "chart"), ("message", "note"), ("fields", "attributes"), ("close", "finish"),
             ("drop", "erase"), ("convert", "translate"), ("diff", "contrast"), ("cancel", "void"),
             ("book", "reserve"), ("theme", "palette"), ("frontend", "client"), ("internal", "team"),
             ("comms", "announcements"), ("brand", "identity"), ("guidelines", "rules"), ("new", "first"),
             ("viewer", "audience"), ("design", "layout"), ("read", "fetch"), ("read", "obtain")}


def _styles(name: str) -> set[str]:
    """The conventions a name is written in (a one-word lower-case name fits snake, camel and kebab alike)."""
    body = name[len(namespace_of(name)):]
    words = split_words(body)
    if not words:
        return {"other"}
    if "_" in body:
        return {"screaming"} if body.isupper() else {"snake"}
    if "-" in body:
        return {"kebab"}
    if len(words) == 1:
        if body.islower():
            return {"snake", "camel", "kebab"}
        return {"pascal"} if body[0].isupper() and not body.isupper() else {"screaming", "pascal"}
    return {"pascal"} if body[0].isupper() else {"camel"}


def _word_pairs(old: str, new: str) -> list[tuple[str, str]]:
    a, b = split_words(old[len(namespace_of(old)):]), split_words(new[len(namespace_of(new)):])
    if len(a) != len(b):
        common = set(a) & set(b)
        return [(" ".join(w for w in a if w not in common), " ".join(w for w in b if w not in common))] \
            if common else []
    return [(x, y) for x, y in zip(a, b) if x != y]


def _masked(old: str, new: str) -> bool:
    """A random string (Hammer's masks, RoTBench's letters): digits, or words that are no words (few vowels, or
    fragments of one or two letters), sharing no word with the old name."""
    body = new[len(namespace_of(new)):]
    a, b = set(split_words(old)), split_words(body)
    if not b or set(b) & a:
        return False
    letters = "".join(b)
    vowels = sum(c in "aeiouy" for c in letters)
    return any(c.isdigit() for c in body) or vowels < 0.25 * len(letters) or (len(b) > 1 and min(map(len, b)) <= 2)


def _swap_stale(row: dict, steps: list[dict], sources: dict[str, dict]) -> int:
    """Swap steps whose tool's variant description is its source description although that refers to a swapped name."""
    src = sources.get(row.get("source_id"))
    if src is None:
        return 0
    mapping = Mapping(steps)
    rec = read_row(json.dumps(row))
    n = 0
    for k, st in enumerate(steps):
        if st["op"] != "params" or st.get("kind") != "permute":
            continue
        before = Mapping(steps[:k]).tool_to_canonical(st["tool"])
        old = next((t for t in src["tools"] if t["name"] == before), None)
        new = next((t for t in rec["tools"] if t["name"] == mapping.tool_to_variant(before)), None)
        if old is None or new is None:
            continue
        desc = old.get("description") or ""
        names = [a[-1] for a, _ in st["paths"]]
        if desc and desc == (new.get("description") or "") and any(referenced(desc, x, "param_own") for x in names):
            n += 1
    return n


def audit(rows: list[dict], sources: dict[str, dict] | None = None) -> dict:
    renames: Counter = Counter()
    words: Counter = Counter()
    stale_rows = stale_refs = 0
    stale_examples: list[str] = []
    mixed = mixed_prefix = spaces_total = 0
    masked = 0
    plain_renamed: Counter = Counter()
    plain_seen: Counter = Counter()
    skills_mixed = skill_catalogues = 0
    swaps_stale = 0
    for row in rows:
        rec = read_row(json.dumps(row))
        steps = Mapping.from_dict(row.get("mapping")).steps
        mapping = Mapping(steps)
        tools = mapping.tool_names()
        variant_names = {t["name"] for t in rec["tools"]}
        source_names = [mapping.tool_to_canonical(n) for n in [t["name"] for t in rec["tools"]]]
        for old, new in tools.items():
            renames[("tool", old, new)] += 1
            words.update(_word_pairs(old, new))
            masked += _masked(old, new)
        for st in steps:
            if st["op"] == "params" and not st.get("kind"):
                for a, b in st["paths"]:
                    if a[-1] != b[-1]:
                        renames[("param", a[-1], b[-1])] += 1
                        words.update(_word_pairs(a[-1], b[-1]))
                        masked += _masked(a[-1], b[-1])
        for old, new in mapping.skill_names().items():
            renames[("skill", old, new)] += 1
            words.update(_word_pairs(old, new))
        swaps_stale += _swap_stale(row, steps, sources or {})
        stale = stale_references(rec, steps)
        if stale:
            stale_rows += 1
            stale_refs += len(stale)
            if len(stale_examples) < 20:
                stale_examples.append(f"{row['id']}: {stale[0][1][:160]}")
        for name in set(source_names):
            if not is_identifier_like(name):
                plain_seen[name] += 1
                if name in tools:
                    plain_renamed[name] += 1
        by_source = {mapping.tool_to_canonical(n): n for n in variant_names}
        src = (sources or {}).get(row.get("source_id"))
        own = [n for n in source_names if src is None or n in {t["name"] for t in src["tools"]}]  # no distractors
        server = (row.get("meta") or {}).get("server") if isinstance(row.get("meta"), dict) else None
        for ns in namespaces(own, server=server):
            if len(ns.members) < 2:
                continue
            spaces_total += 1
            now = [by_source[m] for m in ns.members]
            if not set.intersection(*(_styles(n) for n in now)):
                mixed += 1
            prefixes = {namespace_of(n) for n in now}
            if len(prefixes) > 1:
                mixed_prefix += 1
        skills = [s["name"] for s in rec.get("skills") or ()]
        if len(skills) >= 2:
            skill_catalogues += 1
            if not set.intersection(*(_styles(n) for n in skills)):
                skills_mixed += 1
    bad = {pair: n for pair, n in words.items() if pair in KNOWN_BAD}
    return {"variants": len(rows), "distinct_renames": len(renames),
            "renames_by_kind": dict(Counter(k for k, _, _ in renames)),
            "word_substitutions": len(words), "known_bad_substitutions": sum(bad.values()),
            "known_bad": {f"{a} -> {b}": n for (a, b), n in sorted(bad.items())},
            "stale_variants": stale_rows, "stale_references": stale_refs, "stale_examples": stale_examples,
            "namespaces": spaces_total, "mixed_conventions": mixed, "mixed_prefixes": mixed_prefix,
            "skill_catalogues": skill_catalogues, "skill_catalogues_mixed": skills_mixed,
            "masked_names": masked, "swaps_with_stale_description": swaps_stale,
            "plain_word_tools_renamed": {n: f"{plain_renamed[n]}/{plain_seen[n]}" for n in sorted(plain_seen)},
            "_renames": renames, "_words": words}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", type=Path, help="an 'hsa export' JSONL of variant rows")
    ap.add_argument("--sources", type=Path, nargs="*", default=[], help="the source records (JSONL), for swaps")
    ap.add_argument("--list", type=Path, help="write every distinct rename and word substitution here")
    ap.add_argument("--json", type=Path, help="write the counts here")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.variants.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("variant", 1) != 0]
    sources = {}
    for path in args.sources:
        for line in path.read_text().splitlines():
            if line.strip():
                src = read_row(line)
                sources[src["id"]] = src
    res = audit(rows, sources)
    renames, words = res.pop("_renames"), res.pop("_words")
    for k, v in res.items():
        if k != "stale_examples":
            print(f"{k}: {v}")
    for line in res["stale_examples"][:8]:
        print("  stale:", line)
    if args.list:
        with args.list.open("w") as f:
            for (kind, old, new), n in sorted(renames.items()):
                f.write(f"{kind}\t{old}\t{new}\t{n}\n")
            f.write("\n# word substitutions\n")
            for (a, b), n in sorted(words.items(), key=lambda x: -x[1]):
                f.write(f"word\t{a}\t{b}\t{n}\n")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
