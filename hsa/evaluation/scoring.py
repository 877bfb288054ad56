"""Scoring one predicted turn against its gold turn, in the canonical harness.

The predicted calls are made under the row's (variant) harness. Each is carried back with
the row's mapping; a call is *invalid* (matches nothing) when its tool is not one of the
variant's or does not map back and forth unchanged (a canonical name the variant
renamed), and an argument that does not survive ``to_variant(to_canonical(.))`` (a
canonical parameter name under a renamed parameter) matches nothing either: such a call
would fail against the deployed harness.

Argument comparison follows BFCL's AST checker: an int is accepted where a number is
expected (the schema says ``number``, or the gold value is a float); a bool is never a
number; lists compare in order, objects by key; a parameter the gold omits may be left
out, given as ``null``, or given with the schema's ``default``; any other extra
parameter is wrong; a parameter the gold gives must be given. ``string_match="bfcl"``
compares strings as BFCL does (case, spaces and ``,./-_*^`` ignored, ``'`` read as ``"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hsa.evaluation.parsers import Parsed
from hsa.mapping import argument_leaves

__all__ = ["STRING_MATCH", "canonical_call", "values_match", "arguments_match", "score_turn", "max_matching"]

STRING_MATCH = ("exact", "bfcl")


#: An argument value that matches nothing (it would not reach the tool under the variant).
INVALID = "\x00invalid under the variant"


def _copy_set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    (_, key), rest = path[0], path[1:]
    out = dict(value) if isinstance(value, dict) else list(value)
    out[key] = _copy_set(out[key], rest, new)
    return out


def canonical_call(call: dict, mapping, variant_tools: Any) -> dict | None:
    """``call`` (variant harness) in the canonical harness, or ``None`` when its tool does not exist under the
    variant (unknown, or a canonical name the variant renamed). Argument leaves that do not survive the round
    trip become :data:`INVALID`. ``variant_tools``: the names the variant declares (``None``: not checked)."""
    from hsa import _json

    name = call["name"]
    if variant_tools is not None and name not in variant_tools:
        return None
    try:
        back_name = mapping.tool_to_canonical(name)
        if mapping.tool_to_variant(back_name) != name:
            return None
        canon = mapping.to_canonical(call)
        again = argument_leaves(mapping.to_variant(canon)["arguments"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    args = call["arguments"]
    bad = [p for p, v in argument_leaves(args).items() if p not in again or not _json.strict_equal(again[p], v)]
    if not bad:
        return canon
    for p in bad:
        args = _copy_set(args, p, INVALID)
    return mapping.to_canonical({"name": name, "arguments": args})


# --------------------------------------------------------------------------- value comparison

_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")


def _norm_string(s: str) -> str:
    return _BFCL_STRIP.sub("", s).lower().replace("'", '"')


def _types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _invalid(v: Any) -> bool:
    return isinstance(v, str) and v == INVALID


def values_match(gold: Any, pred: Any, schema: Any = None, string_match: str = "exact") -> bool:
    """One argument value against the gold value (see the module docstring)."""
    if _invalid(pred) or _invalid(gold):
        return False
    types = _types(schema)
    if _is_num(gold) and _is_num(pred):
        if type(gold) is type(pred):
            return gold == pred
        if isinstance(pred, int) and ("number" in types or isinstance(gold, float)):
            return float(pred) == float(gold)  # an int where a number is expected
        if isinstance(pred, float) and "number" in types and "integer" not in types:
            return pred == float(gold)
        return False
    if type(gold) is not type(pred):
        return False
    if isinstance(gold, str):
        return gold == pred or (string_match == "bfcl" and _norm_string(gold) == _norm_string(pred))
    if isinstance(gold, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        return len(gold) == len(pred) and all(values_match(g, p, items, string_match) for g, p in zip(gold, pred))
    if isinstance(gold, dict):
        return arguments_match(gold, pred, schema, string_match)
    return gold == pred


def arguments_match(gold: dict, pred: dict, schema: Any = None, string_match: str = "exact") -> bool:
    """A call's arguments (an object) against the gold arguments, BFCL style (see the module docstring)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    for key, value in gold.items():
        if key not in pred or not values_match(value, pred[key], props.get(key), string_match):
            return False
    required = schema.get("required") if isinstance(schema, dict) else None
    required = set(required) if isinstance(required, list) else set()
    for key, value in pred.items():
        if key in gold:
            continue
        if _invalid(value) or key in required:
            return False
        if value is None:
            continue
        sub = props.get(key)
        if not (isinstance(sub, dict) and "default" in sub and values_match(sub["default"], value, sub,
                                                                               string_match)):
            return False
    return True


# --------------------------------------------------------------------------- one turn


def max_matching(edges: list[list[int]], n_right: int) -> int:
    """Size of a maximum bipartite matching (Kuhn's algorithm; turns hold a handful of calls)."""
    match_right = [-1] * n_right

    def augment(i: int, seen: list[bool]) -> bool:
        for j in edges[i]:
            if not seen[j]:
                seen[j] = True
                if match_right[j] < 0 or augment(match_right[j], seen):
                    match_right[j] = i
                    return True
        return False

    return sum(1 for i in range(len(edges)) if augment(i, [False] * n_right))


def _skill_tool_canonical(skill_tool: tuple[str, str], mapping) -> tuple[str, str]:
    name, arg = skill_tool
    try:
        probe = mapping.to_canonical({"name": name, "arguments": {arg: "\x00probe"}})
    except (KeyError, TypeError, ValueError):
        return name, arg
    canon_arg = next((k[-1][1] for k, v in argument_leaves(probe["arguments"]).items() if v == "\x00probe"), arg)
    return probe["name"], canon_arg


def _skills(calls: Sequence[dict | None], tool: str, arg: str) -> list[str]:
    import json

    return sorted(json.dumps(c["arguments"].get(arg), sort_keys=True) for c in calls
                  if c is not None and c["name"] == tool and arg in c["arguments"])


def score_turn(parsed: Parsed | None, gold: dict, mapping, schemas: dict, skill_tool: tuple[str, str], *,
               canonical_schemas: dict | None = None, string_match: str = "exact") -> dict:
    """The scores of one predicted turn (``parsed`` None: no prediction). Keys:

    ``call`` 1 when the whole turn is right (the calls match the gold calls one to one, in any order; a
    gold turn without calls wants none); ``name`` (gold turns with calls) 1 when the predicted tools are the
    gold's, as a multiset; ``argument`` (gold turns with calls) the share of gold calls matched exactly by a
    distinct predicted call, over the larger of the two counts; ``skill`` (gold turns that load a skill) 1 when
    the skills loaded are the gold's; ``no_call`` (gold turns without calls) 1 when no call is made;
    ``format`` 1 when the completion parses; ``schema`` (predicted turns with calls) 1 when every call names a
    variant tool and its arguments validate against that tool's schema. Not applicable: ``None``.
    """
    from hsa.invariants import validator_for

    gold_calls = gold["calls"]
    has_calls = bool(gold_calls)
    tool, arg = _skill_tool_canonical(skill_tool, mapping)
    gold_skills = _skills(gold_calls, tool, arg)
    out: dict[str, Any] = {"call": 0, "name": 0 if has_calls else None, "argument": 0.0 if has_calls else None,
                           "skill": 0 if gold_skills else None, "no_call": None if has_calls else 0,
                           "format": 0, "schema": None}
    if parsed is None or not parsed.ok:
        return out
    out["format"] = 1
    calls = list(parsed.calls)
    if calls:
        ok = True
        for c in calls:
            schema = schemas.get(c["name"])
            if schema is None or any(True for _ in validator_for(schema if isinstance(schema, dict) else {})
                                     .iter_errors(c["arguments"])):
                ok = False
                break
        out["schema"] = int(ok)
    if not has_calls:
        out["no_call"] = int(not calls)
        out["call"] = int(not calls)
        return out
    pred = [canonical_call(c, mapping, schemas) for c in calls]
    cschemas = canonical_schemas if canonical_schemas is not None else {}
    edges = []
    for g in gold_calls:
        gschema = cschemas.get(g["name"])
        edges.append([j for j, p in enumerate(pred) if p is not None and p["name"] == g["name"]
                      and arguments_match(g["arguments"], p["arguments"], gschema, string_match)])
    exact = max_matching(edges, len(pred))
    out["call"] = int(exact == len(gold_calls) == len(pred))
    out["argument"] = exact / max(len(gold_calls), len(pred))
    out["name"] = int(sorted(g["name"] for g in gold_calls) == sorted(p["name"] if p is not None else "\x00"
                                                                        for p in pred))
    if gold_skills:
        out["skill"] = int(_skills(pred, tool, arg) == gold_skills)
    return out
