"""Reading inputs and writing Arrow shards that ``datasets.load_from_disk`` opens.

Inputs are JSON Lines (optionally gzip-compressed). Each line is read as bytes and
decoded strictly, so a bad line becomes a reject with its line number instead of
stopping the run. Output rows are written with the ``datasets`` ``Json`` feature so
that every JSON-valued field round-trips exactly (no keys added by Arrow type
unification).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.record_model import RecordError

__all__ = ["InputLine", "iter_lines", "iter_json_array", "iter_file_items", "json_layout", "JSONArrayError",
           "sha256_file", "ROW_COLUMNS", "JSON_COLUMNS", "SLOT_COLUMN",
           "iter_rows", "row_to_record", "write_dataset_metadata", "read_records", "InputSource", "iter_inputs",
           "ShardFile", "encode_row", "find_row"]


@dataclass(frozen=True)
class InputLine:
    """One raw input item: where it came from (file and 1-based line or row) and its bytes or object."""

    path: str
    line: int  # 1-based line (JSONL) or row number (Parquet, dataset)
    data: Any  # bytes of a JSONL line, or an already decoded object
    pos: int = 0  # 0-based position among all input items of the run


def is_uri(spec: str | Path) -> bool:
    """True for a filesystem URI that pyarrow opens (``s3://``, ``gs://``, ``file://``, ...); not for ``hf://``."""
    text = str(spec)
    return "://" in text and not text.startswith("hf://")


def _open_uri(uri: str, random_access: bool = False):
    """A binary file object reading ``uri`` through its pyarrow filesystem."""
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    if random_access:
        return fs.open_input_file(path)
    return io.BufferedReader(fs.open_input_stream(path), 1 << 20)


def _open_raw(path: str | Path):
    return _open_uri(str(path)) if is_uri(path) else open(path, "rb")


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with _open_raw(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _open(path: str | Path):
    with _open_raw(path) as probe:
        magic = probe.read(2)
    return gzip.open(_open_raw(path), "rb") if magic == b"\x1f\x8b" else _open_raw(path)


def parquet_file(spec: str):
    """A ``pyarrow.parquet.ParquetFile`` of a local path or a filesystem URI."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(_open_uri(spec, random_access=True) if is_uri(spec) else spec)


def iter_lines(path: str | Path) -> Iterator[InputLine]:
    """Yield the non-blank lines of a JSONL (or JSONL.gz) file with their 1-based numbers (a UTF-8 byte order
    mark that editors on Windows put before the first line is dropped)."""
    path = path if is_uri(path) else Path(path)
    with _open(path) as f:
        for i, line in enumerate(f, 1):
            if i == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if line.strip():
                yield InputLine(str(path), i, line.rstrip(b"\r\n"))


def json_layout(path: str | Path) -> str:
    """How a JSON file (or .gz) holds its records: ``"array"`` (one JSON array, ``[{...}, {...}]``, how many
    datasets ship, e.g. xLAM's ``xlam_function_calling_60k.json``), ``"values"`` (pretty-printed objects one
    after the other, as ``jq .`` or ``json.dump(indent=2)`` write them: the first line is a lone ``{``) or
    ``"lines"`` (JSON Lines)."""
    with _open(path) as f:
        head = f.read(1 << 16)
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head[:1] == b"[":
        return "array"
    if head.split(b"\n", 1)[0].strip() == b"{":
        return "values"
    return "lines"


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_CHARS = re.compile(r"[0-9eE+\-.]*")


class JSONArrayError(ValueError):
    """A JSON array (or pretty-printed JSON) input that does not parse; the records before the error were read."""


def iter_json_array(path: str | Path, chunk: int = 1 << 20, *, array: bool = True) -> Iterator[InputLine]:
    """Yield the elements of a file holding one JSON array (``array=False``: the JSON values written one after
    the other, pretty-printed or not), decoded, with the line each starts on; streamed in ``chunk``-character
    pieces, so memory holds about one element, not the file.

    Raises :class:`JSONArrayError` (file, line, what was expected) where the file stops parsing.
    """
    path = path if is_uri(path) else Path(path)
    decoder = json.JSONDecoder()
    what = "one JSON array of records" if array else "JSON objects one after the other"
    with io.TextIOWrapper(_open(path), encoding="utf-8-sig") as f:
        buf, pos, eof, line = "", 0, False, 1

        def more() -> None:
            nonlocal buf, pos, eof
            data = f.read(chunk)
            eof = not data
            buf, pos = buf[pos:] + data, 0

        def advance(to: int) -> None:
            nonlocal pos, line
            line += buf.count("\n", pos, to)
            pos = to

        def skip_ws() -> str:
            while True:
                advance(_WS.match(buf, pos).end())
                if pos < len(buf) or eof:
                    return buf[pos:pos + 1]
                more()

        def fail(expected: str) -> JSONArrayError:
            found = buf[pos:pos + 20] or "the end of the file"
            return JSONArrayError(f"{path}:{line}: expected {expected}, found {found!r}; the file must hold {what} "
                                  "(or give JSON Lines: one record a line)")

        more()
        n = 0
        if array:
            if skip_ws() != "[":
                raise fail("'[' (a JSON array)")
            advance(pos + 1)
            if skip_ws() == "]":
                return
        elif skip_ws() == "":
            return
        while True:
            while True:
                try:
                    value, end = decoder.raw_decode(buf, pos)
                except ValueError:
                    if eof:
                        raise fail(f"{'element' if array else 'record'} {n + 1} (a JSON value)") from None
                    more()
                    continue
                if (not eof and type(value) in (int, float)
                        and _NUMBER_CHARS.match(buf, end).end() == len(buf)):  # the number may go on ("0." + "5")
                    more()
                    continue
                break
            n += 1
            start_line = line
            advance(end)
            yield InputLine(str(path), start_line, value)
            c = skip_ws()
            if not array:
                if c == "":
                    return
            elif c == ",":
                advance(pos + 1)
                skip_ws()
            elif c == "]":
                return
            else:
                raise fail(f"',' or ']' after element {n}")


def iter_file_items(path: str | Path) -> Iterator[InputLine]:
    """The records of a JSON Lines file (:func:`iter_lines`), of a file holding one JSON array or of
    pretty-printed JSON objects (:func:`iter_json_array`), plain or gzipped."""
    layout = json_layout(path)
    if layout == "lines":
        return iter_lines(path)
    return iter_json_array(path, array=layout == "array")


def parse_line(item: InputLine) -> Any:
    """Decode and parse one line; raises ``RecordError`` with a reason on bad bytes or bad JSON."""
    if not isinstance(item.data, (bytes, bytearray)):
        return item.data
    try:
        text = item.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError("not UTF-8", f"byte {exc.start} is not valid UTF-8 ({exc.reason}); re-encode the file as UTF-8") from None
    try:
        return _json.loads(text)
    except ValueError as exc:
        raise RecordError("malformed JSON", f"{exc}") from None


# --------------------------------------------------------------------------- input sources


def _drop_arrow_nulls(value: Any, keep: frozenset = frozenset({"content", "default", "const", "examples"})) -> Any:
    """Remove the ``null`` keys that Arrow type unification added to structs (not JSON nulls we can tell apart)."""
    if isinstance(value, dict):
        return {k: _drop_arrow_nulls(v) for k, v in value.items() if v is not None or k in keep}
    if isinstance(value, list):
        return [_drop_arrow_nulls(v) for v in value]
    return value


def _clean_table_row(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if v is None:
            continue
        if k in ("messages", "tools") and isinstance(v, list):
            v = _drop_arrow_nulls(v)
        out[k] = v
    return out


@dataclass(frozen=True)
class InputSource:
    """One input of a run: a JSONL(.gz) file, a JSON array file, a Parquet file, a ``datasets`` folder or a hub
    dataset id."""

    spec: str
    kind: str  # "jsonl" | "json" (one JSON array, or pretty-printed objects) | "parquet" | "dataset" | "hub"
    #: hub: the commit the run reads (``owner/name@REV``, or the head's commit once :meth:`pinned`)
    revision: str | None = None
    #: dataset: the split to read of a folder holding several (a ``DatasetDict``); None: such a folder is refused
    split: str | None = None

    @classmethod
    def resolve(cls, spec: str | Path, *, split: str | None = None) -> InputSource:
        """The input ``spec`` names. ``split`` (the trainers' ``--dataset_split``) is the split read of a hub
        dataset whose spec names none (``owner/name:split`` does) and of a ``datasets`` folder holding several
        splits; without it such a folder is not an input."""
        spec = str(spec)
        if is_uri(spec):
            return cls._resolve_uri(spec)
        p = Path(spec)
        if p.is_dir():
            if (p / "state.json").exists() or (p / "dataset_info.json").exists():
                return cls(spec, "dataset")
            if split is not None and (p / "dataset_dict.json").exists():
                return cls(spec, "dataset", split=split)
            raise FileNotFoundError(f"input {p} is a folder but not a datasets.save_to_disk / hsa output folder "
                                    "(no state.json)")
        if p.exists():
            if p.suffix == ".parquet":
                return cls(spec, "parquet")
            return cls(spec, "jsonl" if json_layout(p) == "lines" else "json")
        if spec.startswith("hf://") or (spec.count("/") == 1 and not spec.startswith((".", "/"))
                                        and not p.suffix):
            spec = spec.removeprefix("hf://")
            name, colon, named = spec.partition(":")
            name, _, revision = name.partition("@")
            if not colon and split is not None:
                colon, named = ":", split
            return cls(name + colon + named, "hub", revision or None)
        raise FileNotFoundError(f"input file {p} does not exist")

    @classmethod
    def _resolve_uri(cls, spec: str) -> InputSource:
        """A file on object storage (``s3://``, ``gs://``) or behind another pyarrow filesystem URI."""
        import pyarrow.fs as pafs

        try:
            fs, path = pafs.FileSystem.from_uri(spec)
            kind = fs.get_file_info(path).type
        except (ValueError, OSError) as exc:
            raise FileNotFoundError(f"input {spec} could not be opened ({exc}); for s3:// and gs:// set credentials "
                                    "as for pyarrow (AWS_* variables or ~/.aws; GOOGLE_APPLICATION_CREDENTIALS)") from None
        if kind == pafs.FileType.NotFound:
            raise FileNotFoundError(f"input {spec} does not exist")
        if kind == pafs.FileType.Directory:
            raise FileNotFoundError(f"input {spec} is a folder; give its files (JSONL, JSON or Parquet) one by one")
        if path.endswith(".parquet"):
            return cls(spec, "parquet")
        return cls(spec, "jsonl" if json_layout(spec) == "lines" else "json")

    def pinned(self, recorded: str | None = None) -> InputSource:
        """A hub input fixed to one commit, so that a resumed or repeated run reads the same rows: the revision
        given, else ``recorded`` (the one a run being resumed read), else the dataset's current head (as is
        when the hub cannot be asked: the run then reads whatever the hub serves)."""
        if self.kind != "hub" or (self.revision and re.fullmatch(r"[0-9a-f]{40}", self.revision)):
            return self
        if recorded and not self.revision:
            return dataclasses.replace(self, revision=recorded)
        try:
            from huggingface_hub import HfApi

            sha = HfApi().dataset_info(self.spec.partition(":")[0], revision=self.revision).sha
        except Exception:  # offline, unknown id, gated: items() says so when the rows are read
            return self
        return dataclasses.replace(self, revision=sha) if sha else self

    def fingerprint(self) -> str:
        """sha256 of the input's bytes (for a folder: of its data files in order; hub: of the id and revision)."""
        if self.kind in ("jsonl", "json", "parquet"):
            return sha256_file(self.spec)
        if self.kind == "dataset":
            h = hashlib.sha256()
            for f in sorted(Path(self.spec).glob("*")):
                if f.is_file():
                    h.update(f.name.encode())
                    h.update(sha256_file(f).encode())
            return h.hexdigest()
        return hashlib.sha256(f"hub:{self.spec}@{self.revision}".encode()).hexdigest()

    def items(self) -> Iterator[InputLine]:
        """The raw items, in order, with 1-based line (or row) numbers."""
        if self.kind == "jsonl":
            yield from iter_lines(self.spec)
        elif self.kind == "json":
            yield from iter_file_items(self.spec)
        elif self.kind == "parquet":
            n = 0
            for batch in parquet_file(self.spec).iter_batches(batch_size=1024):
                for row in batch.to_pylist():
                    n += 1
                    yield InputLine(self.spec, n, _clean_table_row(row))
        elif self.kind == "dataset":
            if (Path(self.spec) / "manifest.json").exists():  # an hsa output: exact JSON columns
                for n, row in enumerate(iter_rows(self.spec), 1):
                    yield InputLine(self.spec, n, row_to_record(row))
                return
            import datasets

            ds = datasets.load_from_disk(self.spec)
            if isinstance(ds, datasets.DatasetDict):
                if self.split is None:
                    raise ValueError(f"{self.spec} holds several splits ({list(ds)}); give one split's folder")
                if self.split not in ds:
                    raise ValueError(f"{self.spec} has splits {sorted(ds)}, not {self.split!r}")
                ds = ds[self.split]
            for n, row in enumerate(ds, 1):
                yield InputLine(self.spec, n, _clean_table_row(row))
        else:
            import datasets

            name, _, split = self.spec.partition(":")
            try:
                ds = datasets.load_dataset(name, split=split or "train", streaming=True, revision=self.revision)
            except Exception as exc:  # offline, unknown id, gated
                raise FileNotFoundError(f"hub dataset {name!r} could not be opened ({type(exc).__name__}: {exc}); "
                                        "check the id and the network, or download it and pass the file") from None
            for n, row in enumerate(ds, 1):
                yield InputLine(self.spec, n, _clean_table_row(row))


def iter_inputs(sources: list[InputSource]) -> Iterator[InputLine]:
    """Every item of every source, numbered by position across the run."""
    pos = 0
    for src in sources:
        for item in src.items():
            yield InputLine(item.path, item.line, item.data, pos)
            pos += 1


# --------------------------------------------------------------------------- output rows

#: Output columns in order. ``extra`` holds input keys hsa gives no meaning to.
ROW_COLUMNS = ("id", "source_id", "variant", "messages", "tools", "skills", "skill_tool", "prompt", "hooks",
               "hook_events", "meta", "transforms", "mapping", "notes", "extra")
JSON_COLUMNS = ROW_COLUMNS[3:]
#: The column after ``variant`` in the output of a run with a harness-variant pool: the variant's pool slot
#: (null on a source row). Runs without a pool (``--harness-pool 0``) have no such column.
SLOT_COLUMN = "slot"


def _features_json(slot: bool = False) -> dict:
    feats: dict[str, Any] = {"id": {"dtype": "string", "_type": "Value"},
                             "source_id": {"dtype": "string", "_type": "Value"},
                             "variant": {"dtype": "int64", "_type": "Value"}}
    if slot:
        feats[SLOT_COLUMN] = {"dtype": "int64", "_type": "Value"}
    for c in JSON_COLUMNS:
        feats[c] = {"_type": "Json"}
    return feats


def _arrow_schema(slot: bool = False):
    import pyarrow as pa

    fields = [pa.field("id", pa.string()), pa.field("source_id", pa.string()), pa.field("variant", pa.int64())]
    if slot:
        fields.append(pa.field(SLOT_COLUMN, pa.int64()))
    fields += [pa.field(c, pa.json_()) for c in JSON_COLUMNS]
    meta = {"huggingface": json.dumps({"info": {"features": _features_json(slot)}})}
    return pa.schema(fields, metadata=meta)


ARROW_BATCH_ROWS = 512  # fixed, so shard bytes do not depend on any tunable
TRIM_EVERY_BATCHES = 4  # see _release_memory


def encode_row(row: dict, memo: dict | None = None) -> tuple:
    """A row as column values, JSON columns already encoded (done in the workers); a row with a ``slot`` key
    (a run with a harness-variant pool) has the slot after the variant.

    ``memo`` (a dict kept while the rows of one record are encoded, none of them changed in between) encodes a
    value that several rows share (the same object: an unchanged part of the harness, the source's messages)
    once."""
    head = (row["id"], row["source_id"], row["variant"], row[SLOT_COLUMN]) if SLOT_COLUMN in row else \
        (row["id"], row["source_id"], row["variant"])
    if memo is None:
        return (*head, *(None if row.get(c) is None else _json.dumps(row[c]) for c in JSON_COLUMNS))
    out = []
    for c in JSON_COLUMNS:
        v = row.get(c)
        if v is None:
            out.append(None)
            continue
        hit = memo.get(id(v))
        if hit is None or hit[0] is not v:
            hit = memo[id(v)] = (v, _json.dumps(v))  # the value is held, so its id is not reused meanwhile
        out.append(hit[1])
    return (*head, *out)


def _trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _trim()


def _release_memory() -> None:
    """Give the heap freed by written batches back to the system (glibc keeps it and the parent's peak
    creeps up over a long run); every few batches, since a trim walks the whole heap (about 10-20 ms).

    The batches' Arrow buffers come from the system allocator, not pyarrow's default pool (mimalloc
    in the wheels), which kept freed batches: 100,000 records peaked at 234 MiB with it, 174-177 MiB
    without (10,000 records: 193 and 162-164 MiB)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _validity(values: tuple):
    """The validity bitmap of ``values`` (None where none is missing) and how many are missing."""
    import pyarrow as pa

    nulls = sum(v is None for v in values)
    if not nulls:
        return None, 0
    bits = bytearray((len(values) + 7) // 8)
    for i, v in enumerate(values):
        if v is not None:
            bits[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(bits)), nulls


def _string_array(values: tuple, type_):
    """A string (or JSON: its storage is one) Arrow array of ``values`` (str or None), built from its buffers: the
    same array ``pa.array(values, type_)`` gives, without its look for pandas objects, which imports pandas
    (about 0.3 s of a run's start-up where pandas is installed). The buffers are Python bytes, so they come from
    the system allocator (see :func:`_release_memory`)."""
    import array as _array
    from itertools import accumulate

    import pyarrow as pa

    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = _array.array("i", [0])
    offsets.extend(accumulate(map(len, encoded)))  # OverflowError past 2 GiB: a batch of rows never comes near
    validity, nulls = _validity(values)
    storage = pa.Array.from_buffers(pa.string(), len(values), [validity, pa.py_buffer(offsets.tobytes()),
                                                                pa.py_buffer(b"".join(encoded))], null_count=nulls)
    return storage if type_ == pa.string() else pa.ExtensionArray.from_storage(type_, storage)


def _int64_array(values: tuple):
    """An int64 Arrow array of ``values`` (int or None; a missing one holds 0, as pyarrow's builder writes it),
    from its buffers (see :func:`_string_array`)."""
    import array as _array

    import pyarrow as pa

    validity, nulls = _validity(values)
    data = _array.array("q", [0 if v is None else v for v in values]).tobytes()
    return pa.Array.from_buffers(pa.int64(), len(values), [validity, pa.py_buffer(data)], null_count=nulls)


class ShardFile:
    """One shard written incrementally in fixed-size Arrow batches, then renamed into place; with ``path`` None,
    written to memory (:attr:`data` holds the bytes once closed: the same bytes the file would hold)."""

    def __init__(self, path: Path | None, slot: bool = False):
        import pyarrow as pa

        self.path = path
        self.tmp = None if path is None else path.with_name(path.name + ".tmp")
        self.schema = _arrow_schema(slot)
        self._scalars = 4 if slot else 3  # string id, string source_id, int variant[, int slot]
        self.data: bytes | None = None
        self._sink = pa.BufferOutputStream() if path is None else pa.OSFile(str(self.tmp), "wb")
        self._writer = pa.ipc.new_stream(self._sink, self.schema)
        self._buffer: list[tuple] = []
        self.rows = 0

    def add(self, encoded: tuple) -> None:
        self._buffer.append(encoded)
        if len(self._buffer) >= ARROW_BATCH_ROWS:
            self._write()

    def _write(self) -> None:
        import pyarrow as pa

        if not self._buffer:
            return
        cols = list(zip(*self._buffer))
        arrays = [_string_array(cols[0], pa.string()), _string_array(cols[1], pa.string()),
                  *(_int64_array(c) for c in cols[2:self._scalars])]
        arrays += [_string_array(c, pa.json_()) for c in cols[self._scalars:]]
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.rows += len(self._buffer)
        self._buffer = []
        del cols, arrays
        if self.rows % (TRIM_EVERY_BATCHES * ARROW_BATCH_ROWS) == 0:
            _release_memory()

    def close(self) -> tuple[int, str]:
        self._write()
        self._writer.close()
        if self.path is None:
            self.data = self._sink.getvalue().to_pybytes()
            self._sink.close()
            return self.rows, hashlib.sha256(self.data).hexdigest()
        self._sink.close()
        os.replace(self.tmp, self.path)
        return self.rows, sha256_file(self.path)

    def abort(self) -> None:
        """Close and remove the unfinished shard (cleanup after an error or an interrupt: a close that fails, say on
        a file already closed, must not hide what stopped the run)."""
        import pyarrow as pa

        for close in (self._writer.close, self._sink.close):
            try:
                close()
            except (OSError, pa.ArrowException):
                pass
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)


def write_shard(path: Path, rows: list[dict], slot: bool = False) -> tuple[int, str]:
    """Write ``rows`` to ``path`` atomically (temporary name, then rename); return (rows, sha256)."""
    shard = ShardFile(path, slot=slot)
    for r in rows:
        shard.add(encode_row(r))
    return shard.close()


def write_dataset_metadata(out: Path, shard_files: list[str], fingerprint: str, slot: bool = False) -> None:
    """Write ``state.json`` and ``dataset_info.json`` so ``datasets.load_from_disk(out)`` works (``slot``: the
    shards have the :data:`SLOT_COLUMN`)."""
    if not shard_files:  # datasets needs at least one file: write an empty shard
        write_shard(out / "shard-00000.arrow", [], slot=slot)
        shard_files = ["shard-00000.arrow"]
    state = {"_data_files": [{"filename": f} for f in shard_files], "_fingerprint": fingerprint[:16],
             "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
             "_output_all_columns": False, "_split": None}
    (out / "state.json").write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    info = {"citation": "", "description": "hsa augmented dataset: one row per variant; see manifest.json",
            "features": _features_json(slot), "homepage": "", "license": ""}
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
        for item in iter_file_items(path):
            yield parse_line(item)


def find_row(dataset: str | Path, row_id: str) -> dict | None:
    """The row with ``row_id`` in an output folder, looked up on the ``id`` column (other columns decoded once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dataset = Path(dataset)
    state = json.loads((dataset / "state.json").read_text(encoding="utf-8"))
    for f in state["_data_files"]:
        with pa.memory_map(str(dataset / f["filename"])) as src:
            table = pa.ipc.open_stream(src).read_all()
        i = pc.index(table.column("id"), row_id).as_py()
        if i >= 0:
            row = table.slice(i, 1).to_pylist()[0]
            return {k: _json.loads(v) if k in JSON_COLUMNS and isinstance(v, str) else v for k, v in row.items()}
    return None


def row_to_record(row: dict) -> dict:
    """An output row as the exact input-format record (``extra`` keys back at the top level, nulls dropped)."""
    out = {}
    for k in (*ROW_COLUMNS[:3], SLOT_COLUMN, *ROW_COLUMNS[3:]):
        if k == "extra":
            continue
        v = row.get(k)
        if v is not None:
            out[k] = v
    out.update(row.get("extra") or {})
    for k, v in row.items():
        if k not in ROW_COLUMNS and k != SLOT_COLUMN and v is not None:
            out[k] = v
    return out


def read_records(path: str | Path) -> Iterator[dict]:
    """Input-format records from a JSONL file or an hsa output folder."""
    for row in iter_rows(path):
        yield row_to_record(row) if Path(path).is_dir() else row
