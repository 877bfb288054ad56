"""Verification of records and variants: DESIGN.md invariants 1, 2, 3 and 6.

Checks return a list of :class:`Violation` values (empty when everything holds);
they never raise on bad data.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

from hsa import _json
from hsa.mapping import Mapping
from hsa.names import _PLAIN_NAME, find_tokens, is_identifier_like, is_legal, text_tokens
from hsa.records import Record, RecordError, denormalize, iter_calls, normalize
from hsa.rewrite import text_fields

__all__ = ["Violation", "check_record", "check_variant", "validator_for", "calls_of"]


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken invariant: which, a short stable reason, and where."""

    invariant: str  # "validity" | "round-trip" | "closure" | "consistency" | "identity" | "determinism" | "hooks"
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.reason}: {self.detail}"


_VALIDATORS: OrderedDict[str, Any] = OrderedDict()
_MAX_VALIDATORS = 8192


def validator_for(schema: dict):
    """A compiled jsonschema validator for ``schema``, cached by the schema's canonical JSON."""
    key = _json.canonical(schema)
    v = _VALIDATORS.get(key)
    if v is not None:
        _VALIDATORS.move_to_end(key)
        return v
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if cls is not jsonschema.Draft202012Validator or not _check_schema_moot(key):
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            cls = jsonschema.Draft202012Validator
    v = cls(schema, format_checker=None)
    _VALIDATORS[key] = v
    if len(_VALIDATORS) > _MAX_VALIDATORS:
        _VALIDATORS.popitem(last=False)
    return v


def _check_schema_moot(key: str) -> bool:
    """True when ``check_schema`` can only raise ``SchemaError`` on the schema of canonical JSON ``key``.

    With the 2020-12 validator already drawn, a ``SchemaError`` falls back to that same
    class, so the check changes nothing. It could raise anything else only from the
    ``regex`` format check (``pattern`` keys: ``re.compile`` may overflow) or from a
    nesting deep enough to exhaust the stack (at most 40 objects deep here; 80 is fine).
    """
    return '"pattern' not in key and key.count("{") <= 40


def calls_of(record: Record) -> list[dict]:
    """The record's tool calls as ``{"name", "arguments"}`` in trajectory order."""
    return [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for _, _, c in iter_calls(record)]


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
                                 f"{where} calls {fn['name']!r}, which is not among the tools ({sorted(tools)})"))
            continue
        try:
            err = next(iter(validator_for(tool["parameters"]).iter_errors(fn["arguments"])), None)
        except Exception as exc:  # a schema jsonschema cannot use (bad $ref, bad regex)
            out.append(Violation("validity", "unusable schema", f"{where} {fn['name']!r}: {exc}"))
            continue
        if err is not None:
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


def check_variant(source: Record, variant: Record, *, closure: bool = True) -> list[Violation]:
    """Invariants 1, 2, 6 and (``closure=True``) 3 for ``variant`` produced from ``source``."""
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
        out.extend(_check_consistency(source, variant, mapping))
    if closure:
        try:
            normalize(_json.loads(_json.dumps(denormalize(variant))))
        except RecordError as exc:
            out.append(Violation("closure", exc.reason, exc.detail))
    return out


_HOOK_REFUSAL = "hook sync refused: "  # hsa.codemods.sync.REFUSAL_PREFIX (not imported: keeps libcst off this path)


def _hook_refusals(source: Record, variant: Record) -> list[Violation]:
    """Invariant 7, static part: a hook that a rename could not provably carry (noted by hsa.codemods.sync)."""
    out = []
    for note in variant["notes"][len(source["notes"]):]:
        if note.startswith(_HOOK_REFUSAL):
            reason, _, detail = note[len(_HOOK_REFUSAL):].partition(" | ")
            out.append(Violation("hooks", f"sync refused: {reason}", detail))
    return out


def _check_consistency(source: Record, variant: Record, mapping: Mapping) -> list[Violation]:
    """Invariant 6: a renamed identifier-like tool or skill name is left nowhere in the variant."""
    renamed = {**mapping.tool_names(), **mapping.skill_names()}
    current = {t["name"] for t in variant["tools"]} | {s["name"] for s in variant.get("skills") or ()}
    stale = [old for old in renamed if is_identifier_like(old) and old not in current]
    if not stale:
        return []
    out = []
    # A plain name (a token or dotted chain) is found in a text only if it is one of the text's
    # tokens: a cached set lookup rules most texts out before find_tokens splits them.
    plain = {n for n in stale if _PLAIN_NAME.match(n)}
    some_not_plain = len(plain) < len(stale)
    for text in text_fields(variant):  # a dotted name ("shop.get_x") is one token: it holds no "get_x"
        if not some_not_plain and plain.isdisjoint(text_tokens(text)):
            continue
        hits = find_tokens(text, stale)
        if hits:
            snippet = text[:80].replace("\n", " ")
            out.append(Violation("consistency", "old name left behind",
                                 f"{sorted(set(hits))} still occur in text {snippet!r}"))
    return out
