"""What the analysis of a hook finds: each literal's roles, the problems, the hook's style.

See :mod:`hsa.codemods.analysis` for how they are found and what each role means.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Analysis", "LiteralSite", "Problem", "STYLES", "entry_style", "NAME_ROLES", "HARD_ROLES", "SOFT_ROLES"]

#: Hook styles: a function taking the payload, a command script (stdin JSON, exit
#: codes; entry ``"__main__"``), or an OpenAI Agents SDK hooks class (entry ``"Class.method"``).
STYLES = ("function", "script", "method")

#: Role names: a literal that names something a rename may change; one whose change is refused (a payload
#: key, a comparison with the unresolved); structural data (dict keys, data comparisons, data regexes).
NAME_ROLES = frozenset({"tool", "skill", "param", "member", "value", "split", "tool_re", "tool_pred",
                        "skill_pred", "in_text"})
HARD_ROLES = frozenset({"payload_key", "unknown"})
SOFT_ROLES = frozenset({"dictkey", "data_cmp", "regex_data", "struct"})


@dataclasses.dataclass(frozen=True)
class LiteralSite:
    """A string literal (or comment) of the source: where it is, its value and the roles it plays."""

    index: int
    kind: str  # "simple" | "concat" | "ftext" | "comment"
    value: str
    start: int  # byte offsets in the UTF-8 source
    end: int
    line: int
    roles: frozenset  # of role tuples, see the module docstring
    prefix: str = ""
    quote: str = ""
    parts: tuple = ()  # for "concat": indices of the part sites

    def role_names(self) -> set[str]:
        return {r[0] for r in self.roles}


@dataclasses.dataclass(frozen=True)
class Problem:
    """A construct that cannot be resolved statically; endangers renames of ``kinds`` under ``tools``."""

    kinds: frozenset
    tools: frozenset | None
    reason: str
    detail: str
    line: int


@dataclasses.dataclass(frozen=True)
class Analysis:
    """Everything a sync step needs to know about one hook source."""

    source: str
    style: str
    entries: tuple[str, ...]
    sites: tuple[LiteralSite, ...]
    problems: tuple[Problem, ...]
    error: str | None = None  # the source does not parse, or the entry is missing
    reads: frozenset = frozenset()  # name kinds the hook can observe at all
    entry: str | None = None  # as asked for (the cache key)

    @property
    def ok(self) -> bool:
        return self.error is None

    def name_sites(self) -> list[LiteralSite]:
        return [s for s in self.sites if s.role_names() & NAME_ROLES]

    def message_sites(self) -> list[LiteralSite]:
        return [s for s in self.sites if "message" in s.role_names()]


def entry_style(entry: str | None) -> str:
    """The style of a hook from its entry: ``"__main__"`` script, ``"Class.method"``, else a function."""
    if entry == "__main__":
        return "script"
    if entry and "." in entry:
        return "method"
    return "function"
