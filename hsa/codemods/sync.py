"""hook.sync: carry hook source through one mapping step, or refuse with a reason.

Given the roles that :mod:`hsa.codemods.analysis` found, each mapping step decides
the new value of every literal:

- a literal compared with a tool (skill) name follows a tool (skill) rename;
- a key of the tool input follows a parameter rename of a tool that can reach it,
  and only when every other tool that can reach it agrees (else: refused);
- a value compared with the tool input follows an enum-value rename;
- predicates over names (``startswith``, regular expressions, substrings) are
  re-evaluated over every name of the harness before and after; matcher strings
  such as ``"Edit|Write"`` are rewritten part by part;
- every other literal (messages, docstrings) and every comment follows the text
  renames of the step (:func:`hsa.hooks_model.text_map`), so the hook's messages
  name things as the variant does;
- payload keys, dict keys and data comparisons never change.

A literal that equals a renamed name but whose use cannot be resolved, and any
problem of the analysis that endangers the renamed kind, refuse the step for that
hook. Edits are spliced at the byte spans LibCST reports, so formatting, comments
and every other byte stay as they were. Results are cached per (source, entry, step,
harness).
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from typing import Any

from hsa import _json
from hsa import cache as _cache
from hsa.codemods import Refusal, Refused
from hsa.codemods.analysis import HARD_ROLES, NAME_ROLES, SOFT_ROLES, Analysis, LiteralSite, analyze, transport
from hsa.codemods.splice import apply_edits, render_literal
from hsa.hooks_model import entry_of, map_content, map_output, map_payload, map_text, text_map
from hsa.names import replace_tokens
from hsa.steps import ParamsStep, SkillsStep, Step, ValuesStep

__all__ = ["Harness", "HarnessBefore", "harness_of", "sync_source", "sync_record_hooks", "render_literal", "REFUSAL_PREFIX",
           "refusal_note", "parse_refusal_note", "cache_info"]

#: Notes that record a refused hook sync start with this; :func:`hsa.invariants.check_variant` turns them into violations.
REFUSAL_PREFIX = "hook sync refused: "


@dataclasses.dataclass(frozen=True)
class Harness:
    """What a sync step needs to know of the harness before the step (hashable, for the cache)."""

    tools: tuple[str, ...]
    skills: tuple[str, ...]
    skill_tool: tuple[str, str]
    kinds: tuple[tuple[str, tuple[tuple[tuple, str], ...]], ...] = ()  # per tool: (path, node type)

    def kind_map(self, tool: str) -> dict[tuple, str] | None:
        for name, table in self.kinds:
            if name == tool:
                return dict(table)
        return None

    def __hash__(self) -> int:  # a cache key of every hook of every step: hash the nested tuples once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.tools, self.skills, self.skill_tool, self.kinds))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:  # str hashes differ per process: a pickle must not carry the cached one
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


def _node_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t is None:
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        return "any"
    return t


@lru_cache(maxsize=8192)
def _kinds_of(schema_json: str) -> tuple[tuple[tuple, str], ...]:
    schema = _json.loads(schema_json)
    out = [((), _node_type(schema))]

    def walk(s: Any, prefix: tuple) -> None:
        if not isinstance(s, dict):
            return
        for k, sub in (s.get("properties") or {}).items():
            out.append((prefix + (k,), _node_type(sub)))
            walk(sub, prefix + (k,))
        if isinstance(s.get("items"), dict):
            out.append((prefix + ("[]",), _node_type(s["items"])))
            walk(s["items"], prefix + ("[]",))

    walk(schema, ())
    return tuple(out)


def harness_of(record: dict, *, with_schemas: bool = True) -> Harness:
    """The :class:`Harness` of a record (internal form)."""
    st = record.get("skill_tool") or {"name": "load_skill", "argument": "skill"}
    kinds: tuple = ()
    if with_schemas:
        kinds = tuple((t["name"], _kinds_of(_json.dumps(t["parameters"]))) for t in record["tools"])
    return Harness(tuple(t["name"] for t in record["tools"]), tuple(s["name"] for s in record.get("skills") or ()),
                   (st["name"], st["argument"]), kinds)


# ---------------------------------------------------------------------------- planning


def _map_path(pairs: list, path: tuple) -> tuple:
    for src, dst in sorted(pairs, key=lambda p: -len(p[0])):
        src, dst = tuple(src), tuple(dst)
        if path[:len(src)] == src:
            return dst + path[len(src):]
    return path


def _candidates(tools: frozenset | None, h: Harness) -> set[str]:
    return set(h.tools) if tools is None else set(tools) & set(h.tools)


def _param_key(site: LiteralSite, tools, path: tuple, step: dict, h: Harness) -> str:
    """The key the rewritten hook must read at ``path`` (ending with the literal) under a params step."""
    value = path[-1]
    T = step["tool"]
    cands = _candidates(tools, h)
    if T not in cands:
        return value
    if "*" in path:
        raise Refused("dynamic key", f"line {site.line}: {value!r} is read below a key that is not known statically")
    kinds_T = h.kind_map(T) or {}
    prefix = path[:-1]
    for i, k in enumerate(prefix):
        if k == "[]" and kinds_T.get(prefix[:i]) not in ("array", "any", None):
            raise Refused("iterates over object keys", f"line {site.line}: {value!r} is reached by iterating "
                                                       f"over the keys of {T!r} input at {list(prefix[:i])}")
    pairs = step["paths"]
    mapped = _map_path(pairs, path)
    if mapped == path:
        for src, dst in pairs:
            src, dst = tuple(src), tuple(dst)
            if path[:len(dst)] == dst and src + path[len(dst):] != path:
                raise Refused("key collision", f"line {site.line}: {value!r} at {list(prefix)} is not renamed in "
                                               f"{T!r}, but another parameter is renamed to it")
        return value
    new_key = mapped[-1]
    if new_key == value:
        return value
    for c in sorted(cands - {T}):
        kinds_c = h.kind_map(c) or {}
        if path in kinds_c:
            raise Refused("shared parameter key", f"line {site.line}: key {value!r} at {list(prefix)} is read for "
                                                  f"tools {T!r} and {c!r}, but renamed only in {T!r}")
        if prefix + (new_key,) in kinds_c:
            raise Refused("key collision", f"line {site.line}: new key {new_key!r} is already a parameter of {c!r}, "
                                           "which also reaches this read")
    return new_key


def _resolve_member(site, tools, path: tuple, value: str, step: dict, h: Harness) -> tuple[str, tuple]:
    """``value in <input at path>``: a key test on an object, an item test on an array, a substring test on text."""
    T = step.get("tool")
    kinds_T = (h.kind_map(T) or {}) if T else {}
    kind = kinds_T.get(path)
    if kind == "array":
        return "value", path + ("[]",)
    if kind in ("string", "number", "integer", "boolean"):
        return "none", path
    return "param", path + (value,)


def _values_key(site, tools, path: tuple, value: str, step: dict, h: Harness) -> str:
    T = step["tool"]
    cands = _candidates(tools, h)
    if T not in cands or tuple(step["path"]) != path:
        return value
    table = {old: new for old, new in step["map"] if isinstance(old, str)}
    if value not in table:
        return value
    new = table[value]
    if not isinstance(new, str):
        raise Refused("value renamed to a non-string", f"line {site.line}: {value!r} becomes {new!r}")
    for c in sorted(cands - {T}):
        if path in (h.kind_map(c) or {}):
            raise Refused("shared enum value", f"line {site.line}: {value!r} at {list(path)} is compared for tools "
                                               f"{T!r} and {c!r}, but renamed only in {T!r}")
    return new


_ALTERNATION = re.compile(r"^(\^?\(?)((?:[A-Za-z0-9_\-]|\\\.)+(?:\|(?:[A-Za-z0-9_\-]|\\\.)+)*)(\)?\$?)$")


def _regex_rewrite(pattern: str, table: dict[str, str]) -> str:
    """Rename the parts of a matcher that is a plain alternation of names (``"Edit|Write"``, ``"^(a|b)$"``)."""
    m = _ALTERNATION.match(pattern)
    if not m:
        return pattern
    head, body, tail = m.groups()
    if head.endswith("(") != tail.startswith(")"):
        return pattern
    out = []
    for part in body.split("|"):
        name = part.replace("\\.", ".")
        out.append(table[name].replace(".", "\\.") if name in table else part)
    return head + "|".join(out) + tail


def _predicate(kind: str, literal: str, name: str) -> Any:
    if kind == "startswith":
        return name.startswith(literal)
    if kind == "endswith":
        return name.endswith(literal)
    if kind == "in":
        return literal in name
    raise ValueError(kind)


def _regex_check(fn: str, old: str, new: str, names: tuple, table: dict, site) -> None:
    if fn not in ("match", "fullmatch", "search"):
        raise Refused("regular expression over names", f"line {site.line}: re.{fn} over a renamed name")
    try:
        ro, rn = re.compile(old), re.compile(new)
    except re.error as exc:
        raise Refused("regular expression over names", f"line {site.line}: {exc}") from None
    for t in names:
        a = bool(getattr(ro, fn)(t))
        b = bool(getattr(rn, fn)(table.get(t, t)))
        if a != b:
            raise Refused("regular expression over names", f"line {site.line}: re.{fn}({old!r}) on {t!r} is {a}, "
                                                            f"but on the renamed {table.get(t, t)!r} with {new!r} "
                                                            f"it is {b}")


def _name_value(site: LiteralSite, role: tuple, step: dict, h: Harness) -> str:
    """The value a literal must have after the step, as demanded by one name role."""
    s = Step.from_json(step)
    v = site.value
    kind = role[0]
    if s.renames_names:
        which = s.renames_kind
        table = s.renamed()
        names = h.tools if s.renames_tools else h.skills
        if kind == which:
            return table.get(v, v)
        if kind == "split" and role[1] == which:
            sep = role[2]
            parts = v.split(sep)
            if sep is None and " ".join(parts) != v:
                if any(p in table for p in parts):
                    raise Refused("matcher string", f"line {site.line}: {v!r} is split on whitespace of odd shape")
                return v
            return (sep if sep is not None else " ").join(table.get(p, p) for p in parts)
        if (kind == "tool_re" and which == "tool") or (kind == "skill_pred" and which == "skill"
                                                         and role[1] in ("match", "fullmatch", "search")):
            new = _regex_rewrite(v, table)
            _regex_check(role[1], v, new, names, table, site)
            return new
        if (kind == "tool_pred" and which == "tool") or (kind == "skill_pred" and which == "skill"):
            for t in names:
                if _predicate(role[1], v, t) != _predicate(role[1], v, table.get(t, t)):
                    raise Refused("predicate over names", f"line {site.line}: {role[1]} {v!r} is "
                                                          f"{_predicate(role[1], v, t)} for {t!r} but not for "
                                                          f"{table.get(t, t)!r}")
            return v
        if kind == "in_text" and role[1] == which:
            new = replace_tokens(v, table)
            for t in names:
                if (t in v) != (table.get(t, t) in new):
                    raise Refused("substring test on names", f"line {site.line}: {t!r} in {v!r} changes under "
                                                             "the rename")
            return new
        if isinstance(s, SkillsStep) and kind in ("value", "member"):
            tool, arg = step["tool"], step["argument"]
            path = role[2]
            if kind == "member":
                return v
            cands = _candidates(role[1], h)
            if path == (arg,) and tool in cands:
                if v in table and len([c for c in cands if (arg,) in (h.kind_map(c) or {})]) > 1:
                    raise Refused("shared parameter value", f"line {site.line}: {v!r} compared with "
                                                            f"{arg!r} of several tools, a skill only for {tool!r}")
                return table.get(v, v)
        return v
    if isinstance(s, ParamsStep):
        if kind == "param":
            return _param_key(site, role[1], role[2], step, h)
        if kind == "member":
            how, path = _resolve_member(site, role[1], role[2], v, step, h)
            return _param_key(site, role[1], path, step, h) if how == "param" else v
        if kind == "value":
            path = role[2]
            T = step["tool"]
            if path and path[-1] == "[]" and (h.kind_map(T) or {}).get(path[:-1]) == "object" \
                    and T in _candidates(role[1], h):
                return _param_key(site, role[1], path[:-1] + (v,), step, h)
        return v
    if isinstance(s, ValuesStep):
        if kind == "value":
            return _values_key(site, role[1], role[2], v, step, h)
        if kind == "member":
            how, path = _resolve_member(site, role[1], role[2], v, step, h)
            if how == "value":
                return _values_key(site, role[1], path, v, step, h)
        return v
    return v


def _renamed(step: dict) -> set[str]:
    s = Step.from_json(step)
    if s.renames_names:
        return set(s.renamed())
    if isinstance(s, ParamsStep):
        return {src[-1] for src, dst in step["paths"] if src[-1] != dst[-1]}
    if isinstance(s, ValuesStep):
        return {old for old, new in step["map"] if isinstance(old, str) and old != new}
    return set()

#: Roles whose verdict under a tool or skill rename does not depend on the literal naming a renamed name.
_PREDICATE_ROLES = frozenset({"tool_re", "tool_pred", "skill_pred", "in_text"})
_PATH_ROLES = frozenset({"param", "member", "value"})
_NAME, _UNKNOWN, _TEXT, _SKIP = 0, 1, 2, 3


class _SiteIndex:
    """The sites of one analysis that a step may change or refuse on, sorted by what can make them matter.

    Every other site keeps its value under every step (HARD and SOFT roles only, or the
    parts of an implicit concatenation), so :func:`plan` never looks at it. The lists let
    a step pick, without walking every site, the few that can matter to it:

    - a name site under a tool or skill rename: one with a predicate role (its verdict is
      taken over every harness name), or whose value contains a renamed name;
    - a name site under a parameter or value step: one with a ``param``/``member``/``value``
      role that the step's tool can reach (any tool, or a constraint naming it);
    - an ``unknown`` site: one whose value is a renamed name;
    - a text site: one whose value contains a name of the step's text table.

    Containment is tested on the values as substrings: a name that is a whole token of a
    value, or equal to it, is a substring of it, so nothing that can change is skipped.
    Positions are indices into ``an.sites``; the index holds few objects (ints, strings and
    a handful of lists), as thousands are made and kept a while.
    """

    __slots__ = ("sites", "cats", "name_pos", "pred_pos", "unknown_pos", "unknown_values", "text_pos",
                 "name_blob", "text_blob", "any_tool", "by_tool")

    def __init__(self, an: Analysis):
        sites = self.sites = an.sites
        concat_parts = {i for s in sites if s.kind == "concat" for i in s.parts}
        cats = bytearray(len(sites))
        self.name_pos, self.pred_pos, self.unknown_pos, self.text_pos = [], [], [], []
        self.any_tool: list[int] = []  # name sites with a path role any tool reaches
        self.by_tool: dict[str, list[int]] = {}  # ... that the named tools reach
        for pos, site in enumerate(sites):
            cat = _SKIP if site.index in concat_parts else _role_class(site.roles)[0]
            cats[pos] = cat
            if cat == _NAME:
                self.name_pos.append(pos)
                tools: set | None = set()
                pred = False
                for r in site.roles:
                    if r[0] in _PATH_ROLES and tools is not None:
                        tools = None if r[1] is None else tools | r[1]
                    elif r[0] in _PREDICATE_ROLES:
                        pred = True
                if pred:
                    self.pred_pos.append(pos)
                if tools is None:
                    self.any_tool.append(pos)
                else:
                    for t in tools:
                        self.by_tool.setdefault(t, []).append(pos)
            elif cat == _UNKNOWN:
                self.unknown_pos.append(pos)
            elif cat == _TEXT:
                self.text_pos.append(pos)
        self.cats = bytes(cats)
        self.unknown_values = frozenset(sites[i].value for i in self.unknown_pos)
        # every value of its kind is a substring of the blob: a name absent from it is absent from each
        self.name_blob = "\0".join(sites[i].value for i in self.name_pos)
        self.text_blob = "\0".join(sites[i].value for i in self.text_pos)

    def select(self, step: Step, renamed: set[str], table: dict[str, str]) -> list[int]:
        """Positions (in site order) of the sites that ``step`` may change or refuse on."""
        sites = self.sites
        picked: list[int] = []
        if step.renames_names:
            picked += self.pred_pos
            if any(k in self.name_blob for k in renamed):
                picked += [i for i in self.name_pos if any(k in sites[i].value for k in renamed)]
        elif isinstance(step, (ParamsStep, ValuesStep)):
            picked += self.any_tool
            picked += self.by_tool.get(step.tool, ())
        if self.unknown_pos and not renamed.isdisjoint(self.unknown_values):
            picked += [i for i in self.unknown_pos if sites[i].value in renamed]
        if table and any(k in self.text_blob for k in table):
            picked += [i for i in self.text_pos if any(k in sites[i].value for k in table)]
        return sorted(set(picked))


_ROLE_CLASSES: dict[frozenset, tuple] = {}


def _role_class(roles: frozenset) -> tuple:
    """``(category, role names)`` of a site with ``roles`` (category ``_SKIP``: no step changes the site)."""
    hit = _ROLE_CLASSES.get(roles)
    if hit is None:
        names = frozenset(r[0] for r in roles)
        if names & NAME_ROLES:
            cat = _NAME
        elif "unknown" in names:
            cat = _UNKNOWN
        elif names & (HARD_ROLES | SOFT_ROLES):
            cat = _SKIP
        else:
            cat = _TEXT
        if len(_ROLE_CLASSES) >= 65536:
            _ROLE_CLASSES.clear()
        hit = _ROLE_CLASSES[roles] = (cat, names)
    return hit


_INDEXES: dict[int, tuple[Analysis, _SiteIndex]] = {}


def _site_index(an: Analysis) -> _SiteIndex:
    """The :class:`_SiteIndex` of ``an``, cached while the analysis is (keyed by identity)."""
    hit = _INDEXES.get(id(an))
    if hit is not None and hit[0] is an:
        return hit[1]
    if len(_INDEXES) >= 512:  # a step reuses the analyses of the record at hand: a few hundred suffice
        _INDEXES.clear()
    ix = _SiteIndex(an)
    _INDEXES[id(an)] = (an, ix)
    return ix


def _problem(an: Analysis, step: dict) -> Refusal | None:
    """The refusal an analysis problem gives ``step`` (of a known kind), whatever the sites say."""
    s = Step.from_json(step)
    kind = s.renames_kind
    for p in an.problems:
        if kind in p.kinds and (s.renames_names or p.tools is None or step["tool"] in p.tools):
            return Refusal(p.reason, f"line {p.line}: {p.detail}")
    return None


def plan(an: Analysis, step: dict, h: Harness) -> dict[int, str] | Refusal:
    """New values by site index for ``step``, or the reason the step cannot be carried through the hook."""
    return _plan(an, step, h, select=True)


def _plan(an: Analysis, step: dict, h: Harness, *, select: bool, known: tuple | None = None
          ) -> dict[int, str] | Refusal:
    """:func:`plan`; ``select=False`` looks at every site instead of those the :class:`_SiteIndex` picks
    (the same result, slower: kept to test the selection against). ``known``: ``(renamed, text table)``
    of ``step`` when the caller has them (:func:`_step_info`)."""
    kind = Step.from_json(step).renames_kind
    renamed, table = known if known is not None else (_renamed(step), None)
    if kind is None or not renamed:
        return {}
    if table is None:
        table = text_map(step)
    refusal = _problem(an, step)
    if refusal is not None:
        return refusal
    ix = _site_index(an)
    sites, cats = ix.sites, ix.cats
    positions = ix.select(Step.from_json(step), renamed, table) if select else range(len(sites))
    out: dict[int, str] = {}
    try:
        for pos in positions:
            site, cat = sites[pos], cats[pos]
            if cat == _NAME:
                names = _role_class(site.roles)[1]
                # the site's own role order: the first role that refuses gives the reason
                wanted = {_name_value(site, r, step, h) for r in site.roles if r[0] in NAME_ROLES}
                if len(wanted) > 1:
                    raise Refused("literal plays conflicting roles", f"line {site.line}: {site.value!r} would have "
                                                                     f"to become {sorted(wanted)}")
                new = wanted.pop()
                if new != site.value and names & HARD_ROLES:
                    raise Refused("literal plays conflicting roles",
                                  f"line {site.line}: {site.value!r} names a renamed {kind} and is also used as "
                                  f"{' and '.join(sorted(names & HARD_ROLES))}")
            elif cat == _UNKNOWN:
                if site.value in renamed:
                    raise Refused("unresolved reference", f"line {site.line}: {site.value!r} equals a renamed {kind} "
                                                          "but is compared with a value that cannot be resolved")
                new = site.value
            elif cat == _TEXT:
                new = replace_tokens(site.value, table) if table else site.value
            else:  # _SKIP: payload keys, dict keys, data comparisons, concatenation parts
                continue
            if new != site.value:
                out[site.index] = new
    except Refused as exc:
        return exc.refusal
    return out


# ---------------------------------------------------------------------------- public API


@lru_cache(maxsize=256)
def _step_info(step_json: str) -> tuple[dict, frozenset[str], dict[str, str]]:
    """A step decoded once for all the hooks it is carried through: the step, its renamed names and its
    text table (:func:`hsa.hooks_model.text_map`). Shared by the callers, which only read them."""
    step = _json.loads(step_json)
    return step, frozenset(_renamed(step)), text_map(step)


@lru_cache(maxsize=16384)
def _sync_cached(source: str, entry: str | None, step_json: str, h: Harness) -> tuple[str, Refusal | None, int]:
    step, renamed, table = _step_info(step_json)
    if not renamed:
        return source, None, 0
    an = analyze(source, entry)
    if not an.ok:
        hits = [n for n in renamed if n in source]
        if hits:
            return source, Refusal("hook cannot be analysed", f"{an.error}; it mentions {sorted(hits)[:3]}"), 0
        return source, None, 0
    edits = _plan(an, step, h, select=True, known=(renamed, table))
    if isinstance(edits, Refusal):
        return source, edits, 0
    if not edits:
        return source, None, 0
    spliced = apply_edits(an, edits, table)
    if isinstance(spliced, Refusal):
        return source, spliced, 0
    new, values, replaced = spliced
    transport(an, new, values, step, replaced)
    return new, None, len(edits)


#: Off only in tests, which compare the syncs with the untouched hooks skipped and with every hook planned.
_SKIP_UNTOUCHED = True


_TOUCHED = _cache.lru("hook.sync_touched", 16 << 20)


def _touched(code: tuple, step_json: str) -> tuple[int, ...]:
    """The positions of the hooks ``code`` (``(source, entry)`` each) that ``step`` may change or refuse (every other
    is :func:`_untouched`), kept per step and hooks: records of one harness variant share both."""
    key = (step_json, code)
    hit = _TOUCHED.get(key)
    if hit is None:
        hit = _TOUCHED.put(key, tuple([i for i, (src, entry) in enumerate(code) if not _untouched(src, entry, step_json)]),
                           len(step_json) + sum([len(src) + 100 for src, _ in code]) + 160)
    return hit


def _untouched(source: str, entry: str | None, step_json: str) -> bool:
    """Whether carrying the hook through the step leaves its source as it is and refuses nothing, whatever the
    harness: what :func:`_sync_cached` decides before it reads the harness (the step renames nothing; the source
    cannot be analysed and names nothing renamed; no analysis problem refuses the step and the :class:`_SiteIndex`
    picks no site, or only name sites whose roles read nothing a parameter or value step renames)."""
    step, renamed, table = _step_info(step_json)
    if not renamed:
        return True
    an = analyze(source, entry)
    if not an.ok:
        return not any(n in source for n in renamed)
    typed = Step.from_json(step)
    if typed.renames_kind is None:
        return True
    if _problem(an, step) is not None:
        return False
    ix = _site_index(an)
    positions = ix.select(typed, renamed, table)
    if typed.renames_names or not positions:
        return not positions
    # a parameter or value step: a name site it picks keeps its value, whatever the harness, when no role of it
    # reads what the step renames (the branches of _name_value that return the literal before reading a kind)
    return all(ix.cats[pos] == _NAME and all(_role_kept(step, r, ix.sites[pos].value) for r in ix.sites[pos].roles
                                             if r[0] in NAME_ROLES) for pos in positions)


def _role_kept(step: dict, role: tuple, value: str) -> bool:
    """Whether :func:`_name_value` gives ``value`` back for this role under a params or values ``step`` on any harness
    (False: it may not, or it reads the harness to know)."""
    kind, path = role[0], role[2] if len(role) > 2 else None
    if isinstance(Step.from_json(step), ParamsStep):
        if kind == "param":
            return _param_read_kept(path, step["paths"])
        if kind == "member":  # read as a key below path, or compared as a value (kept)
            return _param_read_kept(path + (value,), step["paths"])
        if kind == "value" and path and path[-1] == "[]":
            return _param_read_kept(path[:-1] + (value,), step["paths"])
        return True
    if kind not in ("value", "member"):
        return True
    compared = path if kind == "value" else path + ("[]",)
    return tuple(step["path"]) != compared or value not in {old for old, _ in step["map"] if isinstance(old, str)}


def _param_read_kept(path: tuple, pairs: list) -> bool:
    """Whether :func:`_param_key` returns the key read at ``path`` without reading a kind or refusing: no dynamic
    key, no array on the way, not renamed and no key renamed onto it."""
    if "*" in path or "[]" in path[:-1] or _map_path(pairs, path) != path:
        return False
    for src, dst in pairs:
        src, dst = tuple(src), tuple(dst)
        if path[:len(dst)] == dst and src + path[len(dst):] != path:
            return False
    return True


class HarnessBefore:
    """The :class:`Harness` of a record as it is now, for a step about to change the record, made only when a hook
    needs it (most steps leave every hook of a record untouched: :func:`_untouched`).

    The names are taken now (the renames edit them in place); the parameter schemas are held, and read when
    needed: a rename replaces a tool's schema rather than reshaping it in place (what it edits in place, texts
    and listed values, is nothing a node type reads), so they still have the shape they had."""

    __slots__ = ("tools", "skills", "skill_tool", "_schemas", "_full")

    def __init__(self, record: dict):
        st = record.get("skill_tool") or {"name": "load_skill", "argument": "skill"}
        self.tools = tuple([t["name"] for t in record["tools"]])
        self.skills = tuple([s["name"] for s in record.get("skills") or ()])
        self.skill_tool = (st["name"], st["argument"])
        self._schemas = [t["parameters"] for t in record["tools"]]
        self._full: Harness | None = None

    def full(self) -> Harness:
        """:func:`harness_of` of the record when this was made."""
        if self._full is None:
            kinds = tuple([(name, _kinds_of(_json.dumps(s))) for name, s in zip(self.tools, self._schemas)])
            self._full = Harness(self.tools, self.skills, self.skill_tool, kinds)
        return self._full

    def for_step(self, step: dict) -> Harness:
        """``_harness_for(step, self.full())``; for tool and skill renames without encoding every schema."""
        if self._full is not None or not Step.from_json(step).renames_names:
            return _harness_for(step, self.full())
        arg = self.skill_tool[1]
        kinds = []
        for name, schema in zip(self.tools, self._schemas):
            table = _arg_kind(schema, arg)
            if table is None:  # a shape the short cut does not read like _kinds_of does
                return _harness_for(step, self.full())
            kinds.append((name, table))
        return Harness(self.tools, self.skills, self.skill_tool, tuple(kinds))


def _arg_kind(schema: Any, arg: str) -> tuple | None:
    """The entries of ``_kinds_of`` of ``schema`` at path ``(arg,)`` (None where the walk would read more)."""
    if not isinstance(schema, dict):
        return ()
    props = schema.get("properties") or {}
    if not isinstance(props, dict) or arg == "[]":
        return None
    return (((arg,), _node_type(props[arg])),) if arg in props else ()


def sync_source(source: str, entry: str | None, step: dict, harness: Harness) -> tuple[str, Refusal | None]:
    """Hook ``source`` carried through mapping ``step`` over ``harness`` (the harness before the step).

    Returns the new source and ``None``, or the unchanged source and the :class:`Refusal`.
    """
    new, refusal, _ = _sync_cached(source, entry, _json.canonical(step), _harness_for(step, harness))
    return new, refusal


def _harness_for(step: dict, h: Harness) -> Harness:
    # tool and skill renames need only the names: a smaller key, more cache hits
    if Step.from_json(step).renames_names and h.kinds:
        st_arg = h.skill_tool[1]
        kinds = tuple((name, tuple((p, k) for p, k in table if p == (st_arg,))) for name, table in h.kinds)
        return Harness(h.tools, h.skills, h.skill_tool, kinds)
    return h


def cache_info():
    """Hit and miss counts of the rewrite cache and of the analysis cache."""
    from hsa.codemods.analysis import cache_stats

    return {"rewrites": _sync_cached.cache_info()._asdict(), "analyses": cache_stats()}


def refusal_note(hook: dict, refusal: Refusal) -> str:
    """The note recorded on a variant whose hook could not be synced (see :func:`parse_refusal_note`)."""
    return f"{REFUSAL_PREFIX}{refusal.reason} | hook {hook.get('name')!r}: {refusal.detail}"


def parse_refusal_note(note: str) -> tuple[str, str] | None:
    """``(reason, detail)`` of a refusal note, or None for any other note."""
    if not note.startswith(REFUSAL_PREFIX):
        return None
    reason, _, detail = note[len(REFUSAL_PREFIX):].partition(" | ")
    return reason, detail


def sync_record_hooks(record: dict, step: dict, before: dict | Harness | HarnessBefore, *,
                      payloads: bool = True) -> None:
    """Carry every hook of ``record`` (changed in place) through ``step``.

    ``before`` is the record before the step, its :func:`harness_of`, or a :class:`HarnessBefore` made of it
    before the step (the harness is then worked out only if a hook needs it).

    Hook sources are rewritten (or a refusal note is added), matchers follow tool
    renames, and each hook event's payload, decision and injected message follow
    the step, so the recorded events stay what the rewritten hooks produce.
    """
    if not isinstance(before, HarnessBefore):
        before = _Known(before if isinstance(before, Harness) else harness_of(before))
    step_json, hk = _json.sorted_key(step), None  # once per step, not per hook
    typed = Step.from_json(step)
    hooks = record.get("hooks") or ()
    code = [(hook.get("source", ""), entry_of(hook)) for hook in hooks]
    touched = _touched(tuple(code), step_json) if _SKIP_UNTOUCHED else range(len(code))
    for i, hook in enumerate(hooks):
        source, entry = code[i]
        if i not in touched:
            new, refusal = source, None
        else:
            if hk is None:
                hk = before.for_step(step)
            new, refusal, _ = _sync_cached(source, entry, step_json, hk)
        if refusal is not None:
            record["notes"].append(refusal_note(hook, refusal))
            continue
        hook["source"] = new
        matcher = hook.get("matcher")
        if isinstance(matcher, str) and typed.renames_tools:
            table = typed.renamed()
            new_matcher = _regex_rewrite(matcher, table)
            try:
                site = LiteralSite(-1, "simple", matcher, 0, 0, 0, frozenset())
                _regex_check("fullmatch", matcher, new_matcher, before.tools, table, site)
            except Refused as exc:
                record["notes"].append(refusal_note(hook, exc.refusal))
                continue
            hook["matcher"] = new_matcher
    sync_record_events(record, step, payloads=payloads)


class _Known:
    """A harness given whole, read like a :class:`HarnessBefore`."""

    __slots__ = ("tools", "_h")

    def __init__(self, h: Harness):
        self.tools, self._h = h.tools, h

    def for_step(self, step: dict) -> Harness:
        return _harness_for(step, self._h)


def sync_record_events(record: dict, step: dict, *, payloads: bool = True) -> None:
    """Carry each hook event of ``record`` (in place) through ``step``: its decision, its payload (with
    ``payloads``) and, for a parameter rename, the message the hook injected (text or text parts)."""
    table = text_map(step)
    for ev in record.get("hook_events") or ():
        payload = ev.get("payload")
        tool_name = payload.get("tool_name") if isinstance(payload, dict) else None
        if isinstance(ev.get("decision"), dict):
            ev["decision"] = map_output(ev["decision"], step, tool_name if isinstance(tool_name, str) else None)
        if payloads and isinstance(payload, dict):
            ev["payload"] = map_payload(payload, step)
        if isinstance(Step.from_json(step), ParamsStep) and table:
            i = ev.get("message_index")
            if isinstance(i, int) and 0 <= i < len(record["messages"]):
                m = record["messages"][i]
                if "content" in m:
                    m["content"] = map_content(m["content"], lambda text: map_text(text, step))


class SyncCodemod:
    """``hook.sync`` as a LibCST :class:`~libcst.codemod.Codemod` (for ``CodemodTest`` and ``libcst.tool``).

    ``SyncCodemod.build(step, harness, entry)`` returns a Codemod class bound to one
    mapping step; a refusal warns and skips the file (``SkipFile``), leaving it unchanged.
    """

    @staticmethod
    def build(step: dict, harness: Harness, entry: str | None = "check"):
        import libcst as cst
        from libcst.codemod import Codemod, SkipFile

        class _Sync(Codemod):
            def transform_module_impl(self, tree: cst.Module) -> cst.Module:
                new, refusal = sync_source(tree.code, entry, step, harness)
                if refusal is not None:
                    self.warn(f"{refusal.reason}: {refusal.detail}")
                    raise SkipFile(refusal.reason)
                return cst.parse_module(new)

        return _Sync


__all__ += ["SyncCodemod", "plan"]
