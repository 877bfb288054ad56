"""Agent Skills folders: read a skills directory into a harness and write one back.

A skill is a folder holding ``SKILL.md``: YAML frontmatter (``name``, ``description``,
optional ``license``, ``compatibility``, ``metadata``, ``allowed-tools``, and whatever keys
an agent adds, such as ``argument-hint`` or ``user-invocable``) and a Markdown body, next
to bundled files (``scripts/``, ``reference/``, ``assets/``, ``LICENSE.txt``, ...).

In a record a skill is ``{"name", "description", "content", ...}``: ``content`` is the
body, and the other frontmatter keys are kept on the skill with their YAML types. A skill
read from a folder also keeps

* ``frontmatter``: the original text of the SKILL.md up to the body (the ``---`` lines
  included), so that a skill no transform changed is written back byte for byte and a
  changed one changes only the frontmatter entries whose values changed;
* ``files``: its bundled files, ``{"path", "text"}`` for UTF-8 text and
  ``{"path", "base64"}`` for anything else (``"executable": true`` when the file was),
  within a size limit per file and per skill;
* ``files_left_out``: what was not carried, ``{"path", "bytes", "reason"}`` (over the size
  limit, a symbolic link, a cache folder), so that nothing is lost silently;
* ``folder``: its path under the skills directory, when it is nested (``document-skills/pdf``).

Names follow the open specification: 1-64 characters, lowercase letters, digits and
hyphens, no leading, trailing or double hyphen, equal to the folder name. The HAT
dialect also accepts underscores (``item_qa``); :func:`skill_dialect` says which one a
set of names uses, and :func:`is_legal_skill_name` checks a name against either.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = [
    "SKILL_FILE",
    "SPEC_KEYS",
    "RECORD_ONLY_KEYS",
    "SKILL_NAME_RULES",
    "MAX_FILE_BYTES",
    "MAX_SKILL_BYTES",
    "SkillFormatError",
    "SkillsExistError",
    "ImportReport",
    "is_legal_skill_name",
    "skill_dialect",
    "parse_skill_md",
    "format_skill_md",
    "read_skill_files",
    "read_skills_dir",
    "write_skills_dir",
    "merge_skills",
    "skill_renames",
    "import_skills",
    "export_skills",
]

SKILL_FILE = "SKILL.md"
#: Frontmatter keys of the Agent Skills specification, in the order they are written.
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
#: Keys of a record's skill that are not frontmatter (a SKILL.md that uses one as a key is refused).
RECORD_ONLY_KEYS = ("content", "frontmatter", "files", "files_left_out", "folder")
#: Prefix of the ``metadata`` keys that carry non-spec keys of a record's skill (``kind`` -> ``hsa.kind``).
META_PREFIX = "hsa."
#: Default size limits of the bundled files carried in a record (bytes of the file as read).
MAX_FILE_BYTES = 256 * 1024
MAX_SKILL_BYTES = 2 * 1024 * 1024
#: Folders and files that are never carried: caches and OS or VCS metadata (listed as left out).
_NOT_CARRIED_DIRS = ("__pycache__", ".git", ".hg", ".svn", "node_modules", ".venv", ".mypy_cache", ".pytest_cache")
_NOT_CARRIED_FILES = (".DS_Store", "Thumbs.db")

SKILL_NAME_RULES: dict[str, re.Pattern[str]] = {
    "agentskills": re.compile(r"^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$"),
    "hat": re.compile(r"^(?=.{1,64}$)[a-z0-9]+(?:[-_][a-z0-9]+)*$"),
}
MAX_DESCRIPTION = 1024


class SkillFormatError(ValueError):
    """A skill folder or SKILL.md that does not follow the format; the message says where and what to do."""


class SkillsExistError(SkillFormatError):
    """Skill folders that :func:`write_skills_dir` would replace; ``paths`` lists them."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        super().__init__(f"{', '.join(paths)} already exist; write elsewhere or replace them (overwrite=True)")


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

_FRONTMATTER = re.compile(r"---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


def _split_head(text: str) -> tuple[str, str, str] | None:
    """(head, frontmatter YAML, body) of a SKILL.md; the head runs from the start (a BOM included) through the
    closing ``---`` line and one blank line after it. None without frontmatter."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    m = _FRONTMATTER.match(text, len(bom))
    if m is None:
        return None
    end = m.end()
    for sep in ("\r\n", "\n"):
        if text.startswith(sep, end):
            end += len(sep)
            break
    return text[:end], m.group(1), text[end:]


def _load_yaml(inner: str, source: str) -> dict:
    import yaml

    try:
        meta = yaml.safe_load(inner) or {}
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"{source}: the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise SkillFormatError(f"{source}: the frontmatter must be a mapping of keys (got {type(meta).__name__})")
    return meta


def _skill_keys(meta: dict) -> dict[str, Any]:
    """The keys a record's skill gets from frontmatter ``meta``: top-level keys as they are, ``hsa.*`` metadata lifted."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if key == "metadata" and isinstance(value, dict):
            plain = {k: v for k, v in value.items() if not str(k).startswith(META_PREFIX)}
            for k, v in value.items():
                if str(k).startswith(META_PREFIX):
                    out[str(k)[len(META_PREFIX):]] = v
            if plain:
                out["metadata"] = plain
            continue
        out[str(key)] = value
    return out


def parse_skill_md(text: str, *, source: str = "SKILL.md", dialect: str = "hat", keep_text: bool = True) -> dict[str, Any]:
    """A record skill from the text of a ``SKILL.md``: frontmatter keys plus ``content`` (the body).

    One blank line after the frontmatter is part of the layout, not of the body. With
    ``keep_text`` the skill keeps the original head as ``frontmatter`` (see the module
    docstring), so :func:`format_skill_md` gives the same text back. Raises
    :class:`SkillFormatError` when the frontmatter is missing or invalid.
    """
    split = _split_head(text)
    if split is None:
        raise SkillFormatError(f"{source}: no YAML frontmatter; a SKILL.md starts with a '---' line, "
                               "then 'name:' and 'description:', then a closing '---' line")
    head, inner, body = split
    meta = _load_yaml(inner, source)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not is_legal_skill_name(name, dialect):
        raise SkillFormatError(f"{source}: name {name!r} is not a legal skill name: 1-64 lowercase letters, digits "
                               f"and hyphens{' or underscores' if dialect == 'hat' else ''}, no leading, trailing "
                               "or double separator")
    if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION:
        raise SkillFormatError(f"{source}: description must be a non-empty string of at most {MAX_DESCRIPTION} "
                               f"characters (got {description!r:.80})")
    reserved = [k for k in meta if k in RECORD_ONLY_KEYS]
    if reserved:
        raise SkillFormatError(f"{source}: frontmatter key {reserved[0]!r} is reserved for the record's own use "
                               f"({', '.join(RECORD_ONLY_KEYS)}); rename it")
    skill: dict[str, Any] = {"name": name, "description": description, "content": body}
    skill.update((k, v) for k, v in _skill_keys(meta).items() if k not in ("name", "description"))
    if keep_text:
        skill["frontmatter"] = head
    return skill


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types, recursively (``1 == True`` in Python; not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _frontmatter_of(skill: dict[str, Any], layout: dict | None = None) -> dict[str, Any]:
    """The frontmatter mapping of a record skill. Keys that ``layout`` (the original frontmatter) holds at the
    top level stay there and keep its order; other spec keys are top-level; the rest go into ``metadata`` as
    ``hsa.<key>`` (values must then be strings, as the specification wants for ``metadata``)."""
    layout = layout or {}
    old_meta = layout.get("metadata") if isinstance(layout.get("metadata"), dict) else {}
    top: dict[str, Any] = {"name": skill["name"], "description": skill["description"]}
    extra: dict[str, Any] = {}
    for key, value in skill.items():
        if key in ("name", "description") or key in RECORD_ONLY_KEYS:
            continue
        if key in SPEC_KEYS or key in layout:
            top[key] = value
        elif isinstance(value, str) or (META_PREFIX + key in old_meta
                                        and type(old_meta[META_PREFIX + key]) is type(value)):
            extra[META_PREFIX + key] = value
        else:
            raise SkillFormatError(f"skill {skill['name']!r}: key {key!r} holds a {type(value).__name__}; Agent "
                                   "Skills metadata holds strings only: convert it to a string or drop it")
    if extra:
        metadata = dict(top.get("metadata") or {})
        metadata.update(extra)
        order = [k for k in old_meta if k in metadata] + [k for k in metadata if k not in old_meta]
        top["metadata"] = {k: metadata[k] for k in order}
    order = [k for k in layout if k in top] + [k for k in top if k not in layout]
    return {k: top[k] for k in order}


def format_skill_md(skill: dict[str, Any]) -> str:
    """The text of a ``SKILL.md`` for a record skill (inverse of :func:`parse_skill_md`).

    A skill that kept its original ``frontmatter`` text gets it back unchanged when its
    keys are unchanged; otherwise only the entries whose values changed are rewritten
    (in the quoting style they had), removed keys are dropped and new keys are added at
    the end. A skill without it (built in a record) gets fresh frontmatter: spec keys as
    keys, other keys (such as HAT's ``kind``) in ``metadata`` as ``hsa.<key>``.
    """
    for key in ("name", "description"):
        if not isinstance(skill.get(key), str):
            raise SkillFormatError(f"skill {skill.get('name')!r}: {key!r} must be a string to write a SKILL.md")
    body = skill.get("content") or ""
    raw = skill.get("frontmatter")
    if isinstance(raw, str):
        split = _split_head(raw)
        if split is not None and not split[2]:
            head = _edited_head(split[0], split[1], skill)
            if head is not None:
                return head + body
    import yaml

    head = yaml.safe_dump(_frontmatter_of(skill), sort_keys=False, allow_unicode=True, width=1 << 20)
    return f"---\n{head}---\n\n{body}"


_ENTRY_START = re.compile(r"^[^\s#\-]")


def _entries(inner: str) -> tuple[list[str], list[str]] | None:
    """(lines before the first key, top-level entries) of frontmatter YAML ``inner``; each entry is its key line,
    its continuation lines (indented, list items, comments, blank lines). None when a line cannot be placed."""
    lead: list[str] = []
    entries: list[str] = []
    for line in inner.splitlines(keepends=True):
        if _ENTRY_START.match(line) and not line.startswith(("---", "...")):
            entries.append(line)
        elif entries:
            entries[-1] += line
        elif not line.strip() or line.lstrip().startswith("#"):
            lead.append(line)
        else:
            return None
    return lead, entries


def _entry_key(entry: str) -> Any:
    import yaml

    try:
        data = yaml.safe_load(entry)
    except yaml.YAMLError:
        return None
    return next(iter(data)) if isinstance(data, dict) and len(data) == 1 else None


def _split_tail(entry: str) -> tuple[str, str]:
    """(entry without its trailing blank and comment lines, those lines)."""
    lines = entry.splitlines(keepends=True)
    k = len(lines)
    while k > 1 and (not lines[k - 1].strip() or lines[k - 1].lstrip().startswith("#")):
        k -= 1
    return "".join(lines[:k]), "".join(lines[k:])


def _dump_entry(key: Any, value: Any, old: str | None, nl: str) -> str:
    """``key: value`` as one frontmatter entry, in the scalar style of the ``old`` entry where that reads back."""
    import yaml

    spelled = old.split(":", 1)[0] if old and ":" in old.split("\n", 1)[0] else None
    candidates: list[str] = []
    if isinstance(value, str) and spelled is not None and old.count("\n") <= 1:
        scalar = old.split(":", 1)[1].strip()
        if scalar.startswith('"'):
            import json

            candidates.append(f"{spelled}: {json.dumps(value, ensure_ascii=False)}")
        elif scalar.startswith("'") and "\n" not in value:
            candidates.append(f"{spelled}: '" + value.replace("'", "''") + "'")
        elif "\n" not in value:
            candidates.append(f"{spelled}: {value}")
    candidates.append(yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=1 << 20).rstrip("\n"))
    for text in candidates:
        try:
            back = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(back, dict) and len(back) == 1 and key in back and _same(back[key], value):
            return text.replace("\n", nl) + nl
    raise SkillFormatError(f"frontmatter key {key!r}: its value {value!r:.80} does not survive YAML")


def _edited_head(head: str, inner: str, skill: dict[str, Any]) -> str | None:
    """``head`` with the entries that changed rewritten; None when its layout cannot be edited entry by entry."""
    import yaml

    try:
        old = yaml.safe_load(inner) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(old, dict):
        return None
    new = _frontmatter_of(skill, old)
    if _same(new, old):
        return head
    parts = _entries(inner)
    if parts is None:
        return None
    lead, entries = parts
    keyed = [(_entry_key(e), e) for e in entries]
    if any(k is None for k, _ in keyed) or len({str(k) for k, _ in keyed}) != len(keyed):
        return None
    nl = "\r\n" if "\r\n" in inner else "\n"
    out = []
    for key, entry in keyed:
        if key not in new:
            continue
        if key in old and _same(old[key], new[key]):
            out.append(entry)
            continue
        core, tail = _split_tail(entry)
        out.append(_dump_entry(key, new[key], core, nl) + tail)
    if out and not out[-1].endswith("\n"):
        out[-1] += nl
    for key in new:
        if key not in old:
            out.append(_dump_entry(key, new[key], None, nl))
    start = head.index("\n") + 1  # after the opening '---' line
    text = head[:start] + "".join(lead) + "".join(out) + head[start + len(inner):]
    split = _split_head(text)
    if split is None or not _same(yaml.safe_load(split[1]) or {}, new):
        return None
    return text


# --------------------------------------------------------------------------- bundled files


def read_skill_files(folder: str | Path, *, max_file_bytes: int = MAX_FILE_BYTES,
                     max_skill_bytes: int = MAX_SKILL_BYTES) -> tuple[list[dict], list[dict]]:
    """(files, left out) of a skill folder, its ``SKILL.md`` aside, sorted by path.

    A file is ``{"path", "text"}`` when it is UTF-8 without NUL bytes, else ``{"path",
    "base64"}``; ``"executable": true`` when its mode has an execute bit. Files over
    ``max_file_bytes``, or past ``max_skill_bytes`` for the whole folder, symbolic links and
    cache or VCS folders are left out, each ``{"path", "bytes", "reason"}``.
    """
    root = Path(folder)
    files: list[dict] = []
    left: list[dict] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames.sort()
        for d in list(dirnames):
            p = here / d
            rel = p.relative_to(root).as_posix()
            if d in _NOT_CARRIED_DIRS or p.is_symlink():
                n = sum(len(fs) for _, _, fs in os.walk(p)) if not p.is_symlink() else 0
                left.append({"path": rel + "/", "bytes": _tree_bytes(p),
                             "reason": "symbolic link" if p.is_symlink() else f"cache or metadata folder ({n} files)"})
                dirnames.remove(d)
        for name in sorted(filenames):
            p = here / name
            rel = p.relative_to(root).as_posix()
            if rel == SKILL_FILE:
                continue
            if p.is_symlink():
                left.append({"path": rel, "bytes": 0, "reason": "symbolic link"})
                continue
            if not p.is_file():
                left.append({"path": rel, "bytes": 0, "reason": "not a regular file"})
                continue
            size = p.stat().st_size
            if name in _NOT_CARRIED_FILES or name.endswith((".pyc", ".pyo")):
                left.append({"path": rel, "bytes": size, "reason": "cache or OS metadata file"})
                continue
            if size > max_file_bytes:
                left.append({"path": rel, "bytes": size, "reason": f"over the size limit of {max_file_bytes} bytes "
                             "per file (--max-file-bytes)"})
                continue
            if total + size > max_skill_bytes:
                left.append({"path": rel, "bytes": size, "reason": f"over the size limit of {max_skill_bytes} bytes "
                             "per skill (--max-skill-bytes)"})
                continue
            total += size
            data = p.read_bytes()
            entry: dict[str, Any] = {"path": rel}
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None and "\x00" not in text:
                entry["text"] = text
            else:
                entry["base64"] = base64.b64encode(data).decode("ascii")
            if p.stat().st_mode & 0o111:
                entry["executable"] = True
            files.append(entry)
    files.sort(key=lambda f: f["path"])
    left.sort(key=lambda f: f["path"])
    return files, left


def _tree_bytes(p: Path) -> int:
    if p.is_symlink():
        return 0
    return sum((Path(d) / f).stat().st_size for d, _, fs in os.walk(p) for f in fs if (Path(d) / f).is_file())


def _safe_relpath(skill: str, path: Any) -> PurePosixPath:
    rel = PurePosixPath(path) if isinstance(path, str) else None
    if rel is None or not path or rel.is_absolute() or ".." in rel.parts or "\\" in path or rel.as_posix() == SKILL_FILE:
        raise SkillFormatError(f"skill {skill!r}: bundled file path {path!r} must be a relative path inside the "
                               f"skill folder (no '..', not {SKILL_FILE})")
    return rel


def _file_bytes(skill: str, f: Any) -> bytes:
    if not isinstance(f, dict):
        raise SkillFormatError(f"skill {skill!r}: a bundled file must be {{'path', 'text' or 'base64'}} (got {f!r:.80})")
    if isinstance(f.get("text"), str):
        return f["text"].encode("utf-8")
    if isinstance(f.get("base64"), str):
        try:
            return base64.b64decode(f["base64"], validate=True)
        except ValueError:
            raise SkillFormatError(f"skill {skill!r}: bundled file {f.get('path')!r} is not valid base64") from None
    raise SkillFormatError(f"skill {skill!r}: bundled file {f.get('path')!r} has neither 'text' nor 'base64'")


# --------------------------------------------------------------------------- folders


def _read_skill(folder: Path, dialect: str, max_file_bytes: int, max_skill_bytes: int) -> dict[str, Any]:
    md = folder / SKILL_FILE
    try:
        text = md.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFormatError(f"{md}: not UTF-8 text ({exc}); save it as UTF-8") from None
    skill = parse_skill_md(text, source=str(md), dialect=dialect)
    if skill["name"] != folder.name:
        raise SkillFormatError(f"{md}: name {skill['name']!r} differs from its folder {folder.name!r}; "
                               "rename the folder or the skill so that they match")
    files, left = read_skill_files(folder, max_file_bytes=max_file_bytes, max_skill_bytes=max_skill_bytes)
    if files:
        skill["files"] = files
    if left:
        skill["files_left_out"] = left
    return skill


#: How deep :func:`read_skills_dir` looks for skill folders below folders that are no skill (``document-skills/pdf``).
MAX_DEPTH = 4


def _discover(folder: Path, root: Path, depth: int, found: list[Path], ignored: list[str]) -> None:
    for entry in sorted(folder.iterdir()):
        rel = entry.relative_to(root).as_posix()
        if entry.is_symlink():
            ignored.append(rel + " (symbolic link)")
        elif entry.is_dir() and (entry / SKILL_FILE).is_file():
            found.append(entry)
        elif (entry.is_dir() and depth < MAX_DEPTH and entry.name not in _NOT_CARRIED_DIRS
              and not entry.name.startswith(".")):
            before = len(found), len(ignored)
            _discover(entry, root, depth + 1, found, ignored)
            if len(found) == before[0]:
                del ignored[before[1]:]
                ignored.append(rel + "/")
        else:
            ignored.append(rel + ("/" if entry.is_dir() else ""))


def read_skills_dir(path: str | Path, *, dialect: str = "hat", max_file_bytes: int = MAX_FILE_BYTES,
                    max_skill_bytes: int = MAX_SKILL_BYTES, ignored: list[str] | None = None) -> list[dict[str, Any]]:
    """Every skill under ``path`` (each folder holding a ``SKILL.md``), sorted by folder path.

    ``path`` may also be one skill folder. Skill folders are found below folders that hold
    no ``SKILL.md`` too (``document-skills/pdf``, up to :data:`MAX_DEPTH` levels); such a
    skill keeps its place as ``folder`` (``"document-skills/pdf"``) for export.
    ``dialect`` ``agentskills`` enforces the open specification's names; ``hat`` (the
    default) also accepts underscores. The name in the frontmatter must equal the folder
    name. Bundled files come along (see :func:`read_skill_files`); the entries of ``path``
    that are no skill (loose files, folders without skills) are appended to ``ignored``
    when it is given.
    """
    root = Path(path)
    if not root.is_dir():
        raise SkillFormatError(f"skills directory {root} does not exist or is not a folder")
    if (root / SKILL_FILE).is_file():
        return [_read_skill(root, dialect, max_file_bytes, max_skill_bytes)]
    found: list[Path] = []
    skipped: list[str] = []
    _discover(root, root, 1, found, skipped)
    if ignored is not None:
        ignored.extend(skipped)
    skills = []
    seen: dict[str, str] = {}
    for folder in found:
        skill = _read_skill(folder, dialect, max_file_bytes, max_skill_bytes)
        rel = folder.relative_to(root).as_posix()
        if skill["name"] in seen:
            raise SkillFormatError(f"{root}: skill {skill['name']!r} is defined twice ({seen[skill['name']]} and "
                                   f"{rel}); names must be unique, rename one of them")
        seen[skill["name"]] = rel
        if rel != skill["name"]:
            skill["folder"] = rel
        skills.append(skill)
    if not skills:
        raise SkillFormatError(f"skills directory {root} holds no <name>/{SKILL_FILE}")
    return skills


def _skill_folder(root: Path, skill: dict[str, Any]) -> Path:
    """Where ``skill`` is written under ``root``: its ``folder``'s parent (nested skills stay nested) / its name."""
    rel = skill.get("folder")
    if rel is None:
        return root / skill["name"]
    parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel:
        raise SkillFormatError(f"skill {skill['name']!r}: folder {rel!r} must be a relative path without '..'")
    return root.joinpath(*parts[:-1], skill["name"])


def _path_renamer(renames: dict[str, str]):
    """Rewrite skill folder names where they are a path component (``skills/old/...``, ``old/SKILL.md``)."""
    if not renames:
        return lambda text: text
    alts = "|".join(re.escape(k) for k in sorted(renames, key=len, reverse=True))
    rx = re.compile(rf"(?<![A-Za-z0-9_.-])({alts})(?=/)|(?<=/)({alts})(?![A-Za-z0-9_-])")
    return lambda text: rx.sub(lambda m: renames[m.group(1) or m.group(2)], text)


def write_skills_dir(skills: Iterable[dict[str, Any]], path: str | Path, *, overwrite: bool = False,
                     dialect: str = "hat", renames: dict[str, str] | None = None) -> list[Path]:
    """Write each skill as ``path/<name>/SKILL.md`` with its bundled files; returns the SKILL.md files written.

    Existing skill folders are replaced (removed, then written) only with ``overwrite``;
    otherwise :class:`SkillsExistError` names them. ``renames`` (old -> new skill name)
    rewrites references to the old folders in bundled text files (``skills/old/x.py``).
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
    renamer = _path_renamer(dict(renames or {}))
    plan: list[tuple[Path, list[tuple[Path, bytes, bool]]]] = []
    for s in skills:
        folder = _skill_folder(root, s)
        out = [(folder / SKILL_FILE, format_skill_md(s).encode("utf-8"), False)]
        for f in s.get("files") or ():
            rel = _safe_relpath(s["name"], f.get("path") if isinstance(f, dict) else None)
            data = _file_bytes(s["name"], f)
            if "text" in f:
                data = renamer(f["text"]).encode("utf-8")
            out.append((folder.joinpath(*rel.parts), data, bool(f.get("executable"))))
        plan.append((folder, out))
    taken = [str(folder) for folder, _ in plan if folder.exists()]
    if taken and not overwrite:
        raise SkillsExistError(taken)
    for folder, out in plan:
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
        elif folder.exists():
            folder.unlink()
        for p, data, executable in out:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            if executable:
                p.chmod(p.stat().st_mode | 0o111)
    return [out[0][0] for _, out in plan]


def merge_skills(raw: dict[str, Any], skills: list[dict[str, Any]]) -> dict[str, Any]:
    """``raw`` (an input record) with ``skills`` added when it has none; a record with skills is returned as is."""
    if not isinstance(raw, dict) or raw.get("skills"):
        return raw
    out = dict(raw)
    out["skills"] = [dict(s) for s in skills]
    return out


def skill_renames(mapping: Any) -> dict[str, str]:
    """Source name -> current name of every skill a record's ``mapping`` (steps or an output row's dict) renamed."""
    from hsa.mapping import Mapping
    from hsa.steps import steps_of

    steps = mapping if isinstance(mapping, list) else Mapping.from_dict(mapping).steps if mapping else []
    current: dict[str, str] = {}
    for step in steps_of(steps):
        if not step.renames_skills:
            continue
        for old, new in step.to_json()["map"].items():
            src = next((k for k, v in current.items() if v == old), old)
            current[src] = new
    return {k: v for k, v in current.items() if k != v}


# --------------------------------------------------------------------------- the ``hsa skills`` command


@dataclasses.dataclass
class ImportReport:
    """What :func:`import_skills` did: records written and merged, skills and files carried, what was left out."""

    written: int = 0
    merged: int = 0
    skills: int = 0
    files: int = 0
    binary: int = 0
    left_out: list[str] = dataclasses.field(default_factory=list)  # "<skill>/<path> (<bytes> bytes: <reason>)"
    ignored: list[str] = dataclasses.field(default_factory=list)  # entries of the skills dir that are no skill

    def summary(self, out: Any, skills_dir: Any) -> str:
        lines = [f"{self.written} records written to {out}; {self.merged} received the {self.skills} skills of "
                 f"{skills_dir} ({self.files} bundled files carried, {self.binary} of them binary as base64; "
                 f"{len(self.left_out)} left out)"]
        lines += [f"  left out: {x}" for x in self.left_out]
        if self.ignored:
            lines.append(f"  not a skill folder (no {SKILL_FILE}), ignored: {', '.join(self.ignored)}")
        return "\n".join(lines)


def import_skills(inputs: Iterable[str | Path], skills_dir: str | Path, out: str | Path, *, dialect: str = "hat",
                  max_file_bytes: int = MAX_FILE_BYTES, max_skill_bytes: int = MAX_SKILL_BYTES) -> ImportReport:
    """Write the records of the JSONL ``inputs`` to ``out``, adding the skills of ``skills_dir`` to each that has none.

    Lines that are not JSON objects are copied unchanged, so ``hsa augment`` still reports
    them. The report counts the bundled files carried and lists those left out.
    """
    import json

    report = ImportReport()
    skills = read_skills_dir(skills_dir, dialect=dialect, max_file_bytes=max_file_bytes,
                             max_skill_bytes=max_skill_bytes, ignored=report.ignored)
    report.skills = len(skills)
    for s in skills:
        report.files += len(s.get("files") or ())
        report.binary += sum("base64" in f for f in s.get("files") or ())
        report.left_out += [f"{s['name']}/{x['path']} ({x['bytes']} bytes: {x['reason']})"
                            for x in s.get("files_left_out") or ()]
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
                        report.written += 1
                        continue
                    new = merge_skills(raw, skills)
                    report.merged += new is not raw
                    f.write(json.dumps(new, ensure_ascii=False) + "\n")
                    report.written += 1
    return report


def export_skills(source: str | Path, record_id: str, out: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the skills of record ``record_id`` (a JSONL file or an ``hsa augment`` output folder) as a skills directory.

    Renamed skills are written under their new names, and references to their old folders
    in bundled text files follow (:func:`skill_renames` of the record's mapping).
    """
    from hsa.io import read_records

    for rec in read_records(source):
        if str(rec.get("id")) == record_id:
            skills = rec.get("skills") or []
            if not skills:
                raise SkillFormatError(f"record {record_id!r} has no skills")
            dialect = skill_dialect(s.get("name", "") for s in skills)
            return write_skills_dir(skills, out, overwrite=overwrite, dialect=dialect,
                                    renames=skill_renames(rec.get("mapping")))
    raise SkillFormatError(f"no record with id {record_id!r} in {source} (output rows have ids like "
                           "'<source_id>/<variant>')")
