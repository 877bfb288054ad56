"""What a harness's tools have in common, and a distractor tool written the same way.

A distractor that stands out — snake_case beside kebab-case names, a bare ``{name, description,
inputSchema}`` among MCP tools that all carry ``title``, ``annotations``, ``execution`` and a ``$schema`` —
teaches the model to skip the odd one out instead of reading what each tool does. :func:`shape_of` reads
what every real tool of a record shares (naming style and namespace prefix, parameter-name style, the
fields every tool has, the root keys of every parameter schema and output schema, pydantic-style titles);
:func:`dress` gives a distractor exactly that: its name and parameter names restyled, each shared field
filled (a title from the name, MCP behaviour hints, an output schema from the bank, other fields copied
from the neighbours' most common value). Pure functions; no randomness.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hsa import _json
from hsa.names import STYLES, split_words
from transforms._toolnames import detect_style

__all__ = ["shape_of", "dress", "distractor_name", "common_style"]

#: A name style is the harness's when at least this share of its multi-word names are written in it.
STYLE_SHARE = 0.8

#: Namespace prefixes that name a server: ``mcp__<server>__`` (Claude Code) and ``<server>.``.
_PREFIX = re.compile(r"^(mcp__[A-Za-z0-9-]+__|[A-Za-z][A-Za-z0-9-]*\.)(?=.)")

#: MCP tool annotations (the ``ToolAnnotations`` hints) a distractor takes when its bank entry gives none.
_DEFAULT_HINTS = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}

#: An output schema for a distractor whose bank entry has none, when every neighbour declares one.
_DEFAULT_OUTPUT = {"type": "object", "properties": {"result": {"type": "string", "description": "The result as text"}},
                   "required": ["result"]}


def common_style(names: list[str]) -> str | None:
    """The style of at least :data:`STYLE_SHARE` of the multi-word ``names``, else None."""
    styles = Counter(detect_style(n) for n in names if len(split_words(n)) > 1)
    if not styles:
        return None
    style, n = styles.most_common(1)[0]
    return style if n >= STYLE_SHARE * sum(styles.values()) else None


def _common(values: list[Any]) -> Any:
    """The most common of ``values`` (JSON values), the first seen on a tie."""
    counts = Counter(_json.canonical(v) for v in values)
    best = counts.most_common(1)[0][0]
    return next(v for v in values if _json.canonical(v) == best)


def _all_have(dicts: list[dict], key: str) -> bool:
    return bool(dicts) and all(isinstance(d, dict) and key in d for d in dicts)


def shape_of(record: dict) -> dict:
    """What every real tool of ``record`` (the skill tool aside) has in common, as plain JSON:

    ``style`` / ``param_style`` (the naming style of tool / parameter names, or None when mixed), ``prefix``
    (``"mcp__{}__"`` or ``"{}."`` when every tool name carries such a namespace prefix), ``extra`` (each field every
    tool has, with its most common value), ``hints`` (the annotation keys every tool's ``annotations`` has),
    ``title_suffix`` (``" Tool"`` when most titles end so), ``schema`` / ``output`` (root keys ``$schema`` and
    ``additionalProperties`` every parameter / output schema has, with their most common value),
    ``schema_title`` (every root schema titled ``<name>Arguments``) and ``prop_titles`` (every property titled).
    """
    skill = (record.get("skill_tool") or {}).get("name")
    tools = [t for t in record["tools"] if t["name"] != skill]
    if not tools:
        return {}
    names = [t["name"] for t in tools]
    prefixes = [_PREFIX.match(n) for n in names]
    prefix = None
    if all(prefixes):
        kinds = {"mcp" if m.group(1).startswith("mcp__") else "dot" for m in prefixes}  # type: ignore[union-attr]
        if len(kinds) == 1:
            prefix = "mcp__{}__" if kinds == {"mcp"} else "{}."
            names = [n[m.end():] for n, m in zip(names, prefixes)]  # type: ignore[union-attr]
    extras = [t.get("extra") or {} for t in tools]
    shared = [k for k in extras[0] if k != "__no_schema__" and all(k in e for e in extras)]
    params = [t["parameters"] for t in tools if isinstance(t["parameters"], dict)]
    props = [k for p in params for k in (p.get("properties") or {})]
    titles = [e["title"] for e in extras if isinstance(e.get("title"), str)]
    hints: list[str] = []
    if "annotations" in shared and all(isinstance(e["annotations"], dict) for e in extras):
        hints = [k for k in extras[0]["annotations"] if all(k in e["annotations"] for e in extras)]
    outputs = [e.get("outputSchema") for e in extras]
    return {
        "style": common_style(names),
        "prefix": prefix,
        "param_style": common_style(props),
        "extra": {k: _common([e[k] for e in extras]) for k in shared},
        "hints": hints,
        "title_suffix": " Tool" if titles and sum(t.endswith(" Tool") for t in titles) * 2 > len(titles) else "",
        "schema": {k: _common([p[k] for p in params]) for k in ("$schema", "additionalProperties")
                   if len(params) == len(tools) and _all_have(params, k)},
        "output": {k: _common([o[k] for o in outputs]) for k in ("$schema", "additionalProperties")
                   if _all_have(outputs, k)},
        "schema_title": len(params) == len(tools) and all(str(p.get("title", "")).endswith("Arguments") for p in params),
        "prop_titles": bool(props) and all(isinstance(v, dict) and isinstance(v.get("title"), str)
                                           for p in params for v in (p.get("properties") or {}).values()),
    }


def _restyle(name: str, style: str | None) -> str:
    words = split_words(name)
    return STYLES[style](words) if style and len(words) > 1 else name


def distractor_name(raw: dict, shape: dict) -> str:
    """The name pool tool ``raw`` takes beside tools of ``shape``: their naming style, and their kind of namespace
    prefix naming the distractor's own server (its bank ``domain``: ``mcp__weather__get_weather_forecast``)."""
    name = _restyle(str(raw["name"]), shape.get("style"))
    if shape.get("prefix"):
        server = _restyle(str(raw.get("domain") or "tools").replace("_", "-"), "kebab")
        name = shape["prefix"].format(server) + name
    return name


def _title(words: list[str]) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in words)


def _restyle_props(schema: Any, style: str | None, titled: bool) -> Any:
    """``schema`` with every property name in ``style`` (``required`` following), titled pydantic-style when
    ``titled`` (top level)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, dict):
        renamed = {k: _restyle(k, style) for k in props}
        if len(set(renamed.values())) < len(renamed):
            renamed = {k: k for k in props}  # two names collide in that style: keep them
        out["properties"] = {}
        for k, v in props.items():
            v = _restyle_props(v, style, False)
            if titled and isinstance(v, dict) and "title" not in v:
                v = {"title": _title(split_words(k)), **v}
            out["properties"][renamed[k]] = v
        if isinstance(schema.get("required"), list):
            out["required"] = [renamed.get(k, k) for k in schema["required"]]
    if isinstance(schema.get("items"), dict):
        out["items"] = _restyle_props(schema["items"], style, False)
    return out


def dress(tool: dict, raw: dict, shape: dict) -> dict:
    """Distractor ``tool`` (internal form, made from pool tool ``raw``) written like the tools of ``shape``: its
    name and parameter names in their styles, and every field they all have (:func:`shape_of`)."""
    if not shape:
        return tool
    out = _json.copy(tool)
    out["name"] = distractor_name(raw, shape)
    params = _restyle_props(out["parameters"], shape.get("param_style"), bool(shape.get("prop_titles")))
    root = {k: v for k, v in shape.get("schema", {}).items() if k not in params}
    if shape.get("schema_title") and "title" not in params:
        root["title"] = f"{_restyle(str(raw['name']), shape.get('style'))}Arguments"
    out["parameters"] = {**{k: v for k, v in root.items() if k == "$schema"}, **params,
                         **{k: v for k, v in root.items() if k != "$schema"}}
    extra = dict(out.get("extra") or {})
    title = str(raw.get("title") or _title(split_words(str(raw["name"]))))
    for key, value in shape.get("extra", {}).items():
        if key in extra:
            continue
        if key == "title":
            extra[key] = title + shape.get("title_suffix", "")
        elif key == "annotations":
            given = raw.get("annotations") if isinstance(raw.get("annotations"), dict) else {}
            extra[key] = {k: (title if k == "title" else given.get(k, _DEFAULT_HINTS.get(k, value.get(k))))
                          for k in shape.get("hints", ())}
        elif key == "strict":  # strict form is the caller's choice (internal_tool): never claimed for a loose schema
            extra[key] = False
        elif key == "outputSchema":
            schema = raw.get("output_schema") or raw.get("outputSchema") or _DEFAULT_OUTPUT
            output = _json.copy(schema) if isinstance(schema, dict) else _json.copy(_DEFAULT_OUTPUT)
            head = {k: v for k, v in shape.get("output", {}).items() if k == "$schema" and k not in output}
            tail = {k: v for k, v in shape.get("output", {}).items() if k != "$schema" and k not in output}
            extra[key] = {**head, **output, **tail}
        else:
            extra[key] = _json.copy(value)
    out["extra"] = extra
    return out
