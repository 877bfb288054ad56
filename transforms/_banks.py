"""Bank files, read by one loader; and the tool family's word, phrase and tool banks.

Every bank of the library is a YAML file: the built-in ones in ``transforms/banks/``, and the
files a user names in a transform's ``banks`` option. :func:`read_bank` reads either (cached,
with one set of errors: which file, and what is wrong); each kind of bank then checks its own
layout: the tool family's banks here (:func:`load_banks`), phrase banks in
:mod:`transforms.phrasebank` (:func:`~transforms.phrasebank.load_bank`) and the distractor skills
in :func:`transforms.skill_functional.load_distractors`.

A tool-family bank file is a YAML mapping from bank name (``verbs``, ``nouns``, ``containers``,
``phrases``, ``tools``, ``params``, ``required_params``, ``replies``) to a list. Every
built-in file that names one of these banks is read (files of other families, which
share the folder, are not), then each extra file a transform names in its ``banks`` option;
lists with the same bank name are concatenated in that order, so a user file extends
the built-in banks and never has to repeat them.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from hsa import _yaml

__all__ = ["BankError", "read_bank", "builtin_bank_names", "group_table", "load_banks", "synonyms", "BANK_KINDS",
           "SenseGroup", "sense_groups", "polysemous"]


class BankError(ValueError):
    """A bank file that cannot be used; the message says which file, which entry and what to fix."""


def builtin_bank_names() -> list[str]:
    """Names of the banks shipped in ``transforms/banks`` (``descriptions``, ``prompt_paraphrase``, ...)."""
    folder = resources.files("transforms").joinpath("banks")
    return sorted(e.name[:-5] for e in folder.iterdir() if e.name.endswith(".yaml"))


@lru_cache(maxsize=128)
def read_bank(name: str = "", path: str = "", *, what: str = "bank file", hint: str = "") -> tuple[str, Any]:
    """``(source, data)`` of one bank file: the built-in bank ``name`` (``transforms/banks/<name>.yaml``) or the
    user file ``path``; ``data`` is its YAML, shared between callers (never modify it). Raises :class:`BankError`
    for a missing file or invalid YAML, naming the file (``what`` says what kind of file it should have been,
    ``hint`` what a missing one should hold)."""
    import yaml

    if name:
        res = resources.files("transforms").joinpath("banks", f"{name}.yaml")
        if not res.is_file():
            raise BankError(f"no built-in bank {name!r}; built-in banks: {', '.join(builtin_bank_names())}")
        source, text = f"transforms/banks/{name}.yaml", res.read_text(encoding="utf-8")
    else:
        p = Path(path)
        if not p.is_file():
            raise BankError(f"{what} {path} does not exist{hint}")
        source, text = str(path), p.read_text(encoding="utf-8")
    try:
        return source, _yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BankError(f"{what} {source} is not valid YAML: {exc}") from None


def group_table(groups: Iterable[Iterable[str]], *, casefold: bool = False) -> dict[str, tuple[str, ...]]:
    """Word -> the other members of every group it is in, in bank order, without repeats (synonym lookups).

    With ``casefold``, keys are lower case and a member that differs from the word only by case is not its own
    synonym."""
    out: dict[str, list[str]] = {}
    for group in groups:
        words = [str(w) for w in group]
        for w in words:
            bucket = out.setdefault(w.lower() if casefold else w, [])
            for other in words:
                same = other.lower() == w.lower() if casefold else other == w
                if not same and other not in bucket:
                    bucket.append(other)
    return {k: tuple(v) for k, v in out.items()}


# --------------------------------------------------------------------------- the tool family's banks


#: Bank names and the type of their entries.
BANK_KINDS = {
    "verbs": "list of synonym groups (a list of words, or {words, cues})",
    "nouns": "list of synonym groups (a list of words, or {words, cues})",
    "polysemous": "list of words with several senses (a synonym only from a group with cues that match)",
    "containers": "list of names",
    "phrases": "list of groups of interchangeable phrases (a list, or {phrases, kind, domain})",
    "tools": "list of tool definitions (OpenAI function format without the outer wrapper)",
    "params": "list of {name, schema}",
    "required_params": "list of {name, value, description}",
    "replies": "list of strings",
}


def _tool_banks(source: str, data: Any) -> dict[str, list]:
    """The tool-family banks of one file's YAML ``data``, checked."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BankError(f"bank file {source} must be a mapping from bank name to a list "
                        f"(got {type(data).__name__}); bank names: {', '.join(BANK_KINDS)}")
    unknown = sorted(set(data) - set(BANK_KINDS))
    if unknown:
        raise BankError(f"bank file {source}: unknown bank(s) {unknown}; known banks: {', '.join(BANK_KINDS)}")
    for key, value in data.items():
        if not isinstance(value, list):
            raise BankError(f"bank file {source}: {key!r} must be a list ({BANK_KINDS[key]}), "
                            f"got {type(value).__name__}")
        if key in ("verbs", "nouns"):
            for i, entry in enumerate(value):
                _check_group(entry, f"bank file {source}: {key}[{i}]")
        if key == "polysemous" and not all(isinstance(w, str) for w in value):
            raise BankError(f"bank file {source}: polysemous must be a list of words")
        for i, entry in enumerate(value):
            where = _null_key(entry, f"{key}[{i}]")
            if where is not None:
                raise BankError(f"bank file {source}: {where} has no value. In a YAML flow mapping a comma ends "
                                f"the value, so {{description: Time, ISO 8601}} makes a key 'ISO 8601'; "
                                f"quote the text: {{description: \"Time, ISO 8601\"}}")
    return data


def _check_group(entry: Any, where: str) -> None:
    """A synonym group: a list of at least two words, or a mapping with ``words`` (two or more) and ``cues``."""
    if isinstance(entry, dict):
        unknown = sorted(set(entry) - {"words", "cues", "note"})
        if unknown:
            raise BankError(f"{where}: unknown key(s) {unknown}; a group is {{words: [...], cues: [...]}}")
        words, cues = entry.get("words"), entry.get("cues", [])
        if not isinstance(cues, list) or not cues or not all(isinstance(c, str) for c in cues):
            raise BankError(f"{where}: cues must be a non-empty list of words (or write the group as a plain list)")
    else:
        words = entry
    if not isinstance(words, list) or len(words) < 2 or not all(isinstance(w, str) for w in words):
        raise BankError(f"{where}: a synonym group needs at least two words (got {words!r})")


_MAY_BE_NULL = frozenset({"default", "const", "value", "example"})  # JSON values that null is a fine value of


def _null_key(value: Any, where: str) -> str | None:
    """Where in a bank entry a key has a null value that no bank means (the mark of an unquoted comma), or None."""
    if isinstance(value, dict):
        for k, v in value.items():
            if v is None and k not in _MAY_BE_NULL:
                return f"{where}.{k}"
            found = _null_key(v, f"{where}.{k}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for j, v in enumerate(value):
            found = _null_key(v, f"{where}[{j}]")
            if found is not None:
                return found
    return None


@lru_cache(maxsize=1)
def _builtin() -> tuple[tuple[str, dict[str, list]], ...]:
    out = []
    for name in builtin_bank_names():
        source, data = read_bank(name)
        if not (isinstance(data, dict) and set(data) & set(BANK_KINDS)):
            continue  # another family's bank (e.g. the phrase banks of transforms/phrasebank.py)
        out.append((source, _tool_banks(source, data)))
    return tuple(out)


def _extra(path: str) -> dict[str, list]:
    source, data = read_bank(path=path, what="bank file",
                             hint=f"; give a YAML file with some of the banks {', '.join(BANK_KINDS)}")
    return _tool_banks(source, data)


@lru_cache(maxsize=64)
def load_banks(extra: tuple[str, ...] = ()) -> dict[str, tuple]:
    """All banks: the built-in files, then ``extra`` files, lists concatenated per bank name."""
    merged: dict[str, list] = {k: [] for k in BANK_KINDS}
    for _, data in _builtin():
        for k, v in data.items():
            merged[k].extend(v)
    for path in extra:
        for k, v in _extra(path).items():
            merged[k].extend(v)
    return {k: tuple(_freeze(x) for x in v) for k, v in merged.items()}


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@lru_cache(maxsize=64)
def synonyms(kind: str, extra: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Word -> its synonyms (every other member of every group it is in, cued or not), for a group bank.

    Keys are lower case; the synonym lists keep bank order and never contain the word itself.
    """
    return group_table((_group_words(g) for g in load_banks(extra)[kind]), casefold=True)


def _group_words(group: Any) -> tuple[str, ...]:
    return tuple(group["words"]) if isinstance(group, dict) else tuple(group)


class SenseGroup(tuple):
    """One synonym group of a sense: ``words`` (lower case) and the ``cues`` that select its sense (empty: any)."""

    __slots__ = ()

    def __new__(cls, words: tuple[str, ...], cues: frozenset[str]):
        return super().__new__(cls, (words, cues))

    @property
    def words(self) -> tuple[str, ...]:
        return self[0]

    @property
    def cues(self) -> frozenset[str]:
        return self[1]


@lru_cache(maxsize=64)
def sense_groups(kind: str, extra: tuple[str, ...] = ()) -> dict[str, tuple[SenseGroup, ...]]:
    """Word (lower case) -> the groups of bank ``kind`` (``verbs``, ``nouns``) it is in, in bank order."""
    out: dict[str, list[SenseGroup]] = {}
    for g in load_banks(extra)[kind]:
        words = tuple(str(w).lower() for w in _group_words(g))
        cues = frozenset(str(c).lower() for c in g.get("cues", ())) if isinstance(g, dict) else frozenset()
        group = SenseGroup(words, cues)
        for w in words:
            if group not in out.setdefault(w, []):
                out[w].append(group)
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=64)
def polysemous(extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The words of the ``polysemous`` banks (lower case): a synonym only from a group whose cues match."""
    return frozenset(str(w).lower() for w in load_banks(extra)["polysemous"])
