"""Tool and parameter names: ``tool.rename``, ``tool.param_rename`` and ``tool.swap_names`` (the ``tool`` family).

A rename changes what the model writes, never what the task means (docs/design.md, "What a rename may change"):
names keep their sense (synonyms from sense-aware banks, :mod:`transforms._toolnames`), a namespace keeps one
convention per variant (:func:`transforms._toolnames.namespaces`), and the record follows through
:mod:`hsa.renames`: schemas, calls, tool results, hook literals and every reference in every text
(:mod:`hsa.mentions`). :mod:`transforms.tool` re-exports the three transforms.
"""

from __future__ import annotations

import dataclasses
import random
import re
from typing import Any, ClassVar

from hsa.names import is_identifier_like, is_legal, is_legal_param, split_words
from hsa.record_texts import data_words
from hsa.records import Record
from hsa.renames import hook_literals, param_mentions, record_words, word_name_free, word_uses
from hsa.transform import Facts, HarnessView, Skip, Transform, check_probability, register
from transforms import tool_functional as F
from transforms._toolhooks import hooks_read_whole_input
from transforms._toolnames import (CONVENTION_STYLES, DEFAULT_PREFIXES, MIXED_PREFIXES, NAME_STYLES, RANDOM_STYLES,
                                   cue_words, legal_prefixes, meta_server, namespace_renames, namespaces, new_name)
from transforms._toolschema import node_at
from transforms.tool_functional import check_banks, check_range, check_styles, fresh_name

__all__ = ["ToolRename", "ParamRename", "SwapNames"]


def _mentions_invert(old: str, new: str) -> bool:
    """Whether the mentions of a rename from ``old`` to ``new`` come back under the inverse rename: not when an
    identifier-like name (every token a reference: "a start_index of 200") becomes a plain word ("a offset of
    200" reads as the word, and the inverse leaves it)."""
    return is_identifier_like(new) or not is_identifier_like(old)


#: Why a name is left alone when the record's data holds it (:func:`hsa.record_texts.data_words`).
_IN_DATA = ("also in a user message or in the values a call passes, where it may be a value of the task (a "
            "variable, a function in code) that renames do not rewrite")
_IN_CALLS = ("also in the values a call passes (code or data that calls it by name), which renames do not "
             "rewrite")


def _ambiguous_skip(kept: dict[str, str], what: str) -> Skip:
    """The skip of a rename whose only drawn names were plain words used as words somewhere (``kept``: name -> where)."""
    names = ", ".join(f"{n!r} (in {kept[n]})" for n in sorted(kept))
    return Skip(f"plain-word {what} name {names} also used as a word, not as a reference to it: renaming would be "
                "ambiguous")


@register
@dataclasses.dataclass(frozen=True)
class ToolRename(Transform):
    """Rename tools in a naming style drawn from ``styles``, one convention per namespace (``p``: how likely).

    Styles: word styles (``snake``, ``camel``, ``pascal``, ``kebab``, ``screaming``), verb and noun synonyms from
    the word banks in the sense the name uses the word (``verb``, ``noun``: ``git_status`` never becomes
    ``git_progress``), a namespace prefix derived from the namespace (``prefix``: ``mcp__filesystem__``,
    ``git.``; dots are legal for MCP and Gemini names only), Hammer masks (``mask``, random letters: the
    ``hammer`` recipe's, no default's) and RoTBench noise (``slight``, ``medium``).

    Coherent by default: the tools are grouped into namespaces (an MCP server's tools, a shared first word such as
    ``git_``, else the whole list: :func:`transforms._toolnames.namespaces`); each namespace draws one style, and a
    convention (a word style or the prefix) changes every tool of the namespace together with probability ``p``,
    while synonyms, masks and noise change each tool with probability ``p``. ``mix_styles`` draws a style per tool
    instead and one prefix per record, as hsa did before namespaces: from ``prefixes`` without ``{namespace}``, or
    with the default ``prefixes`` from the old fixed ones (``shop.``, ``mcp__server__``). ``prefixes`` are
    templates: ``{namespace}`` is the namespace's name (its server, its shared word, or the record's
    ``meta.server``); a namespace without a name gets no prefix.

    Renames reach schemas, calls, tool results, the skill tool, every reference in every text and hook literals
    (:mod:`hsa.mentions`). New names are legal in the tool's dialect and collide with no name or token of the
    record, but a plain word (``read`` for ``Read``) that the texts only use as a word. A tool named by a plain
    word is renamed where a text refers to it and left as the word elsewhere ("Read the file first" stays); a
    tool that a hook uses as a word (a message, data) is left alone and the skip names it, and so is an
    identifier-like name that a string a call passes holds (code that imports it, which renames do not rewrite).
    """

    name: ClassVar[str] = "tool.rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 1.0
    include_skill_tool: bool = True
    prefixes: tuple[str, ...] = DEFAULT_PREFIXES
    mask_len: tuple[int, int] = (5, 15)
    banks: tuple[str, ...] = ()
    mix_styles: bool = False

    def __post_init__(self):
        check_styles(self.styles)
        check_probability(self.p)
        check_range(self.mask_len, "mask_len", 1)
        bad = [p for p in self.prefixes
               if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]*", p.replace("{namespace}", "ns"))]
        if bad:
            raise ValueError(f"prefixes {bad} are not name prefixes; use letters, digits, '_', '.', ':' or '-', and "
                             "{namespace} for the namespace's name")
        check_banks(self.banks)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        names = [t["name"] for t in harness["tools"]]
        if not names:
            return Skip("no tools")
        ambiguous = facts.ask(word_uses, names)
        taken = facts.ask_set(record_words)
        data = facts.ask_set(data_words, False)  # the call values: code that imports a tool by its name
        by_name = {t["name"]: t for t in harness["tools"]}
        renames: dict[str, str] = {}
        kept: dict[str, str] = {}
        in_data: list[str] = []

        lexicon: dict[str, str] | None = None  # one namespace's synonyms by word (None: each name draws its own)

        def fresh(old: str, style: str, prefix: str | None, namespace_words: int) -> str | None:
            tool = by_name[old]
            context = cue_words(tool.get("description") or "")
            return fresh_name(lambda: new_name(old, style, rng, mask_len=self.mask_len, prefix=prefix, banks=self.banks,
                                           context=context, namespace_words=namespace_words, lexicon=lexicon),
                          lambda n: n != old and n not in renames.values() and is_legal(n, tool["dialect"])
                          and (n not in taken or facts.ask(word_name_free, n))
                          and _mentions_invert(old, n),
                          retry=style in RANDOM_STYLES)

        def eligible(old: str) -> bool:
            if not self.include_skill_tool and old == harness["skill_tool"]["name"]:
                return False
            if old in ambiguous:
                kept[old] = ambiguous[old]
                return False
            if is_identifier_like(old) and old in data:
                in_data.append(old)
                return False
            return True

        if self.mix_styles:
            prefix = None
            if "prefix" in self.styles:
                pool = MIXED_PREFIXES if self.prefixes == DEFAULT_PREFIXES else \
                    [p for p in self.prefixes if "{namespace}" not in p]
                legal = legal_prefixes(list(pool), harness["tools"])
                prefix = rng.choice(legal) if legal else None
            for old in names:
                if rng.random() >= self.p:
                    continue
                style = rng.choice(self.styles)
                if eligible(old):
                    new = fresh(old, style, prefix, 0)
                    if new is not None:
                        renames[old] = new
        else:
            server = facts.ask(meta_server)
            for ns in namespaces(names, server=server, banks=self.banks):
                members = [n for n in ns.members if eligible(n)]
                if members:
                    lexicon = {}  # one word, one synonym in a namespace: get_a, get_b -> fetch_a, fetch_b
                    renames.update(namespace_renames(ns, members, [by_name[n] for n in members], self.styles, self.p,
                                                     self.prefixes, rng, fresh))
        if not renames:
            if kept:
                return _ambiguous_skip(kept, "tool")
            if in_data:
                return Skip(f"tool name {', '.join(map(repr, sorted(set(in_data))))} {_IN_CALLS}")
            return Skip("no tool name changed (already in the drawn style, or not drawn)")
        return {"renames": renames}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        known = {t["name"] for t in harness["tools"]}
        missing = sorted(set(params["renames"]) - known)
        if missing:
            raise ValueError(f"tool.rename: tools {missing} are not in the record (have {sorted(known)})")
        return [{"op": "tools", "map": params["renames"]}]


_PARAM_STYLES = tuple(s for s in NAME_STYLES if s != "prefix")


@register
@dataclasses.dataclass(frozen=True)
class ParamRename(Transform):
    """Rename parameters at any depth (objects, arrays of objects), one convention per namespace (``p``: how likely).

    The styles of ``tool.rename`` except ``prefix``; synonyms keep the sense the parameter uses the word in (a
    commit ``message`` is never a ``note``); masks are ``mask_len`` characters (Hammer: 4-10). Coherent by
    default, as ``tool.rename``: each namespace of tools draws one style, a word style renames every parameter of
    its tools with probability ``p`` per namespace, synonyms and masks each parameter with probability ``p``;
    ``mix_styles`` draws a style per parameter instead. Sibling names never collide; a parameter whose name is
    also a string literal in a hook is renamed only when no other tool declares that name (the hook literal
    follows it), and no parameter takes a name that is a string literal in a hook (the hook would then read it). Mentions follow where they can only mean this parameter (:func:`hsa.renames.rename_params`).
    An identifier-like name that a user message or a string a call passes holds ("a variable named
    'listElement'") is left alone: there it may be a value of the task, not the parameter.
    """

    name: ClassVar[str] = "tool.param_rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 0.67
    mask_len: tuple[int, int] = (4, 10)
    banks: tuple[str, ...] = ()
    mix_styles: bool = False

    def __post_init__(self):
        if "prefix" in self.styles:
            raise ValueError("the prefix style applies to tool names only; use tool.rename for it")
        check_styles(self.styles, _PARAM_STYLES)
        check_probability(self.p)
        check_range(self.mask_len, "mask_len", 1)
        check_banks(self.banks)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        literals = hook_literals(harness)
        owners, per_tool = F.tools_named_paths(harness["tools"])
        taken = facts.ask_set(record_words)
        data = facts.ask_set(data_words)
        out = []
        in_data: list[str] = []

        def rename(t: dict, path: tuple, used: set, style: str) -> None:
            old = path[-1]
            if old in literals and owners.get(old, 0) > 1:
                return  # a hook compares this name for several tools: not provably safe
            if is_identifier_like(old) and old in data:
                in_data.append(old)
                return
            node = node_at(t["parameters"], path) or {}
            context = cue_words(node.get("description") if isinstance(node.get("description"), str) else "",
                                " ".join(split_words(t["name"])))
            new = fresh_name(lambda: new_name(old, style, rng, mask_len=self.mask_len, banks=self.banks, context=context,
                                          param=True),
                         lambda n: n != old and n not in used and is_legal_param(n) and n not in literals
                         and (n not in taken or not is_identifier_like(n)) and _mentions_invert(old, n),
                         retry=style in RANDOM_STYLES)
            if new is not None:
                used.add(new)
                out.append({"tool": t["name"], "path": list(path), "new": new})

        tools = list(zip(harness["tools"], per_tool))
        if self.mix_styles:
            for t, (paths, siblings) in tools:
                for path in paths:
                    if rng.random() >= self.p:
                        continue
                    rename(t, path, siblings[path[:-1]], rng.choice(self.styles))
        else:
            by_name = {t["name"]: (t, info) for t, info in tools}
            server = facts.ask(meta_server)
            for ns in namespaces([t["name"] for t in harness["tools"]], server=server, banks=self.banks):
                style = rng.choice(self.styles)
                convention = style in CONVENTION_STYLES
                if convention and rng.random() >= self.p:
                    continue
                for name in ns.members:
                    t, (paths, siblings) = by_name[name]
                    for path in paths:
                        if convention or rng.random() < self.p:
                            rename(t, path, siblings[path[:-1]], style)
        if not out:
            if in_data:
                return Skip(f"parameter name {', '.join(map(repr, sorted(set(in_data))))} {_IN_DATA}")
            return Skip("no parameter name changed (already in the drawn style, shared with a hook, or not drawn)")
        return {"renames": out}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        # one plain params step per tool, in the order the renames first name them: applied together, their
        # mentions worked out on the record (hsa.step_apply.apply_new_steps)
        by_tool = F.check_declared(harness["tools"], params["renames"], self.name)
        return [{"op": "params", "tool": tool, "paths": [[list(p), [*p[:-1], new]] for p, new in table.items()]}
                for tool, table in by_tool.items()]


def _derangement(items: list, rng: random.Random) -> list:
    """A permutation of ``items`` (at least two) that moves every item (Sattolo's algorithm: one cycle)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = rng.randrange(i)
        out[i], out[j] = out[j], out[i]
    return out


@register
@dataclasses.dataclass(frozen=True)
class SwapNames(Transform):
    """RoTBench heavy noise: names permuted between tools, and parameter names between siblings.

    With ``tools``, every tool joins with probability ``p`` and the names of those that
    joined are permuted so that each gets another's name (the bijection is the mapping's
    ``tools`` step; mentions in texts and hooks follow, all at once). With probability
    ``params_p`` per tool, the names of its top-level parameters are permuted the same way
    (a ``permute`` step: each schema keeps its place under its new name). The skill tool
    takes part only with ``include_skill_tool``; names that are plain words mentioned in
    text, and parameter names that are hook literals, are left alone; parameters are not
    swapped when a tool hook reads the argument object as a whole.
    """

    name: ClassVar[str] = "tool.swap_names"
    family: ClassVar[str] = "tool"

    tools: bool = True
    p: float = 1.0
    params_p: float = 0.0
    include_skill_tool: bool = False

    def __post_init__(self):
        check_probability(self.p)
        check_probability(self.params_p, "params_p")
        if not self.tools and self.params_p == 0.0:
            raise ValueError("tool.swap_names with tools=false and params_p=0 changes nothing; enable one of them")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        skill_tool = record["skill_tool"]["name"]
        out: dict[str, Any] = {"tools": {}, "params": []}
        if self.tools:
            names = [t["name"] for t in record["tools"]]
            ambiguous = word_uses(record, names)
            pool = []
            for t in record["tools"]:
                joins = rng.random() < self.p
                if joins and t["name"] not in ambiguous and (self.include_skill_tool or t["name"] != skill_tool):
                    pool.append(t["name"])
            if len(pool) >= 2:
                dialects = {t["name"]: t["dialect"] for t in record["tools"]}
                perm = _derangement(pool, rng)
                if all(is_legal(new, dialects[old]) for old, new in zip(pool, perm)):
                    out["tools"] = dict(zip(pool, perm))
        if self.params_p > 0:
            literals = hook_literals(record)
            whole = hooks_read_whole_input(record)
            for i, t in enumerate(record["tools"]):
                if rng.random() >= self.params_p or t["name"] == skill_tool or whole:
                    continue
                keys = F.swappable_keys(t["parameters"], literals)
                if len(keys) < 2:
                    continue
                perm = _derangement(keys, rng)
                step = {"op": "params", "tool": t["name"], "kind": "permute",
                        "paths": [[[a], [b]] for a, b in zip(keys, perm)]}
                mentions = param_mentions(record, i, {(a,): b for a, b in zip(keys, perm)})
                if mentions:  # where mentions of the swapped names follow (hsa.renames.apply_permute)
                    step["mentions"] = mentions
                out["params"].append(step)
        if not out["tools"] and not out["params"]:
            return Skip("fewer than two names to swap (not drawn, ambiguous, hook literals or the skill tool)")
        return out

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        steps = F.checked_steps(params.get("params", []), ("params:permute",), "tool.swap_names")
        if params.get("tools"):
            table = params["tools"]
            if sorted(table) != sorted(table.values()):
                raise ValueError(f"tool.swap_names: {table} is not a permutation of tool names")
            steps = [*steps, {"op": "tools", "map": table}]
        return steps


# The tool family is one module to hsa's entry points (pyproject.toml: tool = "transforms.tool"), which re-exports
# these classes: they are transforms.tool's to the registry, the catalogue and pickling.
for _cls in (ToolRename, ParamRename, SwapNames):
    _cls.__module__ = "transforms.tool"
del _cls
