"""Hypothesis strategies for harnesses, trajectories, records and recipes (re-exported by :mod:`hsa.testing`).

The strategies build records *by construction*: every tool call is drawn from the
schema of the tool it calls, so it validates; names are unique; skill-tool calls
load defined skills; hook events carry the decision their hook really returns. The
records come in the *input* format (plain JSON objects, any tool dialect, arguments
as JSON strings or objects), so they exercise :func:`hsa.records.normalize` too.

Every factory takes keyword-only options and never fails when it is called: a bad
option raises :class:`hypothesis.errors.InvalidArgument` when the strategy is first
drawn from, as hypothesis' own strategies do.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument


__all__ = [
    "DIALECTS",
    "tool_schemas",
    "arguments",
    "tools",
    "skills",
    "prompts",
    "hooks",
    "harnesses",
    "records",
    "recipes",
    "render_prompt",
    "run_hook",
    "REPLY_LIMITS",
]

#: Tool dialects the strategies can write: OpenAI ``{"type": "function", "function": ...}``,
#: Anthropic ``input_schema``, MCP ``inputSchema`` and flat ``{"name", "parameters"}``.
DIALECTS = ("openai", "anthropic", "mcp", "plain")
_SCHEMA_KEY = {"openai": "parameters", "plain": "parameters", "anthropic": "input_schema", "mcp": "inputSchema"}

# Words names are built from. Some are ordinary English words (``search``, ``message``),
# so names that are also prose, and names that are also hook-protocol keys, occur.
_WORDS = ("get", "set", "list", "search", "find", "item", "product", "order", "status", "user", "price", "stock",
          "check", "create", "update", "ship", "coupon", "size", "review", "room", "link", "query", "cart",
          "city", "color", "note", "file", "page", "id", "text", "message", "reply", "count", "limit", "date",
          "address", "tag", "mode", "v2", "qa")
_NAME_STYLES = ("snake", "camel", "pascal", "kebab", "word", "dotted")
_FILLERS = ("the", "a", "and", "then", "please", "it")
_FRAGMENTS = tuple(dict.fromkeys(
    [w for w in _WORDS + _FILLERS]
    + [f"{_FILLERS[i % len(_FILLERS)]} {w}" for i, w in enumerate(_WORDS)]
    + [" ".join(_WORDS[i:i + 3]) for i in range(len(_WORDS) - 2)]))
# Enum values: mostly their own words, a few that are also name words or odd strings.
_ENUM_WORDS = ("fast", "slow", "standard", "express", "red", "blue", "XL", "small", "asc", "desc", "on", "off",
               "celsius", "fahrenheit", "same_day", "next-day", "draft", "final", "item", "A", "Yes", "")


# --------------------------------------------------------------------------- option checking


def _lazy(check: Callable[[], None], build: Callable[[], st.SearchStrategy]) -> st.SearchStrategy:
    """A strategy that checks its options when first drawn from (factories never fail when called)."""

    def make():
        check()
        return build()

    return st.deferred(make)


def _want(cond: bool, message: str) -> None:
    if not cond:
        raise InvalidArgument(message)


def _check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    _want(isinstance(value, int) and not isinstance(value, bool),
          f"{name} must be an int (got {value!r} that is a {value.__class__.__name__})")
    _want(value >= lo and (hi is None or value <= hi),
          f"{name} must be within [{lo}, {hi if hi is not None else 'inf'}] (got {value!r})")


def _check_tristate(name: str, value: Any) -> None:
    _want(value is None or isinstance(value, bool), f"{name} must be True, False or None (got {value!r})")


def _dialect_tuple(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _check_dialects(value: Any) -> None:
    try:
        ds = _dialect_tuple(value)
    except TypeError:
        raise InvalidArgument(f"dialects must be a dialect name or a list of them (got {value!r})") from None
    _want(bool(ds), f"dialects must name at least one of {list(DIALECTS)}")
    bad = [d for d in ds if d not in DIALECTS]
    _want(not bad, f"dialects: unknown dialect(s) {bad}; expected some of {list(DIALECTS)}")


def _check_names(name: str, value: Any) -> None:
    _want(isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value),
          f"{name} must be a list of non-empty strings (got {value!r})")


# --------------------------------------------------------------------------- names


def _render(words: tuple[str, ...], style: str) -> str:
    if style == "snake":
        return "_".join(words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "kebab":
        return "-".join(words)
    if style == "dotted":
        return ".".join(words)
    return words[0]  # "word": an ordinary word, not identifier-like


@lru_cache(maxsize=64)
def _names(*, styles: tuple[str, ...]) -> st.SearchStrategy[str]:
    words = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(tuple)
    return st.builds(_render, words, st.sampled_from(styles))


def _unique_names(n_min: int, n_max: int, styles: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    return st.lists(_names(styles=styles), min_size=n_min, max_size=n_max, unique=True)


_TOOL_STYLES = {"openai": ("snake", "camel", "pascal", "kebab", "word"),
                "anthropic": ("snake", "camel", "pascal", "kebab", "word"),
                "mcp": ("snake", "camel", "kebab", "word", "dotted"),
                "plain": ("snake", "camel", "pascal", "word", "dotted")}
_PARAM_STYLES = ("snake", "camel", "pascal", "word", "kebab")


# --------------------------------------------------------------------------- schemas and arguments


def _text() -> st.SearchStrategy[str]:
    return st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)


@lru_cache(maxsize=8)
def _leaf_schema(*, enums: bool, nullable: bool) -> st.SearchStrategy[dict]:
    return _leaf_schema_draw(enums=enums, nullable=nullable)


@st.composite
def _leaf_schema_draw(draw, *, enums: bool, nullable: bool) -> dict:
    kind = draw(st.sampled_from(("string", "integer", "number", "boolean") + (("enum_s", "enum_i") if enums else ())))
    if kind == "enum_s":
        values = draw(st.lists(st.sampled_from(_ENUM_WORDS), min_size=1, max_size=4, unique=True))
        schema: dict = {"type": "string", "enum": values}
    elif kind == "enum_i":
        schema = {"type": "integer", "enum": draw(st.lists(st.integers(-3, 50), min_size=1, max_size=4, unique=True))}
    elif kind == "integer":
        schema = {"type": "integer"}
        if draw(st.booleans()):
            lo = draw(st.integers(-100, 100))
            schema.update(minimum=lo, maximum=lo + draw(st.integers(0, 1000)))
    elif kind == "string":
        schema = {"type": "string"}
        if draw(st.booleans()):
            schema["maxLength"] = 12
    else:
        schema = {"type": kind}
    if "enum" not in schema and draw(st.integers(0, 3)) == 0:  # a default that calls sometimes pass
        schema["default"] = draw(_values(schema))
    if draw(st.booleans()):
        schema["description"] = draw(_prose(()))
    if nullable:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


@st.composite
def _object_schema(draw, *, depth: int, max_properties: int, strict: bool, enums: bool, arrays: bool,
                   names: list[str] | None, min_properties: int = 0) -> dict:
    pool = names or None
    if pool:
        keys = draw(st.lists(st.sampled_from(pool), min_size=min(min_properties, len(pool)),
                             max_size=min(max_properties, len(pool)), unique=True))
    else:
        keys = draw(st.lists(_names(styles=_PARAM_STYLES), min_size=min_properties, max_size=max_properties,
                             unique=True))
    props: dict[str, Any] = {}
    required: list[str] = []
    for key in keys:
        is_required = True if strict else draw(st.booleans())
        nullable = strict and not draw(st.booleans())  # strict: optional = required but nullable
        kinds = ["leaf", "leaf"]
        if depth > 0:
            kinds.append("object")
            if arrays:
                kinds += ["array", "array_of_objects"]
        elif arrays:
            kinds.append("array")
        kind = draw(st.sampled_from(kinds))
        if kind == "leaf":
            sub = draw(_leaf_schema(enums=enums, nullable=nullable))
        elif kind == "object":
            sub = draw(_object_schema(depth=depth - 1, max_properties=max_properties, strict=strict, enums=enums,
                                      arrays=arrays, names=None, min_properties=1))
        elif kind == "array":
            sub = {"type": "array", "items": draw(_leaf_schema(enums=enums, nullable=False))}
        else:
            sub = {"type": "array", "items": draw(_object_schema(depth=depth - 1, max_properties=max_properties,
                                                                  strict=strict, enums=enums, arrays=arrays,
                                                                  names=None, min_properties=1))}
        if sub["type"] == "array":
            if draw(st.booleans()):
                sub["minItems"] = draw(st.integers(0, 1))
            sub["maxItems"] = draw(st.integers(max(1, sub.get("minItems", 0)), 3))
        props[key] = sub
        if is_required:
            required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required or strict:
        schema["required"] = required
    if strict:
        schema["additionalProperties"] = False
    return schema


def tool_schemas(*, max_properties: int = 4, max_depth: int = 2, strict: bool | None = None, enums: bool = True,
                 arrays: bool = True) -> st.SearchStrategy[dict]:
    """JSON Schemas of tool parameters: objects of scalars, enums, nested objects and arrays of objects.

    ``strict=True`` draws strict schemas (``additionalProperties: false``, every property
    required, optional ones nullable), ``False`` never does, ``None`` draws either.
    """

    def check():
        _check_int("max_properties", max_properties, 0, 12)
        _check_int("max_depth", max_depth, 0, 4)
        _check_tristate("strict", strict)

    def build():
        strictness = st.booleans() if strict is None else st.just(strict)
        return strictness.flatmap(lambda s: _object_schema(depth=max_depth, max_properties=max_properties, strict=s,
                                                           enums=enums, arrays=arrays, names=None))

    return _lazy(check, build)


def _types(schema: dict) -> list[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return t
    if isinstance(t, str):
        return [t]
    return ["string", "integer", "boolean", "null"]


_VALUES_CACHE: dict[str, st.SearchStrategy] = {}


def _values(schema: Any) -> st.SearchStrategy:
    """Values valid for ``schema`` (strategies cached by the schema's canonical JSON)."""
    key = json.dumps(schema, sort_keys=True)
    strategy = _VALUES_CACHE.get(key)
    if strategy is None:
        if len(_VALUES_CACHE) > 4096:
            _VALUES_CACHE.clear()
        strategy = _VALUES_CACHE[key] = _values_uncached(schema)
    return strategy


def _values_uncached(schema: Any) -> st.SearchStrategy:
    """Values valid for ``schema`` (the subset of JSON Schema the strategies write, plus the common keywords)."""
    if schema is True or not isinstance(schema, dict) or not schema:
        return st.one_of(st.none(), st.booleans(), st.integers(-10, 10), _text())
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    options = []
    if "default" in schema:
        options.append(st.just(schema["default"]))
    for t in _types(schema):
        if t == "null":
            options.append(st.none())
        elif t == "boolean":
            options.append(st.booleans())
        elif t == "integer":
            options.append(st.integers(schema.get("minimum", -10**6), schema.get("maximum", 10**6)))
        elif t == "number":
            options.append(st.floats(schema.get("minimum", -1e6), schema.get("maximum", 1e6), allow_nan=False,
                                     allow_infinity=False))
        elif t == "string":
            options.append(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                   min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 12), 12)))
        elif t == "array":
            lo = schema.get("minItems", 0)
            options.append(st.lists(_values(schema.get("items", {})), min_size=lo, max_size=max(lo, schema.get("maxItems", 3))))
        elif t == "object":
            options.append(_object_values_draw(schema))
    return st.one_of(options) if options else st.none()


def _string_enums(schema: Any) -> list[str]:
    """Every string enum value declared anywhere in ``schema``."""
    out: list[str] = []
    if isinstance(schema, dict):
        out += [v for v in schema.get("enum") or () if isinstance(v, str)]
        for sub in (schema.get("properties") or {}).values():
            out += _string_enums(sub)
        out += _string_enums(schema.get("items"))
    return out


def _object_values(schema: dict) -> st.SearchStrategy[dict]:
    """Argument objects valid for ``schema`` (cached with :func:`_values`)."""
    return _values(schema if schema.get("type") == "object" else {**schema, "type": "object"})


@st.composite
def _object_values_draw(draw, schema: dict) -> dict:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    out = {}
    for key, sub in props.items():
        if key in required or draw(st.booleans()):
            out[key] = draw(_values(sub))
    return out


def arguments(schema: dict) -> st.SearchStrategy[dict]:
    """Tool-call arguments valid for ``schema`` by construction (required keys always, optional ones sometimes)."""

    def check():
        _want(isinstance(schema, dict), f"schema must be a JSON Schema object (got {schema!r})")

    return _lazy(check, lambda: _object_values(schema))


@st.composite
def _tool(draw, *, name: str, dialect: str, strict: bool, max_properties: int, max_depth: int,
          param_names: list[str] | None, schema: dict | None = None) -> dict:
    if schema is None:
        schema = draw(_object_schema(depth=max_depth, max_properties=max_properties, strict=strict, enums=True,
                                     arrays=True, names=param_names))
    fn: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 4)):
        fn["description"] = draw(_prose(()))
    fn[_SCHEMA_KEY[dialect]] = schema
    if dialect == "openai":
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}
    return fn


def tools(*, dialects: str | Iterable[str] = DIALECTS, strict: bool | None = None, max_properties: int = 4,
          max_depth: int = 2) -> st.SearchStrategy[dict]:
    """One tool definition, in the input format of a dialect drawn from ``dialects``."""

    def check():
        _check_dialects(dialects)
        _check_tristate("strict", strict)
        _check_int("max_properties", max_properties, 0, 12)
        _check_int("max_depth", max_depth, 0, 4)

    @st.composite
    def build(draw):
        dialect = draw(st.sampled_from(_dialect_tuple(dialects)))
        name = draw(_names(styles=_TOOL_STYLES[dialect]))
        s = draw(st.booleans()) if strict is None else strict
        return draw(_tool(name=name, dialect=dialect, strict=s, max_properties=max_properties, max_depth=max_depth,
                          param_names=None))

    return _lazy(check, build)


# --------------------------------------------------------------------------- texts, skills, prompts


@lru_cache(maxsize=4096)
def _prose(mentions: tuple[str, ...], max_words: int = 12) -> st.SearchStrategy[str]:
    """A sentence of plain words, sometimes mentioning ``mentions`` (cached: strategies are built once)."""
    return _prose_draw(mentions, max_words)


@st.composite
def _prose_draw(draw, mentions: tuple[str, ...], max_words: int) -> str:
    """A sentence of plain words, sometimes mentioning ``mentions`` (bare or in backticks)."""
    # words come in fragments of up to three: fewer draws per sentence, the same vocabulary
    fragments = draw(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=max(1, max_words // 3)))
    words = [w for f in fragments for w in f.split(" ")][:max_words]
    if mentions:
        for name in draw(st.lists(st.sampled_from(mentions), max_size=3)):
            pos = draw(st.integers(0, len(words)))
            words.insert(pos, draw(st.sampled_from((name, f"`{name}`", f"{name}.", f"({name})"))))
    text = " ".join(words)
    return text[:1].upper() + text[1:] + draw(st.sampled_from((".", "?", "!", "")))


@st.composite
def _skill(draw, *, name: str, mentions: tuple[str, ...]) -> dict:
    title = name.replace("_", " ").replace("-", " ").title()
    steps = draw(st.lists(_prose(mentions, 8), min_size=1, max_size=3))
    content = f"# {title}\n\n## When to use\n{draw(_prose(()))}\n\n## Steps\n" + "\n".join(
        f"{i}. {s}" for i, s in enumerate(steps, 1))
    if draw(st.integers(0, 2)) == 0:
        description = f"Answer questions about {draw(_prose(mentions, 5)).rstrip('.?!').lower()}."
    else:
        description = draw(_prose(mentions, 8))
    out = {"name": name, "description": description, "content": content}
    if draw(st.integers(0, 3)) == 0:
        out["kind"] = draw(st.sampled_from(("reply", "strategy")))
    return out


def skills(*, mentions: Iterable[str] = ()) -> st.SearchStrategy[dict]:
    """One skill ``{"name", "description", "content"}`` whose Markdown may mention the names in ``mentions``."""
    mentions = tuple(mentions)

    def check():
        _check_names("mentions", mentions)

    return _lazy(check, lambda: _names(styles=("snake", "kebab", "word", "camel")).flatmap(
        lambda n: _skill(name=n, mentions=mentions)))


_TEMPLATES = (
    "{% for s in sections %}<{{ s.id }}>\n{{ s.body }}\n</{{ s.id }}>\n{% if not loop.last %}\n{% endif %}{% endfor %}",
    "{% for s in sections %}## {{ s.title }}\n{{ s.body }}\n\n{% endfor %}",
    "{% for s in sections %}{{ s.title | upper }}: {{ s.body }}\n{% endfor %}",
)
_SECTION_IDS = ("persona", "rules", "tools", "skills", "context", "output", "safety", "examples")


@lru_cache(maxsize=8)
def _template(source: str):
    import jinja2

    return jinja2.Template(source)


def render_prompt(prompt: dict) -> str:
    """The system message ``prompt`` renders to (its jinja2 ``template`` over its ``sections``)."""
    return _template(prompt["template"]).render(sections=prompt["sections"])


#: Instruction sentences common in public system prompts, used in generated prompt bodies.
_INSTRUCTIONS = ("You are a helpful assistant.", "If the request is ambiguous, ask a clarifying question.",
                 "Don't make assumptions about what values to plug into functions.",
                 "Keep your answers short and to the point.")


def _catalog(skills: list[dict], style: str) -> str:
    """A skill catalogue body: ``- name: description`` lines, a Markdown table or ``<skill>`` elements."""
    if style == "table":
        return "\n".join(["| Skill | Description |", "| --- | --- |"]
                         + [f"| {s['name']} | {s['description']} |" for s in skills])
    if style == "xml":
        return "\n".join(f'<skill name="{s["name"]}">{s["description"]}</skill>' for s in skills)
    return "\n".join(f"- {s['name']}: {s['description']}" for s in skills)


def _tools_json(tools: list[dict]) -> str:
    """The tools as a JSON list of ``{"name", "description", "parameters"}`` (how many harnesses list them)."""
    fns = []
    for t in tools:
        fn = t["function"] if isinstance(t.get("function"), dict) else t
        out = {"name": fn["name"]}
        if "description" in fn:
            out["description"] = fn["description"]
        out["parameters"] = next(fn[k] for k in ("parameters", "input_schema", "inputSchema") if k in fn)
        fns.append(out)
    return json.dumps(fns, indent=2, ensure_ascii=False)


@st.composite
def _prompt(draw, *, mentions: tuple[str, ...], skills: list[dict] | None = None,
            tools: list[dict] | None = None) -> dict:
    ids = draw(st.lists(st.sampled_from(_SECTION_IDS), min_size=draw(st.sampled_from((1, 2, 3))), max_size=5,
                        unique=True))
    sections = []
    for sid in ids:
        if sid == "skills" and skills and draw(st.integers(0, 3)):
            body = _catalog(skills, draw(st.sampled_from(("list", "list", "table", "xml"))))
        elif sid == "tools" and tools and draw(st.booleans()):
            body = _tools_json(tools)
        else:
            lines = draw(st.lists(st.one_of(_prose(mentions, 10), st.sampled_from(_INSTRUCTIONS)), min_size=1,
                                  max_size=3))
            body = "\n".join(f"- {line}" for line in lines) if draw(st.integers(0, 3)) else " ".join(lines)
        sec = {"id": sid, "title": sid.capitalize(), "body": body}
        if draw(st.integers(0, 3)):
            sec["movable"] = sid not in ("persona", "safety")
        sections.append(sec)
    return {"sections": sections, "template": draw(st.sampled_from(_TEMPLATES))}


def prompts(*, mentions: Iterable[str] = ()) -> st.SearchStrategy[dict]:
    """A sectioned prompt ``{"sections", "template"}`` (jinja2) whose text may mention ``mentions``."""
    mentions = tuple(mentions)

    def check():
        _check_names("mentions", mentions)

    return _lazy(check, lambda: _prompt(mentions=mentions))


# --------------------------------------------------------------------------- hooks


def _q(s: str) -> str:
    return json.dumps(s)


#: Reply-length limits of generated reply hooks. Ordinary replies stay far below them and
#: replies that break them go far above, so a rename (which changes a reply's length by a
#: few characters per mention) never moves a reply across the limit.
REPLY_LIMITS = (260, 400)
_OVERSHOOT = 120


@st.composite
def _tool_hook(draw, *, tool_params: dict[str, list[str]], whole_arguments: bool = False) -> dict:
    """A pre_tool_use hook on tool names and top-level parameters: if, match/case, matcher strings, dict keys.

    ``whole_arguments=True`` adds checks that read the argument object as a whole
    (``len(args)``, ``not args``), which transforms that add or regroup parameters change.
    """
    names = sorted(tool_params)
    head: list[str] = []
    body = []
    kinds = ("if", "match", "matcher", "table") + (("count", "empty") if whole_arguments else ())
    for k in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        tool = draw(st.sampled_from(names))
        params = tool_params[tool]
        param = draw(st.sampled_from(params)) if params else None
        if kind == "if" and param:
            body.append(f"    if name == {_q(tool)} and {_q(param)} not in args:\n"
                        f"        return {{\"decision\": \"retry\", \"message\": \"{tool} needs {param}.\"}}\n")
        elif kind == "match" and param:
            body.append(f"    match name:\n        case {_q(tool)}:\n"
                        f"            if args.get({_q(param)}) is None:\n"
                        f"                return {{\"decision\": \"deny\", \"message\": \"Give {param} to {tool}.\"}}\n"
                        f"        case _:\n            pass\n")
        elif kind == "matcher" and param:
            group = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
            if tool not in group:
                group.append(tool)
            body.append(f"    if name in {_q('|'.join(group))}.split(\"|\") and {_q(param)} in args and "
                        f"args[{_q(param)}] is None:\n"
                        f"        return {{\"decision\": \"retry\", \"message\": f\"{{name}} needs a value.\"}}\n")
        elif kind == "table" and param:
            head.append(f"NEEDS_{k} = {{{_q(tool)}: {_q(param)}}}\n")
            body.append(f"    if name in NEEDS_{k} and NEEDS_{k}[name] not in args:\n"
                        f"        return {{\"decision\": \"retry\", \"message\": \"A required argument is missing.\"}}\n")
        elif kind == "count":
            head.append(f"LIMITS_{k} = {{{_q(tool)}: {draw(st.integers(0, 3))}}}\n")
            body.append(f"    if len(args) > LIMITS_{k}.get(name, 99):\n"
                        f"        return {{\"decision\": \"retry\", \"message\": \"Too many arguments for {tool}.\"}}\n")
        else:  # "empty", or a keyed check on a tool without parameters
            if not whole_arguments:
                continue
            body.append(f"    if name == {_q(tool)} and not args:\n"
                        f"        return {{\"decision\": \"retry\", \"message\": \"{tool} needs arguments.\"}}\n")
    source = ("".join(head) + ("\n\n" if head else "") + "def check(payload: dict) -> dict:\n"
              "    name = payload[\"tool_name\"]\n    args = payload[\"tool_input\"]\n"
              + "".join(body) + "    return {\"decision\": \"allow\"}\n")
    return {"name": draw(st.sampled_from(("check_tool_params", "guard_tools", "param_policy"))),
            "event": "pre_tool_use", "entry": "check", "source": source}


@st.composite
def _reply_hook(draw, *, skill_names: list[str]) -> dict:
    """A pre_reply hook: reply length (far from any generated reply), and (with skills) which skill to load first."""
    limit = draw(st.integers(*REPLY_LIMITS))
    body = (f"    if len(payload[\"reply\"]) > {limit}:\n"
            f"        return {{\"decision\": \"retry\", \"message\": \"Keep the reply under {limit} characters.\"}}\n")
    if skill_names:
        need = draw(st.lists(st.sampled_from(skill_names), min_size=1, max_size=2, unique=True))
        listed = ", ".join(_q(n) for n in need)
        body += (f"    if not any(s in payload.get(\"loaded_skills\", []) for s in ({listed},)):\n"
                 f"        return {{\"decision\": \"retry\", \"message\": \"Load one of {', '.join(need)} first.\"}}\n")
    source = "def check_reply(payload: dict) -> dict:\n" + body + "    return {\"decision\": \"allow\"}\n"
    return {"name": draw(st.sampled_from(("reply_format", "require_skill"))), "event": "pre_reply",
            "entry": "check_reply", "source": source}


def hooks(*, tools: dict[str, list[str]] | None = None, skill_names: Iterable[str] = (),
          whole_arguments: bool = True) -> st.SearchStrategy[dict]:
    """One hook ``{"name", "event", "entry", "source"}`` checking the given tools (name -> top-level params) or replies.

    ``whole_arguments`` lets tool hooks read the argument object as a whole (``len(args)``,
    ``not args``) besides reading it by key; False keeps to by-key reads.
    """
    skill_names = list(skill_names)

    def check():
        _want(tools is None or (isinstance(tools, dict) and all(isinstance(v, list) for v in tools.values())),
              f"tools must map tool names to lists of top-level parameter names (got {tools!r})")
        _check_names("skill_names", skill_names)
        _check_tristate("whole_arguments", whole_arguments)

    def build():
        options = [_reply_hook(skill_names=skill_names)]
        if tools:
            options.append(_tool_hook(tool_params=tools, whole_arguments=whole_arguments))
        return st.one_of(options)

    return _lazy(check, build)


@lru_cache(maxsize=512)
def _compiled(source: str):
    return compile(source, "<hsa.testing hook>", "exec")


def run_hook(hook: dict, payload: dict) -> dict:
    """Run a hook the strategies wrote (trusted source) on ``payload`` and return its decision."""
    namespace: dict[str, Any] = {}
    exec(_compiled(hook["source"]), namespace)  # noqa: S102 - source generated by this module
    return namespace[hook.get("entry", "check")](json.loads(json.dumps(payload)))


# --------------------------------------------------------------------------- harnesses and records


@st.composite
def _harness(draw, *, dialects: tuple[str, ...], strict: bool | None, max_tools: int, max_properties: int,
             max_depth: int, with_skills: bool | None, with_prompt: bool | None, with_hooks: bool | None,
             whole_argument_hooks: bool = True) -> dict:
    """A harness plus what the trajectory needs to know about it (``_schemas``, ``_skill_tool``)."""
    dialect = draw(st.sampled_from(dialects))
    has_skills = draw(st.booleans()) if with_skills is None else with_skills
    n_tools = draw(st.integers(1, max_tools))
    n_skills = draw(st.integers(1, 4)) if has_skills else 0
    n_params = draw(st.integers(1, 6))
    # one pool of distinct names, split into tools, skills and parameters: no name means two things
    pool = draw(_unique_names(n_tools + n_skills + n_params + 2, n_tools + n_skills + n_params + 2,
                              tuple(dict.fromkeys(_TOOL_STYLES[dialect] + _PARAM_STYLES))))
    legal = [n for n in pool if "." not in n or dialect in ("mcp", "plain")]
    tool_names, rest = legal[:n_tools], legal[n_tools:]
    skill_names = [n for n in rest if "." not in n][:n_skills]
    param_pool = [n for n in rest if n not in skill_names and "." not in n]
    tool_names = tool_names or [draw(_names(styles=("snake",))) + "_tool"]

    tool_defs, schemas = [], {}
    for name in tool_names:
        s = draw(st.booleans()) if strict is None else strict
        tool = draw(_tool(name=name, dialect=dialect, strict=s, max_properties=max_properties, max_depth=max_depth,
                          param_names=param_pool))
        tool_defs.append(tool)
        fn = tool["function"] if dialect == "openai" else tool
        schemas[name] = fn[_SCHEMA_KEY[dialect]]

    harness: dict[str, Any] = {"tools": tool_defs}
    skill_tool = None
    if skill_names:
        st_name = draw(st.sampled_from(("load_skill", "Skill", "use-skill")))
        while st_name in tool_names or st_name in skill_names:
            st_name += "_x"
        st_arg = draw(st.sampled_from(("skill", "name", "skill_name")))
        arg_schema: dict[str, Any] = {"type": "string"}
        if draw(st.booleans()):
            arg_schema["enum"] = list(skill_names)
        if draw(st.booleans()):
            arg_schema["description"] = "Skill to load"
        st_schema = {"type": "object", "properties": {st_arg: arg_schema}, "required": [st_arg]}
        tool_defs.insert(draw(st.integers(0, len(tool_defs))),
                         draw(_tool(name=st_name, dialect=dialect, strict=False, max_properties=0, max_depth=0,
                                    param_names=None, schema=st_schema)))
        mentions = tuple(tool_names) + tuple(skill_names)
        harness["skills"] = [draw(_skill(name=n, mentions=mentions)) for n in skill_names]
        skill_tool = {"name": st_name, "argument": st_arg}
        style = draw(st.sampled_from(("object", "string", "absent")))
        if style == "absent" and skill_tool == {"name": "load_skill", "argument": "skill"}:
            pass  # the default skill tool needs no declaration
        elif style == "string" and st_arg == "skill":
            harness["skill_tool"] = st_name
        else:
            harness["skill_tool"] = skill_tool
    mentions = tuple(tool_names) + tuple(skill_names)
    if with_prompt if with_prompt is not None else draw(st.booleans()):
        harness["prompt"] = draw(_prompt(mentions=mentions, skills=harness.get("skills"), tools=tool_defs))
    if with_hooks if with_hooks is not None else draw(st.booleans()):
        top = {n: list((schemas[n].get("properties") or {})) for n in tool_names}
        harness["hooks"] = draw(st.lists(st.one_of(_tool_hook(tool_params=top, whole_arguments=whole_argument_hooks), _reply_hook(skill_names=skill_names)),
                                         min_size=1, max_size=3, unique_by=lambda h: h["name"]))
    harness["_schemas"] = schemas
    harness["_skill_tool"] = skill_tool
    harness["_dialect"] = dialect
    return harness


def _public(harness: dict) -> dict:
    return {k: v for k, v in harness.items() if not k.startswith("_")}


def harnesses(*, dialects: str | Iterable[str] = DIALECTS, strict: bool | None = None, max_tools: int = 4,
              max_properties: int = 4, max_depth: int = 2, skills: bool | None = None, prompt: bool | None = None,
              hooks: bool | None = None, whole_argument_hooks: bool = True) -> st.SearchStrategy[dict]:
    """A harness in the input format: ``tools`` (plus the skill tool), ``skills``, ``skill_tool``, ``prompt``, ``hooks``.

    Tool, skill and parameter names are distinct from each other; parameter names
    repeat across tools. ``skills`` / ``prompt`` / ``hooks``: True always, False never,
    None sometimes. ``whole_argument_hooks``: tool hooks may also read the argument
    object as a whole (``len(args)``, ``not args``); False draws only by-key reads.
    """
    return _lazy(lambda: _check_harness_options(dialects, strict, max_tools, max_properties, max_depth,
                                                skills, prompt, hooks, whole_argument_hooks),
                 lambda: _harness(dialects=_dialect_tuple(dialects), strict=strict, max_tools=max_tools,
                                  max_properties=max_properties, max_depth=max_depth, with_skills=skills,
                                  with_prompt=prompt, with_hooks=hooks,
                                  whole_argument_hooks=whole_argument_hooks).map(_public))


def _check_harness_options(dialects, strict, max_tools, max_properties, max_depth, skills, prompt, hooks,
                           whole_argument_hooks) -> None:
    _check_dialects(dialects)
    _check_tristate("strict", strict)
    _check_int("max_tools", max_tools, 1, 16)
    _check_int("max_properties", max_properties, 0, 12)
    _check_int("max_depth", max_depth, 0, 4)
    for name, value in (("skills", skills), ("prompt", prompt), ("hooks", hooks),
                        ("whole_argument_hooks", whole_argument_hooks)):
        _check_tristate(name, value)


class _Trajectory:
    """Builds messages, with unique call ids and the record's call / argument formats."""

    def __init__(self, call_style: str, args_style: str):
        self.messages: list[dict] = []
        self.events: list[dict] = []
        self.loaded: list[str] = []
        self.n = 0
        self.call_style, self.args_style = call_style, args_style

    def call(self, items: list[tuple[str, dict, str]], content: str, name_results: bool) -> None:
        calls, results = [], []
        for name, args, result in items:
            self.n += 1
            cid = f"call_{self.n}"
            encoded = json.dumps(args, ensure_ascii=False) if self.args_style == "string" else args
            if self.call_style == "openai":
                calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": encoded}})
            else:
                calls.append({"id": cid, "name": name, "arguments": encoded})
            res = {"role": "tool", "tool_call_id": cid, "content": result}
            if name_results:
                res["name"] = name
            results.append(res)
        self.messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        self.messages.extend(results)

    def inject(self, hook: dict, payload: dict, decision: dict) -> None:
        self.events.append({"hook": hook["name"], "message_index": len(self.messages), "payload": payload,
                            "decision": decision})
        self.messages.append({"role": "system", "content": decision.get("message", "Hook says retry.")})


@st.composite
def _result(draw, name: str, args: dict, mentions: tuple[str, ...]) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(_prose(mentions, 8))
    body: dict[str, Any] = {"ok": draw(st.booleans())}
    if kind >= 2 and args:
        key = draw(st.sampled_from(sorted(args)))
        body[key] = args[key]
    if kind == 3:
        body["note"] = draw(_prose(mentions, 6))
    return json.dumps(body, ensure_ascii=False)


@st.composite
def _record(draw, *, dialects: tuple[str, ...], strict: bool | None, max_tools: int, max_turns: int,
            max_parallel: int, max_properties: int, max_depth: int, arguments_as: tuple[str, ...],
            with_skills: bool | None, with_prompt: bool | None, with_hooks: bool | None,
            whole_argument_hooks: bool) -> dict:
    h = draw(_harness(dialects=dialects, strict=strict, max_tools=max_tools, max_properties=max_properties,
                      max_depth=max_depth, with_skills=with_skills, with_prompt=with_prompt, with_hooks=with_hooks,
                      whole_argument_hooks=whole_argument_hooks))
    schemas: dict[str, dict] = h["_schemas"]
    skill_tool = h["_skill_tool"]
    skill_names = [s["name"] for s in h.get("skills", ())]
    tool_names = list(schemas)
    mentions = tuple(tool_names) + tuple(skill_names)
    values = tuple(sorted({v for sch in schemas.values() for v in _string_enums(sch) if v}))
    tool_hooks = [x for x in h.get("hooks", ()) if x["event"] == "pre_tool_use"]
    reply_hooks = [x for x in h.get("hooks", ()) if x["event"] == "pre_reply"]

    traj = _Trajectory(draw(st.sampled_from(("openai", "flat"))), draw(st.sampled_from(arguments_as)))
    name_results = draw(st.booleans())
    if "prompt" in h:
        traj.messages.append({"role": "system", "content": render_prompt(h["prompt"])})
    elif draw(st.booleans()):
        traj.messages.append({"role": "system", "content": draw(_prose(mentions))})

    for _turn in range(draw(st.integers(1, max_turns))):
        user = draw(_prose(mentions + values))
        if draw(st.integers(0, 4)) == 0:
            traj.messages.append({"role": "user", "content": [{"type": "text", "text": user}]})
        else:
            traj.messages.append({"role": "user", "content": user})
        for _round in range(draw(st.integers(0, 2))):
            items = []
            for _ in range(draw(st.integers(1, max_parallel))):
                name = draw(st.sampled_from(tool_names))
                args = draw(_object_values(schemas[name]))
                items.append((name, args, draw(_result(name, args, mentions))))
            content = draw(st.sampled_from(("", None, "Let me check.")))
            traj.call(items, content, name_results)
            for hook in tool_hooks:
                for name, args, _ in items:
                    payload = {"tool_name": name, "tool_input": args}
                    decision = run_hook(hook, payload)
                    if decision.get("decision") != "allow":
                        traj.inject(hook, payload, decision)
                        break
        if skill_tool and draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(skill_names), min_size=1, max_size=2, unique=True))
            by_name = {s["name"]: s for s in h["skills"]}
            traj.call([(skill_tool["name"], {skill_tool["argument"]: n}, by_name[n]["content"]) for n in chosen],
                      "", name_results)
            traj.loaded += chosen
        reply = draw(_prose(mentions, 8))
        if reply_hooks and draw(st.integers(0, 3)) == 0:  # a rambling reply, far over any length limit
            while len(reply) < REPLY_LIMITS[1] + _OVERSHOOT:
                reply += " " + draw(_prose((), 12))
        for hook in reply_hooks:
            payload = {"reply": reply, "loaded_skills": list(traj.loaded)}
            decision = run_hook(hook, payload)
            if decision.get("decision") != "allow":
                traj.messages.append({"role": "assistant", "content": reply})
                traj.inject(hook, payload, decision)
                reply = draw(_prose((), 8))
                break
        traj.messages.append({"role": "assistant", "content": reply})

    record: dict[str, Any] = {}
    id_kind = draw(st.integers(0, 5))
    if id_kind == 0:
        record["id"] = draw(st.integers(0, 10**6))
    elif id_kind > 1:
        record["id"] = "gen-" + draw(st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8))
    if draw(st.integers(0, 4)) == 0:  # content as a list of text parts, as multimodal datasets write it
        for m in traj.messages:
            if m["role"] != "user" and isinstance(m.get("content"), str) and m["content"]:
                m["content"] = [{"type": "text", "text": m["content"]}]
    record["messages"] = traj.messages
    tools_field = h["tools"]
    if h["_dialect"] in ("openai", "plain") and draw(st.integers(0, 3)) == 0:
        called = {c["function"]["name"] if "function" in c else c["name"]
                  for m in traj.messages for c in m.get("tool_calls") or ()}
        for t in tools_field:  # a tool nobody calls, with no parameters, may come without a schema at all
            fn = t["function"] if "function" in t else t
            if fn["name"] not in called and not fn["parameters"].get("properties") and draw(st.booleans()):
                del fn["parameters"]
    record["tools"] = json.dumps(tools_field) if draw(st.integers(0, 9)) == 0 else tools_field
    for key in ("skills", "skill_tool", "prompt", "hooks"):
        if key in h:
            record[key] = h[key]
    if traj.events:
        record["hook_events"] = traj.events
        if draw(st.integers(0, 9)) == 0:
            record.pop("hooks", None)  # events recorded, hook source not shipped
    if draw(st.booleans()):
        record["meta"] = {"generator": "hsa.testing", "dialect": h["_dialect"]}
    if draw(st.integers(0, 5)) == 0:
        record["source"] = draw(st.sampled_from(("synthetic", "hub")))  # an unknown key, kept as it came
    return record


def records(*, dialects: str | Iterable[str] = DIALECTS, arguments_as: str | Iterable[str] = ("string", "object"),
            strict: bool | None = None, max_tools: int = 4, max_turns: int = 3, max_parallel: int = 3,
            max_properties: int = 4, max_depth: int = 2, skills: bool | None = None, prompt: bool | None = None,
            hooks: bool | None = None, whole_argument_hooks: bool = True) -> st.SearchStrategy[dict]:
    """Records in the input format (JSON objects): a harness and a multi-turn trajectory valid under it.

    Every call is drawn from its tool's schema, so it validates; rounds of up to
    ``max_parallel`` parallel calls each get their tool results; skill-tool calls load
    defined skills; hooks that object to a call or a reply inject a message and a
    ``hook_events`` entry with the decision the hook really returns. One dialect and
    one argument encoding (``"string"`` or ``"object"``) per record, as in real datasets.

    Tool hooks read arguments by key and (``whole_argument_hooks=True``, the default) as
    a whole (``len(args)``, ``not args``), which transforms that add or regroup
    parameters must respect. Reply-length limits are far from every drawn reply (see
    :data:`REPLY_LIMITS`).
    """
    args_styles = (arguments_as,) if isinstance(arguments_as, str) else tuple(arguments_as)

    def check():
        _check_harness_options(dialects, strict, max_tools, max_properties, max_depth, skills, prompt, hooks,
                               whole_argument_hooks)
        _check_int("max_turns", max_turns, 1, 16)
        _check_int("max_parallel", max_parallel, 1, 8)
        _want(bool(args_styles) and set(args_styles) <= {"string", "object"},
              f"arguments_as must be 'string', 'object' or both (got {arguments_as!r})")

    return _lazy(check, lambda: _record(dialects=_dialect_tuple(dialects), strict=strict, max_tools=max_tools,
                                        max_turns=max_turns, max_parallel=max_parallel, max_properties=max_properties,
                                        max_depth=max_depth, arguments_as=args_styles, with_skills=skills,
                                        with_prompt=prompt, with_hooks=hooks,
                                        whole_argument_hooks=whole_argument_hooks))


# --------------------------------------------------------------------------- recipes


def _default_leaves() -> list:
    """One instance of every registered leaf transform that builds with its defaults."""
    from hsa.transform import Combinator, registry

    out = []
    for cls in registry().values():
        if issubclass(cls, Combinator):
            continue
        try:
            out.append(cls())
        except (TypeError, ValueError):
            continue  # needs options: pass it in ``transforms=`` to include it
    return out


@st.composite
def _tree(draw, leaves: list, combinators: bool):
    from hsa.transform import OneOf, Sequence, SomeOf, Sometimes

    if not combinators or len(leaves) <= 1 and draw(st.booleans()):
        node = leaves[0] if len(leaves) == 1 else Sequence(tuple(leaves))
    else:
        cut = draw(st.integers(1, len(leaves) - 1)) if len(leaves) > 1 else 1
        parts = [p for p in (leaves[:cut], leaves[cut:]) if p]
        kids = tuple(draw(_tree(p, combinators)) if len(p) > 1 else p[0] for p in parts)
        kind = draw(st.sampled_from(("sequence", "one_of", "some_of")))
        if kind == "one_of" and len(kids) > 1:
            weights = tuple(draw(st.lists(st.sampled_from((0.5, 1.0, 2.0)), min_size=len(kids), max_size=len(kids))))
            node = OneOf(kids, weights if draw(st.booleans()) else None)
        elif kind == "some_of" and len(kids) > 1:
            lo = draw(st.integers(0, len(kids)))
            node = SomeOf(kids, (lo, draw(st.integers(lo, len(kids)))))
        else:
            node = Sequence(kids)
    if combinators and draw(st.integers(0, 3)) == 0:
        node = Sometimes(node, draw(st.sampled_from((0.0, 0.5, 1.0))))
    return node


def recipes(*, transforms: Iterable | None = None, max_leaves: int = 6, min_leaves: int = 0,
            combinators: bool = True) -> st.SearchStrategy:
    """Recipe trees of up to ``max_leaves`` leaf transforms under sequence / one-of / some-of / sometimes.

    ``transforms``: transform instances or zero-argument factories to draw leaves from;
    by default one default-built instance of every registered leaf transform.
    ``min_leaves=0`` includes the empty recipe.
    """
    pool_arg = None if transforms is None else list(transforms)

    def check():
        _check_int("max_leaves", max_leaves, 0, 64)
        _check_int("min_leaves", min_leaves, 0, max_leaves)
        from hsa.transform import Transform

        for t in pool_arg or ():
            _want(isinstance(t, Transform) or callable(t),
                  f"transforms must hold Transform instances or zero-argument factories (got {t!r})")

    def build():
        from hsa.transform import Sequence, Transform

        pool = _default_leaves() if pool_arg is None else [t if isinstance(t, Transform) else t() for t in pool_arg]
        if not pool:
            return st.just(Sequence(()))

        @st.composite
        def tree(draw):
            leaves = draw(st.lists(st.sampled_from(pool), min_size=min_leaves, max_size=max_leaves))
            if not leaves:
                return Sequence(())
            return draw(_tree(leaves, combinators))

        return tree()

    return _lazy(check, build)

