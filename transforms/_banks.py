"""Word, phrase and tool banks: YAML files in ``transforms/banks/``, extendable by the user.

A bank file is a YAML mapping from bank name (``verbs``, ``nouns``, ``containers``,
``phrases``, ``tools``, ``params``, ``required_params``, ``replies``) to a list. Every
built-in file that names one of these banks is read (files of other families, which
share the folder, are not), then each extra file a transform names in its ``banks`` option;
lists with the same bank name are concatenated in that order, so a user file extends
the built-in banks and never has to repeat them.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["load_banks", "synonyms", "BANK_KINDS"]

#: Bank names and the type of their entries.
BANK_KINDS = {
    "verbs": "list of synonym groups (lists of words)",
    "nouns": "list of synonym groups (lists of words)",
    "containers": "list of names",
    "phrases": "list of groups of interchangeable phrases (a list, or {phrases, kind, domain})",
    "tools": "list of tool definitions (OpenAI function format without the outer wrapper)",
    "params": "list of {name, schema}",
    "required_params": "list of {name, value, description}",
    "replies": "list of strings",
}


def _read(text: str, source: str) -> dict[str, list]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"bank file {source} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"bank file {source} must be a mapping from bank name to a list "
                         f"(got {type(data).__name__}); bank names: {', '.join(BANK_KINDS)}")
    unknown = sorted(set(data) - set(BANK_KINDS))
    if unknown:
        raise ValueError(f"bank file {source}: unknown bank(s) {unknown}; known banks: {', '.join(BANK_KINDS)}")
    for key, value in data.items():
        if not isinstance(value, list):
            raise ValueError(f"bank file {source}: {key!r} must be a list ({BANK_KINDS[key]}), "
                             f"got {type(value).__name__}")
        for i, entry in enumerate(value):
            where = _null_key(entry, f"{key}[{i}]")
            if where is not None:
                raise ValueError(f"bank file {source}: {where} has no value. In a YAML flow mapping a comma ends "
                                 f"the value, so {{description: Time, ISO 8601}} makes a key 'ISO 8601'; "
                                 f"quote the text: {{description: \"Time, ISO 8601\"}}")
    return data


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
    folder = resources.files("transforms").joinpath("banks")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith((".yaml", ".yml")):
            continue
        text = entry.read_text(encoding="utf-8")
        if not _is_tool_bank(text):
            continue  # another family's bank (e.g. the phrase banks of transforms/phrasebank.py)
        out.append((entry.name, _read(text, f"transforms/banks/{entry.name}")))
    return tuple(out)


def _is_tool_bank(text: str) -> bool:
    """True when a YAML file names at least one tool-family bank at its top level."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return True  # let _read report it
    return isinstance(data, dict) and bool(set(data) & set(BANK_KINDS))


@lru_cache(maxsize=64)
def _extra(path: str) -> dict[str, list]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"bank file {path} does not exist; give a YAML file with some of the banks "
                         f"{', '.join(BANK_KINDS)}")
    return _read(p.read_text(encoding="utf-8"), path)


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
    """Word -> its synonyms (every other member of every group it is in), for a group bank.

    Keys are lower case; the synonym lists keep bank order and never contain the word itself.
    """
    groups = load_banks(extra)[kind]
    out: dict[str, list[str]] = {}
    for group in groups:
        words = [str(w) for w in group]
        for w in words:
            bucket = out.setdefault(w.lower(), [])
            for other in words:
                if other.lower() != w.lower() and other not in bucket:
                    bucket.append(other)
    return {k: tuple(v) for k, v in out.items()}
