"""``hsa validate``: invariants 1-3 of docs/design.md on any records, and on variant rows the check ``hsa augment``
runs before it writes a variant (:func:`hsa.invariants.check_variant`: invariants 1-3 and 6-8), with file:line reports."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
from collections import Counter, OrderedDict
from collections.abc import Iterator
from pathlib import Path

from hsa import _json
from hsa.context import GC_THRESHOLDS, collecting_less, current
from hsa.io import iter_file_items, iter_rows, parse_line, row_to_record
from hsa.records import UNREAD_CALL_NOTE, RecordError, converted_layouts, denormalize, normalize, read_back
from hsa.renames import canonicalize
from hsa.invariants import check_record, check_variant

__all__ = ["ValidationReport", "RowChecker", "Row", "RowReport", "ValidateJob", "rows", "is_source_row",
           "validate_records", "validate_path"]


@dataclasses.dataclass
class RowReport:
    """What the check of one row found; :meth:`ValidationReport.take` adds it to the report in input order."""

    problems: list = dataclasses.field(default_factory=list)  # (invariant label, message)
    converted: tuple = ()  # layouts read on input
    unread: bool = False  # calls a tool in its assistant text in a layout hsa does not read
    not_replayed: bool = False  # holds a hook hsa augment noted as not replayed
    variant: bool = False  # checked as a variant of a source


@dataclasses.dataclass
class ValidationReport:
    """What ``hsa validate`` found: counts per invariant and the first violations as text."""

    records: int = 0
    variants: int = 0  # rows checked as variants of a source
    violations: Counter = dataclasses.field(default_factory=Counter)
    lines: list[str] = dataclasses.field(default_factory=list)
    max_report: int = 50
    converted: Counter = dataclasses.field(default_factory=Counter)  # layout read on input -> records
    unread: list[str] = dataclasses.field(default_factory=list)  # where a record calls a tool in an unread layout
    not_replayed: int = 0  # rows noted 'hook not replayed' by hsa augment

    def add(self, where: str, invariant: str, message: str) -> None:
        self.violations[invariant] += 1
        if len(self.lines) < self.max_report:
            self.lines.append(f"{where}: [{invariant}] {message}")

    def take(self, where: str, row: RowReport) -> None:
        """Add what the check of the row at ``where`` found (rows are taken in input order)."""
        self.records += 1
        self.variants += row.variant
        for invariant, message in row.problems:
            self.add(where, invariant, message)
        for layout in row.converted:
            self.converted[layout] += 1
        if row.unread:
            self.unread.append(where)
        self.not_replayed += row.not_replayed

    def reading(self) -> list[str]:
        """Lines on how the records were read: layouts converted on input, calls left in an unread layout."""
        lines = [f"{n} read from another layout: {layout}" for layout, n in sorted(self.converted.items())]
        if self.not_replayed:
            lines.append(f"{self.not_replayed} rows hold a hook that was not replayed (noted 'hook not replayed'): "
                         "invariant 7 was not checked for it")
        if self.unread:
            lines.append(f"{len(self.unread)} records call a tool in their assistant text in a layout hsa does not "
                         f"read (those calls stay text), first at {self.unread[0]}")
        return lines

    def summary(self) -> str:
        if not self.violations:
            tail = f" ({self.variants} variants: also 6-8)" if self.variants else ""
            return f"{self.records} records checked: invariants 1-3 hold{tail}"
        def label(inv: str) -> str:  # "1 validity" -> "invariant 1 (validity)"
            num, _, name = inv.partition(" ")
            return f"invariant {num} ({name})" if num.isdigit() else inv

        parts = ", ".join(f"{label(inv)}: {n}" for inv, n in sorted(self.violations.items()))
        total = sum(self.violations.values())
        return (f"{self.records} record{'s' if self.records != 1 else ''} checked: {total} "
                f"violation{'s' if total != 1 else ''} ({parts})")


#: Report labels of the invariants a per-variant check names (numbers as in docs/design.md).
_LABELS = {"validity": "1 validity", "round-trip": "2 round trip", "closure": "3 closure", "consistency": "6 consistency",
           "hooks": "7 hooks", "inversion": "8 inversion"}
#: Source rows kept to check the variants that follow them (hsa augment writes a source row before its variants): a
#: variant finds its source row when fewer than this many source rows came between them.
_MAX_SOURCES = 1024


@dataclasses.dataclass
class Row:
    """One input row as the checks see it: its position, where it is (file and line, for the report), the object
    read (or the :class:`RecordError` of a line that did not read), and where it stands among the source rows of the
    input (:func:`rows`): ``source`` its number if it is one, ``sources_before`` how many came before it."""

    pos: int
    where: str
    raw: object
    source: int | None
    sources_before: int


def is_source_row(raw: object) -> bool:
    """Whether a row read as ``raw`` is kept as the source of the variants that follow it: it has a ``source_id`` and
    is variant 0 (``--keep-original``) or has no mapping."""
    return (isinstance(raw, dict) and isinstance(raw.get("source_id"), str)
            and (raw.get("variant") == 0 or not raw.get("mapping")))


def rows(items) -> Iterator[Row]:
    """``(where, raw object or RecordError)`` pairs as numbered :class:`Row` objects."""
    sources = 0
    for pos, (where, raw) in enumerate(items):
        mine = sources if is_source_row(raw) else None
        yield Row(pos, where, raw, mine, sources)
        sources += mine is not None


class RowChecker:
    """Checks rows one by one (:meth:`check`), keeping the source rows the variants after them are checked against.

    A variant is checked against its source row when that came earlier, fewer than :data:`_MAX_SOURCES` source rows
    before it (``--keep-original`` writes it as variant 0), else against what :func:`hsa.renames.canonicalize`
    gives back from the variant itself. What a row finds depends on the rows of its ``source_id`` before it and on
    the numbers of :func:`rows` alone, so checkers that each see every row of their source ids (``hsa validate
    --workers``) find what one checker finds."""

    def __init__(self, *, exec_hooks: bool = True, harness: dict | None = None):
        self.exec_hooks, self.harness = exec_hooks, harness
        self.sources: OrderedDict[str, tuple[int, dict]] = OrderedDict()  # source_id -> (its number, record)

    def check(self, row: Row) -> RowReport:
        out = RowReport()
        raw = row.raw
        while self.sources and row.sources_before - next(iter(self.sources.values()))[0] > _MAX_SOURCES:
            self.sources.popitem(last=False)  # too far back for this row and every later one
        if isinstance(raw, RecordError):
            out.problems.append(("format", str(raw)))
            return out
        try:
            rec = normalize(raw, harness=self.harness)
        except RecordError as exc:
            out.problems.append(("format", str(exc)))
            return out
        out.converted = tuple(converted_layouts(rec["notes"]))
        out.unread = any(n.startswith(UNREAD_CALL_NOTE) for n in rec["notes"])
        out.not_replayed = any(n.startswith("hook not replayed: ") for n in rec["notes"])
        try:  # invariant 3: what we write back reads again, identically
            again = denormalize(read_back(rec))
            if _json.canonical(again) != _json.canonical(denormalize(rec)):
                out.problems.append(("3 closure", "writing the record back and reading it again changes it"))
        except RecordError as exc:
            out.problems.append(("3 closure", str(exc)))
        source_id = raw.get("source_id")
        kept = self.sources.get(source_id) if isinstance(source_id, str) and raw.get("variant") != 0 else None
        source = kept[1] if kept is not None else None
        variant = raw.get("variant") not in (None, 0) and (source is not None or rec["mapping"])
        if variant and (source is None or len(source["mapping"]) <= len(rec["mapping"])):
            out.variant = True
            self._check_variant_row(rec, source, out)
        else:
            for v in check_record(rec, check_names=False):
                out.problems.append(("1 validity", f"{v.reason}: {v.detail}"))
        if row.source is not None and (raw.get("variant") == 0 or not rec["mapping"]):
            self.sources.pop(source_id, None)
            self.sources[source_id] = (row.source, rec)
        return out

    def _check_variant_row(self, rec: dict, source: dict | None, out: RowReport) -> None:
        if source is None:
            try:
                source = canonicalize(rec)
            except ValueError as exc:
                out.problems.append(("2 round trip", f"cannot map back: {exc}"))
                return
            for v in check_record(source):
                out.problems.append(("2 round trip", f"mapped back to the source harness: {v.reason}: {v.detail}"))
            # invariant 8 below undoes the same steps of the same row: it reads this result (undo_last) instead of
            # undoing them a second time (half of this row's work on hooked records)
            current().last_undo[:] = [rec, len(rec["mapping"]), source]
            # undoing the mapping gives the variant's notes back too; the notes its transforms added (hook messages
            # reworded on purpose, sync refusals) are read as this variant's own, as hsa augment read them
            source = {**source, "notes": []}
        try:
            for v in check_variant(source, rec, closure=False, exec_hooks=self.exec_hooks):
                out.problems.append((_LABELS.get(v.invariant, v.invariant), f"{v.reason}: {v.detail}"))
        finally:
            current().last_undo.clear()


class ValidateJob:
    """``hsa validate``'s work: each row checked by a :class:`RowChecker` of its worker. Rows are routed
    by their ``source_id`` (:func:`hsa.pipeline.workers.route_by_hash`), so a source row and its variants meet on one worker, and each
    worker keeps the source rows it saw as one process would (the numbers of :func:`rows` say which it would still
    hold): the same report for any worker count."""

    lost = "nothing is reported for the rows it held"

    def __init__(self, exec_hooks: bool, harness: dict | None, policy: str | None):
        self.exec_hooks, self.harness, self.policy = exec_hooks, harness, policy
        self.checker = None

    def setup(self) -> None:
        gc.set_threshold(*GC_THRESHOLDS)
        if self.exec_hooks and self.policy is not None:
            from hsa.sandbox import set_policy

            set_policy(self.policy)
        self.checker = RowChecker(exec_hooks=self.exec_hooks, harness=self.harness)

    def work(self, batch: list) -> list:
        return [(row.pos, row.where, self.checker.check(row)) for row in batch]

    @staticmethod
    def key(row) -> bytes | None:
        from hsa.pipeline.workers import source_key

        return source_key(row.raw)

    @staticmethod
    def route(keys: list, workers: int, sticky: dict) -> list[int]:
        from hsa.pipeline.workers import route_by_hash

        return route_by_hash(keys, workers)


def validate_records(items, report: ValidationReport, *, exec_hooks: bool = True,
                     harness: dict | None = None, workers: int = 1) -> ValidationReport:
    """Check ``(where, raw_object_or_RecordError)`` pairs: invariant 1 and 3 of every record, and every variant with
    :func:`hsa.invariants.check_variant`, the check ``hsa augment`` runs before it writes a variant (against its
    source row: :class:`RowChecker`).

    ``exec_hooks`` replays hooks in the sandbox (invariant 7), as ``hsa augment`` does by default.
    ``harness`` (``--tools FILE``) supplies the harness of rows without one. ``workers`` processes share the rows
    (each source's rows on one of them); the report is the same for any count.
    """
    if workers <= 1:
        checker = RowChecker(exec_hooks=exec_hooks, harness=harness)
        with collecting_less():  # hsa.context.GC_THRESHOLDS: a long run of records
            for row in rows(items):
                report.take(row.where, checker.check(row))
        return report
    import sys

    from hsa.pipeline.workers import WorkerSet, process_context

    policy = None
    if exec_hooks and "hsa.sandbox" in sys.modules:
        from hsa.sandbox.layers import policy as current_policy

        policy = current_policy()
    with WorkerSet(process_context(), workers, ValidateJob(exec_hooks, harness, policy), batch_size=8) as pool:
        for _, where, found in pool.results(rows(items)):
            report.take(where, found)
    return report


def _jsonl_items(path: Path):
    for item in iter_file_items(path):
        where = f"{path}:{item.line}"
        try:
            yield where, parse_line(item)
        except RecordError as exc:
            yield where, exc


def _dir_items(path: Path):
    for i, row in enumerate(iter_rows(path)):
        yield f"{path}[{i}] {row.get('id')}", row_to_record(row)


def _check_shards(path: Path, manifest: dict, report: ValidationReport) -> None:
    """Each shard's sha256 against the manifest: the rows of a shard that differs (or is missing) were not written
    by the run the manifest describes, so none of its checks above can vouch for them."""
    start = 0
    for shard in manifest.get("shards", []):
        file, rows, want = path / shard["file"], shard.get("rows", 0), shard.get("sha256")
        span = f"rows {start}-{start + rows - 1}" if rows else "no rows"
        start += rows
        try:
            got = hashlib.sha256(file.read_bytes()).hexdigest()
        except OSError as exc:
            report.add(str(file), "integrity", f"cannot read the shard ({exc.strerror}): {span} could not be verified")
            continue
        if got != want:
            report.add(str(file), "integrity", f"sha256 {got[:16]}... is not the manifest's {str(want)[:16]}...: "
                                               f"the shard changed after the run wrote it; {span} could not be "
                                               "verified")


def validate_path(path: str | Path, *, max_report: int = 50, exec_hooks: bool = True,
                  harness: dict | None = None, workers: int = 1) -> ValidationReport:
    """Validate a JSONL file or an ``hsa augment`` output folder (its accounting too); ``exec_hooks``,
    ``harness`` (``--tools FILE``) and ``workers``: see :func:`validate_records`."""
    path = Path(path)
    report = ValidationReport(max_report=max_report)
    if path.is_dir():
        validate_records(_dir_items(path), report, exec_hooks=exec_hooks, harness=harness, workers=workers)
        manifest_path = path / "manifest.json"
        if manifest_path.exists():
            m = json.loads(manifest_path.read_text(encoding="utf-8"))
            _check_shards(path, m, report)
            c = m["counts"]
            if c["input_records"] != c["sources_written"] + c["rejected"]:
                report.add(str(manifest_path), "accounting",
                           f"{c['input_records']} records in != {c['sources_written']} written + {c['rejected']} rejected")
            if report.records != c["rows_written"]:
                report.add(str(manifest_path), "accounting",
                           f"manifest says {c['rows_written']} rows, the shards hold {report.records}")
            rejects = path / "rejects.jsonl"
            if rejects.exists():
                n = sum(1 for line in rejects.open(encoding="utf-8") if line.strip() and "variant" not in json.loads(line))
                if n != c["rejected"]:
                    report.add(str(rejects), "accounting", f"{n} record rejects listed, manifest counts {c['rejected']}")
    else:
        validate_records(_jsonl_items(path), report, exec_hooks=exec_hooks, harness=harness, workers=workers)
    return report
