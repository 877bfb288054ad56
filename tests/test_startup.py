"""What a run's start-up does not pay for: pandas (pyarrow looks for it when it converts Python lists), libcst
(only hook rewrites parse Python), the pure-Python YAML loader, and compiling every phrasing of every bank."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from hsa import _yaml
from hsa.io import _int64_array, _string_array

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("values", [
    ("a", "", "é✓ 😀", '{"x": [1, 2]}'),
    (None, "b", None, None, "", None, "c", None, "d"),
    tuple(f"row {i}" if i % 3 else None for i in range(1030)),
    (None,),
    (),
])
@pytest.mark.parametrize("type_", [pa.string(), pa.json_()])
def test_string_arrays_from_buffers_are_pyarrows_own(values, type_):
    """The shard writer's string and JSON columns equal ``pa.array``'s, down to the bytes of the IPC stream."""
    mine, theirs = _string_array(values, type_), pa.array(values, type_)
    assert mine.type == theirs.type and mine.equals(theirs) and mine.to_pylist() == list(values)
    assert mine.null_count == theirs.null_count
    assert _stream(mine) == _stream(theirs)


def _stream(array) -> bytes:
    """``array`` as one column of an Arrow IPC stream, as the shard writer writes it."""
    sink = pa.BufferOutputStream()
    batch = pa.RecordBatch.from_arrays([array], names=["c"])
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("values", [(0, 1, -7, 2**62, 3), (None, 1, None, 0, -2), (None,), ()])
def test_int64_arrays_from_buffers_are_pyarrows_own(values):
    """The variant and slot columns (None: the source's own row) equal ``pa.array``'s, IPC bytes too."""
    mine, theirs = _int64_array(values), pa.array(values, pa.int64())
    assert mine.equals(theirs) and mine.type == pa.int64() and mine.to_pylist() == list(values)
    assert _stream(mine) == _stream(theirs)


def test_the_c_yaml_loader_reads_every_built_in_file_as_the_python_one():
    files = [*resources.files("transforms").joinpath("banks").iterdir(), *resources.files("hsa").joinpath(
        "recipes").iterdir()]
    texts = [f.read_text(encoding="utf-8") for f in files if f.name.endswith(".yaml")]
    assert len(texts) >= 10
    for text in texts:
        assert repr(_yaml.safe_load(text)) == repr(yaml.safe_load(text))
    with pytest.raises(yaml.YAMLError):
        _yaml.safe_load("a: [1, 2\nb: }")


def test_a_tool_only_run_imports_neither_pandas_nor_libcst(tmp_path):
    """``hsa augment`` with the default recipe on records without hooks: the shards are written, and neither pandas
    (where it is installed) nor libcst was imported by the run."""
    record = {"id": "r1", "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "id": "c1", "function": {
            "name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."}],
        "tools": [{"name": "get_weather", "description": "Current weather of a city.", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps(record) + "\n")
    code = ("import sys\nfrom hsa.cli import main\n"
            f"rc = main(['augment', {str(data)!r}, '--out', {str(tmp_path / 'out')!r}, '--variants', '4', '--quiet'])\n"
            "print(rc, 'pandas' in sys.modules, 'libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "False", "False"]
    assert list((tmp_path / "out").glob("*.arrow"))


@pytest.mark.parametrize("given", [None, "3"])
def test_a_data_path_command_loads_numpy_with_one_blas_thread_unless_told(tmp_path, given):
    """``hsa augment`` sets ``OPENBLAS_NUM_THREADS=1`` before numpy loads (through pyarrow), so OpenBLAS does not
    start a thread for each CPU in a process that does no linear algebra; a value in the environment is kept."""
    import os

    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "r1", "messages": [{"role": "user", "content": "Hi."},
                                                          {"role": "assistant", "content": "Hello."}]}) + "\n")
    code = ("import os, sys\nfrom hsa.cli import main\n"
            f"rc = main(['augment', {str(data)!r}, '--out', {str(tmp_path / 'out')!r}, '--quiet', '--workers', '1'])\n"
            "print(rc, 'numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}  # the suite's workers set it
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "True", given or "1"]
