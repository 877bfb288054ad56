"""Reading inputs and writing Arrow shards that ``datasets.load_from_disk`` opens.

Inputs are JSON Lines (optionally gzip-compressed). Each line is read as bytes and
decoded strictly, so a bad line becomes a reject with its line number instead of
stopping the run. Output rows are written with the ``datasets`` ``Json`` feature so
that every JSON-valued field round-trips exactly (no keys added by Arrow type
unification).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hsa import _json

__all__ = ["InputLine", "iter_lines", "sha256_file", "ROW_COLUMNS", "JSON_COLUMNS", "ShardWriter",
           "iter_rows", "row_to_record", "write_dataset_metadata", "read_records"]


@dataclass(frozen=True)
class InputLine:
    """One raw input line: where it came from and its bytes."""

    path: str
    line: int  # 1-based
    data: bytes


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _open(path: Path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def iter_lines(path: str | Path) -> Iterator[InputLine]:
    """Yield the non-blank lines of a JSONL (or JSONL.gz) file with their 1-based numbers."""
    path = Path(path)
    with _open(path) as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                yield InputLine(str(path), i, line.rstrip(b"\r\n"))


def parse_line(item: InputLine) -> Any:
    """Decode and parse one line; raises ``RecordError`` with a reason on bad bytes or bad JSON."""
    from hsa.records import RecordError

    try:
        text = item.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError("not UTF-8", f"byte {exc.start} is not valid UTF-8 ({exc.reason}); re-encode the file as UTF-8") from None
    try:
        return _json.loads(text)
    except ValueError as exc:
        raise RecordError("malformed JSON", f"{exc}") from None


# --------------------------------------------------------------------------- output rows

#: Output columns in order. ``extra`` holds input keys hsa gives no meaning to.
ROW_COLUMNS = ("id", "source_id", "variant", "messages", "tools", "skills", "skill_tool", "prompt", "hooks",
               "hook_events", "meta", "transforms", "mapping", "notes", "extra")
JSON_COLUMNS = ROW_COLUMNS[3:]


def _features_json() -> dict:
    feats: dict[str, Any] = {"id": {"dtype": "string", "_type": "Value"},
                             "source_id": {"dtype": "string", "_type": "Value"},
                             "variant": {"dtype": "int64", "_type": "Value"}}
    for c in JSON_COLUMNS:
        feats[c] = {"_type": "Json"}
    return feats


def _arrow_schema():
    import pyarrow as pa

    fields = [pa.field("id", pa.string()), pa.field("source_id", pa.string()), pa.field("variant", pa.int64())]
    fields += [pa.field(c, pa.json_()) for c in JSON_COLUMNS]
    meta = {"huggingface": json.dumps({"info": {"features": _features_json()}})}
    return pa.schema(fields, metadata=meta)


def rows_to_table(rows: list[dict]):
    """An Arrow table of output rows (JSON columns encoded once, exactly)."""
    import pyarrow as pa

    schema = _arrow_schema()
    arrays = [pa.array([r["id"] for r in rows], pa.string()),
              pa.array([r["source_id"] for r in rows], pa.string()),
              pa.array([r["variant"] for r in rows], pa.int64())]
    for c in JSON_COLUMNS:
        arrays.append(pa.array([None if r.get(c) is None else _json.dumps(r[c]) for r in rows], pa.json_()))
    return pa.Table.from_arrays(arrays, schema=schema)


def write_shard(path: Path, rows: list[dict]) -> tuple[int, str]:
    """Write ``rows`` to ``path`` atomically (temporary name, then rename); return (rows, sha256)."""
    import pyarrow as pa

    table = rows_to_table(rows)
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)
    return len(rows), sha256_file(path)


class ShardWriter:
    """Collects rows in order and writes a shard every ``shard_size`` rows."""

    def __init__(self, out: Path, shard_size: int, first_index: int = 0):
        if shard_size < 1:
            raise ValueError(f"shard_size must be at least 1 (got {shard_size})")
        self.out = out
        self.shard_size = shard_size
        self.index = first_index
        self.buffer: list[dict] = []
        self.shards: list[dict] = []

    def add(self, row: dict) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= self.shard_size:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        name = f"shard-{self.index:05d}.arrow"
        n, digest = write_shard(self.out / name, self.buffer)
        self.shards.append({"file": name, "rows": n, "sha256": digest})
        self.index += 1
        self.buffer = []


def write_dataset_metadata(out: Path, shard_files: list[str], fingerprint: str) -> None:
    """Write ``state.json`` and ``dataset_info.json`` so ``datasets.load_from_disk(out)`` works."""
    if not shard_files:  # datasets needs at least one file: write an empty shard
        write_shard(out / "shard-00000.arrow", [])
        shard_files = ["shard-00000.arrow"]
    state = {"_data_files": [{"filename": f} for f in shard_files], "_fingerprint": fingerprint[:16],
             "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
             "_output_all_columns": False, "_split": None}
    (out / "state.json").write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    info = {"citation": "", "description": "hsa augmented dataset: one row per variant; see manifest.json",
            "features": _features_json(), "homepage": "", "license": ""}
    (out / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- reading output


def iter_rows(path: str | Path) -> Iterator[dict]:
    """Rows of an hsa output folder (Arrow shards) or of a JSONL file, JSON fields decoded."""
    path = Path(path)
    if path.is_dir():
        import pyarrow as pa

        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
        for f in state["_data_files"]:
            with pa.memory_map(str(path / f["filename"])) as src:
                reader = pa.ipc.open_stream(src)
                for batch in reader:
                    cols = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
                    for i in range(batch.num_rows):
                        row = {}
                        for name, values in cols.items():
                            v = values[i]
                            if name in JSON_COLUMNS and isinstance(v, str):
                                v = _json.loads(v)
                            row[name] = v
                        yield row
    else:
        for item in iter_lines(path):
            yield parse_line(item)


def row_to_record(row: dict) -> dict:
    """An output row as the exact input-format record (``extra`` keys back at the top level, nulls dropped)."""
    out = {}
    for k in ROW_COLUMNS:
        if k == "extra":
            continue
        v = row.get(k)
        if v is not None:
            out[k] = v
    out.update(row.get("extra") or {})
    for k, v in row.items():
        if k not in ROW_COLUMNS and v is not None:
            out[k] = v
    return out


def read_records(path: str | Path) -> Iterator[dict]:
    """Input-format records from a JSONL file or an hsa output folder."""
    for row in iter_rows(path):
        yield row_to_record(row) if Path(path).is_dir() else row
