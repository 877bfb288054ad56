"""``hsa validate``: invariants 1-3 of docs/design.md on any records, with file:line reports."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

from hsa import _json
from hsa.io import iter_file_items, iter_rows, parse_line, row_to_record
from hsa.mapping import Mapping
from hsa.records import UNREAD_CALL_NOTE, RecordError, converted_layouts, denormalize, normalize
from hsa.rewrite import canonicalize
from hsa.verify import calls_of, check_record

__all__ = ["ValidationReport", "validate_records", "validate_path"]


@dataclasses.dataclass
class ValidationReport:
    """What ``hsa validate`` found: counts per invariant and the first violations as text."""

    records: int = 0
    violations: Counter = dataclasses.field(default_factory=Counter)
    lines: list[str] = dataclasses.field(default_factory=list)
    max_report: int = 50
    converted: Counter = dataclasses.field(default_factory=Counter)  # layout read on input -> records
    unread: list[str] = dataclasses.field(default_factory=list)  # where a record calls a tool in an unread layout

    def add(self, where: str, invariant: str, message: str) -> None:
        self.violations[invariant] += 1
        if len(self.lines) < self.max_report:
            self.lines.append(f"{where}: [{invariant}] {message}")

    def reading(self) -> list[str]:
        """Lines on how the records were read: layouts converted on input, calls left in an unread layout."""
        lines = [f"{n} read from another layout: {layout}" for layout, n in sorted(self.converted.items())]
        if self.unread:
            lines.append(f"{len(self.unread)} records call a tool in their assistant text in a layout hsa does not "
                         f"read (those calls stay text), first at {self.unread[0]}")
        return lines

    def summary(self) -> str:
        if not self.violations:
            return f"{self.records} records checked: invariants 1-3 hold"
        def label(inv: str) -> str:  # "1 validity" -> "invariant 1 (validity)"
            num, _, name = inv.partition(" ")
            return f"invariant {num} ({name})" if num.isdigit() else inv

        parts = ", ".join(f"{label(inv)}: {n}" for inv, n in sorted(self.violations.items()))
        total = sum(self.violations.values())
        return (f"{self.records} record{'s' if self.records != 1 else ''} checked: {total} "
                f"violation{'s' if total != 1 else ''} ({parts})")


def validate_records(items, report: ValidationReport, *, harness: dict | None = None) -> ValidationReport:
    """Check ``(where, raw_object_or_RecordError)`` pairs; invariants 1 (validity), 2 (round trip), 3 (closure).
    ``harness`` (``--tools FILE``) supplies the harness of rows without one."""
    sources: dict[str, list] = {}
    variants: list[tuple[str, str, list]] = []
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
        for v in check_record(rec, check_names=False):
            report.add(where, "1 validity", f"{v.reason}: {v.detail}")
        try:  # invariant 3: what we write back reads again, identically
            again = denormalize(normalize(_json.loads(_json.dumps(denormalize(rec)))))
            if _json.canonical(again) != _json.canonical(denormalize(rec)):
                report.add(where, "3 closure", "writing the record back and reading it again changes it")
        except RecordError as exc:
            report.add(where, "3 closure", str(exc))
        if rec["mapping"]:
            mapping = Mapping(rec["mapping"])
            calls = calls_of(rec)
            for i, call in enumerate(calls):
                back = mapping.to_canonical(call)
                if mapping.task_preserving and not _json.strict_equal(mapping.to_variant(back), call):
                    report.add(where, "2 round trip", f"call {i} ({call['name']}) does not survive canonical and back")
            try:
                canon = canonicalize(rec)
                for v in check_record(canon):
                    report.add(where, "2 round trip", f"mapped back to the source harness: {v.reason}: {v.detail}")
                if mapping.task_preserving:
                    variants.append((where, raw.get("source_id") or "", calls_of(canon)))
            except ValueError as exc:
                report.add(where, "2 round trip", f"cannot map back: {exc}")
        elif raw.get("source_id") is not None:
            sources[raw["source_id"]] = calls_of(rec)
    for where, source_id, canon_calls in variants:  # exact comparison when the sources are present too
        if source_id in sources and not _json.strict_equal(sources[source_id], canon_calls):
            report.add(where, "2 round trip", f"calls mapped back differ from source {source_id!r}'s calls")
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


def validate_path(path: str | Path, *, max_report: int = 50, harness: dict | None = None) -> ValidationReport:
    """Validate a JSONL file or an ``hsa augment`` output folder (its accounting too); ``harness``
    (:func:`hsa.records.read_harness_file`, ``--tools FILE``) supplies the harness of rows without one."""
    path = Path(path)
    report = ValidationReport(max_report=max_report)
    if path.is_dir():
        validate_records(_dir_items(path), report, harness=harness)
        manifest_path = path / "manifest.json"
        if manifest_path.exists():
            m = json.loads(manifest_path.read_text(encoding="utf-8"))
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
        validate_records(_jsonl_items(path), report, harness=harness)
    return report
