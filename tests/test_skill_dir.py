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
    skill = parse_skill_md(SKILL_MD, dialect="agentskills", keep_text=False)
    assert skill == {"name": "pdf-tools",
                     "description": "Extract text and tables from PDFs: use when a PDF is mentioned.",
                     "content": "# PDF tools\n\nRun `pdftotext` first.\n", "license": "Apache-2.0",
                     "metadata": {"author": "example"}, "allowed-tools": "Bash(pdftotext:*) Read"}
    assert format_skill_md(skill) == SKILL_MD
    kept = parse_skill_md(SKILL_MD, dialect="agentskills")
    assert kept["frontmatter"] == SKILL_MD[:SKILL_MD.index("# PDF")] and format_skill_md(kept) == SKILL_MD


def test_non_spec_keys_travel_in_metadata():
    """HAT's 'kind' is written as metadata hsa.kind and read back as a key of the skill."""
    skill = {"name": "item_qa", "description": "Answer.", "content": "# QA\n", "kind": "reply"}
    text = format_skill_md(skill)
    assert "metadata:\n  hsa.kind: reply\n" in text
    assert parse_skill_md(text, keep_text=False) == skill
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
    back = [{k: v for k, v in s.items() if k != "frontmatter"} for s in read_skills_dir(tmp_path / "skills")]
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


# --------------------------------------------------------------------------- folders as people write them (issue 21)


def _imported(tmp_path, **kw):
    from tests.skills_support import write_skills_folder

    root = write_skills_folder(tmp_path / "src")
    return root, {s["name"]: s for s in read_skills_dir(root, dialect="agentskills", **kw)}


def test_bundled_files_are_carried_and_written_back(tmp_path):
    """Scripts, references, LICENSE, a CRLF file and a binary asset travel in the record and come back on export."""
    import base64

    from tests.skills_support import PNG, folder_bytes

    root, skills = _imported(tmp_path)
    files = {f["path"]: f for f in skills["webapp-testing"]["files"]}
    assert sorted(files) == ["LICENSE.txt", "examples/console_logging.py", "scripts/with_server.py"]
    assert files["scripts/with_server.py"]["executable"] is True
    assert files["examples/console_logging.py"]["text"].count("\r\n") == 3
    logo = next(f for f in skills["brand-guidelines"]["files"] if f["path"] == "assets/logo.png")
    assert "text" not in logo and base64.b64decode(logo["base64"]) == PNG
    rows = json.loads(json.dumps(list(skills.values())))  # what a JSONL record holds
    write_skills_dir(rows, tmp_path / "out")
    assert folder_bytes(tmp_path / "out") == folder_bytes(root)
    assert (tmp_path / "out" / "webapp-testing" / "scripts" / "with_server.py").stat().st_mode & 0o111


def test_files_over_the_limit_are_left_out_and_counted(tmp_path, capsys):
    """A file over --max-file-bytes and a cache folder are not carried; the import says which and why."""
    from tests.skills_support import catalogue_record, write_skills_folder

    root = write_skills_folder(tmp_path / "src")
    (root / "docx" / "reference" / "big.xsd").write_text("x" * 5000)
    (root / "docx" / "__pycache__").mkdir()
    (root / "docx" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\x00" * 10)
    (root / "notes.txt").write_text("not a skill")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(catalogue_record()) + "\n")
    assert main(["skills", "import", str(src), "--skills-dir", str(root), "--out", str(tmp_path / "m.jsonl"),
                 "--max-file-bytes", "4096"]) == 0
    err = capsys.readouterr().err
    assert "9 bundled files carried, 1 of them binary as base64; 2 left out" in err
    assert "docx/reference/big.xsd (5000 bytes: over the size limit of 4096 bytes per file" in err
    assert "docx/__pycache__/ " in err and "ignored: notes.txt" in err
    skill = next(s for s in json.loads((tmp_path / "m.jsonl").read_text())["skills"] if s["name"] == "docx")
    assert [x["path"] for x in skill["files_left_out"]] == ["__pycache__/", "reference/big.xsd"]


def test_a_renamed_skill_moves_its_folder_and_path_references(tmp_path):
    """Export of a variant writes a renamed skill under its new name; bundled texts that name its folder follow."""
    from hsa.mapping import Mapping
    from hsa.records import denormalize, normalize
    from tests.skills_support import catalogue_record
    from transforms.skill import SkillRename

    root, skills = _imported(tmp_path)
    rec = catalogue_record()
    rec["skills"] = json.loads(json.dumps(list(skills.values())))
    variant = SkillRename().apply(normalize(rec), {"renames": {"webapp-testing": "test-webapp"}})
    row = denormalize(variant) | {"id": "v", "mapping": Mapping(variant["mapping"]).to_dict()}
    (tmp_path / "v.jsonl").write_text(json.dumps(row) + "\n")
    assert main(["skills", "export", str(tmp_path / "v.jsonl"), "--id", "v", "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert not (out / "webapp-testing").exists()
    assert (out / "test-webapp" / "scripts" / "with_server.py").read_bytes() == \
        (root / "webapp-testing" / "scripts" / "with_server.py").read_bytes()
    assert b"skills/test-webapp/scripts/with_server.py" in (out / "test-webapp" / "examples" /
                                                             "console_logging.py").read_bytes()
    md = (out / "test-webapp" / "SKILL.md").read_text()
    old = (root / "webapp-testing" / "SKILL.md").read_text()
    assert md == old.replace("name: webapp-testing", "name: test-webapp")


def test_unknown_frontmatter_keys_keep_their_yaml_types(tmp_path):
    """user-invocable: true stays a bool and argument-hint a top-level key; export writes them where they were."""
    _, skills = _imported(tmp_path)
    brand = skills["brand-guidelines"]
    assert brand["user-invocable"] is True and brand["argument-hint"] == "[artifact-path]" and brand["version"] == "1.7"
    changed = {**brand, "description": "Apply the brand."}
    text = format_skill_md(changed)
    head = text.split("---\n")[1]
    assert "user-invocable: true\n" in head and 'argument-hint: "[artifact-path]"\n' in head
    assert "hsa." not in head and 'version: "1.7"\n' in head
    back = parse_skill_md(text)
    assert back["user-invocable"] is True and back["version"] == "1.7"


def test_untouched_skill_is_written_back_byte_for_byte(tmp_path):
    """Quoting and key order survive: a double-quoted description, "1.7", single quotes, nested metadata."""
    root, skills = _imported(tmp_path)
    for name, skill in skills.items():
        assert format_skill_md(skill).encode("utf-8") == (root / name / "SKILL.md").read_bytes(), name


def test_a_changed_skill_changes_only_what_changed(tmp_path):
    """A new description is written in its old quoting style; every other line of the SKILL.md is unchanged."""
    root, skills = _imported(tmp_path)
    for name, new_desc in (("brand-guidelines", 'Apply "brand" colors: fonts, too.'),
                           ("theme-factory", "Style artifacts with a theme."),
                           ("skill-creator", "Create skills.")):
        old = (root / name / "SKILL.md").read_text().splitlines()
        new = format_skill_md({**skills[name], "description": new_desc}).splitlines()
        changed = [(a, b) for a, b in zip(old, new) if a != b]
        assert len(old) == len(new) and len(changed) == 1, changed
        assert parse_skill_md("\n".join(new) + "\n")["description"] == new_desc
        quote = old[2].split(": ", 1)[1][0]
        assert new[2].split(": ", 1)[1][0] == (quote if quote in "\"'" else "C")


def test_overwrite_message_speaks_to_its_caller(tmp_path, capsys):
    """The Python error says overwrite=True; the CLI says --overwrite; import's help does not claim to augment."""
    from hsa.cli import make_parser
    from hsa.skills_dir import SkillsExistError

    skills = [{"name": "a-b", "description": "x", "content": "y"}]
    write_skills_dir(skills, tmp_path / "o")
    with pytest.raises(SkillsExistError) as exc:
        write_skills_dir(skills, tmp_path / "o")
    assert "overwrite=True" in str(exc.value) and "--overwrite" not in str(exc.value)
    (tmp_path / "r.jsonl").write_text(json.dumps({"id": "r", "messages": [], "skills": skills}) + "\n")
    assert main(["skills", "export", str(tmp_path / "r.jsonl"), "--id", "r", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "add --overwrite to replace them" in err and "overwrite=True" not in err
    sub = next(a for a in make_parser()._actions if a.dest == "command" or getattr(a, "choices", None)
               and "skills" in (a.choices or {}))
    desc = sub.choices["skills"].description
    assert "then run 'hsa augment'" not in desc and "afterwards" in desc


def test_import_augment_export_round_trip(tmp_path):
    """End to end: import a folder, augment, export a variant and the source; the source export is the folder."""
    from tests.skills_support import catalogue_record, folder_bytes, write_skills_folder

    root = write_skills_folder(tmp_path / "src")
    (tmp_path / "in.jsonl").write_text(json.dumps(catalogue_record()) + "\n")
    assert main(["skills", "import", str(tmp_path / "in.jsonl"), "--skills-dir", str(root),
                 "--out", str(tmp_path / "m.jsonl")]) == 0
    out = tmp_path / "aug"
    assert main(["augment", str(tmp_path / "m.jsonl"), "--out", str(out), "--recipe", "skills", "--variants", "3",
                 "--keep-original", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["rejected"] == 0 and manifest["counts"]["variants_failed"] == 0
    assert main(["skills", "export", str(out), "--id", "sk-1/0", "--out", str(tmp_path / "e0")]) == 0
    assert folder_bytes(tmp_path / "e0") == folder_bytes(root)
    from hsa.io import read_records

    rows = {r["id"]: r for r in read_records(out)}
    changed = [i for i in rows if i != "sk-1/0" and rows[i]["skills"] != rows["sk-1/0"]["skills"]]
    assert changed
    vid = changed[0]
    assert main(["skills", "export", str(out), "--id", vid, "--out", str(tmp_path / "e1")]) == 0
    exported = read_skills_dir(tmp_path / "e1")
    assert sorted(s["name"] for s in exported) == sorted(s["name"] for s in rows[vid]["skills"])
    got = folder_bytes(tmp_path / "e1")
    for s in rows[vid]["skills"]:
        for f in s.get("files") or ():
            assert f"{s['name']}/{f['path']}" in got


@pytest.mark.parametrize("text", [
    "---\r\nname: a-b\r\ndescription: Old one.\r\n---\r\n\r\nBody\r\n",
    "\ufeff---\nname: a-b\ndescription: 'It''s old.'\n---\n\nBody\n",
    "---\nname: a-b\n# a comment\ndescription: >\n  Old folded\n  text.\n\nlicense: MIT  # trailing\n---\nBody\n",
    "---\nname: a-b\ndescription: x\nallowed-tools:\n- Read\n- Write\nmetadata: {author: me}\n---\n\nB\n",
])
def test_odd_frontmatter_layouts_round_trip_and_edit(text):
    """CRLF, a BOM, comments, folded scalars, block lists at column 0: same bytes back; an edit keeps the rest."""
    skill = parse_skill_md(text)
    assert format_skill_md(skill) == text
    out = format_skill_md({**skill, "name": "c-d", "description": "New: it's here."})
    back = parse_skill_md(out)
    assert back["name"] == "c-d" and back["description"] == "New: it's here." and back["content"] == skill["content"]
    assert {k: v for k, v in back.items() if k not in ("name", "description", "frontmatter")} == \
        {k: v for k, v in skill.items() if k not in ("name", "description", "frontmatter")}
    kept = [line for line in text.splitlines() if not line.startswith(("name:", "description:", "  "))]
    assert all(line in out.splitlines() for line in kept)


def test_nested_skill_folders_are_found_and_written_back_in_place(tmp_path):
    """document-skills/pdf/SKILL.md is a skill; it is exported to the same place; loose files are listed, not lost."""
    from tests.skills_support import folder_bytes

    root = tmp_path / "repo"
    md = "---\nname: {0}\ndescription: The {0} skill.\n---\n\n# {0}\n"
    for rel in ("document-skills/pdf", "document-skills/docx", "webapp-testing"):
        (root / rel).mkdir(parents=True)
        (root / rel / "SKILL.md").write_text(md.format(rel.rsplit("/", 1)[-1]))
    (root / "document-skills" / "pdf" / "forms.md").write_text("# Forms\n")
    (root / "document-skills" / "README.md").write_text("index\n")
    (root / "spec").mkdir()
    (root / "spec" / "agent-skills-spec.md").write_text("spec\n")
    ignored: list[str] = []
    skills = read_skills_dir(root, ignored=ignored)
    assert [(s["name"], s.get("folder")) for s in skills] == [
        ("docx", "document-skills/docx"), ("pdf", "document-skills/pdf"), ("webapp-testing", None)]
    assert ignored == ["document-skills/README.md", "spec/"]
    write_skills_dir(json.loads(json.dumps(skills)), tmp_path / "out")
    want = {k: v for k, v in folder_bytes(root).items() if k.endswith(("SKILL.md", "forms.md"))}
    assert folder_bytes(tmp_path / "out") == want
    (root / "spec" / "pdf").mkdir()
    (root / "spec" / "pdf" / "SKILL.md").write_text(md.format("pdf"))
    with pytest.raises(SkillFormatError, match="'pdf' is defined twice"):
        read_skills_dir(root)
