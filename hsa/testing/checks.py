"""Run a transform on a record and check every invariant of docs/design.md that applies.

:func:`check_transform` returns a :class:`Report`; :func:`assert_task_preserving`
raises :class:`AssertionError` with that report (which invariant failed, the
transform, its params and the record) and ``note()``-s the context for hypothesis.

Invariants checked (numbers as in docs/design.md):

1. validity — every call validates against the variant's own schema; new tool and
   parameter names are legal in their dialect; skill loads name defined skills.
2. round trip — the variant's calls map back to the source's calls exactly.
3. closure — the variant written in the input format is a valid input record, and
   reading it back gives the same record.
4. determinism — the same seed gives the same canonical JSON; replaying the recorded
   params gives the same record; params survive JSON; the config round-trips; the
   input record is not modified.
5. identity — a transform that applies nothing (the empty recipe, or one that
   skipped) returns the record unchanged.
6. consistency — renamed names are left nowhere (texts, hook literals), tool results
   and the skill tool follow their tools, hook payloads map back, injected hook
   messages agree with their recorded decisions, the system message still renders
   from the prompt, the mapping undoes the record (``canonicalize``).
7. hooks — when a hook checker is installed (``check_hooks`` in :mod:`hsa.invariants` or
   :mod:`hsa.sandbox`), rewritten hooks behave like the originals on mapped inputs.
8. inversion — canonicalizing a task-preserving variant gives the source's content back exactly
   (names, descriptions, order, added tools and parameters, prompt, skills, hooks, messages).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable
from typing import Any

from hsa import _json
from hsa.names import is_legal_param
from hsa.records import Record, denormalize, normalize
from hsa.invariants import Violation, check_record, check_variant, clip, error_detail, leaf_params

__all__ = ["Report", "check_transform", "assert_task_preserving", "hooks_checker", "INVARIANTS"]

#: Invariant names, numbered as in docs/design.md.
INVARIANTS = {"validity": 1, "round-trip": 2, "closure": 3, "determinism": 4, "identity": 5, "consistency": 6,
              "hooks": 7, "inversion": 8, "run": 0}

_CONTENT_KEYS = ("messages", "tools", "skills", "skill_tool", "prompt", "hooks", "hook_events", "meta", "extra")


@dataclasses.dataclass(frozen=True)
class Report:
    """What :func:`check_transform` found: the run, and every broken invariant."""

    transform: dict
    record_id: str
    seed: int
    applied: tuple[dict, ...]
    skipped: tuple[tuple[str, str], ...]
    violations: tuple[Violation, ...]
    checked: tuple[str, ...]
    source: dict
    variant: dict | None

    @property
    def ok(self) -> bool:
        """True when no invariant is broken."""
        return not self.violations

    @property
    def failed(self) -> list[str]:
        """Names of the broken invariants, in docs/design.md order."""
        return sorted({v.invariant for v in self.violations}, key=lambda n: INVARIANTS.get(n, 99))

    def summary(self) -> str:
        name = self.transform.get("transform", "?")
        if self.ok:
            return (f"{name} on record {self.record_id!r} (seed {self.seed}): ok "
                    f"({len(self.applied)} applied, {len(self.skipped)} skipped; checked {', '.join(self.checked)})")
        return f"{name} is not task-preserving on record {self.record_id!r} (seed {self.seed})"

    def format(self, max_chars: int = 6000) -> str:
        """The readable report: broken invariants, the transform, its params, the source record."""
        lines = [self.summary()]
        for v in self.violations:
            lines.append(f"  [{INVARIANTS.get(v.invariant, '?')} {v.invariant}] {v.reason}: {clip(v.detail, 1500)}")
        lines.append(f"  transform: {clip(json.dumps(self.transform, ensure_ascii=False), 1500)}")
        lines.append(f"  applied (replay record): {clip(json.dumps(list(self.applied), ensure_ascii=False), 2000)}")
        if self.skipped:
            lines.append(f"  skipped: {list(self.skipped)}")
        lines.append(f"  source record: {clip(json.dumps(self.source, ensure_ascii=False), max_chars)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _first_difference(a: str, b: str, context: int = 120) -> str:
    """Where two texts first differ, with some context on each side: ``...a... -> ...b...``."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, i - context)
    return (f"at character {i}: {'...' if lo else ''}{a[lo:i + context]!s}... -> "
            f"{'...' if lo else ''}{b[lo:i + context]!s}...")


# --------------------------------------------------------------------------- hook checker


def hooks_checker() -> Callable[[Record, Record], list[Violation]] | None:
    """The installed invariant-7 checker ``check_hooks(source, variant) -> violations``, or None."""
    for module in ("hsa.invariants", "hsa.sandbox", "hsa.hooks"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        fn = getattr(mod, "check_hooks", None)
        if callable(fn):
            return fn
    return None


# --------------------------------------------------------------------------- the checks


def _as_record(record: Any) -> Record:
    if isinstance(record, dict) and "_fmt" in record and "mapping" in record:
        return _json.copy(record)  # type: ignore[return-value]
    return normalize(_json.copy(record))


def _violation(invariant: str, reason: str, detail: str) -> Violation:
    return Violation(invariant, reason, detail)


def _check_determinism(transform, source: Record, variant: Record, applied: list, seed: int,
                       snapshot: str, rerun) -> list[Violation]:
    from hsa.transform import from_config, replay

    out = []
    if _json.canonical(source) != snapshot:
        out.append(_violation("determinism", "input modified", "sample or apply changed the record it was given; "
                              "apply must return a new record (use hsa.records.clone)"))
    expected = _json.canonical(variant)
    try:
        again = rerun()
        if _json.canonical(again) != expected:
            out.append(_violation("determinism", "same seed, different output",
                                  "two runs with the same rng state gave different records; keep all randomness "
                                  "in sample(record, rng) and draw only from that rng"))
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        out.append(_violation("determinism", "second run raised", error_detail(exc)))
    entries = [a.to_json() for a in applied]
    try:
        text = json.dumps(entries, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        out.append(_violation("determinism", "params are not JSON", f"{exc}; params must be plain JSON values"))
        return out
    if _json.canonical(json.loads(text)) != _json.canonical(entries):
        out.append(_violation("determinism", "params change through JSON", f"params {clip(text, 300)} do not "
                              "survive a JSON round trip unchanged (non-string keys?)"))
    try:
        replayed = replay(source, json.loads(text))
        if _json.canonical(replayed) != expected:
            out.append(_violation("determinism", "replay differs", "applying the recorded params again (from their "
                                  "JSON) does not give the same record; apply must depend on record and params only"))
    except Exception as exc:  # noqa: BLE001
        out.append(_violation("determinism", "replay raised", error_detail(exc)))
    try:
        config = json.loads(json.dumps(transform.to_dict()))
        if from_config(config) != transform:
            out.append(_violation("determinism", "config does not round-trip",
                                  f"from_config(to_dict()) differs from the transform: {clip(json.dumps(config), 300)}"))
    except Exception as exc:  # noqa: BLE001
        out.append(_violation("determinism", "config does not round-trip", error_detail(exc)))
    return out


def _check_closure(variant: Record) -> list[Violation]:
    try:
        again = normalize(json.loads(json.dumps(denormalize(variant), ensure_ascii=False)))
    except Exception as exc:  # noqa: BLE001 - check_variant reports RecordError; anything else is a bug
        return [_violation("closure", "output is not readable", error_detail(exc))]
    out = []
    for key in _CONTENT_KEYS:
        if key == "tools":  # "no schema in the input" is bookkeeping, not content, once a schema exists
            mine, back = _without_no_schema(variant["tools"]), _without_no_schema(again["tools"])
        else:
            mine, back = variant.get(key), again.get(key)
        if _json.canonical(mine) != _json.canonical(back):
            out.append(_violation("closure", "not stable through the input format",
                                  f"{key!r} reads back differently after writing the variant in the input format: "
                                  + _first_difference(_json.canonical(mine), _json.canonical(back))))
    return out


def _without_no_schema(tools: list) -> list:
    out = []
    for t in tools:
        if isinstance(t.get("extra"), dict) and "__no_schema__" in t["extra"]:
            t = {**t, "extra": {k: v for k, v in t["extra"].items() if k != "__no_schema__"}}
        out.append(t)
    return out


def _check_names(source: Record, variant: Record) -> list[Violation]:
    new = leaf_params(variant) - leaf_params(source)
    return [_violation("validity", "illegal parameter name", f"new parameter name {n!r} is not legal in every dialect")
            for n in sorted(new) if not is_legal_param(n)]


def check_transform(transform, record: Any, seed: int = 0, *, params: dict | None = None) -> Report:
    """Run ``transform`` on ``record`` with the pipeline's rng for ``seed`` and check every invariant.

    ``record`` is an input-format JSON object (it goes through
    :func:`hsa.records.normalize`) or an internal record. ``params`` (a leaf transform's
    replay record) applies those params instead of sampling: how a pinned regression
    replays exactly the failure hypothesis found. Raises ``ValueError`` when the record
    itself is not valid (its calls must validate before a variant can).
    """
    from hsa.pipeline import rng_for
    from hsa.transform import Applied, restorable, run

    def go():
        if params is None:
            return run(transform, src, rng_for(seed, src["id"], 1))
        out = restorable(src, transform.apply(src, _json.copy(params)))  # as run() does
        return out, [Applied(transform.name, transform.config(), params)], []

    src = _as_record(record)
    problems = check_record(src)
    if problems:
        raise ValueError(f"the input record {src['id']!r} is not valid, so no variant of it can be: "
                         f"{'; '.join(str(p) for p in problems[:3])}. Fix the record (or the strategy that drew it)")
    snapshot = _json.canonical(src)
    raw_source = denormalize(src)
    checked = ["run"]
    violations: list[Violation] = []
    config = transform.to_dict()
    try:
        variant, applied, skipped = go()
    except Exception as exc:  # noqa: BLE001 - reported as a violation
        return Report(config, src["id"], seed, (), (), (_violation("run", "transform raised", error_detail(exc)),),
                      tuple(checked), raw_source, None)
    checked += ["validity", "round-trip", "closure", "consistency"]
    violations += check_variant(src, variant, thorough=True)  # every check of invariant 6 too
    violations += _check_names(src, variant)
    violations += _check_closure(variant)
    checked.append("determinism")
    violations += _check_determinism(transform, src, variant, applied, seed, snapshot, lambda: go()[0])
    if not applied:
        checked.append("identity")
        if _json.canonical(variant) != snapshot:
            violations.append(_violation("identity", "changed without applying",
                                         "nothing was applied (empty recipe or every leaf skipped) but the record "
                                         "changed"))
    checker = hooks_checker()
    if checker is not None and applied and (src.get("hooks") or variant.get("hooks")):
        checked.append("hooks")
        try:
            violations += list(checker(src, variant))
        except Exception as exc:  # noqa: BLE001
            violations.append(_violation("hooks", "hook check raised", error_detail(exc)))
    try:
        raw_variant = denormalize(variant)
    except Exception:  # noqa: BLE001 - already reported by the closure check
        raw_variant = None
    return Report(config, src["id"], seed, tuple(a.to_json() for a in applied), tuple(skipped), tuple(violations),
                  tuple(checked), raw_source, raw_variant)


def _note(text: str) -> None:
    from hypothesis import note
    from hypothesis.errors import InvalidArgument

    try:
        note(text)
    except InvalidArgument:  # not inside a hypothesis test
        pass


def assert_task_preserving(transform, record: Any, seed: int = 0, *, params: dict | None = None) -> Report:
    """Check ``transform`` on ``record``; raise ``AssertionError`` with a readable report when an invariant breaks.

    Inside a hypothesis test the transform, the record id, the seed and the replay
    record are ``note()``-d, so the falsifying example shows them after shrinking.
    Returns the report when everything holds.
    """
    report = check_transform(transform, record, seed, params=params)
    _note(f"hsa.testing: {report.summary()}; applied: {json.dumps(list(report.applied), ensure_ascii=False)[:2000]}")
    if not report.ok:
        raise AssertionError(report.format())
    return report
