"""Tools listed in a prompt: render a record's tools as JSON, YAML, a TypeScript namespace, Python signatures or a
Markdown table, and check that a listing holds everything the schemas say.

The contract of ``prompt.tool_format`` (docs/design.md): a listing is the tools' schemas in another notation, so
every format shows, for every parameter at any depth, its name, type (``integer`` is not ``number``: the TypeScript
and Python notations say so), whether it is required, its enum values, its default and its description, and the
properties of nested objects and the items of arrays. A schema keyword a notation cannot write (``minimum``,
``pattern``, ``anyOf``, ...) makes that notation unavailable for the tools instead of dropping it silently;
JSON and YAML hold everything. :func:`listing_misses` is the check: it lists the facts of the schemas
(:func:`schema_facts`) that a listing does not show where it should, and a format with a miss is never drawn.
"""

from __future__ import annotations

import json
import keyword
import re
from functools import lru_cache
from typing import Any

from hsa import _json

__all__ = ["TOOL_FORMATS", "LIMITS", "render_tools", "schema_facts", "listing_misses", "listing_function"]

TOOL_FORMATS = ("json", "yaml", "typescript", "python", "markdown")

#: The schema keywords the TypeScript, Python and Markdown notations write; any other keyword in a parameter
#: schema makes those notations unavailable (JSON and YAML write the schema itself).
#: Limits the notations write as notes (``// minimum: 1``, ``minimum `1```).
LIMITS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems",
          "maxItems", "uniqueItems", "pattern", "format")
_NOTATION_KEYS = frozenset({"type", "description", "enum", "default", "properties", "required", "items", "title",
                            "additionalProperties", "$schema", *LIMITS})
_TS_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def listing_function(tool: dict) -> dict:
    """The ``{name, description, parameters}`` a listing shows of one internal-form tool."""
    out: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        out["description"] = tool["description"]
    out["parameters"] = tool["parameters"]
    return out


# --------------------------------------------------------------------------- facts


def _walk(schema: Any, path: str, required: bool, out: list[tuple[str, str, Any]]) -> None:
    if not isinstance(schema, dict):
        return
    if path:
        out.append((path, "type", _type_word(schema)))
        out.append((path, "required", required))
        if isinstance(schema.get("enum"), list):
            out.extend((path, "enum", v) for v in schema["enum"])
        if "default" in schema:
            out.append((path, "default", schema["default"]))
        if isinstance(schema.get("description"), str) and schema["description"]:
            out.append((path, "description", schema["description"]))
        out.extend((path, "limit", (k, schema[k])) for k in LIMITS if k in schema)
    req = set(schema.get("required") or ())
    for name, sub in (schema.get("properties") or {}).items():
        _walk(sub, f"{path}.{name}" if path else name, name in req, out)
    if isinstance(schema.get("items"), dict):
        _walk(schema["items"], f"{path}[]", True, out)


def _type_word(schema: dict) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if t is None:
        return "object" if "properties" in schema else "any"
    return str(t)


def schema_facts(tool: dict) -> list[tuple[str, str, Any]]:
    """(path, kind, value) of everything a listing of ``tool`` must show: per parameter at any depth (``a.b``,
    ``a[]``), its type, whether it is required, each enum value, its default, its description and its limits
    (:data:`LIMITS`)."""
    out: list[tuple[str, str, Any]] = []
    _walk(tool.get("parameters"), "", True, out)
    return out


def _notation_ok(schema: Any) -> bool:
    """True when a TypeScript / Python / Markdown notation can write every keyword of ``schema``."""
    if not isinstance(schema, dict):
        return schema is True or schema == {}
    if set(schema) - _NOTATION_KEYS:
        return False
    if isinstance(schema.get("additionalProperties"), dict):
        return False
    return all(_notation_ok(s) for s in (schema.get("properties") or {}).values()) and (
        "items" not in schema or _notation_ok(schema["items"]))


# --------------------------------------------------------------------------- TypeScript


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}// {line}".rstrip() for line in text.split("\n")] if text else []


def _ts_type(schema: Any, indent: str) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_ts_type({**schema, "type": x}, indent) for x in t) or "any"
    if t == "string":
        return "string"
    if t in ("integer", "number"):
        return "number"
    if t == "boolean":
        return "boolean"
    if t == "null":
        return "null"
    if t == "array":
        inner = _ts_type(schema.get("items"), indent)
        return f"({inner})[]" if "|" in inner or "\n" in inner else f"{inner}[]"
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "object"
        required = set(schema.get("required") or ())
        lines = ["{"]
        for name, sub in props.items():
            key = name if _TS_IDENT.match(name) else json.dumps(name)
            sub = sub if isinstance(sub, dict) else {}
            lines += _comment(sub.get("description") or "", indent + "  ")
            opt = "" if name in required else "?"
            notes = _ts_notes(sub)
            lines.append(f"{indent}  {key}{opt}: {_ts_type(sub, indent + '  ')},{notes}")
        lines.append(f"{indent}}}")
        return "\n".join(lines)
    return "any"


def _integers(schema: dict) -> bool:
    t = schema.get("type")
    return t == "integer" or (isinstance(t, list) and "integer" in t)


def _ts_notes(schema: dict) -> str:
    """The trailing comment of a TypeScript member: ``integer`` (TypeScript writes every number as ``number``) and
    the default, as OpenAI's harmony format writes it (``// default: celsius``)."""
    notes = []
    item = schema.get("items") if isinstance(schema.get("items"), dict) else None
    if _integers(schema):
        notes.append("integer")
    elif item is not None and _integers(item):
        notes.append("integer items")
    if "default" in schema:
        notes.append("default: " + json.dumps(schema["default"], ensure_ascii=False))
    notes += _limit_notes(schema)
    return " // " + ", ".join(notes) if notes else ""


def _limit_notes(schema: dict, *, items: bool = True) -> list[str]:
    """``minimum: 1``, ... of ``schema``, then what the items of a list of scalars carry besides their type (their
    description, default and limits; an enum shows in the type), prefixed ``items``."""
    out = [f"{k}: {json.dumps(schema[k], ensure_ascii=False)}" for k in LIMITS if k in schema]
    item = schema.get("items")
    if items and isinstance(item, dict) and not item.get("properties"):
        if item.get("description"):
            out.append("items: " + item["description"].replace("\n", " "))
        if "default" in item:
            out.append("items default: " + json.dumps(item["default"], ensure_ascii=False))
        out += ["items " + n for n in _limit_notes(item, items=False)]
    return out


def _render_typescript(tools: list[dict]) -> str | None:
    if any(not _TS_IDENT.match(t["name"]) for t in tools):
        return None
    out = ["namespace functions {", ""]
    for t in tools:
        out += _comment(t.get("description") or "", "")
        params = t["parameters"]
        if params.get("properties"):
            out.append(f"type {t['name']} = (_: {_ts_type(params, '')}) => any;")
        else:
            out.append(f"type {t['name']} = () => any;")
        out.append("")
    out.append("} // namespace functions")
    return "\n".join(out)


# --------------------------------------------------------------------------- Python

_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _camel(text: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[^A-Za-z0-9]+", text) if w)


def _py_type(schema: Any, owner: str, classes: list[str]) -> str:
    """The annotation of ``schema``; nested objects become TypedDict classes (appended to ``classes``), named after
    ``owner`` (``BookReservationFlightsItem``)."""
    if not isinstance(schema, dict):
        return "Any"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "Literal[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"]) + "]"
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_py_type({**schema, "type": x}, owner, classes) for x in t) or "Any"
    if t in _PY_TYPES:
        return _PY_TYPES[t]
    if t == "array":
        return f"list[{_py_type(schema.get('items'), owner + 'Item', classes)}]" if "items" in schema else "list"
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "dict"
        required = set(schema.get("required") or ())
        lines = [f"class {owner}(TypedDict):"]
        if schema.get("description"):
            lines.append(f'    """{schema["description"]}"""')
        for name, sub in props.items():
            sub = sub if isinstance(sub, dict) else {}
            for line in (sub.get("description") or "").split("\n") if sub.get("description") else ():
                lines.append(f"    # {line}".rstrip())
            ann = _py_type(sub, owner + _camel(name), classes)
            ann = ann if name in required else f"NotRequired[{ann}]"
            notes = ([f"default: {json.dumps(sub['default'], ensure_ascii=False)}"] if "default" in sub else []) \
                + _limit_notes(sub)
            lines.append(f"    {name}: {ann}" + (f"  # {', '.join(notes)}" if notes else ""))
        classes.append("\n".join(lines))
        return owner
    return "Any"


def _py_literal(value: Any) -> str:
    return {True: "True", False: "False", None: "None"}.get(value, json.dumps(value, ensure_ascii=False)) \
        if value is None or isinstance(value, bool) else json.dumps(value, ensure_ascii=False)


def _render_python(tools: list[dict]) -> str | None:
    blocks = []
    for t in tools:
        props = t["parameters"].get("properties") or {}
        names = [t["name"], *props]
        nested = [n for s in props.values() if isinstance(s, dict) for n in _nested_names(s)]
        if any(not n.isidentifier() or keyword.iskeyword(n) for n in names + nested):
            return None
        docs = [t.get("description") or "", *[(s or {}).get("description") or "" for s in props.values()]]
        if any('"""' in d or "\\" in d for d in docs):
            return None
        required = [n for n in (t["parameters"].get("required") or ()) if n in props]
        optional = [n for n in props if n not in required]
        classes: list[str] = []
        owner = _camel(t["name"])
        ann = {n: _py_type(props[n], owner + _camel(n), classes) for n in props}
        args = [f"{n}: {ann[n]}" for n in required]
        for n in optional:
            sub = props[n] if isinstance(props[n], dict) else {}
            default = _py_literal(sub["default"]) if "default" in sub else "None"
            args.append(f"{n}: {ann[n]}{'' if 'default' in sub else ' | None'} = {default}")
        lines = [f"def {t['name']}({', '.join(args)}) -> dict:"]
        doc = ['    """' + (t.get("description") or t["name"]).replace("\n", "\n    ")]
        described = [n for n in required + optional if isinstance(props[n], dict)
                     and (props[n].get("description") or _limit_notes(props[n]))]
        if described:
            doc += ["", "    Args:"]
            for n in described:
                text = (props[n].get("description") or "").replace("\n", " ")
                limits = _limit_notes(props[n])
                notes = f"({', '.join(limits)})" if limits else ""
                doc.append(f"        {n}: {' '.join(x for x in (text, notes) if x)}".rstrip())
        doc.append('    """')
        blocks.append("\n\n".join(classes + ["\n".join(lines + doc)]))
    return "\n\n".join(blocks)


def _nested_names(schema: dict) -> list[str]:
    out = []
    for name, sub in (schema.get("properties") or {}).items():
        out.append(name)
        if isinstance(sub, dict):
            out += _nested_names(sub)
    if isinstance(schema.get("items"), dict):
        out += _nested_names(schema["items"])
    return out


# --------------------------------------------------------------------------- Markdown


def _md_type(schema: dict) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        return " or ".join(str(x) for x in t)
    if t == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_md_type(schema['items'])}"
    if t is None:
        return "object" if "properties" in schema else "any"
    return str(t)


def _md_rows(schema: dict, path: str, required: bool, out: list[str]) -> None:
    parts = [_md_type(schema)]
    if required:
        parts.append("required")
    if isinstance(schema.get("enum"), list):
        parts.append("one of " + ", ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in schema["enum"]))
    if "default" in schema:
        parts.append(f"default `{json.dumps(schema['default'], ensure_ascii=False)}`")
    parts += [f"{k} `{json.dumps(schema[k], ensure_ascii=False)}`" for k in LIMITS if k in schema]
    item = schema.get("items")
    if isinstance(item, dict) and not item.get("properties"):  # a list of scalars: its items' facts in its row
        if isinstance(item.get("enum"), list):
            parts.append("items one of " + ", ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in item["enum"]))
        if "default" in item:
            parts.append(f"items default `{json.dumps(item['default'], ensure_ascii=False)}`")
        parts += [f"items {k} `{json.dumps(item[k], ensure_ascii=False)}`" for k in LIMITS if k in item]
        if item.get("description"):
            parts.append(f"items: {item['description']}")
    row = f"`{path}` ({'; '.join(parts)})"
    if schema.get("description"):
        row += f": {schema['description']}"
    out.append(row)
    req = set(schema.get("required") or ())
    for name, sub in (schema.get("properties") or {}).items():
        _md_rows(sub if isinstance(sub, dict) else {}, f"{path}.{name}", name in req, out)
    if isinstance(schema.get("items"), dict) and (schema["items"].get("properties") or schema["items"].get("items")):
        item = schema["items"]
        req = set(item.get("required") or ())
        for name, sub in (item.get("properties") or {}).items():
            _md_rows(sub if isinstance(sub, dict) else {}, f"{path}[].{name}", name in req, out)


def _render_markdown(tools: list[dict]) -> str | None:
    rows = ["| Tool | Description | Parameters |", "| --- | --- | --- |"]
    for t in tools:
        params = t["parameters"]
        required = set(params.get("required") or ())
        parts: list[str] = []
        for n, s in (params.get("properties") or {}).items():
            _md_rows(s if isinstance(s, dict) else {}, n, n in required, parts)
        pieces = [f"`{t['name']}`", t.get("description") or "", *parts]
        if any("|" in c or "\n" in c or "<br>" in c for c in pieces):
            return None  # a cell would break the table, or a <br> of its own would read as our line break
        cells = [pieces[0], pieces[1], "<br>".join(parts) or "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


# --------------------------------------------------------------------------- all formats


def render_tools(tools: list[dict], fmt: str) -> str | None:
    """The record's tools rendered in ``fmt`` (see :data:`TOOL_FORMATS`); None when ``fmt`` cannot hold them: a
    name the notation cannot write, text that would break it, or a schema keyword it has no way to show."""
    if fmt not in TOOL_FORMATS:
        raise ValueError(f"unknown tool format {fmt!r}; expected one of {', '.join(TOOL_FORMATS)}")
    return _render_tools_cached(_json.dumps([listing_function(t) for t in tools]), fmt)


@lru_cache(maxsize=1024)
def _render_tools_cached(fns_json: str, fmt: str) -> str | None:
    fns = _json.loads(fns_json)
    if fmt == "json":
        return json.dumps(fns, indent=2, ensure_ascii=False)
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(fns, sort_keys=False, allow_unicode=True, width=1 << 20).rstrip("\n")
    if not all(_notation_ok(f["parameters"]) for f in fns):
        return None
    text = {"typescript": _render_typescript, "python": _render_python, "markdown": _render_markdown}[fmt](fns)
    if text is not None and listing_misses(fns, fmt, text):
        return None  # belt and braces: a notation that would lose a fact is not used
    return text


# --------------------------------------------------------------------------- the check


def _blocks(fns: list[dict], fmt: str, text: str) -> dict[str, str]:
    """Each tool's part of a listing: from the end of the previous tool's to the end of its own (a TypeScript
    type's comment and a Python function's TypedDict classes come before its name)."""
    marks = {"typescript": "type {} = ", "python": "def {}(", "markdown": "| `{}` |"}
    ends = {"typescript": " => any;", "python": '\n    """', "markdown": " |\n"}
    starts = []
    for f in fns:
        pos = text.find(marks[fmt].format(f["name"]))
        if pos < 0:
            return {}
        starts.append(pos)
    bounds = [0]
    for pos in starts[1:]:
        prev = text.rfind(ends[fmt], 0, pos)
        bounds.append(prev + len(ends[fmt]) if prev >= 0 else pos)
    bounds.append(len(text))
    return {f["name"]: text[bounds[i]:bounds[i + 1]] for i, f in enumerate(fns)}


def _shown(value: Any, fmt: str) -> list[str]:
    text = json.dumps(value, ensure_ascii=False)
    if fmt == "python" and isinstance(value, bool | type(None)):
        return [text, _py_literal(value)]
    return [text]


def listing_misses(fns: list[dict], fmt: str, text: str) -> list[str]:
    """The facts of the tools' schemas (:func:`schema_facts`) that the listing ``text`` in ``fmt`` does not show,
    each as ``tool: path kind value``; ``[]`` when it shows them all.

    JSON and YAML are parsed back and compared with the schemas. For the other notations each tool's part of the
    listing must hold every parameter name (the last part of its path), every enum value and default as written,
    every line of every description, the word ``integer`` for each integer parameter, and mark each top-level
    parameter required or optional as the notation does.
    """
    if fmt in ("json", "yaml"):
        import yaml

        back = json.loads(text) if fmt == "json" else yaml.safe_load(text)
        return [] if back == fns else ["the listing does not parse back to the tools"]
    blocks = _blocks(fns, fmt, text)
    if not blocks:
        return ["a tool's name is not in the listing"]
    out = []
    for f in fns:
        block = blocks[f["name"]]
        if f.get("description"):
            for line in f["description"].split("\n"):
                if line.strip() and line.strip() not in block:
                    out.append(f"{f['name']}: description line {line.strip()[:40]!r}")
        for path, kind, value in schema_facts(f):
            leaf = re.sub(r"\[\]$", "", path).rsplit(".", 1)[-1].replace("[]", "")
            if leaf and leaf not in block:
                out.append(f"{f['name']}: {path} name")
            if kind == "limit":
                shown = f"{value[0]} `{json.dumps(value[1], ensure_ascii=False)}`" if fmt == "markdown" else \
                    f"{value[0]}: {json.dumps(value[1], ensure_ascii=False)}"
                if shown not in block:
                    out.append(f"{f['name']}: {path} {value[0]}")
            elif kind in ("enum", "default") and not any(v in block for v in _shown(value, fmt)):
                out.append(f"{f['name']}: {path} {kind} {value!r}")
            elif kind == "description" and any(line.strip() and line.strip() not in block
                                               for line in value.split("\n")):
                out.append(f"{f['name']}: {path} description")
            elif kind == "type" and "integer" in value.split("|") and fmt != "markdown" and "integer" not in block \
                    and "int" not in block:
                out.append(f"{f['name']}: {path} integer type")
            elif kind == "type" and fmt == "markdown" and not path.endswith("[]") \
                    and f"`{path}` ({_md_type_of(f, path)}" not in block:  # an item's type is its array's row
                out.append(f"{f['name']}: {path} type {value}")
            elif kind == "required" and "." not in path and "[" not in path:
                out += _required_miss(f["name"], path, value, fmt, block)
    return out


def _md_type_of(fn: dict, path: str) -> str:
    schema: Any = fn["parameters"]
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        schema = schema.get("items") if part == "[]" else (schema.get("properties") or {}).get(part)
    return _md_type(schema if isinstance(schema, dict) else {})


def _required_miss(tool: str, name: str, required: bool, fmt: str, block: str) -> list[str]:
    if fmt == "typescript":
        ok = re.search(rf"^\s*{re.escape(name)}{'' if required else r'[?]'}:", block, re.M) is not None
    elif fmt == "python":  # the signature line parsed by Python itself: the arguments without a default are required
        import ast

        sig = block[block.find(f"def {tool}("):].split("\n", 1)[0]
        try:
            args = ast.parse(sig + "\n    pass").body[0].args
        except SyntaxError:
            return [f"{tool}: the signature does not parse"]
        names = [a.arg for a in args.args]
        optional = set(names[len(names) - len(args.defaults):]) if args.defaults else set()
        ok = name in names and (name not in optional) == required
    else:
        ok = (f"`{name}` (" in block) and (("; required" in block.split(f"`{name}` (", 1)[1].split(")", 1)[0])
                                            == required)
    return [] if ok else [f"{tool}: {name} {'required' if required else 'optional'}"]
