"""Agent Skills folders: SKILL.md parsing and writing, name rules, and the hsa skills command."""

from __future__ import annotations

import json

import pytest

from hsa.cli import main
from hsa.skills_dir import (
    SkillFormatError,
    format_skill_md,
    is_legal_skill_name,
    parse_skill_md,
    read_skills_dir,
    skill_dialect,
    write_skills_dir,
)

SKILL_MD = """---
name: pdf-tools
description: 'Extract text and tables from PDFs: use when a PDF is mentioned.'
license: Apache-2.0
metadata:
  author: example
allowed-tools: Bash(pdftotext:*) Read
---

# PDF tools

Run `pdftotext` first.
"""


@pytest.mark.parametrize("name,spec,hat", [
    ("pdf-tools", True, True), ("item_qa", False, True), ("a", True, True), ("x" * 64, True, True),
    ("x" * 65, False, False), ("-pdf", False, False), ("pdf-", False, False), ("pdf--tools", False, False),
    ("PDF", False, False), ("item__qa", False, False), ("item qa", False, False), ("", False, False),
])
def test_name_rules(name, spec, hat):
    """The open spec: 1-64 lowercase letters, digits, single inner hyphens; HAT also allows underscores."""
    assert is_legal_skill_name(name, "agentskills") is spec
    assert is_legal_skill_name(name, "hat") is hat


def test_dialect_of_a_name_set():
    """A set is Agent Skills only when every name follows the spec."""
    assert skill_dialect(["pdf-tools", "review"]) == "agentskills"
    assert skill_dialect(["pdf-tools", "item_qa"]) == "hat"


def test_parse_and_format_round_trip():
    """SKILL.md -> skill -> SKILL.md is the same text; spec keys stay keys, the body is the content."""
    skill = parse_skill_md(SKILL_MD, dialect="agentskills")
    assert skill == {"name": "pdf-tools",
                     "description": "Extract text and tables from PDFs: use when a PDF is mentioned.",
                     "content": "# PDF tools\n\nRun `pdftotext` first.\n", "license": "Apache-2.0",
                     "metadata": {"author": "example"}, "allowed-tools": "Bash(pdftotext:*) Read"}
    assert format_skill_md(skill) == SKILL_MD


def test_non_spec_keys_travel_in_metadata():
    """HAT's 'kind' is written as metadata hsa.kind and read back as a key of the skill."""
    skill = {"name": "item_qa", "description": "Answer.", "content": "# QA\n", "kind": "reply"}
    text = format_skill_md(skill)
    assert "metadata:\n  hsa.kind: reply\n" in text
    assert parse_skill_md(text) == skill
    with pytest.raises(SkillFormatError, match="strings only"):
        format_skill_md({**skill, "weight": 3})


@pytest.mark.parametrize("text,msg", [
    ("# no frontmatter", "no YAML frontmatter"),
    ("---\nname: [1\n---\nx", "not valid YAML"),
    ("---\nname: Bad_Name\ndescription: x\n---\n", "not a legal skill name"),
    ("---\nname: ok\n---\n", "description must be"),
    ("---\nname: ok\ndescription: " + "x" * 1025 + "\n---\n", "at most 1024"),
])
def test_parse_errors_say_what_to_do(text, msg):
    """Malformed SKILL.md files fail with the file and the rule."""
    with pytest.raises(SkillFormatError, match=msg):
        parse_skill_md(text, source="skills/x/SKILL.md")


def test_read_and_write_a_folder(tmp_path, fixture_records):
    """The fixture skills written as a folder read back equal; a name that differs from its folder is refused."""
    skills = fixture_records[0]["skills"]
    files = write_skills_dir(skills, tmp_path / "skills")
    assert sorted(p.parent.name for p in files) == sorted(s["name"] for s in skills)
    back = read_skills_dir(tmp_path / "skills")
    assert sorted(json.dumps(s, sort_keys=True) for s in back) == sorted(json.dumps(s, sort_keys=True) for s in skills)
    with pytest.raises(SkillFormatError, match="already exist"):
        write_skills_dir(skills, tmp_path / "skills")
    (tmp_path / "skills" / "item_qa").rename(tmp_path / "skills" / "renamed")
    with pytest.raises(SkillFormatError, match="differs from its folder"):
        read_skills_dir(tmp_path / "skills")
    with pytest.raises(SkillFormatError, match="not a legal skill name"):
        read_skills_dir(tmp_path / "skills", dialect="agentskills")


def test_cli_import_then_augment_then_export(tmp_path, fixture_records, capsys):
    """hsa skills import adds a folder's skills to records without any; hsa skills export writes a variant's skills back."""
    write_skills_dir(fixture_records[0]["skills"], tmp_path / "skills")
    plain = [{k: v for k, v in r.items() if k != "skills"} for r in fixture_records[:3]]
    plain[1] = fixture_records[1]  # has its own skills: left as it is
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in plain))
    merged = tmp_path / "merged.jsonl"
    assert main(["skills", "import", str(src), "--skills-dir", str(tmp_path / "skills"), "--out", str(merged)]) == 0
    rows = [json.loads(line) for line in merged.read_text().splitlines()]
    assert {s["name"] for s in rows[0]["skills"]} == {s["name"] for s in fixture_records[0]["skills"]}
    assert rows[1]["skills"] == fixture_records[1]["skills"]
    out = tmp_path / "out"
    assert main(["augment", str(merged), "--out", str(out), "--recipe", "skills", "--variants", "1", "--quiet"]) == 0
    assert main(["skills", "export", str(out), "--id", "ls-000001/1", "--out", str(tmp_path / "exported")]) == 0
    exported = read_skills_dir(tmp_path / "exported")
    assert len(exported) >= len(fixture_records[0]["skills"])
    assert main(["skills", "export", str(out), "--id", "nope", "--out", str(tmp_path / "e2")]) == 2
    assert "no record with id 'nope'" in capsys.readouterr().err
    assert main(["skills", "import", str(src), "--out", str(merged)]) == 2
