"""``hsa validate``: invariants 1-3 of docs/design.md on any records, and on variant rows the check ``hsa augment``
runs before it writes a variant (:func:`hsa.invariants.check_variant`: invariants 1-3 and 6-8), with file:line reports."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, OrderedDict
from pathlib import Path

from hsa import _json
from hsa.context import collecting_less, current
from hsa.io import iter_file_items, iter_rows, parse_line, row_to_record
from hsa.records import UNREAD_CALL_NOTE, RecordError, converted_layouts, denormalize, normalize, read_back
from hsa.renames import canonicalize
from hsa.invariants import check_record, check_variant

__all__ = ["ValidationReport", "validate_records", "validate_path"]


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
#: Source rows kept to check the variants that follow them (hsa augment writes a source row before its variants).
_MAX_SOURCES = 1024


def validate_records(items, report: ValidationReport, *, exec_hooks: bool = True,
                     harness: dict | None = None) -> ValidationReport:
    """Check ``(where, raw_object_or_RecordError)`` pairs: invariant 1 and 3 of every record, and every variant with
    :func:`hsa.invariants.check_variant`, the check ``hsa augment`` runs before it writes a variant.

    A variant is checked against its source row when that came earlier (``--keep-original`` writes it as
    variant 0), else against what :func:`hsa.renames.canonicalize` gives back from the variant itself.
    ``exec_hooks`` replays hooks in the sandbox (invariant 7), as ``hsa augment`` does by default.
    ``harness`` (``--tools FILE``) supplies the harness of rows without one.
    """
    sources: OrderedDict[str, dict] = OrderedDict()
    with collecting_less():  # hsa.context.GC_THRESHOLDS: a long run of records
        for where, raw in items:
            report.records += 1
            if isinstance(raw, RecordError):
                report.add(where, "format", str(raw))
                continue
            try:
                rec = normalize(raw, harness=harness)
            except RecordError as exc:
                report.add(where, "format", str(exc))
                continue
            for layout in converted_layouts(rec["notes"]):
                report.converted[layout] += 1
            if any(n.startswith(UNREAD_CALL_NOTE) for n in rec["notes"]):
                report.unread.append(where)
            report.not_replayed += any(n.startswith("hook not replayed: ") for n in rec["notes"])
            try:  # invariant 3: what we write back reads again, identically
                again = denormalize(read_back(rec))
                if _json.canonical(again) != _json.canonical(denormalize(rec)):
                    report.add(where, "3 closure", "writing the record back and reading it again changes it")
            except RecordError as exc:
                report.add(where, "3 closure", str(exc))
            source_id = raw.get("source_id")
            source = sources.get(source_id) if isinstance(source_id, str) and raw.get("variant") != 0 else None
            variant = raw.get("variant") not in (None, 0) and (source is not None or rec["mapping"])
            if variant and (source is None or len(source["mapping"]) <= len(rec["mapping"])):
                _check_variant_row(where, rec, source, report, exec_hooks)
            else:
                for v in check_record(rec, check_names=False):
                    report.add(where, "1 validity", f"{v.reason}: {v.detail}")
            if isinstance(source_id, str) and (raw.get("variant") == 0 or not rec["mapping"]):
                sources[source_id] = rec
                if len(sources) > _MAX_SOURCES:
                    sources.popitem(last=False)
    return report


def _check_variant_row(where: str, rec: dict, source: dict | None, report: ValidationReport, exec_hooks: bool) -> None:
    report.variants += 1
    if source is None:
        try:
            source = canonicalize(rec)
        except ValueError as exc:
            report.add(where, "2 round trip", f"cannot map back: {exc}")
            return
        for v in check_record(source):
            report.add(where, "2 round trip", f"mapped back to the source harness: {v.reason}: {v.detail}")
        # invariant 8 below undoes the same steps of the same row: it reads this result (undo_last) instead of
        # undoing them a second time (half of this row's work on hooked records)
        current().last_undo[:] = [rec, len(rec["mapping"]), source]
        # undoing the mapping gives the variant's notes back too; the notes its transforms added (hook messages
        # reworded on purpose, sync refusals) are read as this variant's own, as hsa augment read them
        source = {**source, "notes": []}
    try:
        for v in check_variant(source, rec, closure=False, exec_hooks=exec_hooks):
            report.add(where, _LABELS.get(v.invariant, v.invariant), f"{v.reason}: {v.detail}")
    finally:
        current().last_undo.clear()


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
    import hashlib

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
                  harness: dict | None = None) -> ValidationReport:
    """Validate a JSONL file or an ``hsa augment`` output folder (its accounting too); ``exec_hooks`` and
    ``harness`` (``--tools FILE``): see :func:`validate_records`."""
    path = Path(path)
    report = ValidationReport(max_report=max_report)
    if path.is_dir():
        validate_records(_dir_items(path), report, exec_hooks=exec_hooks, harness=harness)
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
        validate_records(_jsonl_items(path), report, exec_hooks=exec_hooks, harness=harness)
    return report
