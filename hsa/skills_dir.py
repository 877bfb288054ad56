"""Agent Skills folders: read a skills directory into a harness and write one back.

A skill is a folder holding ``SKILL.md``: YAML frontmatter (``name``, ``description``,
optional ``license``, ``compatibility``, ``metadata``, ``allowed-tools``) and a Markdown
body. In a record a skill is ``{"name", "description", "content", ...}``: ``content`` is
the body, and the other frontmatter keys are kept on the skill as they are, so a
folder read and written back is the same folder.

Names follow the open specification: 1-64 characters, lowercase letters, digits and
hyphens, no leading, trailing or double hyphen, equal to the folder name. The HAT
dialect also accepts underscores (``item_qa``); :func:`skill_dialect` says which one a
set of names uses, and :func:`is_legal_skill_name` checks a name against either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "SKILL_FILE",
    "SPEC_KEYS",
    "SKILL_NAME_RULES",
    "SkillFormatError",
    "is_legal_skill_name",
    "skill_dialect",
    "parse_skill_md",
    "format_skill_md",
    "read_skills_dir",
    "write_skills_dir",
    "merge_skills",
    "import_skills",
    "export_skills",
]

SKILL_FILE = "SKILL.md"
#: Frontmatter keys of the Agent Skills specification, in the order they are written.
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
#: Keys of a record's skill that are not frontmatter.
_RECORD_ONLY = ("content",)
#: Prefix of the ``metadata`` keys that carry non-spec keys of a record's skill (``kind`` -> ``hsa.kind``).
META_PREFIX = "hsa."

SKILL_NAME_RULES: dict[str, re.Pattern[str]] = {
    "agentskills": re.compile(r"^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$"),
    "hat": re.compile(r"^(?=.{1,64}$)[a-z0-9]+(?:[-_][a-z0-9]+)*$"),
}
MAX_DESCRIPTION = 1024


class SkillFormatError(ValueError):
    """A skill folder or SKILL.md that does not follow the format; the message says where and what to do."""


def is_legal_skill_name(name: str, dialect: str = "agentskills") -> bool:
    """True when ``name`` is a legal skill name in ``dialect`` (``agentskills`` or ``hat``)."""
    rule = SKILL_NAME_RULES.get(dialect)
    if rule is None:
        raise ValueError(f"unknown skill-name dialect {dialect!r}; expected one of {', '.join(SKILL_NAME_RULES)}")
    return isinstance(name, str) and bool(rule.match(name))


def skill_dialect(names: Iterable[str]) -> str:
    """``agentskills`` when every name follows the open specification, else ``hat``."""
    return "agentskills" if all(is_legal_skill_name(n, "agentskills") for n in names) else "hat"


# --------------------------------------------------------------------------- SKILL.md

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


def parse_skill_md(text: str, *, source: str = "SKILL.md", dialect: str = "hat") -> dict[str, Any]:
    """A record skill from the text of a ``SKILL.md``: frontmatter keys plus ``content`` (the body).

    One blank line after the frontmatter is part of the layout, not of the body.
    Raises :class:`SkillFormatError` when the frontmatter is missing or invalid.
    """
    import yaml

    m = _FRONTMATTER.match(text)
    if m is None:
        raise SkillFormatError(f"{source}: no YAML frontmatter; a SKILL.md starts with a '---' line, "
                               "then 'name:' and 'description:', then a closing '---' line")
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"{source}: the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise SkillFormatError(f"{source}: the frontmatter must be a mapping of keys (got {type(meta).__name__})")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not is_legal_skill_name(name, dialect):
        raise SkillFormatError(f"{source}: name {name!r} is not a legal skill name: 1-64 lowercase letters, digits "
                               f"and hyphens{' or underscores' if dialect == 'hat' else ''}, no leading, trailing "
                               "or double separator")
    if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION:
        raise SkillFormatError(f"{source}: description must be a non-empty string of at most {MAX_DESCRIPTION} "
                               f"characters (got {description!r:.80})")
    body = text[m.end():]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    skill: dict[str, Any] = {"name": name, "description": description, "content": body}
    for key, value in meta.items():
        if key in ("name", "description"):
            continue
        if key == "metadata" and isinstance(value, dict):
            plain = {k: v for k, v in value.items() if not str(k).startswith(META_PREFIX)}
            for k, v in value.items():
                if str(k).startswith(META_PREFIX):
                    skill[str(k)[len(META_PREFIX):]] = v
            if plain:
                skill["metadata"] = plain
            continue
        skill[key] = value
    return skill


def format_skill_md(skill: dict[str, Any]) -> str:
    """The text of a ``SKILL.md`` for a record skill (inverse of :func:`parse_skill_md`).

    Spec keys are written as frontmatter; other keys of the skill (such as HAT's
    ``kind``) go into ``metadata`` as ``hsa.<key>`` and come back as they were. Their
    values must be strings, as the specification wants for ``metadata``.
    """
    import yaml

    for key in ("name", "description"):
        if not isinstance(skill.get(key), str):
            raise SkillFormatError(f"skill {skill.get('name')!r}: {key!r} must be a string to write a SKILL.md")
    meta: dict[str, Any] = {"name": skill["name"], "description": skill["description"]}
    extra: dict[str, str] = {}
    for key, value in skill.items():
        if key in ("name", "description") or key in _RECORD_ONLY:
            continue
        if key in SPEC_KEYS:
            meta[key] = value
        elif isinstance(value, str):
            extra[META_PREFIX + key] = value
        else:
            raise SkillFormatError(f"skill {skill['name']!r}: key {key!r} holds a {type(value).__name__}; Agent "
                                   "Skills metadata holds strings only: convert it to a string or drop it")
    if extra:
        metadata = dict(meta.get("metadata") or {})
        metadata.update(extra)
        meta["metadata"] = metadata
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1 << 20)
    return f"---\n{head}---\n\n{skill.get('content') or ''}"


# --------------------------------------------------------------------------- folders


def read_skills_dir(path: str | Path, *, dialect: str = "hat") -> list[dict[str, Any]]:
    """Every skill under ``path`` (each sub-folder holding a ``SKILL.md``), sorted by folder name.

    ``dialect`` ``agentskills`` enforces the open specification's names; ``hat`` (the
    default) also accepts underscores. The name in the frontmatter must equal the folder
    name.
    """
    root = Path(path)
    if not root.is_dir():
        raise SkillFormatError(f"skills directory {root} does not exist or is not a folder")
    skills = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        md = folder / SKILL_FILE
        if not md.is_file():
            continue
        skill = parse_skill_md(md.read_text(encoding="utf-8"), source=str(md), dialect=dialect)
        if skill["name"] != folder.name:
            raise SkillFormatError(f"{md}: name {skill['name']!r} differs from its folder {folder.name!r}; "
                                   "rename the folder or the skill so that they match")
        skills.append(skill)
    if not skills:
        raise SkillFormatError(f"skills directory {root} holds no <name>/{SKILL_FILE}")
    return skills


def write_skills_dir(skills: Iterable[dict[str, Any]], path: str | Path, *, overwrite: bool = False,
                     dialect: str = "hat") -> list[Path]:
    """Write each skill as ``path/<name>/SKILL.md``; returns the files written.

    Existing skill folders are replaced only with ``overwrite``.
    """
    root = Path(path)
    skills = list(skills)
    names = [s.get("name") for s in skills]
    bad = [n for n in names if not isinstance(n, str) or not is_legal_skill_name(n, dialect)]
    if bad:
        raise SkillFormatError(f"skill names {bad} are not legal folder names in the {dialect} dialect")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SkillFormatError(f"skills {dup} occur more than once; names must be unique")
    texts = [(root / s["name"] / SKILL_FILE, format_skill_md(s)) for s in skills]
    if not overwrite:
        taken = [str(p) for p, _ in texts if p.exists()]
        if taken:
            raise SkillFormatError(f"{', '.join(taken)} already exist; pass overwrite=True (--overwrite) to replace them")
    for p, text in texts:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return [p for p, _ in texts]


def merge_skills(raw: dict[str, Any], skills: list[dict[str, Any]]) -> dict[str, Any]:
    """``raw`` (an input record) with ``skills`` added when it has none; a record with skills is returned as is."""
    if not isinstance(raw, dict) or raw.get("skills"):
        return raw
    out = dict(raw)
    out["skills"] = [dict(s) for s in skills]
    return out


# --------------------------------------------------------------------------- the ``hsa skills`` command


def import_skills(inputs: Iterable[str | Path], skills_dir: str | Path, out: str | Path, *,
                  dialect: str = "hat") -> tuple[int, int]:
    """Write the records of the JSONL ``inputs`` to ``out``, adding the skills of ``skills_dir`` to each that has none.

    Returns (records written, records that received the skills). Lines that are not
    JSON objects are copied unchanged, so ``hsa augment`` still reports them.
    """
    import json

    skills = read_skills_dir(skills_dir, dialect=dialect)
    written = merged = 0
    with open(out, "w", encoding="utf-8") as f:
        for path in inputs:
            with open(path, encoding="utf-8") as src:
                for line in src:
                    if not line.strip():
                        continue
                    try:
                        raw = json.loads(line)
                    except ValueError:
                        f.write(line if line.endswith("\n") else line + "\n")
                        written += 1
                        continue
                    new = merge_skills(raw, skills)
                    merged += new is not raw
                    f.write(json.dumps(new, ensure_ascii=False) + "\n")
                    written += 1
    return written, merged


def export_skills(source: str | Path, record_id: str, out: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the skills of record ``record_id`` (a JSONL file or an ``hsa augment`` output folder) as a skills directory."""
    from hsa.io import read_records

    for rec in read_records(source):
        if str(rec.get("id")) == record_id:
            skills = rec.get("skills") or []
            if not skills:
                raise SkillFormatError(f"record {record_id!r} has no skills")
            dialect = skill_dialect(s.get("name", "") for s in skills)
            return write_skills_dir(skills, out, overwrite=overwrite, dialect=dialect)
    raise SkillFormatError(f"no record with id {record_id!r} in {source} (output rows have ids like "
                           "'<source_id>/<variant>')")
