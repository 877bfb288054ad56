"""The evaluation view of ``hsa report``: evaluation reports read back, and why each sampled prompt was scored wrong.

A report.json (``hsa eval score`` / ``hsa eval run``) holds one result per prompt with its scores; the
predictions file holds what the model wrote. For the prompts of the sampled sources this module puts
them side by side: the gold turn, the model's raw completion, the calls parsed from it, those calls
mapped back to the canonical harness, and the reasons the turn is wrong (:func:`explain`), in the
words of :mod:`hsa.evaluation.scoring`. Report keys are read where they are, so a report that carries
more keys (new groups, new metrics) still reads; one without per-prompt ``results`` is an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping as MappingABC, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hsa.evaluation.prompts import Item

__all__ = ["ReportInputError", "EvalRun", "load_eval", "explain", "groups_of", "RAW_CHARS"]

#: Characters of a raw completion kept on the page (the rest is cut, and the page says so).
RAW_CHARS = 4000


class ReportInputError(ValueError):
    """An input ``hsa report`` cannot use; the message says which and what to do."""


class EvalRun:
    """One evaluation report, its predictions (when found) and what reading them found."""

    def __init__(self, path: str | Path, report: dict, name: str):
        self.path = str(path)
        self.report = report
        self.name = name
        self.results: dict[str, dict] = {r["id"]: r for r in report["results"]}
        self.predictions: dict[str, Any] | None = None
        self.predictions_path: str | None = None
        self.notes: list[str] = []

    @property
    def options(self) -> dict:
        return self.report.get("options") or {}

    def read_predictions(self, path: str | Path | None) -> None:
        """Read ``path`` (or, without one, the predictions file the report names, when it is still there). Ids that
        are no prompt of the report are counted in :attr:`notes`; a file none of whose ids is a prompt is an error."""
        from hsa.evaluation.prompts import EvalInputError
        from hsa.evaluation.report import read_predictions

        given = path is not None
        if path is None:
            named = self.report.get("predictions")
            if not named or not Path(named).is_file():
                self.notes.append("no predictions file: the report names " + (f"{named}, which is not there" if named
                                  else "none") + "; the prompts show their scores without the model's completions "
                                  "(give --predictions)")
                return
            path = named
        try:
            preds, bad, dupes = read_predictions(path)
        except EvalInputError as exc:
            raise ReportInputError(str(exc)) from None
        unknown = [pid for pid in preds if pid not in self.results]
        if preds and len(unknown) == len(preds):
            raise ReportInputError(
                f"--predictions {path}: none of its {len(preds)} ids is a prompt of {self.path} (its ids look like "
                f"{unknown[0]!r}, the report's like {next(iter(self.results), '(none)')!r}); give the predictions "
                "that report was scored on")
        if unknown:
            self.notes.append(f"{len(unknown)} predictions in {path} have ids that are no prompt of the report "
                              f"(left out; e.g. {', '.join(unknown[:3])})")
        if bad:
            self.notes.append(f"{len(bad)} lines of {path} could not be read (e.g. line {bad[0]['line']}: "
                              f"{bad[0]['reason']})")
        if dupes:
            self.notes.append(f"{len(dupes)} predictions in {path} repeat an id (the first one is shown)")
        if not given:
            self.notes.append(f"predictions read from {path}, the file the report names")
        self.predictions = preds
        self.predictions_path = str(path)


def load_eval(path: str | Path, taken: Sequence[str] = ()) -> EvalRun:
    """An evaluation report (report.json), named after its model (or its file) and unique among ``taken``."""
    p = Path(path)
    try:
        report = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportInputError(f"--eval {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ReportInputError(f"--eval {path}: not JSON ({exc})") from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ReportInputError(f"--eval {path}: not an evaluation report with per-prompt 'results'; give the "
                               "report.json that `hsa eval score` or `hsa eval run` wrote")
    bad = next((r for r in report["results"] if not (isinstance(r, dict) and isinstance(r.get("id"), str)
                                                     and "source_id" in r)), None)
    if bad is not None:
        raise ReportInputError(f"--eval {path}: a result without 'id' and 'source_id' ({json.dumps(bad)[:120]}); "
                               "write the report again with this hsa")
    model = report.get("model")
    name = Path(str(model)).name if model else p.stem
    if name in taken:
        name = f"{name} ({p.stem})"
    k = 2
    base = name
    while name in taken:
        name, k = f"{base} #{k}", k + 1
    return EvalRun(p, report, name)


def groups_of(report: dict) -> dict[str, Any]:
    """The groups of a report by what they are, whatever keys it carries: ``harness`` (key -> group: canonical,
    variants, seen, held_out, all and any other top-level group), ``differences`` (gap, held_out_gap, paired and
    the like), ``by`` (by_family, by_transform, by_slot, ...: name -> {label -> group})."""
    harness, diffs, by = {}, {}, {}
    for key, value in report.items():
        if key.startswith("by_") and isinstance(value, dict) and value and all(
                isinstance(g, dict) and "call_accuracy" in g for g in value.values()):
            by[key] = value
        elif isinstance(value, dict) and "call_accuracy" in value and "n" in value:
            (diffs if "gap" in key or key.startswith("paired") else harness)[key] = value
    return {"harness": harness, "differences": diffs, "by": by}


# --------------------------------------------------------------------------- one prompt


def _raw(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return text if len(text) <= RAW_CHARS else text[:RAW_CHARS] + f"\n… ({len(text) - RAW_CHARS} more characters)"


def _call(c: dict) -> str:
    return f"{c['name']}({json.dumps(c.get('arguments'), ensure_ascii=False, sort_keys=True)})"


def _names(calls: Sequence[dict]) -> str:
    return ", ".join(f"`{c['name']}`" for c in calls) or "nothing"


def explain(item: Item, value: Any, result: MappingABC, *, fmt: str = "auto", string_match: str = "exact",
            canonical_schemas: dict | None = None, has_prediction: bool = True) -> dict:
    """One prompt's outcome for one model: ``ok`` (the report's ``call`` score), ``status``, ``raw`` (the
    completion, cut at :data:`RAW_CHARS`), ``parsed`` (its calls, variant harness), ``back`` (each mapped back to
    the canonical harness, ``None`` where it does not map) and ``reasons`` (``[kind, text]`` pairs, empty when the
    turn is right). ``has_prediction`` False: no predictions file was read (only the scores are known)."""
    from hsa.evaluation.parsers import parse, parse_message
    from hsa.evaluation.scoring import arguments_match, canonical_call

    out: dict[str, Any] = {"ok": result.get("call"), "status": result.get("status"), "reasons": []}
    reasons = out["reasons"]
    gold = item.gold["calls"]
    mapping, schemas = item.mapping, item.schemas
    if not has_prediction:
        if not out["ok"]:
            reasons.append(["unknown", "scored wrong; give --predictions to see why"])
        return out
    if value is None:
        reasons.append(["missing", "no prediction for this prompt"])
        return out
    out["raw"] = _raw(value)
    parsed = parse_message(value, fmt, schemas=schemas) if isinstance(value, dict) else \
        parse(value if isinstance(value, str) else json.dumps(value), fmt, schemas=schemas)
    calls = [{"name": c["name"], "arguments": c["arguments"]} for c in parsed.calls]
    out["parsed"] = calls
    if not parsed.ok:
        reasons.append(["unparseable", f"the completion does not parse: {parsed.error}"])
        return out
    back = [canonical_call(c, mapping, schemas) for c in calls]
    out["back"] = back
    if out["ok"]:
        return out
    if not gold:
        if calls:
            reasons.append(["call instead of reply", f"called {_names(calls)} where the gold turn replies without "
                                                     "a call"])
        return out
    gold_variant = [mapping.to_variant(g) for g in gold]
    if not calls:
        reasons.append(["reply instead of call", f"no call: the gold turn calls {_names(gold_variant)}"])
        return out
    cschemas = canonical_schemas or {}
    left = list(range(len(gold)))
    for c, b in zip(calls, back):
        if b is None:
            reasons.append(_bad_name(c["name"], mapping, schemas))
            continue
        same = [k for k in left if gold[k]["name"] == b["name"]]
        if not same:
            again = any(g["name"] == b["name"] for g in gold)
            reasons.append(["extra call", f"called `{c['name']}` once more than the gold turn does"] if again else
                           ["wrong tool", f"called `{c['name']}` (canonical `{b['name']}`); the gold turn calls "
                                          f"{_names([gold_variant[k] for k in left] or gold_variant)}"])
            continue
        schema = cschemas.get(b["name"])
        k = next((k for k in same if arguments_match(gold[k]["arguments"], b["arguments"], schema, string_match)),
                 same[0])
        left.remove(k)
        if not arguments_match(gold[k]["arguments"], b["arguments"], schema, string_match):
            reasons += _argument_reasons(gold[k], b, c, mapping, schema, string_match)
    if len(calls) < len(gold) and left:
        reasons.append(["missing call", f"{len(calls)} calls where the gold turn makes {len(gold)}: no call to "
                                        f"{_names([gold_variant[k] for k in left])}"])
    if not reasons:
        reasons.append(["other", "the calls do not match the gold calls one to one"])
    return out


def _bad_name(name: str, mapping, schemas: dict) -> list[str]:
    """Why a call's tool does not map back: a canonical name the variant renamed, or no tool of the variant."""
    renamed = mapping.tool_to_variant(name)
    if name not in schemas and renamed != name and renamed in schemas:
        return ["renamed-away name", f"called `{name}`, the canonical name of a tool this variant renamed to "
                                     f"`{renamed}`"]
    if name not in schemas:
        return ["wrong name", f"called `{name}`, which is not a tool of this variant"]
    return ["wrong name", f"`{name}` is a tool of this variant but does not map back to the canonical harness"]


def _argument_reasons(gold: dict, pred: dict, variant_call: dict, mapping, schema: Any, string_match: str
                      ) -> list[list[str]]:
    """The argument differences of one call (canonical names), each a reason."""
    from hsa.evaluation.scoring import values_match

    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    out: list[list[str]] = []
    g, p = gold["arguments"], pred["arguments"]
    tool = variant_call["name"]
    for key, want in g.items():
        if key not in p:
            out.append(["argument", f"`{tool}`: argument `{key}` missing (gold {_value(want)})"])
        elif not values_match(want, p[key], props.get(key), string_match):
            if _holds_invalid(p[key]):
                out.append(_renamed_value(tool, key, variant_call, gold["name"], mapping))
            else:
                out.append(["argument", f"`{tool}`: argument `{key}` is {_value(p[key])} where the gold has "
                                        f"{_value(want)}"])
    for key, got in p.items():
        if key in g:
            continue
        if _holds_invalid(got):
            variant_key = _variant_key(mapping, gold["name"], key)
            where = f" (this variant calls it `{variant_key}`)" if variant_key and variant_key != key else ""
            out.append(["renamed-away name", f"`{tool}`: argument `{key}` is not a parameter of this variant{where}"])
        elif got is not None:
            out.append(["argument", f"`{tool}`: extra argument `{key}` = {_value(got)}"])
    return out or [["argument", f"`{tool}`: the arguments differ from the gold's"]]


def _renamed_value(tool: str, key: str, variant_call: dict, canonical_tool: str, mapping) -> list[str]:
    """Why an argument the gold also gives does not map back: a skill or value name the variant renamed."""
    given = variant_call["arguments"].get(_variant_key(mapping, canonical_tool, key) or key)
    if isinstance(given, str) and mapping.skill_to_variant(given) != given:
        return ["renamed-away name", f"`{tool}`: loaded skill `{given}`, the canonical name of a skill this variant "
                                     f"renamed to `{mapping.skill_to_variant(given)}`"]
    if given is not None:
        return ["renamed-away name", f"`{tool}`: argument `{key}` = {_value(given)} does not map back: a value this "
                                     "variant renamed (its canonical form?)"]
    return ["renamed-away name", f"`{tool}`: argument `{key}` is given under a name this variant does not have"]


def _holds_invalid(value: Any) -> bool:
    from hsa.evaluation.scoring import INVALID

    if isinstance(value, str):
        return value == INVALID
    if isinstance(value, dict):
        return any(_holds_invalid(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_invalid(v) for v in value)
    return False


def _variant_key(mapping, canonical_tool: str, key: str) -> str | None:
    try:
        moved = mapping.to_variant({"name": canonical_tool, "arguments": {key: 0}})["arguments"]
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return next(iter(moved), None) if len(moved) == 1 else None


def _value(v: Any) -> str:
    from hsa.evaluation.scoring import INVALID

    if isinstance(v, str) and v == INVALID:
        return "(a name this variant does not have)"
    text = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return f"`{text if len(text) <= 80 else text[:77] + '...'}`"
