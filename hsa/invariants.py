"""Verification of records and variants: docs/design.md invariants 1, 2, 3, 6 and 8.

Checks return a list of :class:`Violation` values (empty when everything holds);
they never raise on bad data.
"""

from __future__ import annotations

import ast
import operator
import traceback
from typing import Any

from hsa import _json
from hsa.context import current as _current
from hsa.hooks_model import content_text
from hsa.mapping import ARRAY, Mapping
from hsa.names import is_identifier_like, is_legal
from hsa.plans import DIGEST_KEYS
from hsa.records import Record, RecordError, iter_calls, read_back
from hsa.rename_texts import stale_names, variant_key
from hsa.schema_facts import schema_fact
from hsa.violations import Violation

__all__ = ["Violation", "check_record", "check_variant", "check_consistency", "validator_for", "quick_valid", "calls_of",
           "clip", "error_detail", "leaf_params"]


def validator_for(schema: dict):
    """A compiled jsonschema validator for ``schema``: a fact of the schema (:func:`hsa.schema_facts.schema_fact`,
    exact: it reads the schema's values), compiled once per schema."""
    return schema_fact(schema, _compile_validator, exact=True, size=_validator_size)


def _validator_size(validator: Any) -> int:
    return 1600  # the validator itself and its lazy sub-validators (its schema is the entry's own copy)


def _compile_validator(schema: dict):
    import jsonschema

    key = _json.canonical(schema)
    if '"nullable":true' in key or '"x-nullable":true' in key:
        schema = _nullable_as_null(schema)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if cls is not jsonschema.Draft202012Validator or not _check_schema_moot(key):
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            cls = jsonschema.Draft202012Validator
    return cls(schema, format_checker=None)


#: Keywords whose value maps names to schemas, and keywords whose value is data, not a schema.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_LITERAL_KEYS = ("enum", "const", "default", "examples", "example")


def _nullable_as_null(schema: Any) -> Any:
    """``schema`` with OpenAPI 3.0's ``nullable: true`` (Gemini's function declarations, tools made from OpenAPI
    specs; Swagger's ``x-nullable``) said in JSON Schema's words, which a validator reads: ``null`` joins the
    schema's ``type``, its ``enum`` and its ``anyOf`` / ``oneOf`` alternatives (a schema with none of these admits
    ``null`` already). Only the validator sees this form: the record keeps the schema as it was written, so a
    variant written in Gemini's dialect reads back as it was, and a call passing ``null`` where the tool's author
    allowed it validates (JSON Schema ignores the keyword, which refused such calls)."""
    if isinstance(schema, list):
        return [_nullable_as_null(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):  # name -> schema: a property may be called "nullable"
            out[k] = {name: _nullable_as_null(sub) for name, sub in v.items()}
        elif k in _LITERAL_KEYS or not isinstance(v, (dict, list)):
            out[k] = v
        else:
            out[k] = _nullable_as_null(v)
    if out.get("nullable") is True or out.get("x-nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str) and kind != "null":
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        for key in ("anyOf", "oneOf"):
            alts = out.get(key)
            if isinstance(alts, list) and not any(isinstance(a, dict) and a.get("type") == "null" for a in alts):
                out[key] = [*alts, {"type": "null"}]
    return out


def _check_schema_moot(key: str) -> bool:
    """True when ``check_schema`` can only raise ``SchemaError`` on the schema of canonical JSON ``key``.

    With the 2020-12 validator already drawn, a ``SchemaError`` falls back to that same
    class, so the check changes nothing. It could raise anything else only from the
    ``regex`` format check (``pattern`` keys: ``re.compile`` may overflow) or from a
    nesting deep enough to exhaust the stack (at most 40 objects deep here; 80 is fine).
    """
    return '"pattern' not in key and key.count("{") <= 40


# --------------------------------------------------------------------------- a quick validator for common schemas
#
# Tool schemas are mostly objects of typed properties with required lists and enums. jsonschema
# walks them through generators and a validator object per call; this walk gives the same verdict
# for the keywords below (Draft 2020-12 semantics, as jsonschema implements them) and says "don't
# know" (None) for everything else, which then goes to jsonschema. A False also goes to jsonschema,
# which is the authority and writes the message: only "valid" is decided here.

_UNSUPPORTED = frozenset({  # 2020-12 keywords with a validation effect that the quick walk does not implement
    "$ref", "$dynamicRef", "$recursiveRef", "$schema", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "dependentSchemas", "dependentRequired", "dependencies", "prefixItems", "contains", "minContains", "maxContains",
    "patternProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    "minProperties", "maxProperties", "multipleOf", "additionalItems", "$vocabulary", "$anchor", "$dynamicAnchor",
    "$recursiveAnchor",
})
_TYPES = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
          "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
          "null": lambda v: v is None,
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())}


#: The bounds the walk checks, each with the test that fails an instance (built once, not per call).
_BOUNDS = (("minimum", operator.lt), ("maximum", operator.gt), ("exclusiveMinimum", operator.le),
           ("exclusiveMaximum", operator.ge))
_LENGTHS = (("minLength", str, operator.lt), ("maxLength", str, operator.gt), ("minItems", list, operator.lt),
            ("maxItems", list, operator.gt))
_BOUND_KEYS = frozenset(k for k, _ in _BOUNDS)
_LENGTH_KEYS = frozenset(k for k, _, _ in _LENGTHS)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _schema_equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema's ``enum``/``const`` see it: ``1 == 1.0``, but ``True != 1``."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_schema_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_schema_equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _distinct(items: list) -> bool | None:
    """Whether no two of ``items`` are equal as jsonschema's ``uniqueItems`` sees them, for a list of strings only or
    of numbers only (no bool, no NaN, which its sort-based check sees differently); None for any other list."""
    if all(isinstance(v, str) for v in items) or all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v == v for v in items):
        return len(set(items)) == len(items)
    return None


def quick_valid(schema: Any, instance: Any) -> bool | None:
    """Whether ``instance`` validates against ``schema`` (True/False) for schemas made of the common keywords, or
    None when the schema uses anything else (a keyword above, an unknown type name, a malformed keyword)."""
    if schema is True or schema == {}:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict) or not _UNSUPPORTED.isdisjoint(schema):
        return None
    ok = True
    t = schema.get("type")
    if isinstance(t, str):  # the common case: one type name
        check = _TYPES.get(t)
        if check is None:
            return None
        ok = check(instance)
    elif t is not None:
        names = t if isinstance(t, list) else [t]
        checks = [_TYPES.get(n) if isinstance(n, str) else None for n in names]
        if not names or None in checks:
            return None
        ok = any(c(instance) for c in checks)
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            return None
        ok = ok and any(_schema_equal(e, instance) for e in schema["enum"])
    if "const" in schema:
        ok = ok and _schema_equal(schema["const"], instance)
    if instance is None and not ok and (schema.get("nullable") is True or schema.get("x-nullable") is True):
        return None  # OpenAPI's nullable admits null: the validator decides (:func:`_nullable_as_null`)
    if not _BOUND_KEYS.isdisjoint(schema):
        for key, fails in _BOUNDS:
            if key in schema:
                if not _number(schema[key]):
                    return None
                if _number(instance) and fails(instance, schema[key]):
                    ok = False
    if not _LENGTH_KEYS.isdisjoint(schema):
        for key, kind, fails in _LENGTHS:
            if key in schema:
                if not _number(schema[key]):
                    return None
                if isinstance(instance, kind) and fails(len(instance), schema[key]):
                    ok = False
    if "uniqueItems" in schema:
        unique = schema["uniqueItems"]
        if not isinstance(unique, bool):
            return None
        if unique and isinstance(instance, list):
            distinct = _distinct(instance)
            if distinct is None:
                return None
            ok = ok and distinct
    if "pattern" in schema:
        import re

        if not isinstance(schema["pattern"], str):
            return None
        try:
            if isinstance(instance, str) and re.search(schema["pattern"], instance) is None:
                ok = False
        except re.error:
            return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    items = schema.get("items", True)
    if not (isinstance(props, dict) and isinstance(required, list) and all(isinstance(r, str) for r in required)
            and isinstance(extra, (bool, dict)) and isinstance(items, (bool, dict))):
        return None
    # subschemas count only where the instance reaches them, as in jsonschema
    if isinstance(instance, dict):
        if any(r not in instance for r in required):
            ok = False
        for k, v in instance.items():
            verdict = quick_valid(props[k] if k in props else extra, v)
            if verdict is None:
                return None
            ok = ok and verdict
    elif isinstance(instance, list) and items is not True:
        for v in instance:
            verdict = quick_valid(items, v)
            if verdict is None:
                return None
            ok = ok and verdict
    return ok


def calls_of(record: Record) -> list[dict]:
    """The record's tool calls as ``{"name", "arguments"}`` in trajectory order."""
    return [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for _, _, c in iter_calls(record)]


#: What an undefined-tool violation adds for a record that defines no tools at all: agent logs (SWE-agent, tau2-bench,
#: Claude Code) keep the tool definitions outside the trajectory.
_NO_TOOLS = ("; the record defines no tools: agent logs often keep them apart, so pass them with --tools FILE (a "
             "JSON list of tool definitions) to hsa augment, hsa validate or the trainers (docs/format.md)")


def check_record(record: Record, *, check_names: bool = False) -> list[Violation]:
    """Invariant 1 on one record: every call names a defined tool and validates against its schema."""
    out: list[Violation] = []
    tools = {t["name"]: t for t in record["tools"]}
    if len(tools) != len(record["tools"]):
        names = [t["name"] for t in record["tools"]]
        dup = sorted({n for n in names if names.count(n) > 1})
        out.append(Violation("validity", "duplicate tool name", f"tools define {dup} more than once"))
    for mi, ci, call in iter_calls(record):
        fn = call["function"]
        tool = tools.get(fn["name"])
        where = f"messages[{mi}].tool_calls[{ci}]"
        if tool is None:
            out.append(Violation("validity", "undefined tool",
                                 f"{where} calls {fn['name']!r}, which is not among the tools ({sorted(tools)})"
                                 + (_NO_TOOLS if not tools else "")))
            continue
        if quick_valid(tool["parameters"], fn["arguments"]) is True:
            continue
        try:  # every error of the call, not only the first (a record's message bounds them: violations.details)
            errors = list(validator_for(tool["parameters"]).iter_errors(fn["arguments"]))
        except Exception as exc:  # a schema jsonschema cannot use (bad $ref, bad regex)
            out.append(Violation("validity", "unusable schema", f"{where} {fn['name']!r}: {exc}"))
            continue
        for err in errors:
            at = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
            out.append(Violation("validity", "arguments do not validate",
                                 f"{where} {fn['name']!r} at {at}: {err.message}"))
    if check_names:
        for t in record["tools"]:
            if not is_legal(t["name"], t["dialect"]):
                out.append(Violation("validity", "illegal name",
                                     f"tool name {t['name']!r} is not legal in the {t['dialect']} dialect"))
    st = record["skill_tool"]
    skills = {s["name"] for s in record.get("skills") or ()}
    if skills:
        for mi, ci, call in iter_calls(record):
            fn = call["function"]
            if fn["name"] == st["name"]:
                value = fn["arguments"].get(st["argument"])
                if isinstance(value, str) and value not in skills:
                    out.append(Violation("validity", "undefined skill",
                                         f"messages[{mi}].tool_calls[{ci}] loads skill {value!r}, not among {sorted(skills)}"))
    return out


def check_variant(source: Record, variant: Record, *, closure: bool = True, exec_hooks: bool = False,
                  thorough: bool = False) -> list[Violation]:
    """Invariants 1, 2, 6, 8, (``closure=True``) 3 and (``exec_hooks=True``) 7 for ``variant`` produced from ``source``.

    The one per-variant check: ``hsa augment`` runs it on every variant before writing it, and
    ``hsa validate`` on every row of a variant (against its source row, or, when the source is
    not in the folder, against what canonicalize gives back). Added tools and parameters must
    carry no name the source had (a distractor named like a renamed tool makes the canonical
    call ambiguous). Invariant 7 replays hooks in the sandbox only when no other check failed.
    ``thorough`` checks all of invariant 6 (:func:`check_consistency`), as :mod:`hsa.testing` does.
    """
    out = _hook_refusals(source, variant) + check_record(variant)
    source_names = {t["name"] for t in source["tools"]}
    for t in variant["tools"]:
        if t["name"] not in source_names and not is_legal(t["name"], t["dialect"]):
            out.append(Violation("validity", "illegal name",
                                 f"new tool name {t['name']!r} is not legal in the {t['dialect']} dialect"))
    mapping = Mapping(variant["mapping"][len(source["mapping"]):])
    if mapping.task_preserving:
        src_calls, var_calls = calls_of(source), calls_of(variant)
        if len(src_calls) != len(var_calls):
            out.append(Violation("round-trip", "call count changed",
                                 f"source has {len(src_calls)} calls, variant {len(var_calls)}"))
        else:
            for i, (s, v) in enumerate(zip(src_calls, var_calls)):
                back = mapping.to_canonical(v)
                if not _json.strict_equal(back, s):
                    out.append(Violation("round-trip", "call does not map back",
                                         f"call {i}: variant {_json.dumps(v)} maps back to {_json.dumps(back)}, "
                                         f"source is {_json.dumps(s)}"))
        key = variant_key(variant, mapping.steps, source)
        out.extend(_added_names_cached(source, variant, mapping, key))
        out.extend(check_consistency(source, variant, mapping, thorough=thorough, key=key))
        out.extend(_check_inversion(source, variant, len(mapping.steps)))
    elif thorough:
        out.extend(check_consistency(source, variant, mapping, thorough=True))
    out.extend(_prompt_renders(source, variant))
    if closure:
        try:
            read_back(variant)
        except RecordError as exc:
            out.append(Violation("closure", exc.reason, exc.detail))
    if not out and exec_hooks and (source.get("hooks") or variant.get("hooks")):
        from hsa.sandbox import check_hooks

        out = check_hooks(source, variant)
    return out


def _skeleton(schema: Any) -> Any:
    """Arguments that pass every parameter ``schema`` declares, at any depth (``None`` at the leaves, one item in
    each array): carried through a mapping, they show which variant parameters come from source ones."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        return {k: _skeleton(v) for k, v in props.items()}
    if isinstance(schema.get("items"), dict):
        item = _skeleton(schema["items"])
        return [item] if item is not None else None
    return None


def _reached(value: Any, prefix: tuple, out: set) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + (k,))
            _reached(v, prefix + (k,), out)
    elif isinstance(value, list):
        for v in value:
            _reached(v, prefix + ("[]",), out)


def _skeleton_paths(schema: Any) -> frozenset:
    """The paths :func:`_reached` finds in ``_skeleton(schema) or {}``: a fact of the schema
    (:func:`hsa.schema_facts.schema_fact`; the skeleton follows from its keys and nesting); read only."""
    return schema_fact(schema, _skeleton_paths_of, size=_paths_size)


def _skeleton_paths_of(schema: Any) -> frozenset:
    found: set = set()
    _reached(_skeleton(schema) or {}, (), found)
    return frozenset(found)


def _paths_size(paths: frozenset) -> int:
    return 120 * len(paths)


def _carried_as_is(mapping: Mapping, name: str) -> bool:
    """True when ``mapping.to_variant`` gives a call of tool ``name`` its arguments object as it is: every step
    renames tools only, puts back or changes no call (``restore``, ``opaque``), or is a ``params``, ``values`` or
    ``skills`` step of another tool (by the name the call has at that step)."""
    for step in mapping.typed():
        if step.renames_tools:
            name = step.rename(name, True)  # type: ignore[attr-defined]
        elif step.tool is not None:  # a params, values or skills step
            if step.tool == name:
                return False
        elif step.changes_calls:
            return False  # an unknown op: to_variant says what is wrong with it
    return True


def _nested(path: tuple) -> Any:
    """Arguments holding one leaf at ``path`` (``"[]"``: a list of one item)."""
    value: Any = None
    for key in reversed(path):
        value = [value] if key == "[]" else {key: value}
    return value


def _added_names_cached(source: Record, variant: Record, mapping: Mapping, key: str | None) -> list[Violation]:
    """:func:`_check_added_names`, kept in the slot plan of the variant being checked
    (:attr:`hsa.context.WorkerContext.keeping`) by ``key`` (:func:`hsa.rename_texts.variant_key`: the variant's tools
    and its own steps but ``restore``, among other parts): it reads nothing else but the source's tools, which are
    alike in every record of a plan (:data:`hsa.plans.DIGEST_KEYS`), and a ``restore`` step changes no name (records
    of one pool slot share the verdict). Without a plan (``--harness-pool 0``, ``hsa validate``) it is checked
    afresh."""
    plan = _current().keeping
    if plan is None or key is None:
        return _check_added_names(source, variant, mapping)
    return list(plan.kept(("added names", key), lambda: tuple(_check_added_names(source, variant, mapping))))


def _check_added_names(source: Record, variant: Record, mapping: Mapping) -> list[Violation]:
    """No tool or parameter the variant adds (distractors, required fillers) maps back onto a name the source has.

    A tool or parameter is added when no source one maps to it. Mapped back through the mapping it must not
    land on a source tool, or on a declared path of its tool's source schema: a distractor named like a renamed
    tool would make the canonical calls ambiguous, and canonicalize would put two tools under one name.
    """
    from hsa.renames import param_paths

    out: list[Violation] = []
    src_tools = {t["name"]: t for t in source["tools"]}
    mapped = {mapping.tool_to_variant(n): n for n in src_tools}
    for t in variant["tools"]:
        if t["name"] not in mapped and mapping.tool_to_canonical(t["name"]) in src_tools:
            out.append(Violation("round-trip", "added name equals a source name",
                                 f"added tool {t['name']!r} maps back to source tool "
                                 f"{mapping.tool_to_canonical(t['name'])!r} (now {mapping.tool_to_variant(t['name'])!r}): "
                                 "its calls would map back ambiguously"))
    var_tools = {t["name"]: t for t in variant["tools"]}
    for new, old in mapped.items():
        if new not in var_tools:
            continue
        src_params = src_tools[old]["parameters"]
        src_paths = None
        if _carried_as_is(mapping, old):  # no step changes its calls' arguments: they reach the variant as they are
            reached: set | frozenset = _skeleton_paths(src_params)
        else:
            fwd = mapping.to_variant({"name": old, "arguments": _skeleton(src_params) or {}})
            reached = set()
            _reached(fwd["arguments"], (), reached)
        for path in param_paths(var_tools[new]["parameters"]):
            if path in reached:  # a source parameter, or one a mapping step fills (and drops on the way back)
                continue
            if src_paths is None:
                src_paths = set(param_paths(src_params))
            back = mapping.to_canonical({"name": new, "arguments": _nested(path)})
            landed: set = set()
            _reached(back["arguments"], (), landed)
            leaf = max(landed, key=len, default=())
            if back["name"] == old and leaf in src_paths:
                out.append(Violation("round-trip", "added name equals a source name",
                                     f"tool {new!r} adds parameter {'.'.join(path)!r}, which maps back onto source "
                                     f"parameter {'.'.join(leaf)!r}: canonicalize would rename another parameter "
                                     "onto it"))
    return out


def _check_inversion(source: Record, variant: Record, n: int) -> list[Violation]:
    """Invariant 8: undoing the variant's own ``n`` mapping steps gives the source's content back exactly."""
    from hsa._patch import same
    from hsa.renames import CONTENT_KEYS, content_of, undo_last

    try:
        back = undo_last(variant, n)
    except ValueError as exc:
        return [Violation("inversion", "cannot map back", str(exc))]
    got, want = content_of(back), content_of(source)
    if _gives_back(got, want):
        return []
    keys = [k for k in CONTENT_KEYS if not same(got.get(k), want.get(k))]
    return [Violation("inversion", "canonicalize does not give the source back",
                      f"canonicalize(variant) differs from the source in {keys}")]


#: The kinds of work (:meth:`hsa.plans.SlotPlan.same_as`) of :func:`_gives_back`, one for each key the harness
#: digest covers (made once: a kind is matched by identity).
_GIVEN_BACK = {k: f"{k} given back" for k in DIGEST_KEYS}


def _gives_back(got: dict, want: dict) -> bool:
    """``hsa._patch.same(got, want)`` of what undoing a variant gives and its source's content (:func:`hsa.renames.
    content_of` of each), key by key; under a slot plan (:attr:`hsa.context.WorkerContext.keeping`) a harness part
    given back that the plan found the same as the source's for an earlier variant, the very object, is not compared
    again: the source's part is alike in every record of the plan (a key the harness digest covers,
    :data:`hsa.plans.DIGEST_KEYS`), and the restore step gives the variants of a slot the parts the plan holds (the
    split undo's, the restore patch's), read only. Every other part, and every part given back afresh, is compared."""
    from hsa._patch import same

    if list(got) != list(want):
        return False
    plan = _current().keeping
    for k, value in got.items():
        kind = _GIVEN_BACK.get(k) if plan is not None else None
        if kind is None:
            if not same(value, want[k]):
                return False
        elif plan.same_as((kind, value)) is None:
            if not same(value, want[k]):
                return False
            plan.remember((kind, value), True)
    return True


_HOOK_REFUSAL = "hook sync refused: "  # hsa.codemods.sync.REFUSAL_PREFIX (not imported: keeps libcst off this path)


def _hook_refusals(source: Record, variant: Record) -> list[Violation]:
    """Invariant 7, static part: a hook that a rename could not provably carry (noted by hsa.codemods.sync)."""
    out = []
    for note in variant["notes"][len(source["notes"]):]:
        if note.startswith(_HOOK_REFUSAL):
            reason, _, detail = note[len(_HOOK_REFUSAL):].partition(" | ")
            out.append(Violation("hooks", f"sync refused: {reason}", detail))
    return out


def check_consistency(source: Record, variant: Record, mapping: Mapping, *, thorough: bool = False,
                      key: str | None = None) -> list[Violation]:
    """Invariant 6 (consistency) of ``variant`` made from ``source`` through ``mapping`` (the variant's own steps).

    Always: a renamed identifier-like tool or skill name is left nowhere in the variant's texts (what
    :func:`check_variant` runs on every variant the pipeline writes). With ``thorough`` (the property checks of
    :mod:`hsa.testing`), also: tool results and the skill tool follow their tools (for every variant), and, for a
    task-preserving one, hook payloads map back, injected hook messages agree with their recorded decisions, hook
    source that parsed still parses, no renamed parameter is left as a hook literal, and canonicalize gives the
    source's calls back (that the prompt still renders the system message is :func:`check_variant`'s, for every
    variant). ``key``: the variant's
    :func:`hsa.rename_texts.variant_key` when the caller has it (the slot plan's key of the names-left check).
    """
    out = _links_follow(source, variant) if thorough else []
    if not mapping.task_preserving:
        return out
    out += _names_left_behind(variant, mapping, key)
    if thorough:
        out += _hooks_and_prompt_follow(source, variant, mapping)
    return out


def _names_left_behind(variant: Record, mapping: Mapping, key: str | None = None) -> list[Violation]:
    """A renamed identifier-like tool or skill name is left nowhere in the variant, and no text refers to an old
    name (:func:`hsa.rename_texts.stale_references`: plain words in a reference form, compound names inside longer
    tokens, parameter names). What to look for and the harness's texts are checked once per slot plan
    (:func:`hsa.rename_texts.stale_names`; ``key``: its :func:`hsa.rename_texts.variant_key`, when the caller has
    it), the messages per record."""
    return [Violation("consistency", reason, detail)
            for reason, detail in stale_names(variant, mapping.steps, key=key).left_behind(variant)]


# --------------------------------------------------------------------------- invariant 6, thorough


def clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, saying how many more there were (for a violation's detail)."""
    return text if len(text) <= n else text[:n] + f"... ({len(text) - n} more characters)"


def error_detail(exc: BaseException) -> str:
    """An exception as a violation's detail: its type, message and where it was raised."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno} in {tb[-1].name}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def leaf_params(record: Record) -> set[str]:
    """The names of every parameter the record's tools declare, at any depth."""
    from hsa.renames import param_paths

    return {p[-1] for t in record["tools"] for p in param_paths(t["parameters"]) if p[-1] != ARRAY}


def _call_names(record: Record) -> dict[str, str]:
    out = {}
    for m in record["messages"]:
        for c in m.get("tool_calls") or ():
            if isinstance(c.get("id"), str):
                out[c["id"]] = c["function"]["name"]
    return out


def _system_message(record: Record) -> str | None:
    for m in record["messages"]:
        if m.get("role") == "system":
            return m.get("content") if isinstance(m.get("content"), str) else None
    return None


def _prompt_renders(source: Record, variant: Record) -> list[Violation]:
    """The variant's prompt renders its system message (and the context message of the sections placed in the user
    turn) when the source's prompt renders the source's, or the source has none (a prompt transform made the
    variant's from the system message): :func:`hsa.prompt_model.check_sync`. A rename that read a word of the system
    message as a reference and the same word of a section body as a word would break it."""
    if not variant.get("prompt"):
        return []
    from hsa.prompt_model import check_sync

    problem = check_sync(variant)
    if problem is None or (source.get("prompt") and check_sync(source) is not None):
        return []  # a prompt a transform made from the system message rendered it byte for byte when it was made
    whose = "the source's prompt renders its messages" if source.get("prompt") else "the prompt made from the " \
        "source's system message rendered it"
    return [Violation("consistency", "system message differs from the rendered prompt",
                      f"{whose}, the variant's does not: {problem}; the variant's system message is "
                      f"{clip(repr(_system_message(variant)), 200)}")]


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _links_follow(source: Record, variant: Record) -> list[Violation]:
    """Tool results name the tool of their call; the skill tool (and its argument) follows its tool."""
    out: list[Violation] = []
    src_calls, var_calls = _call_names(source), _call_names(variant)
    src_results = {m.get("tool_call_id"): m.get("name") for m in source["messages"] if m.get("role") == "tool"}
    for m in variant["messages"]:
        cid = m.get("tool_call_id")
        if m.get("role") != "tool" or cid not in var_calls or cid not in src_calls:
            continue
        if src_results.get(cid) == src_calls[cid] and m.get("name") != var_calls[cid]:
            out.append(Violation("consistency", "tool result name not renamed",
                                 f"result of {cid} is named {m.get('name')!r}, its call {var_calls[cid]!r}"))
    src_tools = {t["name"]: t for t in source["tools"]}
    var_tools = {t["name"]: t for t in variant["tools"]}
    sst, vst = source["skill_tool"], variant["skill_tool"]
    if sst["name"] in src_tools:
        if vst["name"] not in var_tools:
            out.append(Violation("consistency", "skill tool lost", f"skill_tool names {vst['name']!r}, which is no "
                                 f"longer a tool (tools: {sorted(var_tools)})"))
        elif sst["argument"] in (src_tools[sst["name"]]["parameters"].get("properties") or {}) and \
                vst["argument"] not in (var_tools[vst["name"]]["parameters"].get("properties") or {}):
            out.append(Violation("consistency", "skill tool argument lost",
                                 f"skill_tool argument {vst['argument']!r} is not a parameter of {vst['name']!r}"))
    return out


def _hooks_and_prompt_follow(source: Record, variant: Record, mapping: Mapping) -> list[Violation]:
    """Hook payloads, injected messages, hook source and literals, the rendered prompt and the calls follow."""
    from hsa.renames import canonicalize, hook_literals

    out: list[Violation] = []
    var_tools = {t["name"] for t in variant["tools"]}
    # hook payloads map back; injected messages agree with their decisions
    src_events, var_events = source.get("hook_events") or [], variant.get("hook_events") or []
    if len(src_events) == len(var_events):
        for i, (se, ve) in enumerate(zip(src_events, var_events)):
            sp, vp = se.get("payload") or {}, ve.get("payload") or {}
            if isinstance(sp.get("tool_name"), str) and isinstance(vp.get("tool_name"), str):
                back = mapping.to_canonical({"name": vp["tool_name"], "arguments": vp.get("tool_input") or {}})
                want = {"name": sp["tool_name"], "arguments": sp.get("tool_input") or {}}
                if not _json.strict_equal(back, want):
                    out.append(Violation("consistency", "hook payload does not map back",
                                         f"hook_events[{i}] payload maps back to {_json.dumps(back)}, "
                                         f"source has {_json.dumps(want)}"))
            out.extend(_check_injected(source, se, variant, ve, i))
    # hooks that parsed still parse
    for sh, vh in zip(source.get("hooks") or (), variant.get("hooks") or ()):
        if _parses(sh.get("source", "")) and not _parses(vh.get("source", "")):
            out.append(Violation("consistency", "hook source no longer parses", f"hook {vh.get('name')!r}"))
    # renamed parameters are left in no hook literal
    renamed_params = {a[-1] for step in mapping.steps if step["op"] == "params"
                      for a, b in step["paths"] if a and b and a[-1] != b[-1] and a[-1] != ARRAY
                      and is_identifier_like(a[-1])}  # plain words ("message") may be hook-protocol keys
    if renamed_params:
        alive = leaf_params(variant) | var_tools | {s["name"] for s in variant.get("skills") or ()}
        stale = sorted((renamed_params & hook_literals(variant)) - alive)
        if stale:
            out.append(Violation("consistency", "old parameter name left in hook source",
                                 f"renamed parameter(s) {stale} still occur as string literals in hook source, "
                                 "and no tool declares them any more"))
    # the mapping undoes the record
    try:
        canon = canonicalize(variant)
        if not _json.strict_equal(calls_of(canon), calls_of(source)):
            out.append(Violation("consistency", "canonicalize does not restore the calls",
                                 f"hsa.renames.canonicalize(variant) has calls {clip(_json.dumps(calls_of(canon)), 400)}"))
    except Exception as exc:  # noqa: BLE001
        out.append(Violation("consistency", "canonicalize raised", error_detail(exc)))
    return out


def _check_injected(source: Record, se: dict, variant: Record, ve: dict, i: int) -> list[Violation]:
    def injected(rec, ev):
        idx = ev.get("message_index")
        if isinstance(idx, int) and 0 <= idx < len(rec["messages"]):
            return content_text(rec["messages"][idx].get("content"))
        return None

    out = []
    sd, vd = se.get("decision") or {}, ve.get("decision") or {}
    if isinstance(sd.get("message"), str) and sd["message"] == injected(source, se):
        if vd.get("message") != injected(variant, ve):
            out.append(Violation("consistency", "injected message and decision disagree",
                                 f"hook_events[{i}]: decision message {vd.get('message')!r}, injected message "
                                 f"{injected(variant, ve)!r}"))
    # a payload text that is the message the hook judged (the one before the injection) stays that message
    sj, vj = se.get("message_index"), ve.get("message_index")
    if isinstance(sj, int) and isinstance(vj, int) and 0 < sj <= len(source["messages"]) \
            and 0 < vj <= len(variant["messages"]):
        judged_src = content_text(source["messages"][sj - 1].get("content"))
        judged_var = content_text(variant["messages"][vj - 1].get("content"))
        sp, vp = se.get("payload") or {}, ve.get("payload") or {}
        for key, value in sp.items():
            if isinstance(value, str) and value and value == judged_src and vp.get(key) != judged_var:
                out.append(Violation("consistency", "hook payload and judged message disagree",
                                     f"hook_events[{i}].payload[{key!r}] is {clip(repr(vp.get(key)), 200)}, the "
                                     f"message it judged is {clip(repr(judged_var), 200)}"))
    return out
