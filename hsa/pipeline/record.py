"""Per-record work: everything that happens to one input line, as a pure function any worker may run.

Read -> normalise -> check the source -> for each variant index: its rng (from (seed, record id, variant index)
alone, or, with a harness-variant pool of K slots, its slot from them and its harness-level draws from (seed,
digest of the record's harness, slot)) -> sample and apply the recipe -> verify -> the output row. What a line
produced is a :class:`Result` (rows, rejects, counters); :mod:`hsa.pipeline.shards` writes it and
:mod:`hsa.pipeline.executor` runs it in a worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
from collections import Counter
from typing import Any

from hsa import _json
from hsa.io import InputLine, parse_line
from hsa.mapping import Mapping
from hsa.records import UNREAD_CALL_NOTE, Record, RecordError, converted_layouts, denormalize, normalize
from hsa.tool_dialects import denormalize_tool, written_tools
from hsa.context import current
from hsa.plans import SlotPlan, held
from hsa.transform import Answers, Sequence, SlotRng, Transform, config_key, run
from hsa.invariants import check_record, check_variant
from hsa.violations import details

__all__ = ["rng_for", "slot_for", "harness_digest", "slot_rng", "DEFAULT_HARNESS_POOL", "Stats", "Result",
           "source_row", "CALL_ARGUMENTS", "augment_record", "canonicalize_record"]


#: ``HSA_CHECK_SOURCES=1`` (the test suite sets it): :func:`augment_record` checks that making a record's variants
#: left the source record as it was read, byte for byte. Every variant starts from the one source object, and a
#: source's tool list is one object with every other record's of the same tools (read only: ``normalize(shared=)``),
#: so a transform that modified its input would change other variants and other records.
CHECK_SOURCES = os.environ.get("HSA_CHECK_SOURCES") == "1"


def rng_for(seed: int, record_id: str, variant: int) -> random.Random:
    """The rng of one variant: a function of (seed, record id, variant index) only."""
    digest = hashlib.sha256(f"hsa\x00{seed}\x00{record_id}\x00{variant}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


#: ``--harness-pool`` when none is given: the harness variants each distinct harness gets (docs/performance.md
#: says why this many). 0 draws every variant's harness afresh, as before the pool.
DEFAULT_HARNESS_POOL = 8


def slot_for(seed: int, record_id: str, variant: int, pool: int) -> int:
    """The pool slot in [0, pool) of variant ``variant`` (1-based): a function of (seed, record id, variant index)
    only. A record's variants take the slots of one permutation of the pool drawn from (seed, record id), so its
    first ``pool`` variants are distinct harness variants (drawn independently, 4 variants of a pool of 8 would
    repeat a slot in 59% of the records) and later ones cycle through them again."""
    return _slot_order(seed, record_id, pool)[(variant - 1) % pool]


def _slot_order(seed: int, record_id: str, pool: int) -> list[int]:
    """The permutation of the pool that the variants of record ``record_id`` walk (:func:`slot_for`)."""
    digest = hashlib.sha256(f"hsa-slot\x00{seed}\x00{record_id}".encode()).digest()
    order = list(range(pool))
    random.Random(int.from_bytes(digest[:16], "big")).shuffle(order)
    return order


def harness_digest(record: Record) -> str:
    """The digest of a record's harness part: tools, skills, the skill tool, hooks and the prompt's structure
    (its sections without their bodies, which are per-record content, and its template)."""
    prompt = record.get("prompt")
    if isinstance(prompt, dict):
        prompt = {**prompt, "sections": [{k: v for k, v in s.items() if k != "body"} if isinstance(s, dict) else s
                                         for s in prompt.get("sections") or ()]}
    part = [record["tools"], record.get("skills"), record["skill_tool"], record.get("hooks"), prompt]
    return hashlib.blake2b(_json.dumps(part).encode(), digest_size=16).hexdigest()


def slot_rng(seed: int, digest: str, slot: int, trajectory: random.Random, plan: SlotPlan | None = None) -> SlotRng:
    """The rng of pool slot ``slot`` of the harness with ``digest`` (:func:`harness_digest`); trajectory-level
    leaves draw from ``trajectory`` (:class:`hsa.transform.SlotRng`), harness-level ones read and build ``plan``,
    the slot's plan (:mod:`hsa.plans`)."""
    key = hashlib.sha256(f"hsa-pool\x00{seed}\x00{digest}\x00{slot}".encode()).digest()
    return SlotRng(int.from_bytes(key[:16], "big"), trajectory, plan)


@dataclasses.dataclass
class Stats:
    """Counters of one run, mergeable with ``+`` (datatrove style)."""

    input_records: int = 0
    sources_written: int = 0
    rejected: int = 0
    rows_written: int = 0
    variants_failed: int = 0
    unchanged_variants: int = 0
    prompt_unchanged_variants: int = 0  # written variants whose prompt (every message before the first answer) is
    # the source's, word for word: what a prompt recipe left as it was
    task_changing_variants: int = 0  # written variants whose mapping has an opaque step (e.g. tool.irrelevance)
    reject_reasons: Counter = dataclasses.field(default_factory=Counter)
    variant_failures: Counter = dataclasses.field(default_factory=Counter)
    applied: Counter = dataclasses.field(default_factory=Counter)
    sources_applied: Counter = dataclasses.field(default_factory=Counter)  # transform -> sources with a variant of it
    skipped: Counter = dataclasses.field(default_factory=Counter)  # (transform, reason) -> n
    failed: Counter = dataclasses.field(default_factory=Counter)  # (transform, failure) -> variants not written
    converted: Counter = dataclasses.field(default_factory=Counter)  # input layout converted on reading -> records
    unread_calls: int = 0  # records whose assistant text calls a tool in a layout the readers do not know
    plain_chats: int = 0  # records with neither tools nor tool calls
    hooks_not_replayed: Counter = dataclasses.field(default_factory=Counter)  # "hook: why" -> records

    def __add__(self, other: Stats) -> Stats:
        out = Stats()
        for f in dataclasses.fields(self):
            setattr(out, f.name, getattr(self, f.name) + getattr(other, f.name))
        return out

    def __iadd__(self, other: Stats) -> Stats:
        """``self + other`` into ``self``: a run's total grows by each record's counts without a new Stats and
        new Counters per record (the counts are positive, so ``update`` keeps what ``+`` keeps)."""
        for name in _INT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in _COUNTER_FIELDS:
            theirs = getattr(other, name)
            if theirs:
                getattr(self, name).update(theirs)
        return self

    def to_json(self) -> dict:
        """Every counter as JSON (a completion record); :meth:`from_json` reads it back."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("skipped", "failed"):
                v = {f"{k[0]}\x00{k[1]}": n for k, n in v.items()}
            out[f.name] = dict(sorted(v.items())) if isinstance(v, dict) else v
        return out

    @classmethod
    def from_json(cls, data: dict) -> Stats:
        out = cls()
        for f in dataclasses.fields(cls):
            v = data.get(f.name, getattr(out, f.name))
            if f.name in ("skipped", "failed"):
                v = {tuple(k.split("\x00", 1)): n for k, n in v.items()}
            setattr(out, f.name, Counter(v) if isinstance(getattr(out, f.name), Counter) else v)
        return out

    def to_dict(self) -> dict:
        """The manifest's view: counts, reasons, and per transform and per family: applied, skipped and failed
        (variants not written because they failed verification with the transform applied, or because it
        raised), each with its reasons."""
        per_transform: dict[str, dict] = {}

        def entry(name: str) -> dict:
            return per_transform.setdefault(name, {"applied": 0, "skipped": {}, "failed": {}})

        for name, n in sorted(self.applied.items()):
            entry(name)["applied"] = n
            entry(name)["sources"] = self.sources_applied[name]
        for (name, reason), n in sorted(self.skipped.items()):
            entry(name)["skipped"][reason] = n
        for (name, reason), n in sorted(self.failed.items()):
            entry(name)["failed"][reason] = n
        families: dict[str, dict] = {}
        for name, t in sorted(per_transform.items()):
            f = families.setdefault(_family_of(name), {"applied": 0, "skipped": 0, "failed": 0})
            f["applied"] += t["applied"]
            f["skipped"] += sum(t["skipped"].values())
            f["failed"] += sum(t["failed"].values())
        return {
            "counts": {"input_records": self.input_records, "sources_written": self.sources_written,
                       "rejected": self.rejected, "rows_written": self.rows_written,
                       "variants_failed": self.variants_failed, "unchanged_variants": self.unchanged_variants,
                       "prompt_unchanged_variants": self.prompt_unchanged_variants,
                       "task_changing_variants": self.task_changing_variants},
            "reject_reasons": dict(sorted(self.reject_reasons.items())),
            "variant_failures": dict(sorted(self.variant_failures.items())),
            "converted_layouts": dict(sorted(self.converted.items())),
            "records_with_unread_calls": self.unread_calls,
            "records_without_tools_or_calls": self.plain_chats,
            "hooks_not_replayed": dict(sorted(self.hooks_not_replayed.items())),
            "families": dict(sorted(families.items())),
            "transforms": per_transform,
        }


#: The fields of :class:`Stats` by kind, for ``+=`` (every field is one or the other).
_INT_FIELDS = tuple(f.name for f in dataclasses.fields(Stats) if f.type in ("int", int))
_COUNTER_FIELDS = tuple(f.name for f in dataclasses.fields(Stats) if f.type in ("Counter", Counter))
assert len(_INT_FIELDS) + len(_COUNTER_FIELDS) == len(dataclasses.fields(Stats))


def _family_of(name: str) -> str:
    """The family of the transform registered as ``name`` (a name no longer registered: its prefix)."""
    from hsa.transform import registry

    cls = registry().get(name)
    return getattr(cls, "family", None) or name.split(".", 1)[0]


@dataclasses.dataclass
class Result:
    """What one input line produced: rows in order, rejects, and the line's stats."""

    rows: list[dict]
    rejects: list[dict]
    stats: Stats
    source_id: str | None = None
    where: tuple[str, int] | None = None  # (input, line)
    #: values the rows share with other records' rows, with their JSON as :func:`hsa.io.encode_row` writes it, by
    #: the value's identity (``{id: (value, JSON)}``, a start for its ``memo``; the slot plans keep them)
    encoded: dict = dataclasses.field(default_factory=dict)


def source_row(record: Record, variant: int, applied: list[dict], tools: list[dict] | None = None) -> dict:
    """The output row of ``record`` (a source or a variant); ``tools``: its tools as the row writes them, where the
    caller has them (:func:`_row_tools`)."""
    row = denormalize(record, tools=tools)
    source_id = record["_fmt"].get("source_id", record["id"]) if variant == 0 and record["transforms"] else record["id"]
    row["id"] = f"{record['id']}/{variant}"
    row = {"id": row.pop("id"), "source_id": source_id, "variant": variant, **row}
    row["transforms"] = list(record["transforms"]) + applied
    row["mapping"] = Mapping(record["mapping"]).to_dict()
    row["notes"] = list(record["notes"])
    extra = {k: v for k, v in row.items() if k not in _KNOWN}
    for k in extra:
        del row[k]
    row["extra"] = extra or None
    return row


def _row_tools(plan: SlotPlan | None, variant: Record, source: Record, encoded: dict) -> list[dict] | None:
    """``variant``'s tools as its row writes them (:func:`hsa.records.denormalize`), kept in its slot plan by their
    identity (:meth:`SlotPlan.same_as`, the tools as :func:`hsa.plans.held` gives them: the source's own stand for
    every record's, which the harness digest pins), with their JSON, put in ``encoded`` (:attr:`Result.encoded`):
    the variants of a slot share the tools a plan's leaf runs made, and the rows share what they are written as,
    read only. ``plan``: the variant's plan where it keeps the work (:attr:`hsa.context.WorkerContext.keeping`), else
    None (a record with a harness of its own): then None, written afresh."""
    if plan is None:
        return None
    ident = ("row tools", *held(variant, ("tools",), source))
    hit = plan.same_as(ident)
    if hit is None:
        tools = [denormalize_tool(t) for t in variant["tools"]]
        hit = plan.remember(ident, (tools, _json.dumps(tools)))
    encoded[id(hit[0])] = hit
    return hit[0]


def _source_row_tools(source: Record, encoded: dict) -> list[dict] | None:
    """The source's tools as its row writes them, with their JSON, put in ``encoded`` (:attr:`Result.encoded`): made
    once for every record that shares the source's tool list (:func:`hsa.tool_dialects.written_tools`), read only;
    None where the source's tools are its own (written afresh)."""
    hit = written_tools(source["tools"])
    if hit is not None:
        encoded[id(hit[0])] = hit
        return hit[0]
    return None


_KNOWN = {"id", "source_id", "variant", "messages", "tools", "skills", "skill_tool", "prompt", "hooks",
          "hook_events", "meta", "transforms", "mapping", "notes"}


def _reject(item: InputLine, reason: str, detail: str, record_id: str | None = None, variant: int | None = None) -> dict:
    out: dict[str, Any] = {"input": item.path, "line": item.line}
    if record_id is not None:
        out["id"] = record_id
    if variant is not None:
        out["variant"] = variant
    out["reason"] = reason
    out["detail"] = detail
    return out


#: How tool-call arguments are written: as each record had them, or all as JSON objects or all as JSON strings.
CALL_ARGUMENTS = ("keep", "object", "string")


def augment_record(item: InputLine, recipe: Transform, *, seed: int, variants: int,
                   keep_original: bool, exec_hooks: bool = True, call_arguments: str = "object",
                   harness: dict | None = None, harness_pool: int = 0, strict_hooks: bool = False) -> Result:
    """Everything that happens to one input line; pure, so any worker may run it.

    ``exec_hooks`` runs invariant 7 (hooks replayed in the sandbox, :func:`hsa.sandbox.check_hooks`).
    A source hook that cannot run on its own payloads (:func:`hsa.sandbox.not_replayed`) is counted
    (``hooks_not_replayed``) and noted on each of the record's rows, or, with ``strict_hooks``, rejects
    the record. ``call_arguments`` (:data:`CALL_ARGUMENTS`) sets the form tool-call arguments are written in.
    ``harness`` (``--tools FILE``, :func:`hsa.records.read_harness_file`) supplies the harness of a row without one.
    ``harness_pool`` K > 0 draws each variant's harness-level params for its pool slot (:func:`slot_for`,
    :func:`slot_rng`) and writes the slot in a ``slot`` column (None on the source row); 0 draws them per record.
    """
    stats = Stats(input_records=1)
    try:
        raw = parse_line(item)
        loaded = isinstance(item.data, (bytes, bytearray))
        source = normalize(raw, harness=harness, loaded=loaded, shared=loaded)  # tools shared: the source is read only
        if call_arguments != "keep":
            source["_fmt"]["args"] = call_arguments
    except RecordError as exc:
        stats.rejected = 1
        stats.reject_reasons[exc.reason] += 1
        return Result([], [_reject(item, exc.reason, exc.detail)], stats)
    for layout in converted_layouts(source["notes"]):
        stats.converted[layout] += 1
    stats.unread_calls += any(n.startswith(UNREAD_CALL_NOTE) for n in source["notes"])
    stats.plain_chats += not source["tools"] and not any(m.get("tool_calls") for m in source["messages"])
    violations = check_record(source)
    if violations:
        stats.rejected = 1
        stats.reject_reasons[violations[0].reason] += 1
        return Result([], [_reject(item, violations[0].reason, details(violations), source["id"])], stats)
    stuck: dict[str, str] = {}
    if exec_hooks and source.get("hooks"):
        from hsa.sandbox import NOT_REPLAYED_NOTE, not_replayed

        stuck = not_replayed(source)
        for name, why in stuck.items():
            stats.hooks_not_replayed[f"{name}: {why}"] += 1
        if stuck and strict_hooks:
            stats.rejected = 1
            stats.reject_reasons["hook not replayed"] += 1
            detail = "; ".join(f"{n!r}: {w}" for n, w in stuck.items())
            return Result([], [_reject(item, "hook not replayed", detail[:1000], source["id"])], stats)
    marks = [f"{NOT_REPLAYED_NOTE}{n!r}: {w}" for n, w in stuck.items()] if stuck else []
    before = _json.dumps(source) if CHECK_SOURCES else None
    rows: list[dict] = []
    encoded: dict = {}  # Result.encoded
    fired: set[str] = set()  # the transforms any written variant of this record applied
    rejects: list[dict] = []
    unchanged = None
    if keep_original:
        first = source_row(source, 0, [], _source_row_tools(source, encoded))
        if not source["transforms"]:  # written like an unchanged variant's row but for its id and variant
            unchanged = first
        rows.append(_marked(dict(first), marks))
        if harness_pool:
            rows[-1]["slot"] = None
    noop = _draws_nothing(recipe)
    digest = harness_digest(source) if harness_pool and not noop else None
    recipe_key = config_key(recipe) if digest is not None else None  # the plans of another recipe are others
    order = _slot_order(seed, source["id"], harness_pool) if harness_pool else None
    ctx = current()
    plans = ctx.plans if digest is not None else None
    met = plans is not None and plans.holds_harness(digest)  # an earlier record had this harness: keep its work
    answers = Answers()  # what this record and the records made from it answered the samplers (every variant)
    for k in range(1, variants + 1):
        if harness_pool:
            slot = order[(k - 1) % harness_pool]  # slot_for(seed, source["id"], k, harness_pool)
        if noop:  # what run gives for a tree of sequences without a leaf, with no rng made
            variant, applied, skipped = source, [], []
        else:
            rng = rng_for(seed, source["id"], k)
            if harness_pool:
                ctx.plan = plans.get((digest, slot, seed, recipe_key)) if plans is not None else None
                if ctx.plan is not None and (met or ctx.plan.served):
                    ctx.plan.reused = True
                rng = slot_rng(seed, digest, slot, rng, ctx.plan)
                rng.answers = answers  # the variants of one record share what it answered
        try:
            try:
                if not noop:
                    variant, applied, skipped = run(recipe, source, rng)
            except Exception as exc:  # a transform bug must not take the run down: count it
                reason = f"transform error: {type(exc).__name__}"
                stats.variants_failed += 1
                stats.variant_failures[reason] += 1
                if getattr(exc, "hsa_transform", None):
                    stats.failed[(exc.hsa_transform, reason)] += 1
                rejects.append(_reject(item, reason, str(exc)[:500], source["id"], k))
                continue
            for name, why in skipped:
                stats.skipped[(name, why)] += 1
            if variant is source:  # nothing applied: the source itself, checked above (invariant 5)
                problems = []
            else:  # the check hsa validate runs on every variant row (3 holds by construction; tested)
                problems = check_variant(source, variant, closure=False, exec_hooks=exec_hooks)
        finally:
            keeping = ctx.keeping  # for the row's tools (_row_tools)
            if ctx.plan is not None:
                ctx.plan.served += 1
            ctx.plan = None  # the restore step and the check keep the slot's work in its plan, and only there
        if problems:
            stats.variants_failed += 1
            key = f"{problems[0].invariant}: {problems[0].reason}"
            stats.variant_failures[key] += 1
            for name in dict.fromkeys(a.name for a in applied):
                stats.failed[(name, key)] += 1
            rejects.append(_reject(item, key, details(problems), source["id"], k))
            continue
        for a in applied:
            stats.applied[a.name] += 1
        fired.update(a.name for a in applied)
        if not applied:
            stats.unchanged_variants += 1
        if variant is source or _prompt_of(variant) == _prompt_of(source):
            stats.prompt_unchanged_variants += 1
        if not Mapping(variant["mapping"][len(source["mapping"]):]).task_preserving:
            stats.task_changing_variants += 1
        if variant is source and not applied:  # the source's row under this variant's id: denormalised once
            if unchanged is None:
                unchanged = source_row(source, k, [], _source_row_tools(source, encoded))
            row = {**unchanged, "id": f"{source['id']}/{k}", "variant": k}
        else:
            row = source_row(variant, k, [a.to_json() for a in applied], _row_tools(keeping, variant, source, encoded))
        rows.append(_marked(row, marks))
        if harness_pool:
            rows[-1]["slot"] = slot
    if before is not None and _json.dumps(source) != before:
        raise AssertionError(f"record {source['id']!r}: the source record changed while its variants were made; "
                             "a transform's apply must not modify its input (HSA_CHECK_SOURCES)")
    stats.sources_applied.update(fired)
    if rows:
        stats.sources_written = 1
        stats.rows_written = len(rows)
    else:
        stats.rejected = 1
        stats.reject_reasons["every variant failed verification"] += 1
        rejects.append(_reject(item, "every variant failed verification",
                               f"{variants} variant(s) failed; see the variant rejects above", source["id"]))
    return Result(rows, rejects, stats, source["id"], (item.path, item.line), encoded)


def _prompt_of(record: Record) -> list:
    """What the model reads before its first answer: the role and text of every message before the first assistant
    turn (the system prompt, a context message, the user's words)."""
    out = []
    for m in record["messages"]:
        if m.get("role") == "assistant":
            break
        out.append((m.get("role"), m.get("content")))
    return out


def _draws_nothing(recipe: Transform) -> bool:
    """True for a tree of :class:`hsa.transform.Sequence` combinators without a leaf (the ``identity`` recipe):
    :func:`hsa.transform.run` gives the record itself for any rng, so none is made."""
    return type(recipe) is Sequence and all(_draws_nothing(c) for c in recipe.children())


def _marked(row: dict, notes: list[str]) -> dict:
    """``row`` with ``notes`` added to its notes (the marks of hooks that were not replayed)."""
    if notes:
        row["notes"] = row["notes"] + notes
    return row


def canonicalize_record(raw: dict) -> dict:
    """An output row (or any record with a ``mapping``) mapped back to its source record.

    Tool, parameter and skill names, argument paths and values return to the source
    harness everywhere (schemas, calls, texts, hooks), and the mapping's ``restore`` step
    puts back what no inverse carries (descriptions, order, added tools and parameters,
    prompt, skills, hooks, messages): for a task-preserving variant the result is its
    source record. A task-changing variant (``tool.irrelevance``) gets its names back only.
    """
    from hsa.renames import canonicalize

    rec = canonicalize(normalize(raw))
    rec["transforms"] = []
    out = denormalize(rec)
    if raw.get("source_id") is not None:
        out["id"] = raw["source_id"]
    return out


def canonicalize_checked(raw: dict) -> dict:
    """:func:`canonicalize_record`, and the record it gives checked against invariant 1 (``hsa canonicalize``):
    raises ``ValueError`` (``RecordError`` for a record that does not read) with the reason it cannot be used."""
    out = canonicalize_record(raw)
    broken = check_record(normalize(out))
    if broken:
        raise ValueError(f"the record mapped back breaks invariant 1: {broken[0].reason}: {details(broken)}")
    return out
