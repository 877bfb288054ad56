"""Tool-schema transforms: the ``tool`` family.

Every transform here keeps its rename map in the record's mapping and goes through
:mod:`hsa.rewrite`, so names change everywhere they occur and nowhere else.
"""

from __future__ import annotations

import dataclasses
import random
import string
from typing import ClassVar

from hsa.mapping import ARRAY
from hsa.names import STYLES, find_tokens, is_identifier_like, is_legal, is_legal_param, render_style
from hsa.records import Record
from hsa.rewrite import hook_literals, param_paths, record_tokens, rename_params, rename_tools, text_fields
from hsa.transform import Skip, Transform, register

__all__ = ["ToolRename", "ParamRename", "new_name", "NAME_STYLES"]

#: Styles a renaming transform can draw from: the word styles of :data:`hsa.names.STYLES`
#: plus ``mask`` (random letters and digits, Hammer's function masking).
NAME_STYLES = (*STYLES, "mask")


def _mask(rng: random.Random, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi)
    first = rng.choice(string.ascii_letters)
    return first + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n - 1))


def new_name(old: str, style: str, rng: random.Random, *, mask_len: tuple[int, int] = (5, 15)) -> str:
    """A new name for ``old`` in ``style`` (see :data:`NAME_STYLES`)."""
    if style == "mask":
        return _mask(rng, *mask_len)
    if style not in STYLES:
        raise ValueError(f"unknown name style {style!r}; expected one of {', '.join(NAME_STYLES)}")
    return render_style(old, style)


def _check_styles(styles: tuple[str, ...]) -> None:
    if not styles:
        raise ValueError("styles must name at least one style")
    bad = [s for s in styles if s not in NAME_STYLES]
    if bad:
        raise ValueError(f"unknown style(s) {bad}; expected some of {list(NAME_STYLES)}")


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be within [0, 1] (got {p!r})")


def _plain_word_mentions(record: Record, names: list[str]) -> set[str]:
    """Names that are ordinary words (no ``_``/digits/camel humps) and occur in free text."""
    plain = [n for n in names if not is_identifier_like(n)]
    if not plain:
        return set()
    found: set[str] = set()
    for text in text_fields(record):
        found.update(find_tokens(text, plain))
    return found


@register
@dataclasses.dataclass(frozen=True)
class ToolRename(Transform):
    """Rename tools (each with probability ``p``) in a naming style drawn from ``styles``.

    Renames reach schemas, calls, tool results, the skill tool, mentions in every
    text (whole tokens) and hook literals. A tool whose name is a plain word that also
    occurs in free text is left alone (the mention would be ambiguous).
    """

    name: ClassVar[str] = "tool.rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 1.0
    include_skill_tool: bool = True

    def __post_init__(self):
        _check_styles(self.styles)
        _check_p(self.p)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        names = [t["name"] for t in record["tools"]]
        if not names:
            return Skip("no tools")
        ambiguous = _plain_word_mentions(record, names)
        taken = record_tokens(record)
        renames: dict[str, str] = {}
        for tool in record["tools"]:
            old = tool["name"]
            if rng.random() >= self.p:
                continue
            style = rng.choice(self.styles)
            if old in ambiguous or (not self.include_skill_tool and old == record["skill_tool"]["name"]):
                continue
            new = new_name(old, style, rng)
            for _ in range(8):  # masks can collide; styles cannot change by retrying
                if new != old and new not in taken and new not in renames.values() and is_legal(new, tool["dialect"]):
                    break
                if style != "mask":
                    new = old
                    break
                new = new_name(old, style, rng)
            if new != old and new not in taken and is_legal(new, tool["dialect"]):
                renames[old] = new
        if not renames:
            return Skip("no tool name changed (already in the drawn style, ambiguous or not drawn)")
        return {"renames": renames}

    def apply(self, record: Record, params: dict) -> Record:
        known = {t["name"] for t in record["tools"]}
        missing = sorted(set(params["renames"]) - known)
        if missing:
            raise ValueError(f"tool.rename: tools {missing} are not in the record (have {sorted(known)})")
        return rename_tools(record, params["renames"])


@register
@dataclasses.dataclass(frozen=True)
class ParamRename(Transform):
    """Rename parameters at any depth (objects, arrays of objects), each with probability ``p``.

    Sibling names never collide; a parameter whose name is also a string literal in
    a hook is renamed only when no other tool declares that name (the hook literal
    follows it).
    """

    name: ClassVar[str] = "tool.param_rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 0.67
    mask_len: tuple[int, int] = (4, 10)

    def __post_init__(self):
        _check_styles(self.styles)
        _check_p(self.p)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        literals = hook_literals(record)
        owners: dict[str, int] = {}
        for t in record["tools"]:
            for path in param_paths(t["parameters"]):
                if path[-1] != ARRAY:
                    owners[path[-1]] = owners.get(path[-1], 0) + 1
        taken = record_tokens(record)
        out = []
        for t in record["tools"]:
            paths = [p for p in param_paths(t["parameters"]) if p[-1] != ARRAY]
            siblings: dict[tuple, set[str]] = {}
            for p in paths:
                siblings.setdefault(p[:-1], set()).add(p[-1])
            for path in paths:
                if rng.random() >= self.p:
                    continue
                style = rng.choice(self.styles)
                old = path[-1]
                if old in literals and owners.get(old, 0) > 1:
                    continue  # a hook compares this name for several tools: not provably safe
                new = new_name(old, style, rng, mask_len=self.mask_len)
                used = siblings[path[:-1]]
                ok = new != old and new not in used and is_legal_param(new) and (
                    new not in taken or not is_identifier_like(new))
                if not ok and style == "mask":
                    for _ in range(8):
                        new = new_name(old, style, rng, mask_len=self.mask_len)
                        if new not in used and new not in taken:
                            ok = True
                            break
                if not ok:
                    continue
                used.add(new)
                out.append({"tool": t["name"], "path": list(path), "new": new})
        if not out:
            return Skip("no parameter name changed (already in the drawn style, shared with a hook, or not drawn)")
        return {"renames": out}

    def apply(self, record: Record, params: dict) -> Record:
        by_tool: dict[str, dict[tuple, str]] = {}
        for entry in params["renames"]:
            by_tool.setdefault(entry["tool"], {})[tuple(entry["path"])] = entry["new"]
        known = {t["name"]: t for t in record["tools"]}
        for tool, renames in by_tool.items():
            if tool not in known:
                raise ValueError(f"tool.param_rename: tool {tool!r} is not in the record")
            declared = set(param_paths(known[tool]["parameters"]))
            missing = [list(p) for p in renames if p not in declared]
            if missing:
                raise ValueError(f"tool.param_rename: {tool!r} declares no parameter at {missing}")
            record = rename_params(record, tool, renames)
        return record
