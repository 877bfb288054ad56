"""Tool-schema transforms: the ``tool`` family.

Every way a tool surface changes — names, parameter names, order, descriptions, nesting,
distractors, values, dialect — each one kept in the record's mapping, so that every
variant's calls map back to the source calls exactly, and verified by
:func:`hsa.verify.check_variant`. Renames go through :mod:`hsa.rewrite`, so a name
changes everywhere it occurs (whole tokens) and nowhere else; structural changes are
mapping steps whose record-level appliers are the core's (:data:`hsa.rewrite.STEP_APPLIERS`),
so :func:`hsa.rewrite.canonicalize` undoes them.

``tool.irrelevance`` is the one task-changing transform here: it is opt-in, its mapping
step is ``{"op": "opaque"}`` and the pipeline counts its variants separately.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from hsa import _json
from hsa.mapping import ARRAY, Mapping
from hsa.names import (
    DIALECT_NAME_RULES,
    STYLES,
    find_tokens,
    is_identifier_like,
    is_legal,
    is_legal_param,
    is_plain_token,
    split_words,
    text_tokens,
)
from hsa.records import Record, clone, iter_calls, normalize_schema
from hsa.rewrite import (
    STEP_APPLIERS,
    hook_literals,
    param_paths,
    record_tokens,
    rename_params,
    rename_tools,
    text_fields,
    word_uses,
)
from hsa.transform import Skip, Transform, check_probability, register
from transforms._banks import load_banks
from transforms._domains import (
    RELEVANCE_THRESHOLD,
    content_words,
    domain_applies,
    harness_domain,
    pool_tool_words,
    text_domain,
    tool_words,
    words_relevance,
)
from transforms._toolnames import DEFAULT_PREFIXES, NAME_STYLES, RANDOM_STYLES, detect_style, new_name
from transforms._toolhooks import hooks_read_whole_input
from transforms._tooltext import has_constraint, paraphrase, shorten
from transforms._toolschema import (
    CONSTRAINING_KEYS,
    UnsupportedSchema,
    convert_tool,
    to_strict,
    described_pointers,
    get_pointer,
    is_strict,
    node_at,
    object_pointers,
    set_pointer,
    values_at,
)

__all__ = [
    "ToolRename",
    "ParamRename",
    "SwapNames",
    "Reorder",
    "Describe",
    "DropDescriptions",
    "Nest",
    "Flatten",
    "Distractors",
    "AddRequired",
    "Values",
    "Dialect",
    "Irrelevance",
    "new_name",
    "NAME_STYLES",
    "DIALECTS",
    "paraphrase",
    "shorten",
    "has_constraint",
    "convert_tool",
]

#: Tool dialects ``tool.dialect`` renders to.
DIALECTS = ("openai", "anthropic", "mcp", "gemini")

# --------------------------------------------------------------------------- checks and helpers


def _check_styles(styles: tuple[str, ...], allowed: tuple[str, ...] = NAME_STYLES) -> None:
    if not styles:
        raise ValueError("styles must name at least one style")
    bad = [s for s in styles if s not in allowed]
    if bad:
        raise ValueError(f"unknown style(s) {bad}; expected some of {list(allowed)}")


def _check_range(value: Any, what: str, lo_min: int = 0) -> tuple[int, int]:
    lo, hi = (value, value) if isinstance(value, int) else tuple(value)
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo < lo_min or hi < lo:
        raise ValueError(f"{what} must be an int or [lo, hi] with {lo_min} <= lo <= hi (got {value!r})")
    return lo, hi


def _check_banks(banks: tuple[str, ...]) -> None:
    load_banks(tuple(banks))  # reads and validates the files now, so a bad path fails when the recipe is built


def _ambiguous_skip(kept: dict[str, str], what: str) -> Skip:
    """The skip of a rename whose only drawn names were plain words used as words somewhere (``kept``: name -> where)."""
    names = ", ".join(f"{n!r} (in {kept[n]})" for n in sorted(kept))
    return Skip(f"plain-word {what} name {names} also used as a word, not as a reference to it: renaming would be "
                "ambiguous")


#: Skip reason of the structural transforms when a hook reads tool inputs as a whole (invariant 7).
_WHOLE_INPUT = "a hook reads tool inputs as a whole (len, iteration, passing them on): changing their shape is not safe"


def _fresh(make, ok, retry: bool, tries: int = 8) -> str | None:
    """The first name ``make()`` draws that passes ``ok`` (one draw unless ``retry``), else None."""
    for _ in range(tries if retry else 1):
        name = make()
        if ok(name):
            return name
    return None


def _tool(record: Record, name: str, what: str) -> dict:
    for t in record["tools"]:
        if t["name"] == name:
            return t
    raise ValueError(f"{what}: tool {name!r} is not in the record (tools: {[t['name'] for t in record['tools']]})")


def _with_own_tools(record: Record) -> Record:
    """A copy of ``record`` whose tool list and tools are its own (one level); every other part, schemas
    included, is shared with ``record``, which transforms never modify: for an apply that sets tool fields
    and replaces (never edits) schemas."""
    out = dict(record)
    out["tools"] = [dict(t) for t in record["tools"]]
    return out


def _calls_of_tool(record: Record, name: str) -> list[dict]:
    return [c["function"]["arguments"] for _, _, c in iter_calls(record) if c["function"]["name"] == name]


def _apply_steps(record: Record, steps: list[dict], kinds: tuple[str, ...], what: str) -> Record:
    for step in steps:
        op = step.get("op")
        kind = f"params:{step.get('kind')}" if op == "params" else op
        if kind not in kinds:
            raise ValueError(f"{what}: params may only hold steps of kind {list(kinds)} (got {kind!r})")
        record = STEP_APPLIERS[kind](record, step)
    return record


def _object_paths(schema: dict) -> list[tuple]:
    """Paths of the objects of ``schema`` that declare properties: the root ``()`` and nested ones."""
    out = [()] if isinstance(schema.get("properties"), dict) else []
    for p in param_paths(schema):
        node = node_at(schema, p)
        if node is not None and isinstance(node.get("properties"), dict):
            out.append(p)
        if node is not None and isinstance(node.get("items"), dict) and isinstance(node["items"].get("properties"), dict):
            out.append(p + (ARRAY,))
    return out


def _local_refs_only(schema: Any) -> bool:
    """True when every ``$ref`` of ``schema`` points into the root's ``$defs``/``definitions``
    (those stay valid when properties move)."""
    text = _json.dumps(schema)
    if '"$ref"' not in text:
        return True
    refs = re.findall(r'"\$ref":"([^"]*)"', text)
    return all(r.startswith(("#/$defs/", "#/definitions/")) for r in refs)


def _keys_in_calls(record: Record, tool: str, parent: tuple) -> set[str]:
    keys: set[str] = set()
    for args in _calls_of_tool(record, tool):
        for v in values_at(args, parent):
            if isinstance(v, dict):
                keys.update(v)
    return keys


# --------------------------------------------------------------------------- names


@register
@dataclasses.dataclass(frozen=True)
class ToolRename(Transform):
    """Rename tools (each with probability ``p``) in a naming style drawn from ``styles``.

    Styles: word styles (``snake``, ``camel``, ``pascal``, ``kebab``, ``screaming``), verb and
    noun synonyms from the word banks (``verb``, ``noun``), a namespace prefix drawn once per
    record from ``prefixes`` among those legal in the tools' dialect (``prefix``: dots are
    legal for MCP and Gemini, not for OpenAI or Anthropic), Hammer masks (``mask``) and
    RoTBench noise (``slight``, ``medium``). Renames reach schemas, calls, tool results,
    the skill tool, mentions in every text (whole tokens) and hook literals. New names are
    legal in the tool's dialect and collide with no name or token of the record. A tool
    whose name is a plain word (``Bash``, ``think``) is renamed when every text uses it as a
    reference (docs/design.md, "What names a tool": code, quotes, a tool-name position, a
    hook literal compared with the tool name); where a text may use it as the word, it is
    left alone and the skip names it.
    """

    name: ClassVar[str] = "tool.rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 1.0
    include_skill_tool: bool = True
    prefixes: tuple[str, ...] = DEFAULT_PREFIXES
    mask_len: tuple[int, int] = (5, 15)
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        _check_styles(self.styles)
        check_probability(self.p)
        _check_range(self.mask_len, "mask_len", 1)
        bad = [p for p in self.prefixes if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]*", p)]
        if bad:
            raise ValueError(f"prefixes {bad} are not name prefixes; use letters, digits, '_', '.', ':' or '-'")
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        names = [t["name"] for t in record["tools"]]
        if not names:
            return Skip("no tools")
        prefix = None
        if "prefix" in self.styles:
            dialects = sorted({t["dialect"] for t in record["tools"]})
            legal = [p for p in self.prefixes if all(is_legal(p + "x", d) for d in dialects)]
            prefix = rng.choice(legal) if legal else None
        ambiguous = word_uses(record, names)
        taken = record_tokens(record)
        renames: dict[str, str] = {}
        kept: dict[str, str] = {}
        for tool in record["tools"]:
            old = tool["name"]
            if rng.random() >= self.p:
                continue
            style = rng.choice(self.styles)
            if not self.include_skill_tool and old == record["skill_tool"]["name"]:
                continue
            if old in ambiguous:
                kept[old] = ambiguous[old]
                continue
            new = _fresh(lambda: new_name(old, style, rng, mask_len=self.mask_len, prefix=prefix, banks=self.banks),
                         lambda n: n != old and n not in taken and n not in renames.values()
                         and is_legal(n, tool["dialect"]),
                         retry=style in RANDOM_STYLES)
            if new is not None:
                renames[old] = new
        if not renames:
            if kept:
                return _ambiguous_skip(kept, "tool")
            return Skip("no tool name changed (already in the drawn style, or not drawn)")
        return {"renames": renames}

    def apply(self, record: Record, params: dict) -> Record:
        known = {t["name"] for t in record["tools"]}
        missing = sorted(set(params["renames"]) - known)
        if missing:
            raise ValueError(f"tool.rename: tools {missing} are not in the record (have {sorted(known)})")
        return rename_tools(record, params["renames"])


_PARAM_STYLES = tuple(s for s in NAME_STYLES if s != "prefix")


@register
@dataclasses.dataclass(frozen=True)
class ParamRename(Transform):
    """Rename parameters at any depth (objects, arrays of objects), each with probability ``p``.

    The styles of ``tool.rename`` except ``prefix``; masks are ``mask_len`` characters
    (Hammer: 4-10). Sibling names never collide; a parameter whose name is also a string
    literal in a hook is renamed only when no other tool declares that name (the hook
    literal follows it).
    """

    name: ClassVar[str] = "tool.param_rename"
    family: ClassVar[str] = "tool"

    styles: tuple[str, ...] = ("snake", "camel", "pascal", "kebab")
    p: float = 0.67
    mask_len: tuple[int, int] = (4, 10)
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        if "prefix" in self.styles:
            raise ValueError("the prefix style applies to tool names only; use tool.rename for it")
        _check_styles(self.styles, _PARAM_STYLES)
        check_probability(self.p)
        _check_range(self.mask_len, "mask_len", 1)
        _check_banks(self.banks)

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
                used = siblings[path[:-1]]
                new = _fresh(lambda: new_name(old, style, rng, mask_len=self.mask_len, banks=self.banks),
                             lambda n: n != old and n not in used and is_legal_param(n)
                             and (n not in taken or not is_identifier_like(n)),
                             retry=style in RANDOM_STYLES)
                if new is None:
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
        for i, (tool, renames) in enumerate(by_tool.items()):
            if tool not in known:
                raise ValueError(f"tool.param_rename: tool {tool!r} is not in the record")
            declared = set(param_paths(known[tool]["parameters"]))
            missing = [list(p) for p in renames if p not in declared]
            if missing:
                raise ValueError(f"tool.param_rename: {tool!r} declares no parameter at {missing}")
            record = rename_params(record, tool, renames, copy=i == 0)  # one copy, then in place
        return record


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
            for t in record["tools"]:
                if rng.random() >= self.params_p or t["name"] == skill_tool or whole:
                    continue
                schema = t["parameters"]
                if any(k in schema for k in CONSTRAINING_KEYS):
                    continue
                keys = [k for k in (schema.get("properties") or {}) if k not in literals]
                if len(keys) < 2:
                    continue
                perm = _derangement(keys, rng)
                out["params"].append({"op": "params", "tool": t["name"], "kind": "permute",
                                      "paths": [[[a], [b]] for a, b in zip(keys, perm)]})
        if not out["tools"] and not out["params"]:
            return Skip("fewer than two names to swap (not drawn, ambiguous, hook literals or the skill tool)")
        return out

    def apply(self, record: Record, params: dict) -> Record:
        record = _apply_steps(record, params.get("params", []), ("params:permute",), "tool.swap_names")
        if params.get("tools"):
            table = params["tools"]
            if sorted(table) != sorted(table.values()):
                raise ValueError(f"tool.swap_names: {table} is not a permutation of tool names")
            record = rename_tools(record, table)
        return record


# --------------------------------------------------------------------------- order and descriptions


@register
@dataclasses.dataclass(frozen=True)
class Reorder(Transform):
    """Shuffle the order of tools, of the properties of every object schema, and of ``required`` lists.

    Nothing a call depends on changes, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.reorder"
    family: ClassVar[str] = "tool"
    harness_parts: ClassVar[tuple[str, ...]] = ("tools",)  # reads and changes the tools only

    tools: bool = True
    properties: bool = True
    required: bool = True

    def __post_init__(self):
        if not (self.tools or self.properties or self.required):
            raise ValueError("tool.reorder with tools, properties and required all false changes nothing")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        out: dict[str, Any] = {}
        names = [t["name"] for t in record["tools"]]
        if self.tools and len(names) > 1:
            order = list(names)
            rng.shuffle(order)
            if order != names:
                out["tools"] = order
        props: dict[str, list] = {}
        reqs: dict[str, list] = {}
        for t in record["tools"]:
            for ptr in object_pointers(t["parameters"]):
                node = get_pointer(t["parameters"], ptr)
                keys = list(node["properties"])
                if self.properties and len(keys) > 1:
                    order = list(keys)
                    rng.shuffle(order)
                    if order != keys:
                        props.setdefault(t["name"], []).append([ptr, order])
                req = node.get("required")
                if self.required and isinstance(req, list) and len(req) > 1:
                    order = list(req)
                    rng.shuffle(order)
                    if order != req:
                        reqs.setdefault(t["name"], []).append([ptr, order])
        if props:
            out["properties"] = props
        if reqs:
            out["required"] = reqs
        if not out:
            return Skip("nothing to reorder (one tool, objects with one property)")
        return out

    def apply(self, record: Record, params: dict) -> Record:
        out = _with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
        for t in out["tools"]:
            for ptr, order in params.get("properties", {}).get(t["name"], ()):
                def reorder_props(node, order=order, ptr=ptr, tool=t["name"]):
                    if sorted(node["properties"]) != sorted(order):
                        raise ValueError(f"tool.reorder: {tool!r} at {ptr or '/'} has properties "
                                         f"{list(node['properties'])}, params list {order}")
                    return {**node, "properties": {k: node["properties"][k] for k in order}}
                t["parameters"] = set_pointer(t["parameters"], ptr, reorder_props)
            for ptr, order in params.get("required", {}).get(t["name"], ()):
                def reorder_req(node, order=order):
                    if sorted(node.get("required") or []) != sorted(order):
                        raise ValueError(f"tool.reorder: required {node.get('required')} differs from {order}")
                    return {**node, "required": list(order)}
                t["parameters"] = set_pointer(t["parameters"], ptr, reorder_req)
        if "tools" in params:
            index = {t["name"]: t for t in out["tools"]}
            if sorted(index) != sorted(params["tools"]):
                raise ValueError(f"tool.reorder: the record's tools {sorted(index)} differ from {params['tools']}")
            out["tools"] = [index[n] for n in params["tools"]]
        return out


def _descriptions(record: Record) -> list[tuple[str, str | None, str]]:
    """(tool, pointer or None for the tool's own description, text) of every description."""
    out = []
    for t in record["tools"]:
        if isinstance(t.get("description"), str):
            out.append((t["name"], None, t["description"]))
        for ptr in described_pointers(t["parameters"]):
            out.append((t["name"], ptr, get_pointer(t["parameters"], ptr)["description"]))
    return out


@register
@dataclasses.dataclass(frozen=True)
class Describe(Transform):
    """Rewrite tool and parameter descriptions: paraphrased from the phrase bank, or shortened.

    Each description changes with probability ``p``, by a mode drawn from ``modes``
    (``paraphrase``: bank phrases swapped for synonyms where their kind fits the context
    (a verb group at the start of a sentence, a noun group as a whole noun phrase, wh-phrases
    at the start only), a domain group only on a harness of its domain
    (:func:`transforms._domains.harness_domain`), names and code spans untouched;
    ``shorten``: first sentence, at most ``max_words`` words, keeping every sentence and
    clause that carries a constraint such as only, never, must, do not, unless, if). Names that appear in
    descriptions follow later renames like any other text. Dropping descriptions is the
    separate, opt-in ``tool.drop_descriptions``.
    """

    name: ClassVar[str] = "tool.describe"
    family: ClassVar[str] = "tool"
    harness_parts: ClassVar[tuple[str, ...]] = ("tools",)  # reads and changes the tools only

    modes: tuple[str, ...] = ("paraphrase", "shorten")
    p: float = 0.5
    max_words: int = 8
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        bad = [m for m in self.modes if m not in ("paraphrase", "shorten")]
        if not self.modes or bad:
            raise ValueError(f"modes must be some of ['paraphrase', 'shorten'] (got {list(self.modes)})")
        check_probability(self.p)
        if self.max_words < 1:
            raise ValueError(f"max_words must be >= 1 (got {self.max_words})")
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        texts = []
        domain = harness_domain(record) if "paraphrase" in self.modes else None
        for tool, ptr, text in _descriptions(record):
            if rng.random() >= self.p:
                continue
            mode = rng.choice(self.modes)
            new = (paraphrase(text, rng, self.banks, domain=domain) if mode == "paraphrase"
                   else shorten(text, self.max_words))
            if new != text and new.strip():
                texts.append({"tool": tool, "at": ptr, "text": new})
        if not texts:
            return Skip("no description changed (none drawn, or no bank phrase and already short)")
        return {"texts": texts}

    def apply(self, record: Record, params: dict) -> Record:
        out = _with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
        for entry in params["texts"]:
            t = _tool(out, entry["tool"], "tool.describe")
            if entry["at"] is None:
                t["description"] = entry["text"]
            else:
                t["parameters"] = set_pointer(t["parameters"], entry["at"], lambda n, s=entry["text"]: {**n, "description": s})
        return out


@register
@dataclasses.dataclass(frozen=True)
class DropDescriptions(Transform):
    """Remove tool descriptions (``tools``) and parameter descriptions (``params``), each with probability ``p``.

    Opt-in: without a description a task can become ambiguous, so no preset but
    ``hammer``-style ablations should use it. Calls and the mapping are unchanged.
    """

    name: ClassVar[str] = "tool.drop_descriptions"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    tools: bool = True
    params: bool = True

    def __post_init__(self):
        check_probability(self.p)
        if not (self.tools or self.params):
            raise ValueError("tool.drop_descriptions with tools=false and params=false drops nothing")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        drop = []
        for tool, ptr, _ in _descriptions(record):
            if (ptr is None and not self.tools) or (ptr is not None and not self.params):
                continue
            if rng.random() < self.p:
                drop.append({"tool": tool, "at": ptr})
        if not drop:
            return Skip("no description drawn")
        return {"drop": drop}

    def apply(self, record: Record, params: dict) -> Record:
        out = _with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
        for entry in params["drop"]:
            t = _tool(out, entry["tool"], "tool.drop_descriptions")
            if entry["at"] is None:
                t.pop("description", None)
            else:
                t["parameters"] = set_pointer(t["parameters"], entry["at"],
                                              lambda n: {k: v for k, v in n.items() if k != "description"})
        return out


# --------------------------------------------------------------------------- structure


def _name_in_style(parts: list[str], like: str) -> str:
    words = [w for p in parts for w in split_words(p)]
    if not words:
        return "_".join(parts)
    return STYLES[detect_style(like)](words)


@register
@dataclasses.dataclass(frozen=True)
class Nest(Transform):
    """Group sibling parameters into a new object parameter; calls are rewritten to match.

    For each tool (probability ``p``), ``size`` properties of one object level (the top
    level or a nested object) move into a new object named from the ``containers`` bank.
    The new object is required when one of the moved properties was, lists the moved
    required ones as required, and has ``additionalProperties: false`` when its parent
    does or the tool is strict, so strict schemas stay strict. The mapping step
    (``kind: regroup``) moves the argument paths back. Objects with property constraints
    (``anyOf``, ``patternProperties``...), the skill tool and parameters named in hook
    literals are left alone, and nothing is nested when a tool hook reads the argument
    object as a whole (``len(args)``, iteration): it would see a different object.
    """

    name: ClassVar[str] = "tool.nest"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    size: tuple[int, int] = (2, 3)
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _check_range(self.size, "size", 1)
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        lo, hi = _check_range(self.size, "size", 1)
        if hooks_read_whole_input(record):
            return Skip(_WHOLE_INPUT)
        literals = hook_literals(record)
        taken = record_tokens(record)
        containers = [str(c) for c in load_banks(tuple(self.banks))["containers"]]
        steps = []
        for t in record["tools"]:
            if rng.random() >= self.p or t["name"] == record["skill_tool"]["name"]:
                continue
            schema = t["parameters"]
            if not _local_refs_only(schema):
                continue
            parents = []
            for path in _object_paths(schema):
                node = node_at(schema, path) if path else schema
                if node is None or any(k in node for k in CONSTRAINING_KEYS) or set(path) & literals:
                    continue  # (an object a hook reads by name may be read as a whole)
                keys = [k for k in node["properties"] if k not in literals]
                if path and len(keys) == len(node["properties"]):
                    keys = keys[:-1]  # a nested object keeps one property of its own (no pointless wrapper)
                if len(keys) >= lo:
                    parents.append((path, node, keys))
            if not parents:
                continue
            path, node, keys = parents[rng.randrange(len(parents))]
            k = rng.randint(lo, min(hi, len(keys)))
            chosen = sorted(rng.sample(range(len(keys)), k))
            group = [keys[i] for i in chosen]
            siblings = set(node["properties"]) | _keys_in_calls(record, t["name"], path)
            cname = _fresh(lambda: rng.choice(containers) if containers else "options",
                           lambda n: n not in siblings and n not in taken and is_legal_param(n), retry=True)
            if cname is None:
                continue
            cname = _name_in_style([cname], next(iter(node["properties"])))
            if cname in siblings or cname in taken:
                continue
            required = node.get("required") if isinstance(node.get("required"), list) else []
            cschema: dict[str, Any] = {"type": "object"}
            if is_strict(t) or node.get("additionalProperties") is False:
                cschema["additionalProperties"] = False
            steps.append({"op": "params", "tool": t["name"], "kind": "regroup",
                          "paths": [[list(path) + [g], list(path) + [cname, g]] for g in group],
                          "container": {"path": list(path) + [cname], "schema": cschema,
                                        "required": any(g in required for g in group)}})
        if not steps:
            return Skip("no tool with enough groupable parameters drawn")
        return {"steps": steps}

    def apply(self, record: Record, params: dict) -> Record:
        return _apply_steps(record, params["steps"], ("params:regroup",), "tool.nest")


@register
@dataclasses.dataclass(frozen=True)
class Flatten(Transform):
    """Move the properties of a nested object up into its parent (``address.city`` -> ``address_city``).

    For each tool (probability ``p``), one object parameter (at any depth, arrays of objects
    included) is flattened; new names join the object's name and the property's, in the
    object name's style. A property is required after flattening when the object was
    required and listed it. The mapping step (``kind: regroup``) keeps the object's schema,
    so the mapping and ``canonicalize`` rebuild it exactly. Skipped, with the reason, for
    nullable objects, objects with constraints on their properties, objects some call
    passes empty or with undeclared keys, names that are hook literals, and records whose
    tool hooks read the argument object as a whole.
    """

    name: ClassVar[str] = "tool.flatten"
    family: ClassVar[str] = "tool"

    p: float = 1.0

    def __post_init__(self):
        check_probability(self.p)

    def _candidates(self, record: Record, tool: dict, literals: set[str], taken: set[str]) -> list[dict]:
        schema = tool["parameters"]
        if not _local_refs_only(schema):
            return []
        calls = _calls_of_tool(record, tool["name"])
        out = []
        for path in param_paths(schema):
            node = node_at(schema, path)
            parent = node_at(schema, path[:-1]) if len(path) > 1 else schema
            if node is None or parent is None or node.get("type") != "object":
                continue
            props = node.get("properties")
            if not isinstance(props, dict) or not props or any(k in node for k in CONSTRAINING_KEYS):
                continue
            if any(k in node for k in ("default", "const", "enum", "examples")):
                continue
            if any(k in parent for k in CONSTRAINING_KEYS) or not isinstance(parent.get("properties"), dict):
                continue
            if set(path) & literals or any(k in literals for k in props):
                continue
            values = [v for args in calls for v in values_at(args, path)]
            if any(not isinstance(v, dict) or not v or set(v) - set(props) for v in values):
                continue
            others = (set(parent["properties"]) - {path[-1]}) | (_keys_in_calls(record, tool["name"], path[:-1]) - {path[-1]})
            names = {k: _name_in_style([path[-1], k], path[-1]) for k in props}
            new = list(names.values())
            if len(set(new)) != len(new) or set(new) & others or set(new) & taken \
                    or not all(is_legal_param(n) for n in new):
                continue
            required = parent.get("required") if isinstance(parent.get("required"), list) else []
            out.append({"op": "params", "tool": tool["name"], "kind": "regroup",
                        "paths": [[list(path) + [k], list(path[:-1]) + [names[k]]] for k in props],
                        "container": {"path": list(path),
                                      "schema": {k: v for k, v in node.items() if k != "properties"},
                                      "required": path[-1] in required}})
        return out

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        if hooks_read_whole_input(record):
            return Skip(_WHOLE_INPUT)
        literals = hook_literals(record)
        taken = record_tokens(record) | Mapping(record["mapping"]).names()  # and every name the source had
        steps = []
        for t in record["tools"]:
            if rng.random() >= self.p or t["name"] == record["skill_tool"]["name"]:
                continue
            cands = self._candidates(record, t, literals, taken)
            if cands:
                steps.append(cands[rng.randrange(len(cands))])
        if not steps:
            return Skip("no flattenable object parameter (none, nullable, constrained, named in a hook, or not drawn)")
        return {"steps": steps}

    def apply(self, record: Record, params: dict) -> Record:
        return _apply_steps(record, params["steps"], ("params:regroup",), "tool.flatten")


# --------------------------------------------------------------------------- distractors


@lru_cache(maxsize=16)
def _pool_file(path: str) -> tuple[str, ...]:
    """Tool definitions from a JSON / JSONL file, as JSON strings (a list of tools, records with ``tools``, or one tool a line)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"pool_file {path} does not exist; give a JSON or JSONL file of tool definitions "
                         "(or of records with a 'tools' list)")
    text = p.read_text(encoding="utf-8")
    items: list = []
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except ValueError:
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    tools = []
    for it in items:
        if isinstance(it, dict) and isinstance(it.get("tools"), list):
            tools.extend(it["tools"])
        elif isinstance(it, dict):
            tools.append(it)
    out = []
    for raw in tools:
        fn = raw.get("function", raw) if isinstance(raw, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        params = fn.get("parameters", fn.get("input_schema", fn.get("inputSchema", {"type": "object", "properties": {}})))
        entry = {"name": fn["name"], "description": fn.get("description", ""), "parameters": params}
        if isinstance(raw.get("domain"), str):
            entry["domain"] = raw["domain"]
        out.append(_json.dumps(entry))
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=16)
def _pool_tools(path: str) -> tuple[dict, ...]:
    return tuple(_json.loads(s) for s in _pool_file(path))


def _internal_tool(raw: dict, dialect: str, strict: bool) -> dict:
    params = normalize_schema(_json.copy(raw.get("parameters") or {"type": "object", "properties": {}}), raw["name"], [])
    if isinstance(params, dict) and "type" not in params:
        params = {"type": "object", **params}
    if strict:
        params = to_strict(params)
    tool: dict[str, Any] = {"name": raw["name"], "parameters": params,
                            "dialect": dialect, "extra": {"strict": True} if strict else {}, "outer": {}}
    if raw.get("description"):
        tool["description"] = raw["description"]
    return tool


def _tool_domain(raw: dict) -> str | None:
    """A pool tool's ``domain`` (bank tools state one), else the domain its own words vote for."""
    if isinstance(raw.get("domain"), str):
        return raw["domain"]
    return text_domain(tool_words(raw)["all"])


@register
@dataclasses.dataclass(frozen=True)
class Distractors(Transform):
    """Add irrelevant tools, and optional parameters no call uses.

    ``n`` tools (an int or ``[lo, hi]``) come from the ``tools`` bank (synthetic tools of
    unrelated domains) or, with ``pool_file``, from a JSON / JSONL file of tool definitions
    (for example other records' tools). A candidate must be provably irrelevant to every
    real tool: one whose name shares a content word with a real tool's name, or whose
    content words (name, description and parameters) overlap a real tool's by
    ``max_relevance`` or more (:func:`transforms._domains.relevance`), is never added, nor
    one that collides with any token of the record. Candidates of another domain than the
    harness's (:func:`transforms._domains.harness_domain`) are drawn first. They take the
    record's dialect, and strict form when the record's tools are strict. With probability
    ``params_p`` per tool, one optional parameter from the ``params`` bank is added (never
    to strict tools, whose parameters must all be required, nor one whose name shares a word
    with a parameter of that tool). Calls do not change, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.distractors"
    family: ClassVar[str] = "tool"

    n: int | tuple[int, int] = (1, 3)
    params_p: float = 0.0
    pool_file: str = ""
    banks: tuple[str, ...] = ()
    max_relevance: float = RELEVANCE_THRESHOLD

    def __post_init__(self):
        _check_range(self.n, "n")
        check_probability(self.params_p, "params_p")
        if not 0.0 < self.max_relevance <= 1.0:
            raise ValueError(f"max_relevance must be in (0, 1] (got {self.max_relevance!r}); "
                             f"the default {RELEVANCE_THRESHOLD} is measured in docs/design.md")
        _check_banks(self.banks)
        if self.pool_file:
            _pool_file(self.pool_file)

    def _pool(self) -> Sequence[dict]:
        """The candidate tools, shared and read only (:func:`_internal_tool` copies what it keeps)."""
        if self.pool_file:
            return _pool_tools(self.pool_file)
        return load_banks(tuple(self.banks))["tools"]

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        lo, hi = _check_range(self.n, "n")
        tools = record["tools"]
        dialect = tools[0]["dialect"] if tools else "openai"
        strict = bool(tools) and sum(is_strict(t) for t in tools) * 2 > len(tools)
        taken = record_tokens(record) | Mapping(record["mapping"]).names()  # and every name the source had
        words = {tuple(split_words(t["name"])) for t in tools}
        legal = [t for t in self._pool()
                 if t["name"] not in taken and tuple(split_words(t["name"])) not in words and is_legal(t["name"], dialect)]
        real = [tool_words(t) for t in tools]
        pool = [t for t in legal
                if max((words_relevance(pool_tool_words(t), r) for r in real), default=0.0) < self.max_relevance]
        domain = harness_domain(record)
        other = [i for i, t in enumerate(pool) if not domain_applies(_tool_domain(t), domain)]
        rest = [i for i in range(len(pool)) if i not in set(other)]
        out: dict[str, Any] = {"tools": [], "params": []}
        k = min(rng.randint(lo, hi), len(pool))
        if k:
            chosen = rng.sample(other, min(k, len(other)))  # other domains first, then the rest
            chosen += rng.sample(rest, k - len(chosen))
            picks = [pool[i] for i in sorted(chosen)]
            for raw in picks:
                out["tools"].append({"index": rng.randint(0, len(tools) + len(out["tools"])),
                                     "tool": _internal_tool(raw, dialect, strict)})
        if self.params_p > 0:
            bank = [dict(p) for p in load_banks(tuple(self.banks))["params"]]
            for t in tools:
                if rng.random() >= self.params_p or not bank:
                    continue
                if is_strict(t) or t["name"] == record["skill_tool"]["name"]:
                    continue
                schema = t["parameters"]
                if not isinstance(schema.get("properties"), dict) or any(k in schema for k in CONSTRAINING_KEYS):
                    continue
                entry = bank[rng.randrange(len(bank))]
                pname = str(entry["name"])
                if pname in schema["properties"] or pname in taken or pname in _keys_in_calls(record, t["name"], ()):
                    continue
                if content_words(pname) & tool_words(t)["params"]:
                    continue  # near a real parameter of this tool (format beside output_format)
                out["params"].append({"tool": t["name"], "name": pname, "schema": _json.copy(entry["schema"])})
        if not out["tools"] and not out["params"]:
            if legal and not pool:
                return Skip(f"every candidate distractor is near a real tool (relevance >= {self.max_relevance})")
            return Skip("no distractor fits (pool empty or every candidate collides with the record)")
        return out

    def apply(self, record: Record, params: dict) -> Record:
        out = _with_own_tools(record)  # the schemas are replaced, never changed in place
        for entry in params.get("params", ()):
            t = _tool(out, entry["tool"], "tool.distractors")
            props = t["parameters"].get("properties") or {}
            if entry["name"] in props:
                raise ValueError(f"tool.distractors: {entry['tool']!r} already has a parameter {entry['name']!r}")
            t["parameters"] = {**t["parameters"], "properties": {**props, entry["name"]: _json.copy(entry["schema"])}}
        names = {t["name"] for t in out["tools"]}
        for entry in params.get("tools", ()):
            tool = _json.copy(entry["tool"])
            if tool["name"] in names:
                raise ValueError(f"tool.distractors: the record already has a tool named {tool['name']!r}")
            names.add(tool["name"])
            out["tools"].insert(min(entry["index"], len(out["tools"])), tool)
        return out


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    raise ValueError(f"a required one-value parameter needs a string, number or boolean value (got {value!r})")


@register
@dataclasses.dataclass(frozen=True)
class AddRequired(Transform):
    """RoTBench heavy noise: a new required parameter with one allowed value, which every call must pass.

    With probability ``p`` per tool, an entry of the ``required_params`` bank is added at the
    top level (``enum`` of its one value, described), the calls pass it, and the mapping's
    ``fill`` removes it again on the way back. Strict schemas stay strict (it is required).
    Skipped when a tool hook reads the argument object as a whole (it would see one key more).
    """

    name: ClassVar[str] = "tool.add_required"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _check_banks(self.banks)
        for entry in load_banks(tuple(self.banks))["required_params"]:
            _json_type(dict(entry).get("value"))

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        bank = [dict(e) for e in load_banks(tuple(self.banks))["required_params"]]
        if not bank:
            return Skip("the required_params bank is empty")
        if hooks_read_whole_input(record):
            return Skip(_WHOLE_INPUT)

        taken = record_tokens(record) | Mapping(record["mapping"]).names()  # and every name the source had
        steps = []
        for t in record["tools"]:
            if rng.random() >= self.p or t["name"] == record["skill_tool"]["name"]:
                continue
            schema = t["parameters"]
            if not isinstance(schema.get("properties"), dict) or any(k in schema for k in CONSTRAINING_KEYS):
                continue
            entry = bank[rng.randrange(len(bank))]
            pname, value = str(entry["name"]), entry["value"]
            if pname in schema["properties"] or pname in taken or pname in _keys_in_calls(record, t["name"], ()):
                continue
            prop = {"type": _json_type(value), "enum": [value]}
            if entry.get("description"):
                prop["description"] = str(entry["description"])
            steps.append({"op": "params", "tool": t["name"], "kind": "require", "paths": [],
                          "fill": [[[pname], value]], "schema": prop})
        if not steps:
            return Skip("no tool drawn, or every bank name collides")
        return {"steps": steps}

    def apply(self, record: Record, params: dict) -> Record:
        return _apply_steps(record, params["steps"], ("params:require",), "tool.add_required")


# --------------------------------------------------------------------------- values


_VALUE_STYLES = ("snake", "camel", "pascal", "kebab", "screaming", "noun", "mask")


def _value_paths(schema: dict) -> list[tuple]:
    out = []
    for p in param_paths(schema):
        node = node_at(schema, p)
        if node is None:
            continue
        out.append(p)
        if isinstance(node.get("items"), dict):
            out.append(p + (ARRAY,))
    return out


def _string_enum(node: dict) -> list[str] | None:
    branches = [node] + [b for k in ("anyOf", "oneOf") for b in node.get(k) or () if isinstance(b, dict)]
    for b in branches:
        enum = b.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            return list(enum)
    return None


def _num_text(value: Any) -> list[str]:
    forms = [_json.dumps(value)]
    if isinstance(value, float) and value.is_integer():
        forms.append(str(int(value)))
    return forms


@register
@dataclasses.dataclass(frozen=True)
class Values(Transform):
    """Change the values a schema allows, and the calls with them: enum renames and Hammer default re-draws.

    ``enum``: string enum values are renamed (each with probability ``p``) in a style of
    ``styles``; the schema's ``enum``/``default``/``const``/``examples``, the calls, hook
    payloads and whole-token mentions in every text but tool results follow (a result is
    what the environment returned: docs/design.md, "Tool results"). A value is left alone (with
    the reason) when it is a hook literal, a plain word mentioned in text, a name, or also
    used at another tool or path. ``default``: for a number default that a call passes
    explicitly, a new default of the same type within the schema's bounds is drawn and the
    calls passing the old default pass the new one (Hammer), only when neither number
    occurs in any text and no call passes the new one; booleans (whose only other value
    inverts the meaning) and string defaults are never re-drawn. The mapping's ``values``
    steps give the original values back, with their types. Skipped when a tool hook reads
    the argument object as a whole.
    """

    name: ClassVar[str] = "tool.values"
    family: ClassVar[str] = "tool"

    modes: tuple[str, ...] = ("enum", "default")
    p: float = 0.5
    styles: tuple[str, ...] = ("screaming", "camel", "kebab", "mask")
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        bad = [m for m in self.modes if m not in ("enum", "default")]
        if not self.modes or bad:
            raise ValueError(f"modes must be some of ['enum', 'default'] (got {list(self.modes)})")
        check_probability(self.p)
        _check_styles(self.styles, _VALUE_STYLES)
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        if hooks_read_whole_input(record):
            return Skip(_WHOLE_INPUT)
        literals = hook_literals(record)
        texts = text_fields(record)
        taken = record_tokens(record)
        skill = record["skill_tool"]
        names = {t["name"] for t in record["tools"]} | {s["name"] for s in record.get("skills") or ()}
        for t in record["tools"]:
            names.update(p[-1] for p in param_paths(t["parameters"]) if p[-1] != ARRAY)
        # every (tool, path) each JSON value occurs at, in schemas and calls
        where: dict[str, set] = {}
        for t in record["tools"]:
            for path in _value_paths(t["parameters"]):
                node = node_at(t["parameters"], path) or {}
                for v in (_string_enum(node) or []) + [node[k] for k in ("default", "const") if k in node]:
                    where.setdefault(_json.canonical(v), set()).add((t["name"], path))
            for args in _calls_of_tool(record, t["name"]):
                for path in _value_paths(t["parameters"]):
                    for v in values_at(args, path):
                        if not isinstance(v, (dict, list)):
                            where.setdefault(_json.canonical(v), set()).add((t["name"], path))

        text_toks: list[frozenset[str]] = []  # the tokens of every text, made on first use

        def mentioned(forms: list[str]) -> bool:
            if not all(is_plain_token(f) for f in forms):
                return any(find_tokens(text, forms) for text in texts)
            if not text_toks:  # find_tokens finds a plain form in a text exactly when it is one of its tokens
                text_toks.append(frozenset().union(*map(text_tokens, texts)))
            return not text_toks[0].isdisjoint(forms)

        steps = []
        for t in record["tools"]:
            for path in _value_paths(t["parameters"]):
                node = node_at(t["parameters"], path)
                if node is None or (t["name"] == skill["name"] and path == (skill["argument"],)):
                    continue
                enum = _string_enum(node)
                if "enum" in self.modes and enum:
                    table = []
                    used = set(enum)
                    for v in enum:
                        if rng.random() >= self.p:
                            continue
                        style = rng.choice(self.styles)
                        if v in literals or v in names or where.get(_json.canonical(v), set()) - {(t["name"], path)}:
                            continue
                        if mentioned([v]) and not (is_identifier_like(v) and re.fullmatch(r"[A-Za-z0-9_\-]+", v)):
                            continue
                        new = _fresh(lambda: new_name(v, style, rng, mask_len=(4, 8), banks=self.banks),
                                     lambda n: n != v and n not in used and n not in taken
                                     and re.fullmatch(r"[A-Za-z0-9_\-]+", n) is not None,
                                     retry=style in RANDOM_STYLES)
                        if new is None:
                            continue
                        used.add(new)
                        table.append([v, new])
                    if table:
                        steps.append({"op": "values", "tool": t["name"], "path": list(path), "map": table,
                                      "texts": True})
                elif "default" in self.modes and "default" in node and not enum and "const" not in node:
                    d = node["default"]
                    if isinstance(d, bool) or not isinstance(d, (int, float)) or "$ref" in _json.dumps(node):
                        continue
                    calls = [v for args in _calls_of_tool(record, t["name"]) for v in values_at(args, path)]
                    if not any(_json.strict_equal(v, d) for v in calls) or rng.random() >= self.p:
                        continue
                    new = self._redraw(d, node, rng)
                    if new is None or mentioned(_num_text(d) + _num_text(new)):
                        continue
                    if any(_json.strict_equal(v, new) for v in calls):
                        continue
                    steps.append({"op": "values", "tool": t["name"], "path": list(path),
                                  "map": [[d, new], [new, d]], "texts": False})
        if not steps:
            return Skip("no value can change safely (no string enum or used number default that is unambiguous)")
        return {"steps": steps}

    @staticmethod
    def _redraw(d: int | float, node: dict, rng: random.Random) -> int | float | None:
        from hsa.verify import validator_for

        check = {k: v for k, v in node.items() if k in ("type", "minimum", "maximum", "exclusiveMinimum",
                                                          "exclusiveMaximum", "multipleOf")}
        v = validator_for(check)
        span = max(5, abs(d))
        for _ in range(16):
            if isinstance(d, int):
                lo = node.get("minimum", d - span if d < 0 else 0)
                hi = node.get("maximum", d + span)
                try:
                    new: int | float = rng.randint(int(lo), int(hi))
                except ValueError:
                    return None
            else:
                new = float(round(d + rng.uniform(-span, span), 2))
            if not _json.strict_equal(new, d) and v.is_valid(new):
                return new
        return None

    def apply(self, record: Record, params: dict) -> Record:
        return _apply_steps(record, params["steps"], ("values",), "tool.values")


# --------------------------------------------------------------------------- dialect


@register
@dataclasses.dataclass(frozen=True)
class Dialect(Transform):
    """Render the tool list as OpenAI, Anthropic, MCP or Gemini (OpenAPI-subset) definitions.

    A target is drawn from ``targets`` among those every tool name is legal in and that
    change the record. Keys the target does not define are
    dropped (noted in the record's notes). For Gemini, local ``$ref`` s are inlined, ``oneOf``
    becomes ``anyOf``, ``[T, "null"]`` becomes ``nullable``; a target whose schemas would no
    longer accept every call (a call passing null to a nullable field) is not drawn. Gemini
    declarations are flat and read back as the ``plain`` dialect; put this transform last in
    a recipe when Gemini's stricter name rule must hold for later renames. Calls do not
    change, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.dialect"
    family: ClassVar[str] = "tool"

    targets: tuple[str, ...] = ("openai", "anthropic", "mcp")

    def __post_init__(self):
        bad = [t for t in self.targets if t not in DIALECTS]
        if not self.targets or bad:
            raise ValueError(f"targets must be some of {list(DIALECTS)} (got {list(self.targets)})")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        from hsa.verify import check_record

        if not record["tools"]:
            return Skip("no tools")
        options = [d for d in self.targets if all(DIALECT_NAME_RULES[d].match(t["name"]) for t in record["tools"])]
        rng.shuffle(options)
        before = _json.canonical(record["tools"])
        for target in options:
            try:
                out = self.apply(record, {"target": target})
            except UnsupportedSchema:
                continue
            if _json.canonical(out["tools"]) != before and not check_record(out):
                return {"target": target}
        return Skip("no target dialect fits (names illegal there, or schemas without a faithful form)")

    def apply(self, record: Record, params: dict) -> Record:
        target = params["target"]
        if target not in DIALECTS:
            raise ValueError(f"tool.dialect: unknown target {target!r}; expected one of {list(DIALECTS)}")
        out = clone(record)
        tools = []
        for t in out["tools"]:
            new, dropped = convert_tool(t, target)
            if dropped:
                out["notes"].append(f"tool.dialect: {t['name']!r} to {target}: dropped {', '.join(dropped)}")
            tools.append(new)
        out["tools"] = tools
        return out


# --------------------------------------------------------------------------- irrelevance


@register
@dataclasses.dataclass(frozen=True)
class Irrelevance(Transform):
    """Task-changing (opt-in): remove the gold tool of one turn and relabel the answer as no call.

    An assistant turn that calls tools other than the skill tool, none of them called
    earlier, is drawn; the trajectory is cut there, those tools are removed from the tool
    list, and the turn becomes a reply from the ``replies`` bank. The mapping gets an
    ``{"op": "opaque"}`` step: the variant is never counted as task-preserving, invariants
    2 and 6 do not apply to it, and the pipeline reports it separately.
    """

    name: ClassVar[str] = "tool.irrelevance"
    family: ClassVar[str] = "tool"
    task_preserving: ClassVar[bool] = False

    banks: tuple[str, ...] = ()

    def __post_init__(self):
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        skill = record["skill_tool"]["name"]
        replies = [str(r) for r in load_banks(tuple(self.banks))["replies"]]
        if not replies:
            return Skip("the replies bank is empty")
        seen: set[str] = set()
        turns = []
        for mi, m in enumerate(record["messages"]):
            called = [c["function"]["name"] for c in m.get("tool_calls") or ()]
            gold = sorted({n for n in called if n != skill})
            if gold and not (set(gold) & seen) and m.get("role") == "assistant":
                turns.append((mi, gold))
            seen.update(called)
        if not turns:
            return Skip("no assistant turn calls a tool that was not called before")
        mi, gold = turns[rng.randrange(len(turns))]
        return {"turn": mi, "removed": gold, "reply": rng.choice(replies)}

    def apply(self, record: Record, params: dict) -> Record:
        turn, removed = params["turn"], set(params["removed"])
        msg = record["messages"][turn] if turn < len(record["messages"]) else {}
        called = {c["function"]["name"] for c in msg.get("tool_calls") or ()}
        if not removed or not removed <= called:
            raise ValueError(f"tool.irrelevance: message {turn} does not call {sorted(removed)}")
        out = clone(record)
        out["messages"] = out["messages"][:turn] + [{"role": "assistant", "content": params["reply"]}]
        out["tools"] = [t for t in out["tools"] if t["name"] not in removed]
        if out.get("hook_events"):
            out["hook_events"] = [e for e in out["hook_events"] if e.get("message_index", 0) < turn]
        out["mapping"].append({"op": "opaque", "transform": self.name, "removed": sorted(removed), "turn": turn})
        return out
