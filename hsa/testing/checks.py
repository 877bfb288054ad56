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
7. hooks — when a hook checker is installed (``check_hooks`` in :mod:`hsa.verify` or
   :mod:`hsa.sandbox`), rewritten hooks behave like the originals on mapped inputs.
8. inversion — canonicalizing a task-preserving variant gives the source's content back exactly
   (names, descriptions, order, added tools and parameters, prompt, skills, hooks, messages).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import traceback
from collections.abc import Callable
from typing import Any

from hsa import _json
from hsa.mapping import ARRAY, Mapping
from hsa.names import is_identifier_like, is_legal_param
from hsa.records import Record, denormalize, normalize
from hsa.verify import Violation, calls_of, check_record, check_variant

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
            lines.append(f"  [{INVARIANTS.get(v.invariant, '?')} {v.invariant}] {v.reason}: {_clip(v.detail, 1500)}")
        lines.append(f"  transform: {_clip(json.dumps(self.transform, ensure_ascii=False), 1500)}")
        lines.append(f"  applied (replay record): {_clip(json.dumps(list(self.applied), ensure_ascii=False), 2000)}")
        if self.skipped:
            lines.append(f"  skipped: {list(self.skipped)}")
        lines.append(f"  source record: {_clip(json.dumps(self.source, ensure_ascii=False), max_chars)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _first_difference(a: str, b: str, context: int = 120) -> str:
    """Where two texts first differ, with some context on each side: ``...a... -> ...b...``."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, i - context)
    return (f"at character {i}: {'...' if lo else ''}{a[lo:i + context]!s}... -> "
            f"{'...' if lo else ''}{b[lo:i + context]!s}...")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"... ({len(text) - n} more characters)"


# --------------------------------------------------------------------------- hook checker


def hooks_checker() -> Callable[[Record, Record], list[Violation]] | None:
    """The installed invariant-7 checker ``check_hooks(source, variant) -> violations``, or None."""
    for module in ("hsa.verify", "hsa.sandbox", "hsa.hooks"):
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


def _error(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno} in {tb[-1].name}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


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
        out.append(_violation("determinism", "second run raised", _error(exc)))
    entries = [a.to_json() for a in applied]
    try:
        text = json.dumps(entries, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        out.append(_violation("determinism", "params are not JSON", f"{exc}; params must be plain JSON values"))
        return out
    if _json.canonical(json.loads(text)) != _json.canonical(entries):
        out.append(_violation("determinism", "params change through JSON", f"params {_clip(text, 300)} do not "
                              "survive a JSON round trip unchanged (non-string keys?)"))
    try:
        replayed = replay(source, json.loads(text))
        if _json.canonical(replayed) != expected:
            out.append(_violation("determinism", "replay differs", "applying the recorded params again (from their "
                                  "JSON) does not give the same record; apply must depend on record and params only"))
    except Exception as exc:  # noqa: BLE001
        out.append(_violation("determinism", "replay raised", _error(exc)))
    try:
        config = json.loads(json.dumps(transform.to_dict()))
        if from_config(config) != transform:
            out.append(_violation("determinism", "config does not round-trip",
                                  f"from_config(to_dict()) differs from the transform: {_clip(json.dumps(config), 300)}"))
    except Exception as exc:  # noqa: BLE001
        out.append(_violation("determinism", "config does not round-trip", _error(exc)))
    return out


def _check_closure(variant: Record) -> list[Violation]:
    try:
        again = normalize(json.loads(json.dumps(denormalize(variant), ensure_ascii=False)))
    except Exception as exc:  # noqa: BLE001 - check_variant reports RecordError; anything else is a bug
        return [_violation("closure", "output is not readable", _error(exc))]
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


def _leaf_params(record: Record) -> set[str]:
    from hsa.rewrite import param_paths

    return {p[-1] for t in record["tools"] for p in param_paths(t["parameters"]) if p[-1] != ARRAY}


def _check_names(source: Record, variant: Record) -> list[Violation]:
    new = _leaf_params(variant) - _leaf_params(source)
    return [_violation("validity", "illegal parameter name", f"new parameter name {n!r} is not legal in every dialect")
            for n in sorted(new) if not is_legal_param(n)]


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


def _render(prompt: Any) -> str | None:
    if not isinstance(prompt, dict) or not isinstance(prompt.get("template"), str):
        return None
    try:
        from jinja2.sandbox import SandboxedEnvironment

        sections = [s for s in prompt.get("sections", []) if s.get("placement", "system") != "user"]  # prompt.placement
        return SandboxedEnvironment().from_string(prompt["template"]).render(sections=sections)
    except Exception:  # noqa: BLE001 - a template that does not render is not ours to judge here
        return None


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _check_consistency(source: Record, variant: Record, mapping: Mapping) -> list[Violation]:
    from hsa.rewrite import canonicalize, hook_literals

    out: list[Violation] = []
    # tool results name the tool of their call
    src_calls, var_calls = _call_names(source), _call_names(variant)
    src_results = {m.get("tool_call_id"): m.get("name") for m in source["messages"] if m.get("role") == "tool"}
    for m in variant["messages"]:
        cid = m.get("tool_call_id")
        if m.get("role") != "tool" or cid not in var_calls or cid not in src_calls:
            continue
        if src_results.get(cid) == src_calls[cid] and m.get("name") != var_calls[cid]:
            out.append(_violation("consistency", "tool result name not renamed",
                                  f"result of {cid} is named {m.get('name')!r}, its call {var_calls[cid]!r}"))
    # the skill tool follows its tool
    src_tools = {t["name"]: t for t in source["tools"]}
    var_tools = {t["name"]: t for t in variant["tools"]}
    sst, vst = source["skill_tool"], variant["skill_tool"]
    if sst["name"] in src_tools:
        if vst["name"] not in var_tools:
            out.append(_violation("consistency", "skill tool lost", f"skill_tool names {vst['name']!r}, which is no "
                                  f"longer a tool (tools: {sorted(var_tools)})"))
        elif sst["argument"] in (src_tools[sst["name"]]["parameters"].get("properties") or {}) and \
                vst["argument"] not in (var_tools[vst["name"]]["parameters"].get("properties") or {}):
            out.append(_violation("consistency", "skill tool argument lost",
                                  f"skill_tool argument {vst['argument']!r} is not a parameter of {vst['name']!r}"))
    if not mapping.task_preserving:
        return out
    # hook payloads map back; injected messages agree with their decisions
    src_events, var_events = source.get("hook_events") or [], variant.get("hook_events") or []
    if len(src_events) == len(var_events):
        for i, (se, ve) in enumerate(zip(src_events, var_events)):
            sp, vp = se.get("payload") or {}, ve.get("payload") or {}
            if isinstance(sp.get("tool_name"), str) and isinstance(vp.get("tool_name"), str):
                back = mapping.to_canonical({"name": vp["tool_name"], "arguments": vp.get("tool_input") or {}})
                want = {"name": sp["tool_name"], "arguments": sp.get("tool_input") or {}}
                if not _json.strict_equal(back, want):
                    out.append(_violation("consistency", "hook payload does not map back",
                                          f"hook_events[{i}] payload maps back to {_json.dumps(back)}, "
                                          f"source has {_json.dumps(want)}"))
            out.extend(_check_injected(source, se, variant, ve, i))
    # hooks that parsed still parse
    for sh, vh in zip(source.get("hooks") or (), variant.get("hooks") or ()):
        if _parses(sh.get("source", "")) and not _parses(vh.get("source", "")):
            out.append(_violation("consistency", "hook source no longer parses", f"hook {vh.get('name')!r}"))
    # renamed parameters are left in no hook literal
    renamed_params = {a[-1] for step in mapping.steps if step["op"] == "params"
                      for a, b in step["paths"] if a and b and a[-1] != b[-1] and a[-1] != ARRAY
                      and is_identifier_like(a[-1])}  # plain words ("message") may be hook-protocol keys
    if renamed_params:
        alive = _leaf_params(variant) | set(var_tools) | {s["name"] for s in variant.get("skills") or ()}
        stale = sorted((renamed_params & hook_literals(variant)) - alive)
        if stale:
            out.append(_violation("consistency", "old parameter name left in hook source",
                                  f"renamed parameter(s) {stale} still occur as string literals in hook source, "
                                  "and no tool declares them any more"))
    # the system message still renders from the prompt
    rendered = _render(source.get("prompt"))
    if rendered is not None and rendered == _system_message(source):
        now = _render(variant.get("prompt"))
        if now != _system_message(variant):
            out.append(_violation("consistency", "system message differs from the rendered prompt",
                                  f"the source's system message is its rendered prompt; the variant's is "
                                  f"{_clip(repr(_system_message(variant)), 200)}, the prompt renders "
                                  f"{_clip(repr(now), 200)}"))
    # the mapping undoes the record
    try:
        canon = canonicalize(variant)
        if not _json.strict_equal(calls_of(canon), calls_of(source)):
            out.append(_violation("consistency", "canonicalize does not restore the calls",
                                  f"hsa.rewrite.canonicalize(variant) has calls {_clip(_json.dumps(calls_of(canon)), 400)}"))
    except Exception as exc:  # noqa: BLE001
        out.append(_violation("consistency", "canonicalize raised", _error(exc)))
    return out


def _content_text(content: Any) -> Any:
    """A message's text: the string, or the text parts of a content list joined (None for no text)."""
    if isinstance(content, list):
        texts = [p["text"] if isinstance(p, dict) else p for p in content
                 if (isinstance(p, dict) and isinstance(p.get("text"), str)) or isinstance(p, str)]
        return "".join(texts) if texts else None
    return content


def _check_injected(source: Record, se: dict, variant: Record, ve: dict, i: int) -> list[Violation]:
    def injected(rec, ev):
        idx = ev.get("message_index")
        if isinstance(idx, int) and 0 <= idx < len(rec["messages"]):
            return _content_text(rec["messages"][idx].get("content"))
        return None

    out = []
    sd, vd = se.get("decision") or {}, ve.get("decision") or {}
    if isinstance(sd.get("message"), str) and sd["message"] == injected(source, se):
        if vd.get("message") != injected(variant, ve):
            out.append(_violation("consistency", "injected message and decision disagree",
                                  f"hook_events[{i}]: decision message {vd.get('message')!r}, injected message "
                                  f"{injected(variant, ve)!r}"))
    # a payload text that is the message the hook judged (the one before the injection) stays that message
    sj, vj = se.get("message_index"), ve.get("message_index")
    if isinstance(sj, int) and isinstance(vj, int) and 0 < sj <= len(source["messages"]) \
            and 0 < vj <= len(variant["messages"]):
        judged_src = _content_text(source["messages"][sj - 1].get("content"))
        judged_var = _content_text(variant["messages"][vj - 1].get("content"))
        sp, vp = se.get("payload") or {}, ve.get("payload") or {}
        for key, value in sp.items():
            if isinstance(value, str) and value and value == judged_src and vp.get(key) != judged_var:
                out.append(_violation("consistency", "hook payload and judged message disagree",
                                      f"hook_events[{i}].payload[{key!r}] is {_clip(repr(vp.get(key)), 200)}, the "
                                      f"message it judged is {_clip(repr(judged_var), 200)}"))
    return out


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
        return Report(config, src["id"], seed, (), (), (_violation("run", "transform raised", _error(exc)),),
                      tuple(checked), raw_source, None)
    checked += ["validity", "round-trip", "closure", "consistency"]
    violations += check_variant(src, variant)
    violations += _check_names(src, variant)
    violations += _check_closure(variant)
    mapping = Mapping(variant["mapping"][len(src["mapping"]):])
    violations += _check_consistency(src, variant, mapping)
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
            violations.append(_violation("hooks", "hook check raised", _error(exc)))
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
