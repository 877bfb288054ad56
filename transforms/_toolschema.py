"""Pure schema operations of the tool family, and the record-level appliers of its mapping steps.

Schemas are standard JSON Schema (the internal form of :mod:`hsa.records`). Every
function returns new objects and never modifies its arguments. The appliers at the end
carry one mapping step across a whole record (schema, calls, hook payloads, texts) and
are registered in :data:`hsa.rewrite.STEP_APPLIERS`, so :func:`hsa.rewrite.canonicalize`
can undo the structural steps (``params`` steps with a ``kind``) and ``values`` steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hsa import _json
from hsa.mapping import ARRAY
from hsa.names import is_identifier_like, replace_tokens
from hsa.records import Record
from hsa.rewrite import (_map_hook_payloads, _map_schema_descriptions, _rewrite_calls, copy_for_texts, map_texts,
                         param_paths)

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
    "apply_regroup",
    "apply_permute",
    "apply_require",
    "apply_values",
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


def node_at(schema: Any, path: tuple | list) -> dict | None:
    """The subschema declaring property ``path`` (``"[]"`` steps into ``items``); None when undeclared."""
    node: Any = schema
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get("items") if key == ARRAY else (node.get("properties") or {}).get(key)
    return node if isinstance(node, dict) else None


def update_at(schema: dict, path: tuple | list, fn) -> dict:
    """A copy of ``schema`` with the subschema at ``path`` replaced by ``fn(subschema)``."""
    if not path:
        return fn(schema)
    out = dict(schema)
    head, rest = path[0], tuple(path[1:])
    if head == ARRAY:
        out["items"] = update_at(schema["items"], rest, fn)
    else:
        props = dict(schema["properties"])
        props[head] = update_at(props[head], rest, fn)
        out["properties"] = props
    return out


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


# --------------------------------------------------------------------------- structural steps


def _required(node: dict) -> list:
    req = node.get("required")
    return list(req) if isinstance(req, list) else []


def _with_required(node: dict, required: list) -> dict:
    out = dict(node)
    if required or "required" in node:
        out["required"] = required
    return out


def regroup_schema(schema: dict, step: dict) -> dict:
    """Apply a ``regroup`` step to a tool schema: group properties into a new object (paths
    get longer) or move an object's properties up into its parent (paths get shorter).

    ``step["container"]`` is ``{"path", "schema", "required"}``: the object's path, its
    schema without ``properties`` (with ``required`` when it must be restored exactly)
    and whether the parent requires it.
    """
    pairs = [(tuple(a), tuple(b)) for a, b in step["paths"]]
    cont = step["container"]
    cpath = tuple(cont["path"])
    parent_path, cname = cpath[:-1], cpath[-1]
    down = len(pairs[0][1]) > len(pairs[0][0])
    if down:
        src_keys = [a[-1] for a, _ in pairs]
        names = {a[-1]: b[-1] for a, b in pairs}

        def group(parent: dict) -> dict:
            props = parent["properties"]
            req = _required(parent)
            missing = [k for k in src_keys if k not in props]
            if missing or cname in props:
                raise ValueError(f"regroup: cannot group {src_keys} into {cname!r} at {list(parent_path)} "
                                 f"(undeclared: {missing}; {cname!r} exists: {cname in props})")
            inner = {k: v for k, v in cont["schema"].items() if k != "required"}
            inner["properties"] = {names[k]: props[k] for k in props if k in names}
            inner_req = cont["schema"]["required"] if "required" in cont["schema"] else \
                [names[k] for k in props if k in names and k in req]
            if inner_req:
                inner["required"] = list(inner_req)
            new_props: dict = {}
            for k, v in props.items():
                if k in names:
                    if cname not in new_props:
                        new_props[cname] = inner
                else:
                    new_props[k] = v
            new_req = [r for r in req if r not in names] + ([cname] if cont["required"] else [])
            out = dict(parent)
            out["properties"] = new_props
            return _with_required(out, new_req)

        return update_at(schema, parent_path, group)

    names = {a[-1]: b[-1] for a, b in pairs}

    def ungroup(parent: dict) -> dict:
        props = parent["properties"]
        if cname not in props:
            raise ValueError(f"regroup: no object {cname!r} at {list(parent_path)} to move properties out of")
        inner = props[cname]
        inner_props = inner.get("properties") or {}
        left = sorted(set(inner_props) - set(names))
        if left:
            raise ValueError(f"regroup: {cname!r} keeps properties {left} that the step does not move")
        req = _required(parent)
        creq = cname in req
        inner_req = _required(inner)
        clash = sorted(set(names.values()) & (set(props) - {cname}))
        if clash:
            raise ValueError(f"regroup: moving {sorted(names)} out of {cname!r} collides with {clash}")
        new_props: dict = {}
        for k, v in props.items():
            if k == cname:
                for ik, iv in inner_props.items():
                    new_props[names[ik]] = iv
            else:
                new_props[k] = v
        new_req = [r for r in req if r != cname] + [names[k] for k in inner_props if creq and k in inner_req]
        out = dict(parent)
        out["properties"] = new_props
        return _with_required(out, new_req)

    return update_at(schema, parent_path, ungroup)


def permute_schema(schema: dict, step: dict) -> dict:
    """Rename sibling properties all at once (a permutation or plain renames); each schema
    keeps its place and its required flag under its new name."""
    pairs = [(tuple(a), tuple(b)) for a, b in step["paths"]]
    parent_path = pairs[0][0][:-1]
    if any(a[:-1] != parent_path or b[:-1] != parent_path for a, b in pairs):
        raise ValueError(f"permute: every path must share the parent {list(parent_path)} (got {step['paths']})")
    names = {a[-1]: b[-1] for a, b in pairs}

    def rename(parent: dict) -> dict:
        props = parent["properties"]
        kept = set(props) - set(names)
        if set(names.values()) & kept:
            raise ValueError(f"permute: new names {sorted(set(names.values()) & kept)} collide with other properties")
        out = dict(parent)
        out["properties"] = {names.get(k, k): v for k, v in props.items()}
        return _with_required(out, [names.get(r, r) for r in _required(parent)])

    return update_at(schema, parent_path, rename)


def require_schema(schema: dict, step: dict) -> dict:
    """Add (``fill``) or remove (``drop``) the required one-value parameters of a ``require`` step."""
    out = schema
    for path, _value in step.get("fill") or ():
        path = tuple(path)

        def add(parent: dict, key=path[-1]) -> dict:
            if key in (parent.get("properties") or {}):
                raise ValueError(f"require: {key!r} is already a property")
            new = dict(parent)
            new["properties"] = {**(parent.get("properties") or {}), key: _json.copy(step["schema"])}
            return _with_required(new, _required(parent) + [key])

        out = update_at(out, path[:-1], add)
    for path, _value in step.get("drop") or ():
        path = tuple(path)

        def remove(parent: dict, key=path[-1]) -> dict:
            new = dict(parent)
            new["properties"] = {k: v for k, v in (parent.get("properties") or {}).items() if k != key}
            return _with_required(new, [r for r in _required(parent) if r != key])

        out = update_at(out, path[:-1], remove)
    return out


def _map_value(value: Any, table: list) -> Any:
    for old, new in table:
        if _json.strict_equal(value, old):
            return _json.copy(new)
    return value


def _map_node_values(node: Any, table: list) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(node.get("enum"), list):
        out["enum"] = [_map_value(v, table) for v in node["enum"]]
    for key in ("default", "const"):
        if key in node:
            out[key] = _map_value(node[key], table)
    if isinstance(node.get("examples"), list):
        out["examples"] = [_map_value(v, table) for v in node["examples"]]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            out[key] = [_map_node_values(b, table) for b in node[key]]
    return out


def map_schema_values(schema: dict, path: tuple | list, table: list) -> dict:
    """Map the allowed values at ``path`` (``enum``, ``const``, ``default``, ``examples``, also
    inside ``anyOf``/``oneOf``/``allOf`` branches) through ``table`` (``[[old, new], ...]``, strict)."""
    if node_at(schema, path) is None:
        raise ValueError(f"values: no schema declares {list(path)}")
    return update_at(schema, tuple(path), lambda n: _map_node_values(n, table))


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


#: Tool keys (besides name, description and schema) each dialect defines; others are dropped on conversion.
DIALECT_EXTRA_KEYS = {
    "openai": frozenset({"strict"}),
    "anthropic": frozenset({"strict", "cache_control", "input_examples"}),
    "mcp": frozenset({"title", "annotations", "outputSchema", "_meta"}),
    "gemini": frozenset({"response", "behavior"}),
}


def convert_tool(tool: dict, target: str) -> tuple[dict, list[str]]:
    """``tool`` rendered in dialect ``target``, and the keys dropped on the way.

    Gemini function declarations are the flat ``{"name", "description", "parameters"}``
    shape with no key of their own, so they are kept (and read back) as the ``plain``
    dialect. Raises :class:`UnsupportedSchema` when the schema has no faithful Gemini form.
    """
    out = _json.copy(tool)
    out["dialect"] = "plain" if target == "gemini" else target
    keep = DIALECT_EXTRA_KEYS[target] | {"__no_schema__"}
    dropped = sorted(k for k in out["extra"] if k not in keep)
    out["extra"] = {k: v for k, v in out["extra"].items() if k in keep}
    if target != "openai":
        dropped += sorted(f"(outer) {k}" for k in out.get("outer", {}))
        out["outer"] = {}
    if target == "gemini":
        out["parameters"] = to_gemini_schema(out["parameters"])
    return out, dropped


# --------------------------------------------------------------------------- record-level appliers


def _tool_index(record: Record, name: str, what: str) -> int:
    for i, t in enumerate(record["tools"]):
        if t["name"] == name:
            return i
    raise ValueError(f"{what}: tool {name!r} is not in the record (tools: {[t['name'] for t in record['tools']]})")


def _clone_for_step(record: Record, i: int) -> Record:
    """A copy of ``record`` that :func:`_finish` may edit after the tool at index ``i`` changes: the tool list, the
    tool itself, every message with tool calls down to each call's ``function`` (calls are reassigned there),
    the hook events (payloads are reassigned) and the mapping are the copy's own; everything else (other
    tools, texts, skills, hooks) is shared with ``record``, which no transform modifies."""
    out = dict(record)
    out["tools"] = list(record["tools"])
    out["tools"][i] = _json.copy(record["tools"][i])
    out["messages"] = [m if not m.get("tool_calls") else
                       {**m, "tool_calls": [{**c, "function": dict(c["function"])} for c in m["tool_calls"]]}
                       for m in record["messages"]]
    if record.get("hook_events"):
        out["hook_events"] = [dict(ev) if isinstance(ev, dict) else ev for ev in record["hook_events"]]
    out["mapping"] = list(record["mapping"])
    return out


def _finish(out: Record, step: dict) -> Record:
    _rewrite_calls(out, step)
    _map_hook_payloads(out, step)
    out["mapping"].append(step)
    return out


def _params_step(step: dict) -> dict:
    return {**step, "op": "params"}


def apply_regroup(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "regroup", ...}`` (nest / flatten)."""
    step = _params_step(step)
    i = _tool_index(record, step["tool"], "regroup")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = regroup_schema(out["tools"][i]["parameters"], step)
    return _finish(out, step)


def _rename_in_descriptions(tool: dict, names: dict[str, str], before: dict) -> None:
    """Whole-token renames of identifier-like parameter names in the tool's own descriptions."""
    counts: dict[str, int] = {}
    for p in param_paths(before):
        counts[p[-1]] = counts.get(p[-1], 0) + 1
    table = {k: v for k, v in names.items() if is_identifier_like(k) and counts.get(k) == 1}
    if not table:
        return
    if isinstance(tool.get("description"), str):
        tool["description"] = replace_tokens(tool["description"], table)
    tool["parameters"] = _map_schema_descriptions(tool["parameters"], lambda s: replace_tokens(s, table))


def apply_permute(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "permute", ...}`` (names swapped between siblings)."""
    step = _params_step(step)
    i = _tool_index(record, step["tool"], "permute")
    out = _clone_for_step(record, i)
    tool = out["tools"][i]
    before = tool["parameters"]
    tool["parameters"] = permute_schema(before, step)
    _rename_in_descriptions(tool, {a[-1]: b[-1] for a, b in step["paths"]}, before)
    return _finish(out, step)


def apply_require(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "params", "kind": "require", ...}`` (a required one-value parameter)."""
    step = _params_step(step)
    i = _tool_index(record, step["tool"], "require")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = require_schema(out["tools"][i]["parameters"], step)
    return _finish(out, step)


def apply_values(record: Record, step: dict) -> Record:
    """Record-level applier of ``{"op": "values", ...}``: schema, calls, hook payloads and, when
    the step says ``"texts": true``, whole-token mentions of the string values in every text but
    tool results. A tool result is what the environment returned: parameter renames and value
    changes never touch it (docs/design.md, "Tool results")."""
    i = _tool_index(record, step["tool"], "values")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = map_schema_values(out["tools"][i]["parameters"], step["path"], step["map"])
    if step.get("texts"):
        table = {a: b for a, b in step["map"] if isinstance(a, str) and isinstance(b, str)}
        out = copy_for_texts(out, table)  # every message is the copy's own: results can be put back as they were
        results = {k: m["content"] for k, m in enumerate(out["messages"]) if m.get("role") == "tool" and "content" in m}
        map_texts(out, lambda s: replace_tokens(s, table), names=table)
        for k, content in results.items():
            out["messages"][k]["content"] = content
    return _finish(out, step)
