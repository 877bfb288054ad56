"""The local engine's worker set (hsa.pipeline.workers): lines routed to workers by harness, results in input order,
a worker's error or death ends the run with what happened, and leaving early terminates the workers."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

import pytest

import hsa.pipeline.executor as executor
from hsa.cli import main
from hsa.io import InputLine
from hsa.pipeline.workers import AugmentJob, WorkerError, WorkerSet, harness_key, route
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the workers fork (patched work)")

RECIPE = {"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": []}}


def _line(i: int, tools: list, pos: int | None = None) -> InputLine:
    rec = {"id": f"r{i}", "messages": [{"role": "user", "content": f"hi {i}"}], "tools": tools}
    return InputLine("in.jsonl", i + 1, json.dumps(rec).encode(), i if pos is None else pos)


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


def test_harness_key_is_the_harness_as_written():
    a, b = _line(0, [_tool("x")]), _line(1, [_tool("x")])
    assert harness_key(a) == harness_key(b)  # other messages, other id: one harness
    assert harness_key(a) != harness_key(_line(2, [_tool("y")]))
    assert harness_key(InputLine("in.jsonl", 1, b"{not json", 0)) is None
    assert harness_key(InputLine("in.jsonl", 1, b"[1, 2]", 0)) is None
    decoded = InputLine("d", 1, json.loads(a.data), 0)  # a Parquet or datasets row comes decoded
    assert harness_key(decoded) == harness_key(a)


def test_route_keeps_a_harness_on_its_worker_and_spills_a_dominant_one():
    sticky: dict = {}
    keys = [b"a", b"b", b"a", b"b", b"c", b"a", b"d", b"c"]
    got = route(keys, 2, sticky)
    for k in set(keys):  # every line of a harness on one worker
        assert len({w for key, w in zip(keys, got) if key == k}) == 1
    assert route(keys, 2, dict(sticky)) == got == route(keys, 2, {**sticky})  # deterministic, kept across chunks
    assert abs(got.count(0) - got.count(1)) <= 2
    one = route([b"h"] * 100, 2, {})  # one harness: its worker fills to 1.25x its share, the rest spill
    assert one.count(one[0]) == 63 and one.count(1 - one[0]) == 37
    assert route([None] * 6, 3, {}) == [0, 1, 2, 0, 1, 2]  # lines without a key: balanced


def _fake_work(batch):
    """Stands for executor.work in the forked workers: the position, the worker's pid, a little out of order."""
    time.sleep(0.002 * (len(batch) % 3))
    return [(x.pos, (x.pos, os.getpid()), []) for x in batch]


def test_results_come_back_in_input_order_and_a_harness_stays_on_one_worker(monkeypatch):
    monkeypatch.setattr(executor, "work", _fake_work)
    ctx = mp.get_context("fork")
    harnesses = [[_tool(f"t{h}")] for h in range(5)]
    positions = [p for p in range(300) if p % 7]  # a resumed run's positions have gaps
    lines = [_line(i, harnesses[(i * 3) % 5], pos=p) for i, p in enumerate(positions)]
    with WorkerSet(ctx, 2, AugmentJob(RECIPE, {}, ()), batch_size=4) as ws:
        out = list(ws.results(lines, chunk=40))
    assert [pos for pos, _, _ in out] == positions
    pids_of: dict = {}
    for line, (_, (_, pid), _) in zip(lines, out):
        pids_of.setdefault(harness_key(line), set()).add(pid)
    assert all(len(p) == 1 for p in pids_of.values()), pids_of  # 5 harnesses of even share: no spill
    assert len(set().union(*pids_of.values())) == 2 and sum(ws.routed) == len(lines)


def test_meanwhile_runs_once_while_the_workers_have_the_first_lines(monkeypatch):
    monkeypatch.setattr(executor, "work", _fake_work)
    seen: list = []
    with WorkerSet(mp.get_context("fork"), 2, AugmentJob(RECIPE, {}, ()), batch_size=4) as ws:
        out = ws.results([_line(i, [_tool(f"t{i % 3}")]) for i in range(30)], chunk=8,
                         meanwhile=lambda: seen.append(sum(ws.routed)))
        first = next(out)
        assert seen == [16]  # two chunks sent, nothing waited for yet
        assert [first[0]] + [pos for pos, _, _ in out] == list(range(30)) and seen == [16]


def test_the_default_run_imports_the_writer_while_its_workers_make_the_first_rows(monkeypatch, tmp_path):
    import hsa.pipeline.local as local

    order: list = []
    monkeypatch.setattr(local, "_load_writer", lambda: order.append("writer"))
    real = WorkerSet._next_result
    monkeypatch.setattr(WorkerSet, "_next_result", lambda self: order.append("wait") or real(self))
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(_line(i, [_tool("x")]).data for i in range(3)) + b"\n")
    assert main(["augment", str(inp), "--out", str(tmp_path / "out"), "--recipe", "identity", "--workers", "2",
                 "--quiet"]) == 0
    assert order[:2] == ["writer", "wait"] and order.count("writer") == 1


def _raise_on_7(batch):
    if any(x.pos == 7 for x in batch):
        raise ValueError("record 7 broke the worker's code")
    return _fake_work(batch)


def _die_on_7(batch):
    if any(x.pos == 7 for x in batch):
        os._exit(3)  # as a kill or the OOM killer would end it
    return _fake_work(batch)


def test_an_error_in_a_worker_is_raised_with_the_workers_traceback(monkeypatch):
    monkeypatch.setattr(executor, "work", _raise_on_7)
    with pytest.raises(ValueError, match="record 7 broke") as info:
        with WorkerSet(mp.get_context("fork"), 2, AugmentJob(RECIPE, {}, ()), batch_size=2) as ws:
            list(ws.results([_line(i, [_tool("x")]) for i in range(20)]))
    assert isinstance(info.value.__cause__, WorkerError) and "_raise_on_7" in str(info.value.__cause__)


def test_a_worker_that_dies_ends_the_run_with_its_exit_code(monkeypatch):
    monkeypatch.setattr(executor, "work", _die_on_7)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="exit code 3"):
        with WorkerSet(mp.get_context("fork"), 2, AugmentJob(RECIPE, {}, ()), batch_size=2) as ws:
            list(ws.results([_line(i, [_tool(f"x{i % 2}")]) for i in range(20)]))
    assert time.monotonic() - start < 30  # a Pool waits for the lost task forever


def test_a_bad_recipe_in_the_workers_is_an_error_not_a_hang():
    bad = {"__version__": 1, "transform": {"transform": "no.such.transform"}}
    with pytest.raises(Exception, match="no.such.transform"):
        with WorkerSet(mp.get_context("fork"), 2, AugmentJob(bad, {}, ()), batch_size=2) as ws:
            list(ws.results([_line(i, [_tool("x")]) for i in range(4)]))


_STUCK = r"""
import ctypes, json, multiprocessing as mp, os, sys, time
import hsa.pipeline.executor as executor
from hsa.io import InputLine
from hsa.pipeline.workers import AugmentJob, WorkerSet

RECIPE = {"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": []}}
marker = sys.argv[1]


def stuck(batch):
    open(marker, "w").close()
    mutex = ctypes.create_string_buffer(64)  # a default (normal) pthread mutex: locked twice, the call never returns
    libc = ctypes.CDLL(None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)


executor.work = stuck
line = InputLine("in.jsonl", 1, json.dumps({"id": "a", "messages": []}).encode(), 0)
try:
    with WorkerSet(mp.get_context("fork"), 1, AugmentJob(RECIPE, {}, ()), batch_size=1) as ws:
        for _ in ws.results([line]):
            pass
except KeyboardInterrupt:  # stands for Ctrl-C: the with-block ends, its workers are terminated
    print("terminated")
"""


def test_leaving_early_ends_a_worker_stuck_outside_the_interpreter(tmp_path):
    """Leaving the worker set early (Ctrl-C, an error) ends its workers wherever they wait, even in native code that
    never returns to the interpreter (a Python SIGTERM handler would never run there)."""
    import signal

    marker = tmp_path / "in-the-call"
    proc = subprocess.Popen([sys.executable, "-c", _STUCK, str(marker)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("leaving the worker set did not end a worker stuck in native code within 60 s")
    assert proc.returncode == 0 and out.strip() == "terminated", err[-2000:]


def test_two_workers_write_the_bytes_of_one(tmp_path):
    """Routing changes no byte: three harnesses, one of them dominant (it spills to both workers)."""
    lines = []
    for i in range(60):
        tools = [_tool("get_weather" if i % 5 else f"lookup_{i % 3}")]
        tools[0]["function"]["parameters"] = {"type": "object", "properties": {"city": {"type": "string"}},
                                              "required": ["city"]}
        lines.append(json.dumps({"id": f"r{i}", "messages": [
            {"role": "user", "content": f"What is it like in city {i}?"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                "name": tools[0]["function"]["name"], "arguments": {"city": f"c{i}"}}}]},
            {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "Sunny."}], "tools": tools}))
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    outs = []
    for w in (1, 2):
        out = tmp_path / f"o{w}"
        assert main(["augment", str(src), "--out", str(out), "--variants", "3", "--workers", str(w),
                     "--shard-size", "25", "--batch-size", "4", "--quiet"]) == 0
        outs.append({p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and p.name != "manifest.json"})
    assert outs[0] == outs[1] and len([n for n in outs[0] if n.endswith(".arrow")]) == 3
