"""How many real Agent Skills names ``skill.rename`` renames, and into what.

    python benchmarks/bench_skill_names.py --seeds 20

Builds one record by hand from a dozen public-style skills (pdf, docx, webapp-testing,
mcp-builder, skill-creator, brand-guidelines, canvas-design, frontend-design,
theme-factory, internal-comms, algorithmic-art, slack-gif-creator), with descriptions and
bodies written the way such skills are written and a system prompt that lists them; then
runs ``skill.rename`` (p=1, the given styles) under each seed and prints, per skill, how
often it was renamed and a few of the names drawn, plus the skip reason when nothing was
renamed. Nothing is asserted: it prints counts. It only uses APIs older versions have, so
the same script measures a checkout before a change (``PYTHONPATH=<old checkout>``).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict

SKILLS = {
    "pdf": ("Extract text and tables from PDF files, fill PDF forms, and merge or split documents.",
            "# PDF processing\n\n## Quick start\nUse pypdf to read a pdf and pdfplumber for tables.\n\n"
            "## Forms\nRun `python scripts/fill_form.py in.pdf out.pdf`.\n"),
    "docx": ("Create, read or edit Word documents (.docx files) with tracked changes and comments.",
             "# DOCX\n\n## Reading\nA .docx file is a ZIP archive of XML parts; convert it with pandoc.\n\n"
             "## Editing\nUnpack, edit word/document.xml, pack again.\n"),
    "webapp-testing": ("Test local web applications with Playwright: screenshots, console logs, UI checks.",
                       "# Web application testing\n\n## Helper\nStart the server with `scripts/with_server.py`.\n\n"
                       "## Best practices\nWait for networkidle before you inspect the DOM.\n"),
    "mcp-builder": ("Guide for building MCP servers that let a model call external services through tools.",
                    "# MCP server development\n\n## Research\nRead the protocol and the API you wrap.\n\n"
                    "## Implementation\nUse the Python or TypeScript SDK; one tool per action.\n"),
    "skill-creator": ("Guide for creating effective skills that extend the agent with knowledge and workflows.",
                      "# Skill creator\n\n## Anatomy\nA skill is a folder with SKILL.md and optional scripts.\n\n"
                      "## Writing the description\nSay what the skill does and when to use it.\n"),
    "brand-guidelines": ("Apply the company's brand colors and typography to slides, documents and web pages.",
                         "# Brand styling\n\n## Colors\nDark `#141413`, orange `#d97757`.\n\n"
                         "## Typography\nPoppins for headings, Lora for body text.\n"),
    "canvas-design": ("Create posters and visual art as PNG or PDF files from a design philosophy.",
                      "# Canvas design\n\n## Philosophy\nWrite a short design manifesto first.\n\n"
                      "## Canvas\nExpress it visually, with minimal text.\n"),
    "frontend-design": ("Build distinctive, production-grade frontend interfaces with a clear aesthetic direction.",
                        "# Frontend design\n\n## Direction\nPick a bold aesthetic and commit to it.\n\n"
                        "## Details\nTypography, color, motion and spatial composition.\n"),
    "theme-factory": ("Style artifacts such as slides, docs and landing pages with one of ten preset themes.",
                      "# Theme factory\n\n## Themes\nOcean Depths, Sunset Boulevard, Forest Canopy and more.\n\n"
                      "## Custom\nA new theme can be generated from a description.\n"),
    "internal-comms": ("Write internal communications: status reports, leadership updates, newsletters and FAQs.",
                       "# Internal comms\n\n## Formats\n3P updates, company newsletters, incident reports.\n\n"
                       "## Tone\nClear, brief, and specific about owners and dates.\n"),
    "algorithmic-art": ("Create generative art with p5.js using seeded randomness and interactive parameters.",
                        "# Algorithmic art\n\n## Philosophy\nDescribe the algorithmic idea in prose first.\n\n"
                        "## Sketch\nUse a seeded random generator so every run can be reproduced.\n"),
    "slack-gif-creator": ("Make animated GIFs sized and optimized for Slack emoji and messages.",
                          "# Slack GIF creator\n\n## Limits\nEmoji GIFs: 128x128, under 64 KB.\n\n"
                          "## Making frames\nDraw frames with Pillow, then assemble them.\n"),
}


def record() -> dict:
    """One trajectory whose system prompt lists the twelve skills and that loads webapp-testing."""
    catalogue = "\n".join(f"- {n}: {d}" for n, (d, _) in SKILLS.items())
    system = (f"You are a coding agent.\n\n## Rules\n\nLoad the matching skill first.\n\n## Skills\n\n{catalogue}"
              "\n\n## Output\n\nPlain text.\n")
    return {"id": "bench", "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": "Check that the login page renders and make me a party GIF for Slack."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "load_skill", "arguments": {"skill": "webapp-testing"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": SKILLS["webapp-testing"][1]},
        {"role": "assistant", "content": "The login page renders."}],
        "tools": [{"type": "function", "function": {"name": "load_skill", "description": "Load a skill.",
                   "parameters": {"type": "object", "properties": {"skill": {"type": "string"}},
                                  "required": ["skill"]}}}],
        "skills": [{"name": n, "description": d, "content": c} for n, (d, c) in SKILLS.items()]}


def main(argv: list[str] | None = None) -> int:
    from hsa.records import normalize
    from hsa.transform import run
    from transforms.skill import SKILL_NAME_STYLES, SkillRename

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--styles", default=",".join(SKILL_NAME_STYLES), help="comma-separated styles (default: all)")
    args = p.parse_args(argv)
    t = SkillRename(styles=tuple(args.styles.split(",")), p=1.0)
    rec = normalize(json.loads(json.dumps(record())))
    renamed: dict[str, Counter] = defaultdict(Counter)
    per_seed, reasons = [], Counter()
    for seed in range(args.seeds):
        _, applied, skipped = run(t, rec, random.Random(seed))
        renames = applied[0].params["renames"] if applied else {}
        per_seed.append(len(renames))
        for old, new in renames.items():
            renamed[old][new] += 1
        reasons.update(why for _, why in skipped)
    print(f"styles: {args.styles}; seeds: {args.seeds}; skills: {len(SKILLS)}")
    print(f"renamed per seed: mean {sum(per_seed) / len(per_seed):.2f}, min {min(per_seed)}, max {max(per_seed)}")
    for name in SKILLS:
        names = ", ".join(n for n, _ in renamed[name].most_common(4))
        print(f"  {name:18s} {sum(renamed[name].values()):3d}/{args.seeds}  {names}")
    never = [n for n in SKILLS if not renamed[n]]
    print(f"never renamed: {', '.join(never) or '-'}")
    for why, n in reasons.most_common():
        print(f"  skipped {n}x: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
