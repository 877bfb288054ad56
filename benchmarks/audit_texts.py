"""Print what a recipe did to the texts of a harness, before and after, for reading by hand.

    python benchmarks/audit_texts.py fixtures/prompts/records.jsonl --recipe prompt --variants 4 --seed 0
    python benchmarks/audit_texts.py fixtures/mcp/records.jsonl --recipe tools --what tools --show 40
    python benchmarks/audit_texts.py IN.jsonl --recipe skills --summary --json summary.json

Runs ``hsa augment`` (the real pipeline: harness pool, checks, rejects) into a temporary folder,
pairs every variant row with its source line, and prints, per variant, every text that changed:

* prompt sections, by section id: the title, and the body as changed sentences (``-`` before,
  ``+`` after), plus a line when the order of the sections or their delimiters changed;
* tool and parameter descriptions, by the tool's source name;
* skill descriptions, and the order and headings of each skill body's sections.

Each changed sentence pair is run through the meaning checker (:mod:`transforms.meaning`, loaded
from this checkout's file so that the same script measures an older checkout: ``PYTHONPATH=<old>``)
and flagged ``!`` with what it lost. ``--summary`` prints only the counts: rows, rows whose system
message (and first user message) equals the source's, rows per transform that fired, flagged
pairs and rows, and which transform fired on which source. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parents[1]
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b|\b[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")


def _fold(text: str) -> str:
    """Every identifier of ``text`` in one style: ``readTextFile``, ``read-text-file`` -> ``read_text_file``."""
    return _IDENT.sub(lambda m: "_".join(p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])",
                                                                       m.group())), text)


def _unrename(text: str, inverse: dict[str, str]) -> str:
    """``text`` with each renamed tool's variant name (a whole token) back to its source name."""
    for new, old in inverse.items():
        if new != old:
            text = re.sub(rf"(?<![\w-]){re.escape(new)}(?![\w-])", old, text)
    return text


def _meaning():
    spec = importlib.util.spec_from_file_location("audit_meaning_rules", _HERE / "transforms" / "meaning.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = _meaning()


def _sentences(text: str) -> list[str]:
    return M.sentences(text or "")


def _pairs(old: str, new: str) -> list[tuple[str, str]]:
    """Changed sentence runs of ``old`` -> ``new`` (a moved sentence shows as removed and added)."""
    a, b = _sentences(old), _sentences(new)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            out.append((" ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return out


def _split(record: dict) -> dict | None:
    from hsa.prompt_model import split_system

    if record.get("prompt"):
        return record["prompt"]
    system = next((m.get("content") for m in record.get("messages") or () if m.get("role") in ("system", "developer")),
                  None)
    if not isinstance(system, str):
        return None
    p = split_system(system)
    return p if isinstance(p, dict) else None


def _first(record: dict, role: str):
    return next((m.get("content") for m in record.get("messages") or () if m.get("role") == role), None)


def _tool_texts(record: dict, inverse: dict[str, str]) -> dict[tuple[str, str], str]:
    """(source tool name, where) -> description, for the tools and their parameters (any depth)."""
    out = {}

    def walk(schema, tool, path):
        if not isinstance(schema, dict):
            return
        if isinstance(schema.get("description"), str) and path:
            out[(tool, path)] = schema["description"]
        for k, sub in (schema.get("properties") or {}).items():
            walk(sub, tool, f"{path}.{k}" if path else k)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], tool, path + "[]")

    for t in record.get("tools") or ():
        fn = t.get("function") or t
        name = inverse.get(fn.get("name"), fn.get("name"))
        if isinstance(fn.get("description"), str):
            out[(name, "")] = fn["description"]
        walk(fn.get("parameters") or fn.get("input_schema") or fn.get("inputSchema"), name, "")
    return out


def _skill_layout(content: str) -> list[str]:
    """The headings of a skill body, in order, as ``level title`` (ATX ``## x``, closed ``## x ##`` and setext
    headings alike), outside code fences: what a reorder moves and a style change must keep."""
    out, fence = [], None
    lines = (content or "").splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if m:
            fence = None if fence and line.strip().startswith(fence) else (fence or m.group(1)[:3])
            continue
        if fence:
            continue
        atx = re.match(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$", line)
        if atx:
            out.append(f"{len(atx.group(1))} {atx.group(2)}")
        elif i + 1 < len(lines) and line.strip() and re.match(r"^(=+|-+)\s*$", lines[i + 1]) and (
                i == 0 or not lines[i - 1].strip()):
            out.append(f"{1 if lines[i + 1].lstrip()[0] == '=' else 2} {line.strip()}")
    return out


def audit(rows: list[dict], sources: dict[str, dict], what: set[str]) -> tuple[list[list[str]], dict]:
    """(per row: printed lines, summary counts)."""
    blocks: list[list[str]] = []
    counts: Counter = Counter()
    fired: dict[str, Counter] = defaultdict(Counter)
    for row in rows:
        src = sources.get(row.get("source_id"))
        if src is None:
            continue
        counts["rows"] += 1
        names = [t["name"] for t in row.get("transforms") or ()]
        for n in names:
            fired[row["source_id"]][n] += 1
        fired.setdefault(row["source_id"], Counter())
        lines: list[str] = []
        flagged = False
        same = (_first(src, "system") == _first(row, "system") and _first(src, "user") == _first(row, "user"))
        counts["prompt_identical"] += same
        mapping = row.get("mapping") or {}  # the row's mapping summary: {"tools": {source: variant}, "skills": ...}
        tool_inverse = {v: k for k, v in (mapping.get("tools") or {}).items()}
        skill_inverse = {v: k for k, v in (mapping.get("skills") or {}).items()}
        if "prompt" in what:
            a, b = _split(src), _split(row)
            if a and b:
                sa = {s["id"]: s for s in a["sections"]}
                order_a = [s["id"] for s in a["sections"]]
                order_b = [s["id"] for s in b["sections"]]
                if order_a != order_b:
                    lines.append(f"  order: {order_a} -> {order_b}")
                if a.get("template") != b.get("template"):
                    lines.append("  delimiters changed")
                for s in b["sections"]:
                    old = sa.get(s["id"])
                    if old is None:
                        lines.append(f"  section {s['id']!r} is new")
                        continue
                    if (old.get("title") or "") != (s.get("title") or ""):
                        lines.append(f"  title [{s['id']}]: {old.get('title')!r} -> {s.get('title')!r}")
                    for o, n in _pairs(old.get("body") or "", s.get("body") or ""):
                        why = M.paraphrase_changes(o, n) if o and n else []
                        flagged |= bool(why)
                        counts["prompt_pairs"] += 1
                        counts["prompt_pairs_flagged"] += bool(why)
                        lines += [f"  [{s['id']}] - {o}", f"  [{s['id']}] + {n}"] + [f"  ! {w}" for w in why]
                    if s.get("placement") != old.get("placement"):
                        lines.append(f"  placement [{s['id']}]: {old.get('placement', 'system')} -> "
                                     f"{s.get('placement', 'system')}")
            elif _first(src, "system") != _first(row, "system"):
                lines.append("  system message changed (not split into sections)")
            su, ru = _first(src, "user"), _first(row, "user")
            if isinstance(su, str) and isinstance(ru, str) and su != ru:
                lines.append(f"  first user message: {su[:60]!r} -> {ru[:120]!r}")
        if "tools" in what:
            ta, tb = _tool_texts(src, {}), _tool_texts(row, tool_inverse)
            for key, new in tb.items():
                old = ta.get(key)
                if old is None or old == new:
                    continue
                # renames are other transforms' work: the new text is read with the source's tool names and
                # every identifier folded to one style (read_text_file, readTextFile -> read_text_file)
                o, n = _fold(old), _fold(_unrename(new, tool_inverse))
                words = set(re.findall(r"[\w']+", o.lower()))
                short = len(n) < len(o) and set(re.findall(r"[\w']+", n.lower())) <= words  # a cut, no new word
                why = M.shortening_changes(o, n) if short else M.paraphrase_changes(o, n)
                counts["tool_texts_shortened" if short else "tool_texts_paraphrased"] += 1
                flagged |= bool(why)
                counts["tool_texts"] += 1
                counts["tool_texts_flagged"] += bool(why)
                where = key[0] + (f".{key[1]}" if key[1] else "")
                lines += [f"  tool {where} ({'shortened' if short else 'paraphrased'}):", f"    - {old}", f"    + {new}"] \
                    + [f"  ! {w}" for w in why]
        if "skills" in what:
            da = {s["name"]: s for s in src.get("skills") or ()}
            for s in row.get("skills") or ():
                name = skill_inverse.get(s["name"], s["name"])
                old = da.get(name)
                if old is None:
                    lines.append(f"  skill {s['name']!r} added: {s.get('description', '')[:100]!r}")
                    continue
                if name != s["name"]:
                    lines.append(f"  skill name: {name} -> {s['name']}")
                if old.get("description") != s.get("description"):
                    why = M.paraphrase_changes(old.get("description") or "", s.get("description") or "")
                    flagged |= bool(why)
                    counts["skill_descriptions"] += 1
                    counts["skill_descriptions_flagged"] += bool(why)
                    lines += [f"  skill {name} description:", f"    - {old.get('description')}",
                              f"    + {s.get('description')}"] + [f"  ! {w}" for w in why]
                la, lb = _skill_layout(old.get("content")), _skill_layout(s.get("content"))
                if old.get("content") != s.get("content"):
                    counts["skill_bodies"] += 1
                    if la != lb:
                        counts["skill_bodies_reordered"] += 1
                        lines.append(f"  skill {name} sections: {la} -> {lb}")
                    else:
                        lines.append(f"  skill {name}: layout only (heading, list or frontmatter style)")
        counts["rows_flagged"] += flagged
        counts["rows_changed_texts"] += bool(lines)
        head = f"{row['id']}  [{', '.join(names) or 'nothing applied'}]"
        blocks.append([head] + lines)
    summary = dict(counts)
    summary["fired"] = {k: dict(v) for k, v in sorted(fired.items())}
    return blocks, summary


#: each prompt and skill transform alone, at full strength (what "fires" means in the coverage table)
LEAVES = {"prompt.reorder": {}, "prompt.delimiters": {}, "prompt.titles": {"p": 1.0}, "prompt.paraphrase": {"p": 1.0},
          "prompt.tool_format": {}, "prompt.placement": {}, "skill.describe": {"p": 1.0},
          "skill.restructure": {"p": 1.0}, "skill.catalog": {}}


def coverage(inputs: list[str]) -> int:
    """Print, per leaf, the records it changes in one of 8 seeds, and the first skip reason of the others."""
    import random

    from hsa.records import normalize
    from hsa.transform import from_config, run

    records = [normalize(json.loads(line)) for path in inputs
               for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    for name, cfg in LEAVES.items():
        leaf = from_config({"transform": name, **cfg})
        fired, why = [], {}
        for rec in records:
            for seed in range(8):
                out, applied, skipped = run(leaf, rec, random.Random(seed))
                if applied:
                    fired.append(rec["id"])
                    break
                why.setdefault(rec["id"], skipped[0][1] if skipped else "nothing drawn")
        print(f"{name}: fires on {len(fired)} of {len(records)}: {', '.join(fired)}")
        reasons = Counter(why[r["id"]] for r in records if r["id"] not in fired)
        for reason, n in reasons.most_common():
            print(f"    {n:3d} skip: {reason[:140]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--recipe", default="default")
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--what", default="prompt,tools,skills", help="comma-separated: prompt, tools, skills")
    parser.add_argument("--show", type=int, default=None, help="print at most this many variants (all by default)")
    parser.add_argument("--only-changed", action="store_true", help="print only variants whose texts changed")
    parser.add_argument("--summary", action="store_true", help="print the counts only")
    parser.add_argument("--json", help="write the summary as JSON to this file")
    parser.add_argument("--coverage", action="store_true",
                        help="instead: run each prompt and skill leaf alone (p=1, 8 seeds) on each input record and "
                             "print which fire, and the skip reason where one does not")
    args = parser.parse_args(argv)
    if args.coverage:
        return coverage(args.inputs)

    from hsa import augment
    from hsa.io import read_records
    from hsa.recipes import load_recipe
    from hsa.records import normalize

    sources = {}
    for path in args.inputs:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                sources[rec["id"]] = rec
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        augment(args.inputs, out, load_recipe(args.recipe), seed=args.seed, variants=args.variants, workers=1,
                progress=False)
        rows = list(read_records(out))
    sources = {k: normalize(v) for k, v in sources.items()}
    blocks, summary = audit(rows, sources, set(args.what.split(",")))
    if not args.summary:
        shown = [b for b in blocks if len(b) > 1] if args.only_changed else blocks
        for b in shown[:args.show]:
            print("\n".join(b))
            print()
    fired = summary.pop("fired")
    print(json.dumps(summary, indent=1))
    every = sorted({r.get("source_id") for r in rows})
    transforms = sorted({t for v in fired.values() for t in v})
    print(f"fired on (sources with at least one row where the transform applied, of {len(every)}):")
    for t in transforms:
        on = [sid for sid in every if fired.get(sid, {}).get(t)]
        print(f"  {t:22s} {len(on):3d}  " + (", ".join(on) if len(on) <= 16 else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({**summary, "fired": fired}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
