"""The work of the ``tool`` family's transforms, as pure functions (the albumentations ``functional.py``).

:mod:`transforms.tool` holds the transforms: their options, their checks, and ``sample``, which
draws every random choice into JSON params. What does not draw is here: finding what a transform
may change (candidates, sites, pools) and carrying params into a record (``apply``). Every
function is deterministic and returns new objects; the input record is never modified (a copy
shares what it does not change: see :func:`with_own_tools`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hsa import _json
from hsa.mapping import ARRAY
from hsa.names import (STYLES, find_tokens, is_identifier_like, is_legal, is_legal_param, is_plain_token, split_words,
                       text_tokens)
from hsa.records import Record, clone, iter_calls, normalize_schema
from hsa.schema_facts import schema_fact
from hsa.renames import param_paths
from hsa.step_apply import rename_declared_params as _rename_declared
from hsa.step_apply import renamed_alike
from transforms._domains import domain_applies, harness_domain, pool_tool_words, text_domain, tool_words, words_relevance
from transforms._banks import load_banks
from transforms._toolnames import NAME_STYLES, detect_style
from transforms._toolschema import (
    CONSTRAINING_KEYS,
    convert_tool,
    described_pointers,
    get_pointer,
    node_at,
    object_pointers,
    set_pointer,
    to_strict,
    update_at,
    values_at,
)

if TYPE_CHECKING:
    from hsa.transform import Facts

__all__ = [
    "tool_named",
    "with_own_tools",
    "calls_of_tool",
    "object_paths",
    "local_refs_only",
    "keys_in_calls",
    "harness_names",
    "mention_finder",
    "mention_asker",
    "mentioned_in_texts",
    "param_owners",
    "named_paths",
    "tools_named_paths",
    "check_styles",
    "check_range",
    "check_banks",
    "fresh_name",
    "renamed_alike",
    "swappable_keys",
    "rename_declared_params",
    "check_declared",
    "checked_steps",
    "reorder",
    "objects",
    "descriptions",
    "enum_words",
    "set_descriptions",
    "drop_descriptions",
    "name_in_style",
    "nest_parents",
    "nest_step",
    "flatten_candidates",
    "calls_fit_object",
    "pool_file",
    "pool_tools",
    "internal_tool",
    "pool_tool_domain",
    "distractor_candidates",
    "near_candidates",
    "add_distractors",
    "takes_new_params",
    "free_param_name",
    "require_step",
    "json_type",
    "value_paths",
    "string_enum",
    "number_texts",
    "value_sites",
    "schema_value_sites",
    "call_value_sites",
    "passes_value",
    "value_nodes",
    "enum_value_changeable",
    "convert_tools",
    "gold_turns",
    "cut_at_turn",
]


# --------------------------------------------------------------------------- option checks and fresh names


def check_styles(styles: tuple[str, ...], allowed: tuple[str, ...] = NAME_STYLES) -> None:
    """A transform's ``styles`` option: at least one, each of ``allowed``."""
    if not styles:
        raise ValueError("styles must name at least one style")
    bad = [s for s in styles if s not in allowed]
    if bad:
        raise ValueError(f"unknown style(s) {bad}; expected some of {list(allowed)}")


def check_range(value: Any, what: str, lo_min: int = 0) -> tuple[int, int]:
    """An int or ``[lo, hi]`` option, as ``(lo, hi)``."""
    lo, hi = (value, value) if isinstance(value, int) else tuple(value)
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo < lo_min or hi < lo:
        raise ValueError(f"{what} must be an int or [lo, hi] with {lo_min} <= lo <= hi (got {value!r})")
    return lo, hi


def check_banks(banks: tuple[str, ...]) -> None:
    """A ``banks`` option: the files are read and validated now, so a bad path fails when the recipe is built."""
    load_banks(tuple(banks))


def fresh_name(make, ok, retry: bool, tries: int = 8) -> str | None:
    """The first name ``make()`` draws that passes ``ok`` (one draw unless ``retry``), else None."""
    for _ in range(tries if retry else 1):
        name = make()
        if ok(name):
            return name
    return None


# --------------------------------------------------------------------------- records and calls


def tool_named(record: Record, name: str, what: str) -> dict:
    for t in record["tools"]:
        if t["name"] == name:
            return t
    raise ValueError(f"{what}: tool {name!r} is not in the record (tools: {[t['name'] for t in record['tools']]})")


def with_own_tools(record: Record) -> Record:
    """A copy of ``record`` whose tool list and tools are its own (one level); every other part, schemas
    included, is shared with ``record``, which transforms never modify: for an apply that sets tool fields
    and replaces (never edits) schemas."""
    out = dict(record)
    out["tools"] = [dict(t) for t in record["tools"]]
    return out


def calls_of_tool(record: Record, name: str) -> list[dict]:
    return [c["function"]["arguments"] for _, _, c in iter_calls(record) if c["function"]["name"] == name]


def checked_steps(steps: list[dict], kinds: tuple[str, ...], what: str) -> list[dict]:
    """``steps`` (a transform's params), each checked to be of one of ``kinds`` (``values``, ``params:regroup``)."""
    for step in steps:
        op = step.get("op")
        kind = f"params:{step.get('kind')}" if op == "params" else op
        if kind not in kinds:
            raise ValueError(f"{what}: params may only hold steps of kind {list(kinds)} (got {kind!r})")
    return steps


def object_paths(schema: dict) -> list[tuple]:
    """Paths of the objects of ``schema`` that declare properties: the root ``()`` and nested ones."""
    out = [()] if isinstance(schema.get("properties"), dict) else []
    for p in param_paths(schema):
        node = node_at(schema, p)
        if node is not None and isinstance(node.get("properties"), dict):
            out.append(p)
        if node is not None and isinstance(node.get("items"), dict) and isinstance(node["items"].get("properties"), dict):
            out.append(p + (ARRAY,))
    return out


def local_refs_only(schema: Any) -> bool:
    """True when every ``$ref`` of ``schema`` points into the root's ``$defs``/``definitions``
    (those stay valid when properties move)."""
    text = _json.dumps(schema)
    if '"$ref"' not in text:
        return True
    refs = re.findall(r'"\$ref":"([^"]*)"', text)
    return all(r.startswith(("#/$defs/", "#/definitions/")) for r in refs)


def keys_in_calls(record: Record, tool: str, parent: tuple) -> set[str]:
    keys: set[str] = set()
    for args in calls_of_tool(record, tool):
        for v in values_at(args, parent):
            if isinstance(v, dict):
                keys.update(v)
    return keys


# --------------------------------------------------------------------------- names


def harness_names(record: Record) -> set[str]:
    """Every tool, skill and parameter name of the record."""
    names = {t["name"] for t in record["tools"]} | {s["name"] for s in record.get("skills") or ()}
    for t in record["tools"]:
        names.update(p[-1] for p in param_paths(t["parameters"]) if p[-1] != ARRAY)
    return names


def mention_finder(texts: list[str]) -> Callable[[list[str]], bool]:
    """``mentioned(forms)``: whether any of ``forms`` occurs as a whole token in one of ``texts``. Plain forms are
    looked up in the tokens of every text (made once, on first use), others are searched for text by text."""
    text_toks: list[frozenset[str]] = []

    def mentioned(forms: list[str]) -> bool:
        if not all(is_plain_token(f) for f in forms):
            return any(find_tokens(text, forms) for text in texts)
        if not text_toks:  # find_tokens finds a plain form in a text exactly when it is one of its tokens
            text_toks.append(frozenset().union(*map(text_tokens, texts)))
        return not text_toks[0].isdisjoint(forms)

    return mentioned


def mention_asker(facts: Facts) -> Callable[[list[str]], bool]:
    """:func:`mention_finder` of the record's :func:`~hsa.record_texts.text_fields` for a sampler on the harness: the
    same answers, asked through ``facts`` (a plain form as a membership test of
    :func:`~hsa.record_texts.text_words`, another as :func:`mentioned_in_texts`), so a draw is kept with what it
    asked and reused by the records that answer alike."""
    from hsa.record_texts import text_words

    words: list = []

    def mentioned(forms: list[str]) -> bool:
        if not all(is_plain_token(f) for f in forms):
            return facts.ask(mentioned_in_texts, tuple(forms))
        if not words:
            words.append(facts.ask_set(text_words))
        return any(f in words[0] for f in forms)

    return mentioned


def mentioned_in_texts(record: Record, forms: tuple[str, ...]) -> bool:
    """Whether any of ``forms`` occurs as a whole token in a text of ``record``
    (:func:`~hsa.record_texts.text_fields`): :func:`mention_finder`'s answer, asked of one record."""
    from hsa.record_texts import text_fields

    return any(find_tokens(text, forms) for text in text_fields(record))


def param_owners(record: Record) -> dict[str, int]:
    """How many parameters (at any depth, over every tool) carry each parameter name."""
    owners: dict[str, int] = {}
    for t in record["tools"]:
        for path in param_paths(t["parameters"]):
            if path[-1] != ARRAY:
                owners[path[-1]] = owners.get(path[-1], 0) + 1
    return owners


def tools_named_paths(tools: list[dict]) -> tuple[dict[str, int], list[tuple[list[tuple], dict[tuple, set[str]]]]]:
    """:func:`param_owners` of a record with these tools, and :func:`named_paths` of each tool's schema (fresh
    sets: the caller may add to them)."""
    return param_owners({"tools": tools}), [named_paths(t["parameters"]) for t in tools]


def named_paths(schema: dict) -> tuple[list[tuple], dict[tuple, set[str]]]:
    """The paths of ``schema``'s named parameters (array steps left out), and the names of each level's members."""
    paths = [p for p in param_paths(schema) if p[-1] != ARRAY]
    siblings: dict[tuple, set[str]] = {}
    for p in paths:
        siblings.setdefault(p[:-1], set()).add(p[-1])
    return paths, siblings


def swappable_keys(schema: dict, literals: set[str]) -> list[str]:
    """The top-level parameter names of ``schema`` that may swap names: none when properties are constrained, and
    never a hook literal."""
    if any(k in schema for k in CONSTRAINING_KEYS):
        return []
    return [k for k in (schema.get("properties") or {}) if k not in literals]


def rename_declared_params(record: Record, renames: list[dict], what: str = "tool.param_rename") -> Record:
    """``record`` with parameters renamed (``renames``: ``{"tool", "path", "new"}`` entries), each path declared
    (:func:`check_declared`; then :func:`hsa.step_apply.rename_declared_params`)."""
    check_declared(record["tools"], renames, what)
    return _rename_declared(record, renames)


def check_declared(tools: list[dict], renames: list[dict], what: str) -> dict[str, dict[tuple, str]]:
    """``renames`` (``{"tool", "path", "new"}`` entries) by tool (``{tool: {path: new}}``, in the order the entries
    first name them), each tool one of ``tools`` and each path one it declares, else ``ValueError``."""
    by_tool: dict[str, dict[tuple, str]] = {}
    for entry in renames:
        by_tool.setdefault(entry["tool"], {})[tuple(entry["path"])] = entry["new"]
    known = {t["name"]: t for t in tools}
    for tool, table in by_tool.items():
        if tool not in known:
            raise ValueError(f"{what}: tool {tool!r} is not in the record")
        declared = set(param_paths(known[tool]["parameters"]))
        missing = [list(p) for p in table if p not in declared]
        if missing:
            raise ValueError(f"{what}: {tool!r} declares no parameter at {missing}")
    return by_tool


# --------------------------------------------------------------------------- order and descriptions


def reorder(record: Record, params: dict) -> Record:
    """``record`` with its tools, object properties and ``required`` lists in the orders of ``params``."""
    out = with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
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


def objects(schema: Any) -> list[tuple[str, dict]]:
    """(pointer, subschema) of every object of ``schema`` that declares properties, the root first."""
    return [(ptr, get_pointer(schema, ptr)) for ptr in object_pointers(schema)]


def descriptions(record: Record) -> list[tuple[str, str | None, str]]:
    """(tool, pointer or None for the tool's own description, text) of every description."""
    out = []
    for t in record["tools"]:
        if isinstance(t.get("description"), str):
            out.append((t["name"], None, t["description"]))
        out.extend((t["name"], ptr, text) for ptr, text in schema_fact(t["parameters"], _described))
    return out


def _described(schema: Any) -> tuple[tuple[str, str], ...]:
    """(pointer, description) of every described subschema of ``schema``: a fact of its content."""
    return tuple((ptr, get_pointer(schema, ptr)["description"]) for ptr in described_pointers(schema))


def enum_words(record: Record, tool: str, pointer: str | None) -> tuple[str, ...]:
    """The string enum values of the parameter at ``pointer`` of ``tool`` (its items' when it is a list): what a
    shortened description must keep explaining. Empty for a tool's own description."""
    if pointer is None:
        return ()
    node = get_pointer(tool_named(record, tool, "tool.describe")["parameters"], pointer)
    node = node.get("items") if isinstance(node.get("items"), dict) and "enum" not in node else node
    return tuple(v for v in node.get("enum") or () if isinstance(v, str))


def set_descriptions(record: Record, texts: list[dict], what: str = "tool.describe") -> Record:
    """``record`` with the descriptions of ``texts`` (``{"tool", "at": pointer or None, "text"}``) replaced."""
    out = with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
    for entry in texts:
        t = tool_named(out, entry["tool"], what)
        if entry["at"] is None:
            t["description"] = entry["text"]
        else:
            t["parameters"] = set_pointer(t["parameters"], entry["at"], lambda n, s=entry["text"]: {**n, "description": s})
    return out


def drop_descriptions(record: Record, drop: list[dict], what: str = "tool.drop_descriptions") -> Record:
    """``record`` without the descriptions of ``drop`` (``{"tool", "at": pointer or None}``)."""
    out = with_own_tools(record)  # set_pointer copies along the path: schemas are never changed in place
    for entry in drop:
        t = tool_named(out, entry["tool"], what)
        if entry["at"] is None:
            t.pop("description", None)
        else:
            t["parameters"] = set_pointer(t["parameters"], entry["at"],
                                          lambda n: {k: v for k, v in n.items() if k != "description"})
    return out


# --------------------------------------------------------------------------- structure


def name_in_style(parts: list[str], like: str) -> str:
    words = [w for p in parts for w in split_words(p)]
    if not words:
        return "_".join(parts)
    return STYLES[detect_style(like)](words)


def nest_parents(schema: dict, literals: set[str], lo: int) -> list[tuple[tuple, dict, list[str]]]:
    """The object levels of ``schema`` that may give at least ``lo`` properties to a new object: (path, node,
    groupable keys). Constrained objects and names in hook literals are left out; a nested object keeps one
    property of its own (no pointless wrapper)."""
    parents = []
    for path in object_paths(schema):
        node = node_at(schema, path) if path else schema
        if node is None or any(k in node for k in CONSTRAINING_KEYS) or set(path) & literals:
            continue  # (an object a hook reads by name may be read as a whole)
        keys = [k for k in node["properties"] if k not in literals]
        if path and len(keys) == len(node["properties"]):
            keys = keys[:-1]
        if len(keys) >= lo:
            parents.append((path, node, keys))
    return parents


def nest_step(tool: dict, path: tuple, node: dict, group: list[str], cname: str, strict: bool) -> dict:
    """The ``regroup`` mapping step that moves ``group`` (properties of the object at ``path``) into a new
    object ``cname``: required when one of them was, closed when its parent is or the tool is ``strict``."""
    required = node.get("required") if isinstance(node.get("required"), list) else []
    cschema: dict[str, Any] = {"type": "object"}
    if strict or node.get("additionalProperties") is False:
        cschema["additionalProperties"] = False
    return {"op": "params", "tool": tool["name"], "kind": "regroup",
            "paths": [[list(path) + [g], list(path) + [cname, g]] for g in group],
            "container": {"path": list(path) + [cname], "schema": cschema,
                          "required": any(g in required for g in group)}}


def flatten_candidates(facts: Facts, tool: dict, literals: set[str], taken: Container[str]) -> list[dict]:
    """The ``regroup`` steps that would flatten one object parameter of ``tool`` (one per flattenable object).
    What the calls say is asked of the record through ``facts`` (:class:`hsa.transform.Facts`): whether they pass
    each object as a non-empty object of its declared properties (:func:`calls_fit_object`), and which keys they
    pass beside it (:func:`keys_in_calls`)."""
    schema = tool["parameters"]
    if not local_refs_only(schema):
        return []
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
        if not facts.ask(calls_fit_object, tool["name"], path, tuple(props)):
            continue
        names = {k: name_in_style([path[-1], k], path[-1]) for k in props}
        new = list(names.values())
        if len(set(new)) != len(new) or not all(is_legal_param(n) for n in new):
            continue
        # a new name must be no other member of the parent (declared, or passed beside it in a call) and no token
        siblings = parent["properties"]
        called = facts.ask_set(keys_in_calls, tool["name"], path[:-1])
        if any(n != path[-1] and (n in siblings or n in called) for n in new) or any(n in taken for n in new):
            continue
        required = parent.get("required") if isinstance(parent.get("required"), list) else []
        out.append({"op": "params", "tool": tool["name"], "kind": "regroup",
                    "paths": [[list(path) + [k], list(path[:-1]) + [names[k]]] for k in props],
                    "container": {"path": list(path),
                                  "schema": {k: v for k, v in node.items() if k != "properties"},
                                  "required": path[-1] in required}})
    return out


def calls_fit_object(record: Record, tool: str, path: tuple, props: tuple[str, ...]) -> bool:
    """Whether every value the calls of ``tool`` in ``record`` pass at ``path`` is a non-empty object of keys among
    ``props`` (what an object must be for its properties to move up into its parent)."""
    declared = set(props)
    return not any(not isinstance(v, dict) or not v or set(v) - declared
                   for args in calls_of_tool(record, tool) for v in values_at(args, path))


# --------------------------------------------------------------------------- distractors


@lru_cache(maxsize=16)
def pool_file(path: str) -> tuple[str, ...]:
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
def pool_tools(path: str) -> tuple[dict, ...]:
    return tuple(_json.loads(s) for s in pool_file(path))


def internal_tool(raw: dict, dialect: str, strict: bool) -> dict:
    """Pool tool ``raw`` in the internal form, in ``dialect`` (strict form when ``strict``): a fresh copy of what
    :func:`_internal_tool` makes. Pool tools are static (the banks, a pool file) and the same few are drawn for
    every record of a harness, so their internal forms are a static table (:func:`_internal_of`, by the pool
    tool's exact content), loaded as they are drawn."""
    return _json.copy(_internal_of(_ByContent(raw), dialect, strict))


class _ByContent:
    """A JSON value as a hashable key: equal when their :func:`hsa.cache.exact_key` is (key order, ``1`` / ``1.0``
    / ``True``, NaN / ``None`` told apart)."""

    __slots__ = ("value", "key")

    def __init__(self, value: Any):
        from hsa.cache import exact_key

        self.value, self.key = value, exact_key(value)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByContent) and self.key == other.key


@lru_cache(maxsize=4096)
def _internal_of(raw: _ByContent, dialect: str, strict: bool) -> dict:
    return _internal_tool(raw.value, dialect, strict)


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


def pool_tool_domain(raw: dict) -> str | None:
    """A pool tool's ``domain`` (bank tools state one), else the domain its own words vote for."""
    if isinstance(raw.get("domain"), str):
        return raw["domain"]
    return text_domain(tool_words(raw)["all"])


_UNSET = object()  # no domain given


def distractor_candidates(record: Record, candidates: Sequence[dict], taken: Container[str], dialect: str,
                          max_relevance: float, *, domain: Any = _UNSET,
                          name_of: Callable[[dict], str] | None = None) -> tuple[list[dict], list[dict], list[int],
                                                                                  list[int]]:
    """Which ``candidates`` (pool tools) may be added to ``record``: ``(legal, pool, other, rest)``. ``legal``: names
    free, not a real tool's words, legal in ``dialect``; ``pool``: those of them irrelevant to every real tool
    (relevance below ``max_relevance``); ``other`` / ``rest``: indices into ``pool`` of another domain than the
    harness's (drawn first) / of the same or no domain. ``domain``: the record's :func:`harness_domain`, when the caller
    has it; only ``record["tools"]`` is read then. ``name_of``: the name a candidate will have in the record (its
    pool name restyled like its neighbours, :func:`transforms._toolshape.distractor_name`); it must be free and
    legal."""
    tools = record["tools"]
    words = {tuple(split_words(t["name"])) for t in tools}
    named = [name_of(t) if name_of else t["name"] for t in candidates]
    legal_at = [i for i, t in enumerate(candidates)
                if named[i] not in taken and tuple(split_words(t["name"])) not in words and is_legal(named[i], dialect)]
    near = near_candidates(candidates, tools, max_relevance)
    legal = [candidates[i] for i in legal_at]
    pool = [candidates[i] for i in legal_at if not near[i]]
    if domain is _UNSET:
        domain = harness_domain(record)
    other = [i for i, t in enumerate(pool) if not domain_applies(pool_tool_domain(t), domain)]
    rest = [i for i in range(len(pool)) if i not in set(other)]
    return legal, pool, other, rest


def near_candidates(candidates: Sequence[dict], tools: list[dict], max_relevance: float) -> tuple[bool, ...]:
    """For each of ``candidates`` (pool tools), whether it is near one of ``tools`` (its
    :func:`transforms._domains.relevance` to one reaches ``max_relevance``): a function of the tools alone, which
    ``tool.distractors`` asks once per pool slot of a harness (it samples on the harness)."""
    real = [tool_words(t) for t in tools]
    every = frozenset().union(*(r["all"] for r in real))
    out = []
    for t in candidates:  # words_relevance against every real tool, the pairs that cannot score left out
        a = pool_tool_words(t)
        if not a["all"] & every:  # no word shared with any real tool (its name's are some): relevance 0 to each
            near = 0.0
        elif a["name"] & every:  # a word of its name is a word of a real tool: relevance 1 to that one
            near = 1.0
        else:
            near = max(words_relevance(a, r) for r in real)
        out.append(near >= max_relevance)
    return tuple(out)


def add_distractors(record: Record, params: dict, what: str = "tool.distractors") -> Record:
    """``record`` with the distractor parameters and tools of ``params`` added (tools at their indices)."""
    out = with_own_tools(record)  # the schemas are replaced, never changed in place
    for entry in params.get("params", ()):
        t = tool_named(out, entry["tool"], what)
        props = t["parameters"].get("properties") or {}
        if entry["name"] in props:
            raise ValueError(f"{what}: {entry['tool']!r} already has a parameter {entry['name']!r}")
        t["parameters"] = {**t["parameters"], "properties": {**props, entry["name"]: _json.copy(entry["schema"])}}
    names = {t["name"] for t in out["tools"]}
    for entry in params.get("tools", ()):
        tool = _json.copy(entry["tool"])
        if tool["name"] in names:
            raise ValueError(f"{what}: the record already has a tool named {tool['name']!r}")
        names.add(tool["name"])
        out["tools"].insert(min(entry["index"], len(out["tools"])), tool)
    return out


def takes_new_params(schema: dict) -> bool:
    """True when a parameter can be added at the top level of ``schema`` (it declares properties, unconstrained)."""
    return isinstance(schema.get("properties"), dict) and not any(k in schema for k in CONSTRAINING_KEYS)


def free_param_name(record: Record, tool: dict, name: str, taken: Container[str]) -> bool:
    """True when ``name`` is free for a new top-level parameter of ``tool``: not declared, passed or ``taken``."""
    return (name not in tool["parameters"]["properties"] and name not in taken
            and not passed_in_calls(record, tool["name"], name))


def passed_in_calls(record: Record, tool: str, name: str) -> bool:
    """Whether a call of ``tool`` in ``record`` passes a top-level argument ``name``."""
    return name in keys_in_calls(record, tool, ())


def require_step(tool: str, entry: dict) -> dict:
    """The ``require`` mapping step that adds bank ``entry`` (``{name, value, description}``) to ``tool``."""
    value = entry["value"]
    prop = {"type": json_type(value), "enum": [value]}
    if entry.get("description"):
        prop["description"] = str(entry["description"])
    return {"op": "params", "tool": tool, "kind": "require", "paths": [], "fill": [[[str(entry["name"])], value]],
            "schema": prop}


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    raise ValueError(f"a required one-value parameter needs a string, number or boolean value (got {value!r})")


# --------------------------------------------------------------------------- values


def value_paths(schema: dict) -> list[tuple]:
    out = []
    for p in param_paths(schema):
        node = node_at(schema, p)
        if node is None:
            continue
        out.append(p)
        if isinstance(node.get("items"), dict):
            out.append(p + (ARRAY,))
    return out


def string_enum(node: dict) -> list[str] | None:
    branches = [node] + [b for k in ("anyOf", "oneOf") for b in node.get(k) or () if isinstance(b, dict)]
    for b in branches:
        enum = b.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            return list(enum)
    return None


def number_texts(value: Any) -> list[str]:
    forms = [_json.dumps(value)]
    if isinstance(value, float) and value.is_integer():
        forms.append(str(int(value)))
    return forms


def value_nodes(schema: dict) -> tuple[tuple[tuple, tuple[str, ...] | None, tuple[str, ...], bool], ...]:
    """``(path, string enum or None, canonical texts of the values the node lists, whether it has a default and no
    const)`` for every path of :func:`value_paths` (each has a node): the enum (:func:`string_enum`) and its
    ``default`` / ``const``. A fact of the schema (:func:`hsa.schema_facts.schema_fact`, exact: it reads the
    schema's values): the records of a harness share it."""
    return schema_fact(schema, _value_nodes, exact=True, size=_nodes_size)


def _nodes_size(nodes: tuple) -> int:
    return 300 * len(nodes)


def _value_nodes(schema: dict) -> tuple:
    out = []
    for path in value_paths(schema):
        node = node_at(schema, path) or {}
        enum = string_enum(node)
        listed = (enum or []) + [node[k] for k in ("default", "const") if k in node]
        out.append((path, None if enum is None else tuple(enum), tuple(_json.canonical(v) for v in listed),
                    "default" in node and "const" not in node))
    return tuple(out)


def value_sites(record: Record) -> dict[str, set]:
    """Every (tool, path) each JSON value (by its canonical text) occurs at, in schemas and in calls: the union of
    :func:`schema_value_sites` and :func:`call_value_sites`."""
    where = schema_value_sites(record["tools"])
    for v, sites in call_value_sites(record).where.items():
        where.setdefault(v, set()).update(sites)
    return where


def schema_value_sites(tools: list[dict]) -> dict[str, set]:
    """The schema half of :func:`value_sites`: every (tool, path) each value a schema lists occurs at (a fact of the
    harness)."""
    where: dict[str, set] = {}
    for t in tools:
        for path, _, listed, _ in value_nodes(t["parameters"]):
            for v in listed:
                where.setdefault(v, set()).add((t["name"], path))
    return where


class CallSites:
    """The call half of :func:`value_sites`, for membership tests: ``(value, site) in sites`` is whether a call
    passes the value (its canonical text) at a (tool, path) other than ``site``."""

    __slots__ = ("where",)

    def __init__(self, where: dict[str, set]):
        self.where = where

    def __contains__(self, item: tuple) -> bool:
        value, site = item
        found = self.where.get(value)
        return bool(found) and bool(found - {site})


def call_value_sites(record: Record) -> CallSites:
    """Every (tool, path) each JSON value (its canonical text) is passed at in the calls of ``record``, at the
    value paths of its tools' schemas, as a :class:`CallSites` (asked as ``facts.ask_set(call_value_sites)``)."""
    where: dict[str, set] = {}
    calls: dict[str, list] = {}
    for _, _, c in iter_calls(record):
        calls.setdefault(c["function"]["name"], []).append(c["function"]["arguments"])
    for t in record["tools"]:
        passed = calls.get(t["name"])
        if not passed:
            continue
        nodes = value_nodes(t["parameters"])
        for args in passed:
            for path, _, _, _ in nodes:
                for v in values_at(args, path):
                    if not isinstance(v, (dict, list)):
                        where.setdefault(_json.canonical(v), set()).add((t["name"], path))
    return CallSites(where)


def passes_value(record: Record, tool: str, path: tuple, value: Any) -> bool:
    """Whether a call of ``tool`` in ``record`` passes ``value`` (strictly equal: its type too) at ``path``."""
    return any(_json.strict_equal(v, value) for args in calls_of_tool(record, tool) for v in values_at(args, path))


def explain_values(record: Record, explain: Sequence[dict], what: str = "tool.values") -> Record:
    """``record`` with each masked value of ``explain`` (``{"tool", "path", "map": [[old, new], ...]}``, names as in
    ``record``) explained where its schema describes the parameter: a sentence listing every value of the enum in
    its order, a masked one with the value it stands for (``The value must be one of "kQ3vZr" (error),
    "warning".``), appended to the parameter's description (the property's, for an array's items)."""
    out = with_own_tools(record)
    for entry in explain:
        t = tool_named(out, entry["tool"], what)
        path = tuple(entry["path"])
        prop = path[:-1] if path and path[-1] == ARRAY else path
        node = node_at(t["parameters"], path)
        enum = string_enum(node or {})
        if node is None or enum is None:
            raise ValueError(f"{what}: {entry['tool']!r} has no string enum at {list(path)}")
        meaning = {new: old for old, new in entry["map"]}
        listed = ", ".join(f"{_json.dumps(v)} ({meaning[v]})" if v in meaning else _json.dumps(v) for v in enum)
        sentence = f"{'Each item' if prop != path else 'The value'} must be one of {listed}."

        def described(n: dict, sentence: str = sentence) -> dict:
            desc = n.get("description")
            text = sentence if not isinstance(desc, str) or not desc.strip() else \
                f"{desc.rstrip()}{'' if desc.rstrip().endswith(('.', '!', '?')) else '.'} {sentence}"
            return {**n, "description": text}

        t["parameters"] = update_at(t["parameters"], prop, described) if prop else described(t["parameters"])
    return out


# --------------------------------------------------------------------------- dialect and irrelevance


def enum_value_changeable(value: str, site: tuple, reserved: set[str], where: dict[str, set],
                          mentioned: Callable[[list[str]], bool], calls: Container | None = None) -> bool:
    """True when the enum ``value`` at ``site`` (tool, path) may be renamed: not a hook literal or a name
    (``reserved``), used at no other tool or path (``where``: :func:`value_sites`; or, with ``calls``, ``where`` the
    schemas' :func:`schema_value_sites` and ``calls`` the :func:`call_value_sites`), and, when a text mentions it,
    one that cannot be a plain word there (identifier-like)."""
    canonical = _json.canonical(value)
    if value in reserved or where.get(canonical, set()) - {site}:
        return False
    if calls is not None and (canonical, site) in calls:
        return False
    # identifier-like first: a mention is asked only where it decides (a sampler on the harness records each question)
    return (is_identifier_like(value) and re.fullmatch(r"[A-Za-z0-9_\-]+", value) is not None) or not mentioned([value])


def convert_tools(record: Record, target: str) -> Record:
    """``record`` with every tool rendered in dialect ``target``; what the target cannot hold is noted."""
    out = clone(record)
    tools = []
    for t in out["tools"]:
        new, dropped = convert_tool(t, target)
        if dropped:
            out["notes"].append(f"tool.dialect: {t['name']!r} to {target}: dropped {', '.join(dropped)} "
                                f"(the target does not define them; canonicalize gives them back)")
        tools.append(new)
    out["tools"] = tools
    return out


def gold_turns(record: Record) -> list[tuple[int, list[str]]]:
    """(message index, tools) of the assistant turns that call tools other than the skill tool, none called before."""
    skill = record["skill_tool"]["name"]
    seen: set[str] = set()
    turns = []
    for mi, m in enumerate(record["messages"]):
        called = [c["function"]["name"] for c in m.get("tool_calls") or ()]
        gold = sorted({n for n in called if n != skill})
        if gold and not (set(gold) & seen) and m.get("role") == "assistant":
            turns.append((mi, gold))
        seen.update(called)
    return turns


def cut_at_turn(record: Record, params: dict, what: str = "tool.irrelevance") -> Record:
    """``record`` cut at turn ``params["turn"]``, whose tools ``params["removed"]`` leave the tool list, the turn
    replaced by the reply ``params["reply"]``; the mapping gets an opaque step (the task changed)."""
    turn, removed = params["turn"], set(params["removed"])
    msg = record["messages"][turn] if turn < len(record["messages"]) else {}
    called = {c["function"]["name"] for c in msg.get("tool_calls") or ()}
    if not removed or not removed <= called:
        raise ValueError(f"{what}: message {turn} does not call {sorted(removed)}")
    out = clone(record)
    out["messages"] = out["messages"][:turn] + [{"role": "assistant", "content": params["reply"]}]
    out["tools"] = [t for t in out["tools"] if t["name"] not in removed]
    if out.get("hook_events"):
        out["hook_events"] = [e for e in out["hook_events"] if e.get("message_index", 0) < turn]
    out["mapping"].append({"op": "opaque", "transform": what, "removed": sorted(removed), "turn": turn})
    return out
