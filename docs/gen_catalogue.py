"""Build docs/catalogue.md, the transform catalogue, from the registry.

For every registered transform: its name, family, whether it preserves the task, what
it changes (the class docstring), its options with their defaults, and an example: the
transform (with its default options) run on a small built-in record (or the first fixture
record when it does not apply there), shown as a diff of
the record before and after, with the params it drew. Nothing is written by hand, so the
catalogue cannot drift from the code; ``tests/test_tool_catalogue.py`` fails when the file
is out of date.

    python docs/gen_catalogue.py            # rewrite docs/catalogue.md
    python docs/gen_catalogue.py --check    # exit 1 when docs/catalogue.md is out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import json
import sys
from pathlib import Path

__all__ = ["EXAMPLE", "render", "main", "OUT"]

OUT = Path(__file__).resolve().parent / "catalogue.md"
MAX_DIFF_LINES = 60
MAX_PARAMS_CHARS = 600
SEEDS = 64

#: The record every example runs on: two tools (a nested object, an enum, a number
#: default, an array), the skill tool, two skills, a prompt, a hook, and a trajectory
#: with a call, its result, a skill load and a reply.
EXAMPLE = {
    "id": "example",
    "tools": [
        {"type": "function", "function": {
            "name": "search_products",
            "description": "Search the catalogue by keyword, optionally within a price range.",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string", "description": "Keywords, such as 'linen trousers'"},
                "price_range": {"type": "object", "properties": {"min": {"type": "number"},
                                                                 "max": {"type": "number"}}},
                "sort": {"type": "string", "enum": ["relevance", "price_low_first"], "default": "relevance"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8},
            }, "required": ["query"]}}},
        {"type": "function", "function": {
            "name": "get_order_status",
            "description": "Get the status of an order.",
            "parameters": {"type": "object", "properties": {
                "order_id": {"type": "string", "description": "Order number, starts with LS"},
                "fields": {"type": "array", "items": {"type": "string"}}},
                "required": ["order_id"]}}},
        {"type": "function", "function": {
            "name": "load_skill", "description": "Load a skill by name.",
            "parameters": {"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
    ],
    "skills": [
        {"name": "item_qa", "description": "Answer product questions.",
         "content": "Call search_products, then answer in two sentences."},
        {"name": "order_qa", "description": "Answer order questions.",
         "content": "Call get_order_status first."},
    ],
    "prompt": {"sections": [
        {"id": "persona", "title": "Persona", "body": "You are a shop assistant."},
        {"id": "rules", "title": "Rules", "body": "Use search_products for products; load item_qa before replying."},
    ], "template": "{% for s in sections %}## {{ s.title }}\n{{ s.body }}\n{% endfor %}"},
    "hooks": [{"name": "guard", "event": "pre_tool_use", "entry": "check",
               "source": "def check(payload):\n"
                         "    if payload['tool_name'] == 'search_products' and not payload['tool_input'].get('query'):\n"
                         "        return {'decision': 'retry', 'message': 'Ask what to search for.'}\n"
                         "    return {'decision': 'allow'}\n"}],
    "messages": [
        {"role": "system", "content": "## Persona\nYou are a shop assistant.\n## Rules\n"
                                      "Use search_products for products; load item_qa before replying.\n"},
        {"role": "user", "content": "Any linen trousers under 300, cheapest first?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search_products", "arguments": {
                "query": "linen trousers", "price_range": {"max": 300}, "sort": "price_low_first", "limit": 8}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "search_products", "content": "{\"results\": [\"P1\", \"P2\"]}"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "load_skill", "arguments": {"skill": "item_qa"}}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "load_skill", "content": "Call search_products, then answer."},
        {"role": "assistant", "content": "P1 and P2 are linen trousers under 300, P1 first."},
    ],
}


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "livestream" / "trajectories.jsonl"


def _examples() -> list[tuple[str, dict]]:
    """The records examples run on: the small one above, then (for transforms it does not fit) the first fixture."""
    out = [("example record", EXAMPLE)]
    if FIXTURE.exists():
        with FIXTURE.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
        out.append((f"fixture record {first.get('id')}", first))
    return out


def _type_name(annotation) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    return text.replace("typing.", "")


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = field.default_factory()  # type: ignore[misc]
    else:
        return "(required)"
    from hsa.transform import _jsonable

    return json.dumps(_jsonable(value), ensure_ascii=False)


def _pretty(record: dict) -> list[str]:
    return json.dumps(record, indent=1, ensure_ascii=False).splitlines()


def _example(cls) -> str:
    from hsa.pipeline import rng_for
    from hsa.records import denormalize, normalize
    from hsa.transform import run

    if cls.family == "meta":
        return "_A combinator: it runs the transforms it is given; see the other entries for examples._\n"
    try:
        transform = cls()
    except (TypeError, ValueError) as exc:
        return f"_No example: the defaults do not build a transform ({exc})._\n"
    reasons: set[str] = set()
    for where, raw in _examples():
        source = normalize(json.loads(json.dumps(raw)))
        for seed in range(SEEDS):
            variant, applied, skipped = run(transform, source, rng_for(seed, source["id"], 1))
            if applied:
                break
            reasons.update(why for _, why in skipped)
        if applied:
            break
    else:
        return (f"_With its defaults it applies neither to the example record nor to the first fixture record "
                f"({'; '.join(sorted(reasons)) or 'no reason'})._\n")
    before, after = _pretty(denormalize(source)), _pretty(denormalize(variant))
    diff = list(difflib.unified_diff(before, after, "before", "after", n=1, lineterm=""))[2:]
    cut = len(diff) > MAX_DIFF_LINES
    diff = diff[:MAX_DIFF_LINES] + ([f"... ({len(diff) - MAX_DIFF_LINES} more diff lines)"] if cut else [])
    params = json.dumps([a.params for a in applied], ensure_ascii=False)
    if len(params) > MAX_PARAMS_CHARS:
        params = params[:MAX_PARAMS_CHARS] + " ..."
    mapping = variant["mapping"][len(source["mapping"]):]
    steps = ", ".join(sorted({s["op"] + (f":{s['kind']}" if s.get("kind") else "") for s in mapping})) or "none"
    return (f"Example ({where}, seed {seed}, default options) — params: `{params}`; mapping steps: {steps}.\n\n"
            "```diff\n" + "\n".join(diff) + "\n```\n")


def _entry(name: str, cls) -> str:
    doc = inspect.getdoc(cls) or "(no docstring)"
    fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
    lines = [f"## `{name}`", "",
             f"Family: **{cls.family}** · task-preserving: **{'yes' if cls.task_preserving else 'no'}** · "
             f"class `{cls.__module__}.{cls.__qualname__}`", "", doc, ""]
    if fields:
        lines += ["| option | type | default |", "|---|---|---|"]
        for f in fields:
            lines.append(f"| `{f.name}` | `{_type_name(f.type)}` | `{_default(f)}` |")
    else:
        lines.append("No options.")
    lines += ["", _example(cls)]
    return "\n".join(lines)


def render() -> str:
    """The catalogue as Markdown, from the current registry (the built-in families and any installed plugin's)."""
    import transforms  # noqa: F401  (the built-ins, also where this install declares no entry points)
    from hsa.transform import registry

    reg = registry()
    families: dict[str, list[str]] = {}
    for name, cls in reg.items():
        families.setdefault(cls.family, []).append(name)
    head = ["# Transform catalogue", "",
            "Generated by `python docs/gen_catalogue.py` from the transform registry; do not edit by hand",
            "(`tests/test_tool_catalogue.py` fails when this file is out of date). Every example runs the",
            "transform with its default options on the small record in `docs/gen_catalogue.py` (or, when it",
            "does not apply there, on the first record of `fixtures/livestream/trajectories.jsonl`) and shows",
            "the record before and after (input format, JSON) and the params drawn (the replay record).", "",
            f"{len(reg)} transforms in {len(families)} families:", ""]
    for fam in sorted(families):
        head.append(f"- **{fam}**: " + ", ".join(f"[`{n}`](#{n.replace('.', '')})" for n in families[fam]))
    body = [_entry(name, reg[name]) for fam in sorted(families) for name in families[fam]]
    return "\n".join(head) + "\n\n" + "\n".join(body).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the catalogue is out of date")
    parser.add_argument("--out", default=str(OUT), help="where to write the catalogue")
    args = parser.parse_args(argv)
    text = render()
    out = Path(args.out)
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is out of date with the registry; run: python docs/gen_catalogue.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
