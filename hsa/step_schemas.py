"""What a mapping step does to a tool's parameter schema (the schema side of :mod:`hsa.mapping`).

A ``params`` step with a ``kind`` (``regroup``: nest / flatten, ``permute``: names swapped between
siblings, ``require``: a required one-value parameter) and a ``values`` step change the schema of
their tool as well as its calls. These pure functions carry the schema; the record-level appliers
of :data:`hsa.renames.STEP_APPLIERS` call them, so :func:`hsa.renames.canonicalize` undoes every
step with no plugin imported. Schemas are standard JSON Schema (the internal form of
:mod:`hsa.records`); every function returns new objects and never modifies its arguments.
"""

from __future__ import annotations

from typing import Any

from hsa import _json
from hsa.mapping import ARRAY

__all__ = ["node_at", "update_at", "regroup_schema", "permute_schema", "require_schema", "map_schema_values"]


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



# --------------------------------------------------------------------------- steps


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
            # the step's own data copied: an undo edits the schema it rebuilds in place, never the mapping's step
            inner = {k: _json.copy(v) for k, v in cont["schema"].items() if k != "required"}
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
