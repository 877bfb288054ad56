"""A hand-written Agent Skills folder, as people write them, and a trajectory that uses it.

Frontmatter with third-party keys (``allowed-tools``, ``compatibility``, ``argument-hint``,
``metadata``, ``user-invocable: true``, a quoted ``version: "1.7"``), double-quoted
descriptions, bundled scripts, references, a LICENSE, a CRLF text file, an executable
script and a small binary asset.
"""

from __future__ import annotations

from pathlib import Path

# A 1x1 PNG: eight bytes of signature, then IHDR, IDAT and IEND chunks (not UTF-8).
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

SKILLS: dict[str, dict[str, str | bytes]] = {
    "webapp-testing": {
        "SKILL.md": """---
name: webapp-testing
description: "Toolkit for interacting with and testing local web applications using Playwright. Supports verifying frontend functionality, capturing browser screenshots, and viewing browser logs."
license: Complete terms in LICENSE.txt
allowed-tools: Bash(python:*) Read Write
---

# Web Application Testing

To test local web applications, write native Python Playwright scripts.

**Helper Scripts Available**:
- `scripts/with_server.py` - Manages server lifecycle (supports multiple servers)

## Decision Tree

1. Is it static HTML? Read the HTML file directly to identify selectors.
2. Is the server already running? Use reconnaissance-then-action.

## Example

```bash
python scripts/with_server.py --server "npm run dev" --port 5173 -- python your_automation.py
```

## Best Practices

- Use `sync_playwright()` for synchronous scripts
- Always close the browser when done
""",
        "scripts/with_server.py": "#!/usr/bin/env python3\n\"\"\"Start servers, wait for their ports, run a command.\"\"\"\n"
                                  "import subprocess\nimport sys\n\n\ndef main():\n    return subprocess.call(sys.argv[1:])\n\n\n"
                                  "if __name__ == \"__main__\":\n    sys.exit(main())\n",
        "examples/console_logging.py": "from playwright.sync_api import sync_playwright\r\n\r\n"
                                       "# see skills/webapp-testing/scripts/with_server.py\r\n",
        "LICENSE.txt": "Apache License\nVersion 2.0, January 2004\n",
    },
    "brand-guidelines": {
        "SKILL.md": """---
name: brand-guidelines
description: "Applies the official brand colors and typography to any sort of artifact that may benefit from the company's look-and-feel. Use it when brand colors, style guidelines, visual formatting, or company design standards apply."
compatibility: Requires network access to download the brand fonts
argument-hint: "[artifact-path]"
user-invocable: true
version: "1.7"
metadata:
  author: design-team
  tags: "brand, style"
---

# Brand Styling

## Colors

- Dark: `#141413` - primary text and dark backgrounds
- Orange: `#d97757` - primary accent

## Typography

- Headings: Poppins (with Arial fallback)
- Body text: Lora (with Georgia fallback)

See reference/notes.md for the full palette.
""",
        "reference/notes.md": "# Palette notes\n\nThe logo lives in assets/logo.png.\n",
        "assets/logo.png": PNG,
    },
    "skill-creator": {
        "SKILL.md": """---
name: skill-creator
description: Guide for creating effective skills. Use it when users want to create a new skill, or update an existing skill that extends the agent's capabilities.
metadata:
  version: "2"
---

# Skill Creator

This skill provides guidance for creating effective skills.

## Creating a skill

Write a SKILL.md with a name and a description, then draft three test prompts.

## Improving the skill

You've run the test cases and read the transcripts; now generalise from the feedback.

## Packaging

Zip the folder with scripts/package_skill.py.
""",
        "scripts/package_skill.py": "import shutil\nimport sys\n\nshutil.make_archive(sys.argv[1], 'zip', sys.argv[1])\n",
    },
    "theme-factory": {
        "SKILL.md": """---
name: theme-factory
description: 'Toolkit for styling artifacts with a theme: slides, docs, reports and landing pages.'
---

# Theme Factory

## Usage Instructions

Show the theme showcase, then ask which theme to apply.

## Application Process

After a preferred theme is selected, read its file in themes/ and apply its colors and fonts.

## Custom themes

Describe the mood; a new theme is generated from it.
""",
        "themes/ocean-depths.md": "# Ocean Depths\n\n- Deep navy `#1a2332`\n- Teal `#2d8b8b`\n",
    },
    "docx": {
        "SKILL.md": """---
name: docx
description: "Use this skill whenever the user wants to create, read or edit Word documents (.docx files), including tables of contents, headings, page numbers, or letterheads."
license: Proprietary. LICENSE.txt has complete terms
---

# DOCX creation, editing, and analysis

## Reading

Convert with pandoc to markdown first.

## Creating

Use docx-js; see reference/docx-js.md.
""",
        "reference/docx-js.md": "# docx-js\n\nnew Document({sections: []})\n",
        "LICENSE.txt": "Proprietary.\n",
    },
}

EXECUTABLE = {"webapp-testing/scripts/with_server.py"}


def write_skills_folder(root: Path) -> Path:
    """Write :data:`SKILLS` under ``root`` (with a stray README next to the skills); returns ``root``."""
    for name, files in SKILLS.items():
        for rel, data in files.items():
            p = root / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
            if f"{name}/{rel}" in EXECUTABLE:
                p.chmod(0o755)
    return root


def folder_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, as bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def catalogue_record(skills: list[str] | None = None, *, layout: str = "list") -> dict:
    """A plain trajectory whose system prompt lists the skills of :data:`SKILLS` as agents do, and loads one."""
    import yaml

    names = skills or list(SKILLS)
    descs = {n: yaml.safe_load(SKILLS[n]["SKILL.md"].split("---")[1])["description"] for n in names}
    if layout == "list":
        catalogue = "## Skills\n\n" + "\n".join(f"- {n}: {descs[n]}" for n in names)
    elif layout == "available_skills":
        catalogue = "## Skills\n\n<available_skills>\n" + "".join(
            f"  <skill>\n    <name>{n}</name>\n    <description>{descs[n]}</description>\n"
            f"    <location>skills/{n}/SKILL.md</location>\n  </skill>\n" for n in names) + "</available_skills>"
    else:
        raise ValueError(layout)
    system = ("You are a coding agent working in the user's repository.\n\n"
              "## Rules\n\nLoad the matching skill before you act.\n\n" + catalogue +
              "\n\n## Output\n\nReply in plain text.\n")
    body = SKILLS["webapp-testing"]["SKILL.md"].split("---\n", 2)[2].lstrip("\n")
    return {"id": "sk-1", "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": "Check that the login page of my app renders."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "load_skill", "arguments": {"skill": "webapp-testing"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": body},
        {"role": "assistant", "content": "I loaded webapp-testing; the login page renders with no console errors."}],
        "tools": [{"type": "function", "function": {"name": "load_skill", "description": "Load a skill by name.",
                   "parameters": {"type": "object", "properties": {"skill": {"type": "string"}},
                                  "required": ["skill"]}}}]}
