"""Tool definitions: one read from any dialect into the internal form (:class:`hsa.record_model.Tool`), and
written back in the dialect it came in.

Dialects: OpenAI (``{"type": "function", "function": {...}}``), Anthropic (``input_schema``), MCP
(``inputSchema``), flat (``{"name", "parameters"}``), Gemini ``functionDeclarations`` groups, JSON-text tools,
xLAM's bare parameter maps and the other spellings public datasets use (``input_parameters``, a ``required``
list beside the parameters). Parameter schemas become standard JSON Schema (:func:`normalize_schema`: Python
and Java type names, ``"string, optional"``, draft-3 ``required: true``, parameters listed as objects). Each
change is noted; :func:`normalize_tool` caches per (tool, position), since a dataset's tools repeat from record
to record.
"""

from __future__ import annotations

import re
from hashlib import blake2b as _blake2b
from typing import Any

import orjson as _orjson

from hsa import _json
from hsa import cache as _cache
from hsa.record_model import RecordError, Tool

__all__ = ["normalize_schema", "normalize_tool", "normalize_tools", "read_tool", "denormalize_tool", "read_tool_list",
           "DIALECT_FIELDS", "FIELD_EQUIVALENTS"]

#: The fields each dialect's tool definition defines besides its name, description and parameter schema (kept in a
#: tool's ``extra``; OpenAI's outer ``type`` is the wrapper, kept in ``outer``). Read from the specifications:
#:
#: * ``mcp``: the ``Tool`` of the Model Context Protocol schema, 2025-11-25 (``schema/2025-11-25/schema.ts``:
#:   ``BaseMetadata`` name, title; ``Icons`` icons; description, inputSchema, execution, outputSchema,
#:   annotations, ``_meta``) and 2026-07-28 (the same but ``execution``);
#: * ``anthropic``: ``ToolParam`` of the Messages API (anthropic-sdk-python ``types/tool_param.py``, 2026-08):
#:   name, description, input_schema, type (``"custom"``), cache_control, strict, input_examples, defer_loading,
#:   allowed_callers, eager_input_streaming;
#: * ``openai``: Chat Completions ``FunctionDefinition`` (openai-python ``shared_params/function_definition.py``,
#:   2026-08): name, description, parameters, strict, inside ``{"type": "function", "function": ...}``;
#: * ``gemini``: ``FunctionDeclaration`` (google-genai): name, description, parameters, parametersJsonSchema,
#:   response, responseJsonSchema, behavior.
#:
#: ``tool.dialect`` keeps every field the target defines and never converts a tool into its own dialect; the fields
#: a target cannot hold are noted on the record and given back by ``hsa canonicalize`` (the restore patch).
DIALECT_FIELDS: dict[str, frozenset[str]] = {
    "mcp": frozenset({"title", "outputSchema", "annotations", "icons", "execution", "_meta"}),
    "anthropic": frozenset({"type", "cache_control", "strict", "input_examples", "defer_loading", "allowed_callers",
                            "eager_input_streaming"}),
    "openai": frozenset({"strict"}),
    "gemini": frozenset({"parametersJsonSchema", "response", "responseJsonSchema", "behavior"}),
}

#: Fields one dialect defines under another name: (from, to) -> {field: the target's field}. MCP's ``outputSchema``
#: is Gemini's ``responseJsonSchema`` (both JSON Schema of what the function returns).
FIELD_EQUIVALENTS: dict[tuple[str, str], dict[str, str]] = {
    ("mcp", "gemini"): {"outputSchema": "responseJsonSchema"},
    ("gemini", "mcp"): {"responseJsonSchema": "outputSchema"},
}


_TYPE_ALIASES = {
    "dict": "object", "object": "object", "map": "object", "hashmap": "object", "json": "object",
    "float": "number", "double": "number", "number": "number", "decimal": "number", "numeric": "number",
    "float32": "number", "float64": "number",
    "int": "integer", "integer": "integer", "long": "integer", "short": "integer", "int32": "integer", "int64": "integer",
    "int8": "integer", "int16": "integer", "uint": "integer", "uint8": "integer", "uint16": "integer",
    "uint32": "integer", "uint64": "integer",
    "str": "string", "string": "string", "char": "string", "text": "string", "date": "string", "datetime": "string",
    "bool": "boolean", "boolean": "boolean",
    "list": "array", "array": "array", "tuple": "array", "set": "array", "sequence": "array",
    "null": "null", "none": "null", "nonetype": "null",
}
_ANY_TYPES = {"any", "anytype", "mixed", "unknown", "*"}
#: The JSON-Schema type names: :func:`_normalize_type` gives each back as it is, without a note, and
#: :func:`_generic_keywords` nothing for it (read-back tools and most sources hold only these).
_STANDARD_TYPES = {t: t for t in ("string", "integer", "number", "boolean", "object", "array", "null")}
_OPTIONAL_SUFFIX = re.compile(r"(?i)(.*?)\s*,\s*(optional|required)")
_OPTIONAL_OF = re.compile(r"(?i)optional\[(.*)\]")
_GENERIC = re.compile(r"(?i)(list|array|tuple|set|dict|map)\s*\[.*\]")
_UNION = re.compile(r"(?i)union\s*\[(.*)\]")
_SUBSCRIPT = re.compile(r"\[.*\]$")
_OPTIONAL_SUFFIX_END = re.compile(r"(?i)\s*,\s*(optional|required)$")
_OPTIONAL_OF_SPACED = re.compile(r"(?i)optional\s*\[(.*)\]")
_GENERIC_ARGS = re.compile(r"(?i)(list|array|sequence|set|tuple|dict|map|mapping)\s*\[(.*)\]")
#: TypeScript's array spelling, ``string[]``.
_ARRAY_OF = re.compile(r"(.+?)\s*\[\]")
_SUBSCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_KEYS = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_MAP_KEYS = ("properties", "$defs", "definitions", "patternProperties")
#: Draft 4's boolean exclusive bounds, and the bound each qualifies (:func:`_exclusive_bound`).
_EXCLUSIVE_BOUNDS = {"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}


def _normalize_type(value: Any, where: str, notes: list[str]) -> tuple[Any, bool | None]:
    """Standard JSON-Schema type for ``value``; second item says optional (True), required (False) or unknown."""
    if type(value) is str:
        std = _STANDARD_TYPES.get(value)
        if std is not None:
            return std, None
    optional = None
    if isinstance(value, list):
        out = []
        for v in value:
            t, _ = _normalize_type(v, where, notes)
            if t is None:
                return None, None
            if t not in out:
                out.append(t)
        return out, None
    if not isinstance(value, str):
        notes.append(f"{where}: type {value!r} is not a string; dropped")
        return None, None
    raw = value.strip()
    m = _OPTIONAL_SUFFIX.fullmatch(raw)
    if m:
        raw, optional = m.group(1), m.group(2).lower() == "optional"
    m = _OPTIONAL_OF.fullmatch(raw)
    if m:  # Optional[X] is Union[X, None]: null joins X's type, and the parameter may be left out
        inner_notes: list[str] = []
        inner, _ = _normalize_type(m.group(1).strip(), where, inner_notes)
        if inner is None:  # X unknown or any: any value, null included
            notes.extend(inner_notes)
            return None, True
        std = [inner] if isinstance(inner, str) else list(inner)
        if "null" not in std:
            std.append("null")
        notes.append(f"{where}: type {value!r} -> {std!r}")
        return std, True
    if _ARRAY_OF.fullmatch(raw):
        notes.append(f"{where}: type {value!r} -> 'array'")
        return "array", optional
    union = _union_types(raw)
    if union is not None and None not in union:
        notes.append(f"{where}: type {value!r} -> {union!r}")
        return (union[0] if len(union) == 1 else union), optional
    generic = _GENERIC.fullmatch(raw)
    if generic:
        raw = generic.group(1)
    key = raw.lower()
    if key in _ANY_TYPES:
        return None, optional
    std = _TYPE_ALIASES.get(key)
    if std is None:
        notes.append(f"{where}: unknown type {value!r}; dropped (any value accepted)")
        return None, optional
    if std != value:
        notes.append(f"{where}: type {value!r} -> {std!r}")
    return std, optional


def _split_args(text: str) -> list[str]:
    """``"int, Dict[str, int]"`` -> ``["int", "Dict[str, int]"]`` (commas inside brackets kept)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [a for a in out if a]


def _union_types(raw: str) -> list[str | None] | None:
    """The standard types of ``Union[A, B]`` / ``A | B`` (None for an unknown member), or None when not a union."""
    m = _UNION.fullmatch(raw)
    members = _split_args(m.group(1)) if m else ([p.strip() for p in raw.split("|")] if "|" in raw and "[" not in raw
                                                 else None)
    if not members:
        return None
    out: list[str | None] = []
    for mem in members:
        std = _TYPE_ALIASES.get(_SUBSCRIPT.sub("", mem).strip().lower())
        if std not in out:
            out.append(std)
    return out


def _generic_keywords(value: Any) -> dict[str, Any]:
    """Element schemas that a generic type string states: ``List[int]`` -> ``items``, ``Dict[str, float]`` ->
    ``additionalProperties``, ``Tuple[float, float]`` -> ``prefixItems``; empty when there is nothing certain."""
    if not isinstance(value, str) or (type(value) is str and value in _STANDARD_TYPES):
        return {}
    raw = _OPTIONAL_SUFFIX_END.sub("", value.strip())
    m = _OPTIONAL_OF_SPACED.fullmatch(raw)
    if m:
        raw = m.group(1).strip()
    m = _ARRAY_OF.fullmatch(raw)
    if m:
        sub = _type_schema(m.group(1))
        return {"items": sub} if sub else {}
    m = _GENERIC_ARGS.fullmatch(raw)
    if not m:
        return {}
    kind, args = m.group(1).lower(), _split_args(m.group(2))
    if kind in ("dict", "map", "mapping"):
        if len(args) == 2:
            sub = _type_schema(args[1])
            return {"additionalProperties": sub} if sub else {}
        return {}
    if kind == "tuple" and len(args) > 1 and args[-1] != "...":
        subs = [_type_schema(a) for a in args]
        return {"prefixItems": subs} if all(subs) else {}
    sub = _type_schema(args[0]) if args else {}
    return {"items": sub} if sub else {}


def _type_schema(text: str) -> dict[str, Any]:
    """A schema for one type string (``int``, ``List[str]``, ``Union[int, float]``); {} when unknown or any."""
    std, _ = _normalize_type(text, "", [])
    if std is None:
        return {}
    return {"type": std, **_generic_keywords(text)}


def _param_list(value: list) -> dict[str, Any] | None:
    """``[{"name": "city", "type": "string", "required": true}, ...]`` (parameters listed as objects, as some
    datasets write them) as properties by name, each without its ``name``; None for any other list."""
    if not value or not all(isinstance(p, dict) and isinstance(p.get("name"), str) and p["name"] for p in value):
        return None
    names = [p["name"] for p in value]
    if len(set(names)) != len(names):
        return None
    return {p["name"]: {k: v for k, v in p.items() if k != "name"} for p in value}


def normalize_schema(schema: Any, where: str = "parameters", notes: list[str] | None = None) -> Any:
    """Return ``schema`` as standard JSON Schema, appending a note for each change.

    Handles the dialects seen in public function-calling data: Python and Java type
    names (``dict``, ``float``, ``tuple``, ``Integer``, ``any``), ``"string, optional"``,
    ``optional: true`` and draft-3 ``required: true`` on properties. Never raises.

    A schema that is standard already (every tool read back from a row, most sources) is copied by
    :func:`_standard_copy` without the rewriting walk: the same value, made of new objects in the same places.
    """
    fast = _standard_copy(schema)
    if fast is not None:
        return fast
    return _normalize_schema(schema, where, [] if notes is None else notes)


def _standard_copy(schema: Any) -> Any:
    """What :func:`_normalize_schema` gives for ``schema`` when it changes nothing and notes nothing (a copy with
    new objects where it makes new ones: schema objects, ``type`` and ``required`` lists), else None.

    It mirrors each rewrite of :func:`_normalize_schema` and gives up (None) where one would apply: a type name
    that is not a JSON-Schema one or a repeated one in a type list, parameter lists, tuple-form items,
    ``optional`` / boolean ``required`` on properties, a ``required`` that is not a list, properties without a
    type, and anything not exactly a dict, list or str where the rewrite looks at its type."""
    if schema is True or schema is False:
        return schema
    if type(schema) is not dict:
        return None
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if type(value) is str:
                if value not in _STANDARD_TYPES:
                    return None
                out[key] = value
            elif type(value) is list:
                if not all(type(v) is str and v in _STANDARD_TYPES for v in value) or len(set(value)) != len(value):
                    return None
                out[key] = list(value)
            else:
                return None
        elif key in _SUBSCHEMA_MAP_KEYS and isinstance(value, (dict, list)):
            if type(value) is not dict:  # a list of parameter objects, or a dict subclass: the rewrite decides
                return None
            subs = {}
            for k, v in value.items():
                sub = _standard_copy(v)
                if sub is None:
                    return None
                subs[k] = sub
            out[key] = subs
        elif key in _SUBSCHEMA_LIST_KEYS and isinstance(value, list):
            if type(value) is not list:
                return None
            items = []
            for v in value:
                sub = _standard_copy(v)
                if sub is None:
                    return None
                items.append(sub)
            out[key] = items
        elif key in _SUBSCHEMA_KEYS and isinstance(value, (dict, bool)):
            sub = _standard_copy(value)
            if sub is None:
                return None
            out[key] = sub
        elif key == "items" and isinstance(value, list) or key in _SUBSCHEMA_KEYS and isinstance(value, str):
            return None
        else:
            if key == "enum" and type(value) is not list or (
                    type(value) is bool and key in _EXCLUSIVE_BOUNDS):
                return None
            out[key] = value
    props = out.get("properties")
    if isinstance(props, dict):
        if "required" in out:
            if type(out["required"]) is not list:
                return None
            out["required"] = list(out["required"])
        for sub in props.values():
            if isinstance(sub, dict) and (isinstance(sub.get("optional"), bool) or isinstance(sub.get("required"), bool)):
                return None
        if "type" not in out:
            return None
    return out


def _normalize_schema(schema: Any, where: str, notes: list[str]) -> Any:
    """:func:`normalize_schema` by the rewriting walk (sub-schemas by this walk too)."""
    if isinstance(schema, list) and _param_list(schema) is not None:
        notes.append(f"{where}: a list of parameter objects read as an object schema's properties")
        schema = {"type": "object", "properties": _param_list(schema)}
    if not isinstance(schema, dict):
        if isinstance(schema, bool):
            return schema
        if isinstance(schema, str) and (typed := _type_schema(schema)):  # a type name: "items": "string"
            notes.append(f"{where}: schema {schema!r} (a type name) read as {_json.dumps(typed)}")
            return typed
        notes.append(f"{where}: schema {schema!r} is not an object; replaced by {{}}")
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, list) and _param_list(value) is not None:
            notes.append(f"{where}: properties given as a list of parameter objects; read by name")
            out[key] = {k: _normalize_schema(v, f"{where}.{k}", notes) for k, v in _param_list(value).items()}
        elif key == "type":
            std, _ = _normalize_type(value, where, notes)
            if std is not None:
                out["type"] = std
                for k, sub in _generic_keywords(value).items():
                    if k not in schema:
                        out[k] = sub
                        notes.append(f"{where}: {k} {_json.dumps(sub)} from the type {value!r}")
        elif key in _SUBSCHEMA_MAP_KEYS and isinstance(value, dict):
            out[key] = {k: _normalize_schema(v, f"{where}.{k}", notes) for k, v in value.items()}
        elif key in _SUBSCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_normalize_schema(v, f"{where}.{key}[{i}]", notes) for i, v in enumerate(value)]
        elif key in _SUBSCHEMA_KEYS and isinstance(value, (dict, bool, str)):
            out[key] = _normalize_schema(value, f"{where}.{key}", notes)
        elif key == "items" and isinstance(value, list):  # draft-4 tuple form
            out["prefixItems"] = [_normalize_schema(v, f"{where}.items[{i}]", notes) for i, v in enumerate(value)]
            notes.append(f"{where}: tuple-form items -> prefixItems")
        elif key == "enum" and isinstance(value, str):
            out[key] = _enum_list(value)
            notes.append(f"{where}: enum {value!r} (a string) read as {_json.dumps(out[key])}")
        else:
            out[key] = value
    for key, bound in _EXCLUSIVE_BOUNDS.items():
        if isinstance(schema.get(key), bool):
            _exclusive_bound(out, key, bound, where, notes)
    # optional / required markers on the properties themselves
    props = out.get("properties")
    if isinstance(props, dict):
        required = out.get("required")
        named = [r.strip() for r in required.split(",")] if isinstance(required, str) else None
        if named and all(r in props for r in named):
            notes.append(f"{where}: required {required!r} (a string) read as {named}")
            out["required"] = required = named
        required = list(required) if isinstance(required, list) else []
        changed = "required" in out and not isinstance(out["required"], list)
        if changed:
            notes.append(f"{where}: required {out['required']!r} is not a list; replaced")
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            opt = None
            raw_type = schema.get("properties", {}).get(name, {}) if isinstance(schema.get("properties"), dict) else {}
            if isinstance(raw_type, dict) and isinstance(raw_type.get("type"), str):
                _, opt = _normalize_type(raw_type["type"], f"{where}.{name}", [])
            if isinstance(sub.get("optional"), bool):
                opt = sub.pop("optional")
                notes.append(f"{where}.{name}: 'optional: {str(opt).lower()}' moved into required")
            if isinstance(sub.get("required"), bool):
                opt = not sub.pop("required")
                notes.append(f"{where}.{name}: boolean 'required' moved into the parent's required")
            if opt is True and name in required:
                required.remove(name)
                changed = True
            elif opt is False and name not in required:
                required.append(name)
                changed = True
        if changed or "required" in out:
            out["required"] = required
        if "type" not in out and "type" not in schema:
            out = {"type": "object", **out}
            notes.append(f"{where}: properties without a type; type 'object' added")
    return out


def _exclusive_bound(out: dict[str, Any], key: str, bound: str, where: str, notes: list[str]) -> None:
    """Draft 4's and OpenAPI 3.0's boolean ``exclusiveMinimum`` / ``exclusiveMaximum`` in today's form: ``true``
    beside ``minimum: 0`` becomes ``exclusiveMinimum: 0`` (``minimum`` kept: a draft-4 validator reads the pair as
    ``>= 0``, never refusing what the author allowed); ``false`` is the default and goes. Read as a number, ``true``
    made the bound 1: ``1 is less than or equal to the minimum of True`` refused a call with ``1 > 0``."""
    flag = out.pop(key)
    limit = out.get(bound)
    if flag and isinstance(limit, (int, float)) and not isinstance(limit, bool):
        out[key] = limit
        notes.append(f"{where}: {key}: true (draft 4) -> {key}: {_json.dumps(limit)}")
    else:
        notes.append(f"{where}: {key}: {str(flag).lower()} (draft 4) dropped"
                     + ("" if not flag else f": no numeric {bound} beside it"))


def _enum_list(text: str) -> list:
    """The values of an ``enum`` written as one string: the list it spells as JSON or a Python literal
    (``"['a', 'b']"``), else its comma- or bar-separated items (``"a, b"``, ``"a|b"``), else the string itself.
    JSON Schema wants a list; a string made validation test substrings (``"a, b"`` took ``", "``)."""
    from hsa.formats.common import parse_literal

    try:
        parsed = parse_literal(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, list) and parsed:
        return parsed
    for sep in (",", "|"):
        if sep in text:
            return [part.strip() for part in text.split(sep) if part.strip()]
    return [text]


def _tool_dialect(tool: dict[str, Any]) -> str:
    if isinstance(tool.get("function"), dict):
        return "openai"
    if "input_schema" in tool:
        return "anthropic"
    if "inputSchema" in tool:
        return "mcp"
    return "plain"


_SCHEMA_KEY = {"openai": "parameters", "plain": "parameters", "gemini": "parameters",
               "anthropic": "input_schema", "mcp": "inputSchema"}
#: Other keys that datasets give a tool's parameter schema under (when the dialect's own key is absent).
_SCHEMA_ALIASES = ("input_parameters", "params")
#: The tools read so far, by a digest of (the raw tool, its position), and whole tool lists, by their JSON bytes
#: (:func:`normalize_tools`): a dataset's tools repeat from record to record, and so do a pool slot's variant tools
#: when rows are read back. One table (the two kinds of key, a tuple and bytes, never meet), bounded by bytes.
_TOOLS = _cache.lru("records.tools", 32 << 20)


def normalize_tool(raw: Any, i: int, notes: list[str], *, loaded: bool = False) -> Tool:
    """:func:`read_tool`, cached per (tool, position): a dataset's tools repeat from record to record.

    The key is a digest of ``repr(raw)``, which tells apart every pair of values that differ (``1`` from
    ``1.0`` and ``True``, ``nan`` from ``None``, key order, a tuple from a list); ``loaded``: ``raw`` is what a
    JSON parser made (dicts, lists, strings, numbers, booleans, None only), for which its JSON bytes
    (:func:`hsa.cache.exact_key`) tell apart as much, at C speed. A hit is the read tool afresh: parsed from
    its JSON bytes where they give it back exactly (checked when it is stored), else a deep copy.
    """
    entry = _tool_entry(raw, i, loaded)
    notes.extend(entry[1])  # the tool afresh, sharing nothing with ``raw`` or the cache (as on a hit)
    return _orjson.loads(entry[0]) if isinstance(entry[0], bytes) else _json.copy(entry[0])  # type: ignore[return-value]


def _tool_entry(raw: Any, i: int, loaded: bool) -> tuple:
    """The cache entry of :func:`normalize_tool`: (the read tool's exact JSON bytes, or a copy of it; its notes).
    A tool read without a note is the same at every position (the position is only named in notes and errors), so
    it is kept by the digest alone (``(digest,)``), and a tool with notes by (digest, position): a tool list read
    back after a reorder or an insertion finds its tools at their new places."""
    exact = _cache.exact_key(raw) if loaded else repr(raw)
    digest = _blake2b(exact if isinstance(exact, bytes) else b"r" + exact.encode("utf-8", "surrogatepass"),
                      digest_size=16).digest()
    hit = _TOOLS.get((digest,))
    if hit is None:
        hit = _TOOLS.get((digest, i))
    if hit is None:
        added: list[str] = []
        tool = read_tool(raw, i, added)
        data = _frozen(tool, loaded)
        size = (len(data) if data is not None else 3 * len(repr(tool))) + sum(len(n) + 50 for n in added) + 150
        hit = _TOOLS.put((digest, i) if added else (digest,),
                         (data if data is not None else _json.copy(tool), tuple(added)), size)
    return hit


def normalize_tools(raws: list, notes: list[str], *, loaded: bool = False, shared: bool = False) -> list[Tool]:
    """``[normalize_tool(t, i, notes, loaded=loaded) for i, t in enumerate(raws)]``, the whole list looked up at
    once where ``loaded`` (``raws`` is what a JSON parser made: its JSON bytes, or its repr where they hold a null,
    tell apart every pair of lists that differ). A hit is the read list afresh, and its notes.

    ``shared`` (with ``loaded``): a hit is one list for every record that has these tools, read only, instead of a
    fresh one parsed from the entry's bytes (on records of a shared harness that parse was about 40% of reading a
    record); the first sighting of a list stays its record's own, so records that each have their own tools (the
    public layouts) keep nothing more. For the pipeline's source records, which nothing modifies (a transform's
    ``apply`` is pure, and the variants of a record all start from it); a record whose tools are rewritten in place
    (the undo of a record read back) must not take them."""
    if not loaded:
        return [normalize_tool(t, i, notes) for i, t in enumerate(raws)]
    exact = _cache.exact_key(raws)
    key = exact if isinstance(exact, bytes) else b"r" + exact.encode("utf-8", "surrogatepass")
    hit = _TOOLS.get(key)  # a whole list: the rows of a shared harness repeat it (one look-up, not one a tool)
    seen = hit is not None
    if hit is None:
        entries = [_tool_entry(t, i, True) for i, t in enumerate(raws)]
        added = tuple(n for e in entries for n in e[1])
        if all(isinstance(e[0], bytes) for e in entries):  # the list's JSON bytes: its tools' bytes, joined
            data: Any = b"[" + b",".join(e[0] for e in entries) + b"]"
            size = len(data)
        else:
            data = [e[0] if not isinstance(e[0], bytes) else _orjson.loads(e[0]) for e in entries]
            size = 3 * len(repr(data))
        hit = _TOOLS.put(key, (data, added), len(key) + size + sum(len(n) + 50 for n in added) + 150)
    notes.extend(hit[1])
    if shared and seen and isinstance(hit[0], bytes):
        one = _TOOLS.get(("shared", key))
        if one is None:  # parsed once; counted like its bytes three times over (a parsed list is that much bigger)
            one = _TOOLS.put(("shared", key), _orjson.loads(hit[0]), len(key) + 3 * len(hit[0]) + 150)
            _TOOLS.put(("written", id(one)), [one, None], 5 * len(hit[0]) + 150)  # holds it: the id stays its own
        return one
    return _orjson.loads(hit[0]) if isinstance(hit[0], bytes) else _json.copy(hit[0])


def written_tools(tools: list[Tool]) -> tuple[list[dict], str] | None:
    """``[denormalize_tool(t) for t in tools]`` and its JSON (:func:`hsa._json.dumps`, as a row is encoded), made
    once for a tool list that :func:`normalize_tools` shares (``shared``) and kept with it, read only; None for any
    other list."""
    entry = _TOOLS.get(("written", id(tools)))
    if entry is None or entry[0] is not tools:
        return None
    if entry[1] is None:
        written = [denormalize_tool(t) for t in tools]
        entry[1] = (written, _json.dumps(written))
    return entry[1]


def _frozen(tool: Tool, loaded: bool = False) -> bytes | None:
    """The JSON bytes of ``tool`` when parsing them gives ``tool`` back exactly (the same types at every level:
    no NaN or infinity, which JSON writes as null, no tuple, no int beyond 64 bits), else None.

    ``loaded``: ``tool`` was read from what a JSON parser made, so it holds JSON types only (:func:`read_tool`
    makes dicts, lists, strings and booleans); the only ones that do not come back are ints beyond 64 bits, which
    orjson refuses, and NaN and infinities (``json``'s fallback parses them), which it writes as null: text
    without a null comes back exactly, and is not walked."""
    try:
        data = _orjson.dumps(tool)
    except TypeError:
        return None
    if loaded and b"null" not in data:
        return data
    return data if _json.strict_equal(_orjson.loads(data), tool) else None


def _is_param_spec(value: Any) -> bool:
    """True for an xLAM parameter entry such as ``{"type": "str", "description": "..."}``."""
    return isinstance(value, dict) and (isinstance(value.get("type"), str) or isinstance(value.get("description"), str))


def _bare_parameter_map(params: Any) -> bool:
    """True when ``params`` is xLAM's ``{"param": {"type": "str", ...}}`` rather than a JSON Schema.

    Parameters may be named like schema keywords (a ``type`` or ``properties`` parameter is common):
    a schema's ``type`` is a string or list, never an object, and a schema's ``properties`` maps names to
    schemas, never holds a string ``type`` or ``description`` of its own.
    """
    if not (isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values())):
        return False
    if set(params) & {"$ref", "anyOf", "oneOf", "allOf", "$defs", "definitions", "additionalProperties"}:
        return False
    if "properties" in params and not _is_param_spec(params["properties"]):
        return False
    return all(_is_param_spec(v) for v in params.values()) or not ({"type", "properties"} & set(params))


def read_tool(raw: Any, i: int, notes: list[str]) -> Tool:
    """Tool ``i`` of a row in the internal form (:func:`normalize_tool` caches it), each change noted."""
    if not isinstance(raw, dict):
        raise RecordError("bad tool", f"tools[{i}] is {type(raw).__name__}, expected an object with a name")
    dialect = _tool_dialect(raw)
    if dialect == "openai":
        fn = raw["function"]
        outer = {k: v for k, v in raw.items() if k not in ("type", "function")}
        if raw.get("type", "function") != "function":
            outer["type"] = raw.get("type")
    else:
        fn, outer = raw, {}
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise RecordError("bad tool", f"tools[{i}] has no string 'name'")
    schema_key = _SCHEMA_KEY[dialect]
    params = fn.get(schema_key)
    alias = next((k for k in _SCHEMA_ALIASES if isinstance(fn.get(k), (dict, list))), None) if params is None else None
    if alias is not None:  # API-Bank's input_parameters and other spellings of the parameters
        params = fn[alias]
        notes.append(f"tools[{i}] {name!r}: '{alias}' read as the {schema_key}")
        fn = {k: v for k, v in fn.items() if k != alias}
    if params is None:
        params = {"type": "object", "properties": {}}
        notes.append(f"tools[{i}] {name!r}: no {schema_key}; an empty object schema used")
        extra_missing = True
    else:
        extra_missing = False
    if isinstance(params, str):
        try:
            params = _json.loads(params)
            notes.append(f"tools[{i}] {name!r}: {schema_key} was a JSON string; parsed")
        except ValueError:
            raise RecordError("bad tool", f"tools[{i}] {name!r}: {schema_key} is a string that is not JSON") from None
    if _bare_parameter_map(params):
        # xLAM / APIGen: {"param": {"type": "str, optional", "default": ...}} -- a bare properties map
        required = [k for k, v in params.items() if "default" not in v
                    and "optional" not in str(v.get("type", "")).lower() and v.get("required") is not False]
        params = {"type": "object", "properties": params, "required": required}
        notes.append(f"tools[{i}] {name!r}: bare parameter map read as properties (required: {required})")
    params = normalize_schema(params, f"tools[{i}].{name}", notes)
    outside = fn.get("required")
    if (isinstance(outside, list) and all(isinstance(r, str) for r in outside) and isinstance(params, dict)
            and isinstance(params.get("properties"), dict) and set(outside) <= set(params["properties"])):
        # When2Call and others put the required list next to the parameters instead of inside them
        inside = params.get("required") if isinstance(params.get("required"), list) else []
        params = {**params, "required": inside + [r for r in outside if r not in inside]}
        notes.append(f"tools[{i}] {name!r}: 'required' next to the parameters moved into them")
        fn = {k: v for k, v in fn.items() if k != "required"}
    if isinstance(params, dict) and "type" not in params:
        params = {"type": "object", **params}
        notes.append(f"tools[{i}] {name!r}: schema without a type; type 'object' added")
    tool: Tool = {"name": name, "parameters": params, "dialect": dialect,  # type: ignore[typeddict-item]
                  "extra": {k: v for k, v in fn.items() if k not in ("name", "description", schema_key)},
                  "outer": outer}
    if extra_missing:
        tool["extra"]["__no_schema__"] = True
    if "description" in fn:
        tool["description"] = fn["description"]
    return tool


def denormalize_tool(tool: Tool) -> dict[str, Any]:
    """An internal-form tool written back in the dialect it came in."""
    dialect = tool.get("dialect", "openai")
    schema_key = _SCHEMA_KEY.get(dialect, "parameters")
    fn: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        fn["description"] = tool["description"]
    extra = dict(tool.get("extra", {}))
    if (not extra.pop("__no_schema__", False) or tool["parameters"] != {"type": "object", "properties": {}}
            or dialect in ("anthropic", "mcp")):  # these dialects require their schema key (it is how they are read)
        fn[schema_key] = tool["parameters"]
    fn.update(extra)
    if dialect == "openai":
        out = {"type": "function", "function": fn}
        out.update(tool.get("outer", {}))
        return out
    return fn


def read_tool_list(tools: Any, fmt: dict[str, Any], notes: list[str]) -> Any:
    """The tool list with JSON-string tools parsed and Gemini's ``functionDeclarations`` groups unwrapped."""
    if isinstance(tools, str):
        try:
            tools = _json.loads(tools)
        except ValueError:
            raise RecordError("bad tools", "'tools' is a string that is not JSON") from None
        fmt["tools_str"] = True
    if not isinstance(tools, list):
        return tools
    out = []
    for i, t in enumerate(tools):
        if isinstance(t, str):
            try:
                t = _json.loads(t)
            except ValueError:
                raise RecordError("bad tools", f"tools[{i}] is a string that is not JSON; expected a tool object "
                                  f"(or its JSON text)") from None
            notes.append(f"tools[{i}] was a JSON string; parsed")
        group = None
        if isinstance(t, dict) and len(t) == 1:
            group = t.get("functionDeclarations", t.get("function_declarations"))
        if isinstance(group, list):
            out.extend(group)
            notes.append(f"tools[{i}]: Gemini functionDeclarations unwrapped ({len(group)} tools)")
        else:
            out.append(t)
    return out
