"""Pure schema operations of the tool family: strict mode, paths and JSON pointers, dialects.

Schemas are standard JSON Schema (the internal form of :mod:`hsa.records`). Every
function returns new objects and never modifies its arguments. What the family's mapping
steps do to a schema (``regroup``, ``permute``, ``require``, ``values``) is part of the
mapping, in the core: :mod:`hsa.step_schemas` (re-exported here), with the record-level
appliers in :data:`hsa.renames.STEP_APPLIERS`, so :func:`hsa.renames.canonicalize` undoes
those steps with no plugin imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hsa import _json
from hsa.mapping import ARRAY
from hsa.step_schemas import map_schema_values, node_at, permute_schema, regroup_schema, require_schema, update_at
from hsa.tool_dialects import DIALECT_FIELDS, FIELD_EQUIVALENTS

__all__ = [
    "strict_problems",
    "is_strict",
    "node_at",
    "update_at",
    "values_at",
    "regroup_schema",
    "permute_schema",
    "require_schema",
    "map_schema_values",
    "described_pointers",
    "get_pointer",
    "set_pointer",
    "object_pointers",
    "to_gemini_schema",
    "UnsupportedSchema",
    "CONSTRAINING_KEYS",
    "to_strict",
    "nullable",
    "convert_tool",
    "DIALECT_EXTRA_KEYS",
]

#: Keywords of an object schema that constrain its set of properties: nesting, flattening or
#: renaming the properties of such an object is not provably safe, so the tool family leaves it alone.
CONSTRAINING_KEYS = ("patternProperties", "propertyNames", "unevaluatedProperties", "dependentRequired",
                     "dependentSchemas", "dependencies", "if", "then", "else", "not", "allOf", "anyOf",
                     "oneOf", "minProperties", "maxProperties", "$ref")


# --------------------------------------------------------------------------- strict mode


def is_strict(tool: dict) -> bool:
    """True for an OpenAI strict-mode tool (``"strict": true`` on the function)."""
    return tool.get("extra", {}).get("strict") is True


def strict_problems(schema: Any, where: str = "parameters") -> list[str]:
    """Where ``schema`` breaks OpenAI strict mode: every object has ``additionalProperties: false``
    and lists every property in ``required`` (optional ones are nullable instead)."""
    out: list[str] = []
    if isinstance(schema, list):
        for i, s in enumerate(schema):
            out.extend(strict_problems(s, f"{where}[{i}]"))
        return out
    if not isinstance(schema, dict):
        return out
    is_object = schema.get("type") == "object" or (isinstance(schema.get("type"), list) and "object" in schema["type"]) \
        or "properties" in schema
    if is_object:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            out.append(f"{where}: additionalProperties is not false")
        if sorted(schema.get("required") or []) != sorted(props):
            out.append(f"{where}: required {schema.get('required')!r} does not list every property {sorted(props)}")
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            for k, v in schema[key].items():
                out.extend(strict_problems(v, f"{where}.{key}.{k}"))
    for key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
        if key in schema:
            out.extend(strict_problems(schema[key], f"{where}.{key}"))
    return out


# --------------------------------------------------------------------------- paths


def values_at(arguments: Any, path: tuple | list) -> Iterator[Any]:
    """Every value of ``arguments`` at ``path`` (``"[]"`` expands arrays); absent keys yield nothing."""
    if not path:
        yield arguments
        return
    head, rest = path[0], tuple(path[1:])
    if head == ARRAY:
        if isinstance(arguments, list):
            for v in arguments:
                yield from values_at(v, rest)
    elif isinstance(arguments, dict) and head in arguments:
        yield from values_at(arguments[head], rest)


# --------------------------------------------------------------------------- JSON pointers


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unesc(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def get_pointer(doc: Any, pointer: str) -> Any:
    """The value at JSON pointer ``pointer`` (RFC 6901) of ``doc``; KeyError when absent."""
    node = doc
    if pointer == "":
        return node
    for part in pointer.lstrip("/").split("/"):
        part = _unesc(part)
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def set_pointer(doc: Any, pointer: str, fn) -> Any:
    """A copy of ``doc`` whose value at ``pointer`` is ``fn(value)``."""
    if pointer == "":
        return fn(doc)
    parts = [_unesc(p) for p in pointer.lstrip("/").split("/")]

    def rec(node: Any, i: int) -> Any:
        key = parts[i]
        if isinstance(node, list):
            out = list(node)
            idx = int(key)
            out[idx] = fn(node[idx]) if i == len(parts) - 1 else rec(node[idx], i + 1)
            return out
        out = dict(node)
        out[key] = fn(node[key]) if i == len(parts) - 1 else rec(node[key], i + 1)
        return out

    return rec(doc, 0)


def _walk(schema: Any, pointer: str) -> Iterator[tuple[str, dict]]:
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            for k, v in schema[key].items():
                yield from _walk(v, f"{pointer}/{key}/{_esc(k)}")
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{pointer}/items")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(schema.get(key), list):
            for i, v in enumerate(schema[key]):
                yield from _walk(v, f"{pointer}/{key}/{i}")


def described_pointers(schema: Any) -> list[str]:
    """Pointers of the subschemas of ``schema`` that carry a string ``description``."""
    return [p for p, node in _walk(schema, "") if isinstance(node.get("description"), str)]


def object_pointers(schema: Any) -> list[str]:
    """Pointers of the subschemas of ``schema`` that declare properties."""
    return [p for p, node in _walk(schema, "") if isinstance(node.get("properties"), dict)]


# --------------------------------------------------------------------------- Gemini


class UnsupportedSchema(ValueError):
    """A schema that has no faithful form in the target dialect; the message says what."""


#: Keywords of the OpenAPI 3.0 subset Gemini function declarations accept.
GEMINI_KEYS = frozenset({"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
                         "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
                         "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
                         "maximum"})
_GEMINI_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}


def to_gemini_schema(schema: Any, root: dict | None = None, depth: int = 0) -> Any:
    """``schema`` in the OpenAPI subset of Gemini function declarations.

    Local ``$ref`` s are inlined, ``oneOf`` becomes ``anyOf``, ``const`` a one-value
    ``enum``, ``[T, "null"]`` types ``nullable``; keywords Gemini does not read are
    dropped (which only loosens validation). Raises :class:`UnsupportedSchema` for
    recursive references and ``allOf``.
    """
    root = schema if root is None else root
    if depth > 32:
        raise UnsupportedSchema("recursive $ref: Gemini declarations cannot express it")
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise UnsupportedSchema(f"non-local $ref {ref!r}")
        try:
            target = get_pointer(root, ref[1:])
        except (KeyError, IndexError, ValueError):
            raise UnsupportedSchema(f"$ref {ref!r} does not resolve") from None
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return to_gemini_schema(merged, root, depth + 1)
    if "allOf" in schema:
        if len(schema["allOf"]) != 1:
            raise UnsupportedSchema("allOf has no Gemini form")
        merged = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        return to_gemini_schema(merged, root, depth + 1)
    out: dict[str, Any] = {}
    t = schema.get("type")
    if isinstance(t, list):
        kinds = [x for x in t if x != "null"]
        if "null" in t:
            out["nullable"] = True
        if len(kinds) == 1:
            out["type"] = kinds[0]
        elif kinds:
            out["anyOf"] = [{"type": k} for k in kinds]
    elif isinstance(t, str):
        out["type"] = t
    for key, value in schema.items():
        if key == "type":
            continue
        if key == "properties" and isinstance(value, dict):
            out["properties"] = {k: to_gemini_schema(v, root, depth + 1) for k, v in value.items()}
        elif key == "items" and isinstance(value, dict):
            out["items"] = to_gemini_schema(value, root, depth + 1)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out["anyOf"] = [to_gemini_schema(v, root, depth + 1) for v in value]
        elif key == "const":
            if isinstance(value, str):
                out["enum"] = [value]
        elif key == "enum":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                out["enum"] = list(value)
        elif key == "examples":
            if isinstance(value, list) and value:
                out["example"] = value[0]
        elif key == "format":
            if value in _GEMINI_FORMATS.get(out.get("type", ""), ()):
                out["format"] = value
        elif key in GEMINI_KEYS:
            out[key] = value
    return out


# --------------------------------------------------------------------------- strict form and dialects


def to_strict(schema: Any) -> Any:
    """``schema`` in OpenAI strict form: closed objects, every property required, optional ones nullable."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(out.get("items"), dict):
        out["items"] = to_strict(out["items"])
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [to_strict(s) for s in out[key]]
    props = out.get("properties")
    if isinstance(props, dict) or out.get("type") == "object":
        props = props or {}
        required = out.get("required") if isinstance(out.get("required"), list) else []
        new_props = {}
        for k, sub in props.items():
            sub = to_strict(sub)
            if k not in required:
                sub = nullable(sub)
            new_props[k] = sub
        out["properties"] = new_props
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def nullable(schema: dict) -> dict:
    out = {k: v for k, v in schema.items() if k != "default"}
    t = out.get("type")
    if isinstance(t, str):
        out["type"] = [t, "null"] if t != "null" else t
    elif isinstance(t, list):
        out["type"] = t if "null" in t else [*t, "null"]
    else:
        return {"anyOf": [out, {"type": "null"}]}
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


#: Tool keys (besides name, description and schema) each dialect defines; others are dropped on conversion (the
#: core's table, with its sources: :data:`hsa.tool_dialects.DIALECT_FIELDS`).
DIALECT_EXTRA_KEYS = DIALECT_FIELDS


def convert_tool(tool: dict, target: str) -> tuple[dict, list[str]]:
    """``tool`` rendered in dialect ``target``, and the keys dropped on the way.

    A tool already in ``target`` comes back as it is (a dialect is never converted into itself). Every field the
    target defines is kept (:data:`hsa.tool_dialects.DIALECT_FIELDS`), one it defines under another name is
    renamed (:data:`hsa.tool_dialects.FIELD_EQUIVALENTS`: MCP ``outputSchema`` is Gemini's ``responseJsonSchema``),
    and the others are dropped and listed (the record's restore patch gives them back on canonicalize).
    Gemini function declarations are the flat ``{"name", "description", "parameters"}`` shape with no key of
    their own, so they are kept (and read back) as the ``plain`` dialect. Raises :class:`UnsupportedSchema` when
    the schema has no faithful Gemini form.
    """
    source = tool.get("dialect", "openai")
    if source == target:
        return _json.copy(tool), []
    out = _json.copy(tool)
    out["dialect"] = "plain" if target == "gemini" else target
    keep = DIALECT_FIELDS[target] | {"__no_schema__"}
    renamed = FIELD_EQUIVALENTS.get((source, target), {})
    extra = {}
    dropped = []
    for k, v in out["extra"].items():
        if k in keep:
            extra[k] = v
        elif k in renamed and renamed[k] not in out["extra"]:
            extra[renamed[k]] = v
        else:
            dropped.append(k)
    out["extra"] = extra
    dropped.sort()
    if target != "openai":
        dropped += sorted(f"(outer) {k}" for k in out.get("outer", {}))
        out["outer"] = {}
    if target == "gemini":
        out["parameters"] = to_gemini_schema(out["parameters"])
    return out, dropped
