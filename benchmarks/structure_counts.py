"""Counts for issue 27 items 2, 7, 8 and issue 33 item 7 on real harnesses: values, dialects, distractors.

    python benchmarks/structure_counts.py --variants 36 [--json out.json]

Runs ``hsa augment`` in-process on the captured MCP servers (``fixtures/mcp/records.jsonl``, nine
servers) and on Anthropic and OpenAI renderings of the same tool lists, and on skill catalogues
(``fixtures/harnesses/skills-structure``, the live-commerce fixture), then counts from the written
rows (nothing is asserted; it prints counts):

* values (default recipe, and ``tool.values`` p=1): enum values changed; of them, *opaque* ones (not a
  restyle: the words differ, lower-cased) and opaque ones the variant's schema does not explain (its
  description does not name the new value beside the old one); enums whose order changed;
* dialect (``tool.dialect``): variants converted into the dialect they were in; tool fields the source
  had and the variant lost although its dialect defines them (MCP 2025-11-25 / 2026-07-28 ``Tool``,
  Anthropic ``ToolParam``, OpenAI ``FunctionDefinition``); fields the target cannot hold that
  ``hsa canonicalize`` does not give back;
* distractor tools (default recipe, and ``tool.distractors`` alone): added tools; of them, those missing a
  key every real tool has (top-level fields, ``$schema`` in the input schema), those in another naming
  style than the real tools' own, and those *near* a real tool by a judge that reads everything (name,
  title, description, parameters, enums, output schema): a content word of the distractor's name found
  anywhere in the real tool, or an overlap coefficient of all content words of 0.3 or more; those where
  only a word of a real tool's name occurs in the distractor are counted apart, for reading;
* distractor skills (``skill.catalog`` with 1-2 distractors): added skills; of them, off-domain ones
  (``harness_domain`` of the record against the skill's domain: the bank's, or read by hand for the old
  bank, :data:`OLD_SKILL_DOMAINS`), those near a real skill (a shared name word, or an overlap of 0.3 of
  name and description words), and those whose description is shorter than half or longer than twice the
  real skills' median.

It only uses APIs older versions have, so the same script measures a checkout before a change
(``PYTHONPATH=<old checkout> python benchmarks/structure_counts.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=<old checkout>: measure that code on this checkout's fixtures
    sys.path.insert(0, str(ROOT))

MCP = ROOT / "fixtures" / "mcp" / "records.jsonl"
SKILLS = ROOT / "fixtures" / "harnesses" / "skills-structure" / "records.jsonl"
LIVE = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"

#: What each dialect's tool definition defines besides the name, description and schema (see docs/design.md).
FIELDS = {
    "mcp": {"title", "outputSchema", "annotations", "icons", "execution", "_meta"},
    "anthropic": {"type", "cache_control", "strict", "input_examples", "defer_loading", "allowed_callers",
                  "eager_input_streaming"},
    "openai": {"strict"},
}


def _run(inputs: list[Path], recipe: dict, variants: int, seed: int) -> list[tuple[dict, dict]]:
    """(source, variant) pairs, both normalised, for the recipe over ``inputs``."""
    from hsa.io import read_records
    from hsa.pipeline import augment
    from hsa.recipes import recipe_from_dict
    from hsa.records import normalize

    out = Path(tempfile.mkdtemp()) / "out"
    augment([str(p) for p in inputs], out, recipe_from_dict({"__version__": 1, "transform": recipe}),
            variants=variants, seed=seed, keep_original=True, progress=False)
    sources, pairs = {}, []
    for raw in read_records(out):
        rec = normalize(raw)
        if raw.get("variant") == 0:
            sources[raw["source_id"]] = rec
        else:
            pairs.append((sources[raw["source_id"]], rec))
    return pairs


def _default() -> dict:
    from hsa.recipes import load_recipe, recipe_to_dict

    return recipe_to_dict(load_recipe("default"))["transform"]


# --------------------------------------------------------------------------- values


def _words(value: str) -> list[str]:
    from hsa.names import split_words

    return [w.lower() for w in split_words(value)]


def values_counts(pairs) -> dict:
    from hsa.mapping import Mapping
    from hsa.step_schemas import node_at

    c = Counter()
    examples = []
    for source, variant in pairs:
        steps = variant["mapping"][len(source["mapping"]):]
        tools = {t["name"]: t for t in variant["tools"]}
        for i, step in enumerate(steps):
            if step["op"] != "values" or not step.get("texts", True):
                continue
            tool = tools.get(Mapping(steps[i:]).tool_to_variant(step["tool"]))
            news = {n for _, n in step["map"]}
            nodes = [n for n in _nodes(tool["parameters"] if tool else {}) if news <= set(_enum_of(n))]
            desc = " ".join(json.dumps(n.get("description", "")) for n in nodes)
            for old, new in step["map"]:
                c["enum values changed"] += 1
                if _words(old) == _words(new):
                    continue
                c["opaque (not a restyle)"] += 1
                if not (new in desc and old in desc):
                    c["opaque and unexplained"] += 1
                    if len(examples) < 12:
                        examples.append(f"{source['id'].split('/')[0]} {step['tool']}.{'.'.join(step['path'])}: {old} -> {new}")
        for t in source["tools"]:
            new = Mapping(steps).tool_to_variant(t["name"])
            if new not in tools:
                continue
            table = {o: n for s in steps if s["op"] == "values" for o, n in s["map"] if isinstance(o, str)}
            after = [e for _, e in _enums(tools[new]["parameters"])]
            for _, enum in _enums(t["parameters"]):
                mapped = [table.get(v, v) for v in enum]
                if mapped not in after and any(sorted(mapped) == sorted(e) for e in after):
                    c["enums reordered"] += 1
    return {"counts": dict(c), "examples": examples}


def _nodes(schema) -> list:
    """Every schema node of ``schema`` (dicts at any depth)."""
    out = []
    if isinstance(schema, dict):
        out.append(schema)
        for v in schema.values():
            out += _nodes(v)
    elif isinstance(schema, list):
        for v in schema:
            out += _nodes(v)
    return out


def _enum_of(node: dict) -> list:
    branches = [node] + [b for k in ("anyOf", "oneOf") for b in node.get(k) or () if isinstance(b, dict)]
    return [v for b in branches for v in (b.get("enum") or ()) if isinstance(v, str)]


def _enums(schema, path=()) -> list:
    out = []
    if isinstance(schema, dict):
        if isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
            out.append((path, schema["enum"]))
        for k, v in schema.items():
            out += _enums(v, path + (k,))
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            out += _enums(v, path + (i,))
    return out


# --------------------------------------------------------------------------- dialects


def _as_dialect(raw: dict, dialect: str) -> dict:
    """An MCP record's tools written as Anthropic (cache_control on the last tool, as Anthropic's prompt-caching
    guide does) or OpenAI (strict: false) definitions."""
    out = dict(raw, id=f"{raw['id']}-{dialect}")
    tools = []
    for i, t in enumerate(raw["tools"]):
        if dialect == "anthropic":
            a = {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]}
            if i == len(raw["tools"]) - 1:
                a["cache_control"] = {"type": "ephemeral"}
            tools.append(a)
        else:
            tools.append({"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                           "parameters": t["inputSchema"], "strict": False}})
    out["tools"] = tools
    return out


def dialect_counts(pairs) -> dict:
    from hsa.renames import canonicalize

    c = Counter()
    lost = Counter()
    for source, variant in pairs:
        c["variants"] += 1
        src = {t["dialect"] for t in source["tools"]}
        dst = {t["dialect"] for t in variant["tools"]}
        if not variant["transforms"]:
            continue
        c["converted"] += 1
        if src == dst:
            c["converted into their own dialect"] += 1
        by_name = {t["name"]: t for t in variant["tools"]}
        for t in source["tools"]:
            v = by_name.get(t["name"])
            if v is None:
                continue
            for key in t["extra"]:
                if key in v["extra"]:
                    continue
                if key in FIELDS.get(v["dialect"], set()):
                    c["fields lost that the target defines"] += 1
                    lost[f"{t['dialect']}->{v['dialect']}: {key}"] += 1
                else:
                    c["fields the target cannot hold"] += 1
        back = canonicalize(variant)
        if json.dumps(back["tools"], sort_keys=True) != json.dumps(source["tools"], sort_keys=True):
            c["variants whose tools canonicalize does not give back"] += 1
    return {"counts": dict(c), "lost": dict(lost)}


# --------------------------------------------------------------------------- distractor tools


def _schema_texts(schema, out: list) -> None:
    """Property names, titles, descriptions and string enum values of a schema, at any depth."""
    if isinstance(schema, dict):
        for key in ("title", "description"):
            if isinstance(schema.get(key), str):
                out.append(schema[key])
        out.extend(v for v in schema.get("enum") or () if isinstance(v, str))
        for k, v in (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), dict) else ():
            out.append(k)
            _schema_texts(v, out)
        for k in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "$defs", "definitions"):
            sub = schema.get(k)
            for v in (sub.values() if isinstance(sub, dict) and k in ("$defs", "definitions")
                      else sub if isinstance(sub, list) else [sub]):
                _schema_texts(v, out)


def _all_words(tool: dict) -> tuple[frozenset, frozenset]:
    """(name words, every content word of the tool: name, title, description, annotations' title, the input and
    output schemas' property names, titles, descriptions and enums) — the judge reads everything."""
    from transforms._domains import content_words

    extra = tool.get("extra", {})
    strings = [tool.get("description") or "", extra.get("title") or "", (extra.get("annotations") or {}).get("title") or ""]
    _schema_texts(tool["parameters"], strings)
    for key in ("outputSchema", "output_schema", "response", "responseJsonSchema"):
        _schema_texts(extra.get(key), strings)
    name = content_words(tool["name"].replace("__", " "))
    return name, frozenset().union(name, *(content_words(s) for s in strings if isinstance(s, str)))


def _near(cand: dict, real: dict) -> str:
    """"near": a content word of the distractor's name occurs anywhere in the real tool, or all their content
    words overlap by 0.3; "reverse": only a word of the real tool's name occurs in the distractor (a weak sign,
    listed for reading: "time" in a calendar event's "Start time"); "" otherwise."""
    cn, cw = _all_words(cand)
    rn, rw = _all_words(real)
    if cn & rw or (cw and rw and len(cw & rw) / min(len(cw), len(rw)) >= 0.3):
        return "near"
    return "reverse" if rn & cw else ""


def _keys(tool: dict) -> set[str]:
    keys = set(tool["extra"]) | {f"(outer) {k}" for k in tool.get("outer", {})}
    if isinstance(tool["parameters"], dict) and "$schema" in tool["parameters"]:
        keys.add("inputSchema.$schema")
    return keys


def distractor_counts(pairs) -> dict:
    from hsa.mapping import Mapping
    from hsa.names import split_words
    from transforms._toolnames import detect_style

    c = Counter()
    examples = []
    for source, variant in pairs:
        steps = variant["mapping"][len(source["mapping"]):]
        m = Mapping(steps)
        real = {m.tool_to_variant(t["name"]) for t in source["tools"]}
        reals = [t for t in variant["tools"] if t["name"] in real and t["name"] != variant["skill_tool"]["name"]]
        if not reals:
            continue
        common = set.intersection(*(_keys(t) for t in reals))
        styles = Counter(detect_style(t["name"]) for t in reals if len(split_words(t["name"])) > 1)
        style, n = styles.most_common(1)[0] if styles else ("snake", 0)
        for t in variant["tools"]:
            if t["name"] in real:
                continue
            c["distractors"] += 1
            missing = common - _keys(t)
            if missing:
                c["missing a key every neighbour has"] += 1
            if n and n == sum(styles.values()) and detect_style(t["name"]) != style:
                c["in another naming style than every neighbour"] += 1
            verdicts = {r["name"]: _near(t, r) for r in reals}
            near = [n for n, v in verdicts.items() if v == "near"]
            if near:
                c["near a real tool (judge reads all)"] += 1
            elif "reverse" in verdicts.values():
                c["only a real tool's name word in the distractor (read by hand)"] += 1
            if len(examples) < 40:
                examples.append(f"{source['id'].split('/')[0]}: {t['name']} [{style}] missing={sorted(missing)} near={near[:3]}")
    return {"counts": dict(c), "examples": examples}


# --------------------------------------------------------------------------- distractor skills


#: The domain of each distractor skill of the bank before issue 33 (it stated none), read by hand; the current
#: bank states its own (``domain``).
OLD_SKILL_DOMAINS = {"pdf_form_filling": "general", "git_commit_message": "coding", "spreadsheet_formulas": "general",
                     "meeting_notes": "general", "sql_query_review": "coding", "travel_itinerary": "travel",
                     "recipe_scaling": "general", "slide_deck_outline": "general", "resume_review": "general",
                     "code_review": "coding", "poem_writing": "general", "weather_briefing": "general"}


def _skill_domain(name: str) -> str:
    from hsa.names import split_words
    from transforms.skill_functional import load_distractors

    key = "_".join(split_words(name))
    declared = {d["name"]: d.get("domain") for d in load_distractors()}
    return declared.get(key) or OLD_SKILL_DOMAINS.get(key, "general")


def skill_counts(pairs) -> dict:
    from transforms._domains import content_words, domain_applies, harness_domain

    c = Counter()
    examples = []
    for source, variant in pairs:
        real = {s["name"] for s in source.get("skills") or ()}
        reals = [s for s in source.get("skills") or ()]
        if not reals:
            continue
        domain = harness_domain(source)
        median = statistics.median(len(s.get("description", "")) for s in reals)
        added = [s for s in variant.get("skills") or () if s["name"] not in real
                 and s["name"] not in set(variant["mapping"] and
                                          [v for st in variant["mapping"] if st["op"] == "skills"
                                           for v in st["map"].values()])]
        for s in added:
            c["distractor skills"] += 1
            words = content_words(f"{s['name'].replace('-', ' ').replace('_', ' ')} {s.get('description', '')}")
            own = _skill_domain(s["name"])
            if (own == "general") != (domain is None) or (own != "general" and not domain_applies(own, domain)):
                c["off-domain"] += 1
            name_words = content_words(s["name"].replace("-", " ").replace("_", " "))
            near = []
            for r in reals:
                rw = content_words(f"{r['name'].replace('-', ' ').replace('_', ' ')} {r.get('description', '')}")
                rn = content_words(r["name"].replace("-", " ").replace("_", " "))
                if name_words & rn or (words and rw and len(words & rw) / min(len(words), len(rw)) >= 0.3):
                    near.append(r["name"])
            if near:
                c["near a real skill"] += 1
            ratio = len(s.get("description", "")) / median if median else 1.0
            if not 0.5 <= ratio <= 2.0:
                c["description length off (<0.5x or >2x the median)"] += 1
            if len(examples) < 30:
                examples.append(f"{source['id'].split('/')[0]} [{domain}]: {s['name']} ({len(s.get('description', ''))} chars vs "
                                f"median {median:.0f}; own domain {own}) near={near}")
    return {"counts": dict(c), "examples": examples}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=36)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--live-records", type=int, default=30, help="live-commerce fixture records for skill distractors")
    ap.add_argument("--json", help="write the counts here too")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp())
    raws = [json.loads(x) for x in MCP.read_text(encoding="utf-8").splitlines()]
    other = tmp / "dialects.jsonl"
    other.write_text("".join(json.dumps(_as_dialect(r, d)) + "\n" for d in ("anthropic", "openai") for r in raws),
                     encoding="utf-8")
    live = tmp / "live.jsonl"
    live.write_text("".join(LIVE.read_text(encoding="utf-8").splitlines(keepends=True)[:args.live_records]),
                    encoding="utf-8")
    default = _run([MCP], _default(), args.variants, args.seed)
    report = {
        "values, default recipe (MCP)": values_counts(default),
        "values, tool.values p=1 (MCP)": values_counts(_run([MCP], {"transform": "tool.values", "modes": ["enum"],
                                                                    "p": 1.0}, args.variants, args.seed)),
        "dialect, tool.dialect (MCP, Anthropic, OpenAI)": dialect_counts(_run([MCP, other], {"transform": "tool.dialect"},
                                                                             args.variants, args.seed)),
        "distractors, default recipe (MCP)": distractor_counts(default),
        "distractors, tool.distractors (MCP)": distractor_counts(_run([MCP], {"transform": "tool.distractors",
                                                                              "n": [1, 3]}, args.variants, args.seed)),
        "skill distractors, skill.catalog (Agent Skills, live commerce)": skill_counts(_run(
            [SKILLS, live], {"transform": "skill.catalog", "distractors": [1, 2]}, max(2, args.variants // 6),
            args.seed)),
    }
    for title, part in report.items():
        print(f"## {title}")
        for k, v in part["counts"].items():
            print(f"  {k}: {v}")
        for k, v in part.get("lost", {}).items():
            print(f"    lost {k}: {v}")
        for line in part.get("examples", [])[:12]:
            print(f"    e.g. {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
