"""Which string literals of a hook name a tool, a parameter, a skill or an enum value.

The analysis is an abstract interpretation of the hook's entry over LibCST nodes.
Values are sets of *atoms* saying what a value may be: the payload, a tool name,
the tool input at an argument path, a skill name, a list of skills, plain data,
a constant string literal (by node), a container of constants, a computed string,
or unknown. Walking the entry (and every helper it calls, with the argument kinds
it is called with) gives every literal the *roles* it plays:

- ``tool`` / ``skill``: compared with a tool or skill name (``==``, ``in (...)``,
  ``match``/``case``, dict lookups, membership in module constants);
- ``param`` / ``member`` / ``value``: a key of the tool input at a path, or a value
  compared with the input at a path (paths use ``"[]"`` for items);
- predicates over names (``startswith``, regular expressions, substrings, matcher
  strings such as ``"Edit|Write"``), checked at sync time over every harness name;
- structural (payload keys, dict keys, data comparisons), ``message`` (what the
  hook tells the model) and ``unknown`` (compared with something unresolvable).

Constructs that cannot be resolved statically (a computed string compared with a
name, ``getattr`` with a computed name, dynamic keys into the tool input,
``eval``/``exec``/``globals()``, names passed to functions outside the standard
library) are *problems*, each tagged with the name kinds it endangers; a sync step
that renames such a kind refuses. The tool-name constraint in force (from ``if
name == "x"`` or ``case "x"``) is kept with every role, so a parameter key is
checked only against the tools that can reach it.

This module is the entry point (:func:`analyze`, cached per source and entry) and carries
an analysis across edits that keep the tree (:func:`transport`, :func:`carry`). The
interpreter is :mod:`hsa.codemods.interpreter` (one module per thing it interprets), the
results are in :mod:`hsa.codemods.results`, where each literal lies in :mod:`hsa.codemods.spans`.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Iterable
from collections import OrderedDict

import libcst as cst

from hsa.codemods._cst import parse as _parse
from hsa.codemods.interpreter import AGENT_EVENTS, Interpreter, default_entries
from hsa.codemods.interpreter.values import MESSAGE_KEYS, UPDATED_KEYS
from hsa.codemods.results import (HARD_ROLES, NAME_ROLES, SOFT_ROLES, STYLES, Analysis, LiteralSite, Problem,
                                  entry_style)
from hsa.codemods.spans import concat_parts, find_literals, string_parts
from hsa.steps import ParamsStep, Step

__all__ = ["analyze", "transport", "cache_stats", "Analysis", "LiteralSite", "Problem", "STYLES", "entry_style",
           "MESSAGE_KEYS", "UPDATED_KEYS", "NAME_ROLES", "HARD_ROLES", "SOFT_ROLES", "AGENT_EVENTS"]

# ---------------------------------------------------------------------------- entry point

_CACHE: OrderedDict[tuple[str, str | None], Analysis] = OrderedDict()
_CACHE_SIZE = 4096
_STATS = {"hits": 0, "misses": 0, "transported": 0, "carried": 0}


def _remember(key: tuple[str, str | None], an: Analysis) -> None:
    _CACHE[key] = an
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)


def cache_stats() -> dict:
    """Hits, misses and analyses carried over from an edit (see :func:`transport`)."""
    return dict(_STATS, size=len(_CACHE))


def analyze(source: str, entry: str | None = None) -> Analysis:
    """Analyse hook ``source`` whose entry is ``entry`` (function name, ``"__main__"`` or ``"Class.method"``).

    Methods of an Agents SDK hooks class are analysed together (every ``on_*``
    method of the class), since they share the source. Cached per (source, entry).
    """
    key = (source, entry)
    an = _CACHE.get(key)
    if an is not None:
        _STATS["hits"] += 1
        _CACHE.move_to_end(key)
        return an
    _STATS["misses"] += 1
    an = _analyze(source, entry)
    _remember(key, an)
    return an


def _analyze(source: str, entry: str | None) -> Analysis:
    style = entry_style(entry)
    try:
        module = _parse(source)
    except cst.ParserSyntaxError as exc:
        return Analysis(source, style, (), (), (), error=f"hook source does not parse: {str(exc).splitlines()[0]}",
                        entry=entry)
    if entry is None:
        return Analysis(source, style, (), (), (), error="the hook has no entry; set 'entry' to its function name")
    registry, spans = find_literals(source, module)
    interp = Interpreter(module, source.encode("utf-8"), spans, style, registry)
    entries = default_entries(module, style, entry)
    try:
        error = interp.run(entries)
    except RecursionError:
        error = "hook source is nested too deeply to analyse"
    interp.finish()
    sites = []
    for i, node in enumerate(interp.nodes):
        kind = interp.kind_of[id(node)]
        span = spans[node]
        value = interp.lit_value(i) if kind != "comment" else node.value
        prefix = quote = ""
        parts: tuple = ()
        if kind == "simple":
            prefix, quote, _ = string_parts(node)
        elif kind == "concat":
            parts = tuple(interp.lid(p) for p in concat_parts(node) if id(p) in interp.index)
        sites.append(LiteralSite(i, kind, value if isinstance(value, str) else "", span.start,
                                 span.start + span.length, interp.line(node),
                                 frozenset(interp.roles.get(i, ())), prefix, quote, parts))
    return Analysis(source, style, entries, tuple(sites), tuple(interp.problems), error,
                    frozenset(interp.reads), entry)


# ---------------------------------------------------------------------------- an analysis carried across an edit


def _map_role(role: tuple, tools_map: dict, path_map) -> tuple:
    kind = role[0]
    if kind in ("param", "member", "value"):
        tools = role[1]
        if tools is not None and tools_map:
            tools = frozenset(tools_map.get(t, t) for t in tools)
        return (kind, tools, path_map(role[1], role[2]))
    return role


def _shifter(spliced: Iterable[tuple[int, int, int]]):
    """Where an offset of the old source lands after splices ``(old start, old end, new length)``
    that do not overlap: it moves by the growth of every splice that ends at or before it."""
    deltas = sorted((end, new_len - (end - start)) for start, end, new_len in spliced)
    ends = [e for e, _ in deltas]
    sums = list(itertools.accumulate(d for _, d in deltas))

    def shift(offset: int) -> int:
        k = bisect.bisect_right(ends, offset)
        return offset + (sums[k - 1] if k else 0)

    return shift


def transport(an: Analysis, new_source: str, new_values: dict[int, str], step: dict,
              replaced: list[tuple[int, int, int]]) -> Analysis:
    """The analysis of ``new_source``: ``an``'s source with literal values ``new_values`` (by site index).

    ``replaced`` lists the byte spans spliced, as ``(old start, old end, new length)``.
    A sync edit changes only literal text, so the tree, the data flow and every role
    stay; tool names in constraints, and argument paths of the renamed tool, follow
    the step. Equal to analysing ``new_source`` afresh (tested), at a fraction of the cost.
    """
    key = (new_source, an.entry)
    if key in _CACHE:
        return _CACHE[key]
    typed = Step.from_json(step)
    params = isinstance(typed, ParamsStep)
    tools_map = typed.renamed() if typed.renames_tools else {}
    pairs = sorted(((tuple(a), tuple(b)) for a, b in step.get("paths", ())), key=lambda p: -len(p[0]))
    tool = step.get("tool")

    def path_map(tools, path):
        if not params or (tools is not None and tool not in tools):
            return path
        for src, dst in pairs:
            if path[:len(src)] == src:
                return dst + path[len(src):]
        return path

    shift = _shifter((start, end, new_len) for start, end, new_len in replaced)

    # only tool renames (tool sets of constraints) and parameter renames (argument paths) change roles
    mapped: dict | None = {} if tools_map or params else None
    sites = []
    for site in an.sites:
        roles = site.roles
        if mapped is not None and roles:
            new_roles = []
            changed = False
            for r in roles:
                m = mapped.get(r)
                if m is None:
                    m = mapped[r] = _map_role(r, tools_map, path_map)
                changed = changed or m != r
                new_roles.append(m)
            if changed:
                roles = frozenset(new_roles)
        value = new_values.get(site.index, site.value)
        start, end = shift(site.start), shift(site.end)
        if value is site.value and start == site.start and end == site.end and roles is site.roles:
            sites.append(site)
        else:
            sites.append(LiteralSite(site.index, site.kind, value, start, end, site.line, roles, site.prefix,
                                     site.quote, site.parts))
    problems = tuple(dataclasses.replace(p, tools=frozenset(tools_map.get(t, t) for t in p.tools))
                     if p.tools is not None and tools_map else p for p in an.problems)
    out = Analysis(new_source, an.style, an.entries, tuple(sites), problems, an.error, an.reads, an.entry)
    _STATS["transported"] += 1
    _remember(key, out)
    return out


def carry(an: Analysis, new_source: str, edits: list[tuple[int, int, str]]) -> Analysis | None:
    """The analysis of ``new_source`` = ``an.source`` with ``edits`` applied, without analysing it afresh.

    ``edits`` are ``(start, end, text)`` in byte offsets of ``an.source``, not overlapping. Each
    must be one of two surface edits that change neither the tree's shape nor any literal's
    value (hook.rename_locals, hook.restyle's ``quotes``):

    - an identifier replaced by another, outside every string literal and comment;
    - a whole simple string literal re-quoted: same prefix, same body, another quote.

    Literal sites keep their values, lines and roles; offsets shift and re-quoted sites take
    their new quote. Returns None (the caller analyses afresh) when an edit is neither, when
    the edits do not give ``new_source``, or when ``an`` has an error or problems (their
    details quote code). Equal to analysing ``new_source`` afresh (tested).
    """
    if an.error is not None or an.problems:
        return None
    key = (new_source, an.entry)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    old = an.source.encode("utf-8")
    edits = sorted(edits)
    pieces, pos = [], 0
    for start, end, text in edits:
        if start < pos or end < start or end > len(old):
            return None
        pieces.append(old[pos:start])
        pieces.append(text.encode("utf-8"))
        pos = end
    pieces.append(old[pos:])
    if b"".join(pieces) != new_source.encode("utf-8"):
        return None
    simple = {(s.start, s.end): s for s in an.sites if s.kind == "simple"}
    leaves = sorted((s.start, s.end) for s in an.sites if s.kind in ("simple", "ftext", "comment"))
    requoted: dict[int, str] = {}
    for start, end, text in edits:
        site = simple.get((start, end))
        if site is not None:
            prefix = site.prefix
            rest = text[len(prefix):] if text[:len(prefix)] == prefix else None
            if rest is None or len(rest) < 2 or rest[0] not in "'\"" or rest[-1] != rest[0] or rest[:3] in ('"""', "'''"):
                return None
            old_text = old[start:end].decode("utf-8")
            if site.quote not in ("'", '"') or old_text[len(prefix) + 1:-1] != rest[1:-1]:
                return None
            body = rest[1:-1]
            if rest[0] in body or "\\" in body:  # the new quote must not need escaping
                return None
            requoted[site.index] = rest[0]
            continue
        old_text = old[start:end].decode("utf-8", errors="replace")
        if not (old_text.isidentifier() and text.isidentifier()):
            return None
        k = bisect.bisect_right(leaves, (start, len(old) + 1)) - 1
        if k >= 0 and leaves[k][1] > start:  # inside a literal or comment
            return None
        if k + 1 < len(leaves) and leaves[k + 1][0] < end:
            return None
    shift = _shifter((start, end, len(text.encode("utf-8"))) for start, end, text in edits)
    sites = tuple(dataclasses.replace(s, start=shift(s.start), end=shift(s.end),
                                      quote=requoted.get(s.index, s.quote)) for s in an.sites)
    out = Analysis(new_source, an.style, an.entries, sites, an.problems, an.error, an.reads, an.entry)
    _STATS["carried"] += 1
    _remember(key, out)
    return out


__all__ += ["carry"]


def carry_requoted(an: Analysis, new_source: str) -> Analysis | None:
    """:func:`carry` for ``new_source`` = ``an.source`` with some simple string literals re-quoted
    (hook.restyle's ``quotes``); None when ``new_source`` differs in any other way."""
    old, new = an.source.encode("utf-8"), new_source.encode("utf-8")
    if len(old) != len(new):
        return None
    edits = [(s.start, s.end, new[s.start:s.end].decode("utf-8")) for s in an.sites
             if s.kind == "simple" and old[s.start:s.end] != new[s.start:s.end]]
    return carry(an, new_source, edits) if edits else None


__all__ += ["carry_requoted"]
