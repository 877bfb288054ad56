"""``hsa show``: a variant beside its source, differences highlighted."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from hsa import _json
from hsa.io import InputSource, find_row, row_to_record

__all__ = ["show", "find_source"]

_RED, _GREEN, _CYAN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[0m"


def _find_row(dataset: Path, row_id: str) -> dict:
    row = find_row(dataset, row_id)
    if row is None:
        raise KeyError(f"no row with id {row_id!r} in {dataset} (ids look like <source_id>/<variant>)")
    return row


def find_source(dataset: Path, row: dict) -> dict | None:
    """The source record of ``row``: variant 0 in the dataset, else the line in the recorded input files."""
    source_id = row["source_id"]
    try:
        return row_to_record(_find_row(dataset, f"{source_id}/0"))
    except KeyError:
        pass
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    for inp in manifest.get("inputs", []):
        kind = inp.get("kind", "jsonl")
        if kind == "hub" or not Path(inp["path"]).exists():
            continue
        derived = source_id.startswith("sha-")  # an id made from the content: no line holds it
        for item in InputSource(inp["path"], kind).items():
            obj = item.data
            if isinstance(obj, (bytes, bytearray)):  # a JSONL line: parsed only when it can hold the id
                if not derived and source_id.encode() not in obj:
                    continue
                try:
                    obj = _json.loads(obj)
                except ValueError:
                    continue
            if not isinstance(obj, dict):
                continue
            if obj.get("id") is not None:
                if str(obj["id"]) == source_id:
                    return obj
            elif derived and _derived_id(obj) == source_id:
                return obj
    return None


def _derived_id(raw: dict) -> str | None:
    """The id :func:`hsa.records.normalize` gives a record without one (from its content)."""
    from hsa.records import RecordError, normalize

    try:
        return normalize(raw)["id"]
    except RecordError:
        return None


def _pretty(record: dict) -> list[str]:
    """The record in one layout on both sides (:func:`hsa.report.diff.normal_form`: one tool dialect, call arguments
    as objects, keys sorted), so that the diff shows what a transform changed and not how the record is written."""
    from hsa.report.diff import dumps_sorted, normal_form

    return dumps_sorted(normal_form(record)).splitlines()


def show(dataset: str | Path, row_id: str, *, color: bool = False, context: int = 2) -> str:
    """A unified diff of the source record and variant ``row_id``, with the transforms and mapping on top."""
    dataset = Path(dataset)
    if not (dataset / "state.json").exists():
        raise FileNotFoundError(f"{dataset} is not an hsa output folder")
    row = _find_row(dataset, row_id)
    variant = row_to_record(row)
    source = find_source(dataset, row)
    head = [f"{row_id}  (source {row['source_id']}, variant {row['variant']})"]
    for t in row.get("transforms") or []:
        head.append(f"  {t['name']}: {json.dumps(t['params'], ensure_ascii=False)[:200]}")
    mapping = row.get("mapping") or {}
    if mapping.get("tools"):
        head.append(f"  tools renamed: {mapping['tools']}")
    if mapping.get("skills"):
        head.append(f"  skills renamed: {mapping['skills']}")
    if source is None:
        head.append("  (source not found: no recorded input file holds it any more and --keep-original was off; "
                    "showing the variant)")
        return "\n".join(head + _pretty(variant))
    strip = ("source_id", "variant", "transforms", "mapping", "notes")
    a = _pretty({**{k: v for k, v in source.items() if k not in strip}, "id": row["source_id"]})
    b = _pretty({**{k: v for k, v in variant.items() if k not in strip}, "id": row["source_id"]})
    out = list(head)
    for line in difflib.unified_diff(a, b, "source", row_id, n=context, lineterm=""):
        if color:
            if line.startswith("+") and not line.startswith("+++"):
                line = _GREEN + line + _RESET
            elif line.startswith("-") and not line.startswith("---"):
                line = _RED + line + _RESET
            elif line.startswith("@@"):
                line = _CYAN + line + _RESET
        out.append(line)
    if len(out) == len(head):
        out.append("(no differences)")
    return "\n".join(out)
