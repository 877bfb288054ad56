"""--engine ray: the same bytes as --engine local (bad lines, duplicate ids, a killed worker, resume, merge, object
storage URIs), and a clear error without the extra. One local Ray of 2 CPUs serves the module."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from hsa import load_recipe
from hsa.cli import main
from hsa.pipeline import STATE_DIR, AugmentError, augment, merge
from tests.conftest import run_watching

RUN = {"variants": 2, "shard_size": 4}
# one xdist worker runs this module, its tests in file order (tests/conftest.py: ONE_WORKER_FILES): the two that
# start a Ray of their own first, then the module's Ray; so no two Rays share the machine


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray of 2 CPUs for the module; shut down at its end (no process left behind)."""
    ray = pytest.importorskip("ray")
    from hsa.pipeline.ray_engine import _keeping_sigterm

    with _keeping_sigterm():  # ray.init's handler (SystemExit) would stay for the worker's later tests
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=150 * 2**20)
        yield ray
        ray.shutdown()


@pytest.fixture(scope="module")
def bad_input(tmp_path_factory, fixture_lines) -> Path:
    """26 records and 4 bad lines: malformed JSON, bytes that are not UTF-8, a record without messages, and an id
    that repeats one from an earlier shard (the duplicate rejects depend on what earlier shards wrote)."""
    p = tmp_path_factory.mktemp("ray-in") / "in.jsonl"
    lines = [s.encode() for s in fixture_lines[:26]]
    lines[5:5] = [b"not json {"]
    lines[9:9] = [b'{"id": "bad-\xff"}']
    lines[13:13] = [json.dumps({"id": "no-messages", "tools": []}).encode()]
    lines.append(fixture_lines[2].encode())  # the id of record 2 again, in the last shard
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


@pytest.fixture(scope="module")
def local_ref(tmp_path_factory, bad_input) -> Path:
    out = tmp_path_factory.mktemp("ray-ref") / "local"
    augment([bad_input], out, load_recipe("default"), workers=1, **RUN)
    return out


def _files(d: Path, *, state: bool = False) -> dict[str, str]:
    """sha256 of every file of an output folder (with ``state``: the .hsa completion records too); the manifest
    without its command line and engine, which is checked on its own."""
    out = {}
    for p in sorted(d.rglob("*") if state else d.iterdir()):
        if p.is_file() and (state or p.parent == d) and "rank-" not in p.name:
            data = p.read_bytes()
            if p.name == "manifest.json":
                m = json.loads(data)
                m.pop("command", None)
                m.pop("engine", None)
                data = json.dumps(m).encode()
            out[p.relative_to(d).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def _engine(d: Path) -> str:
    return json.loads((d / "manifest.json").read_text())["engine"]


def _processes_with(marker: bytes) -> list[int]:
    """The live processes whose environment holds ``marker`` (set for one child: its Ray inherits it)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes():
                out.append(int(pid))
        except OSError:
            continue
    return out


def test_the_cli_starts_a_local_ray_and_leaves_no_process(tmp_path, bad_input, local_ref):
    """hsa augment --engine ray with no address starts its own Ray (1 CPU), writes the local engine's bytes and
    stops every Ray process it started."""
    import uuid

    marker = f"HSA_TEST_RAY_RUN={uuid.uuid4().hex}"
    out = tmp_path / "cli"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env[marker.split("=")[0]] = marker.split("=")[1]
    cmd = [sys.executable, "-m", "hsa.cli", "augment", str(bad_input), "--out", str(out), "--variants", "2",
           "--shard-size", "4", "--engine", "ray", "--workers", "1"]
    seen: set[int] = set()  # the Ray processes that the run starts
    code, stdout, stderr = run_watching(cmd, tmp_path, lambda: seen.update(_processes_with(marker.encode())),
                                        every=0.2, env=env)
    assert code == 0, stderr[-2000:]
    assert "30 records read: 26 augmented, 4 rejected" in stdout
    assert _files(out, state=True) == _files(local_ref, state=True)
    assert len(seen) > 3  # the run, Ray's processes and a worker
    deadline = time.time() + 15
    while (left := _processes_with(marker.encode())) and time.time() < deadline:
        time.sleep(0.2)
    assert not left, [Path(f"/proc/{p}/cmdline").read_bytes()[:100] for p in left]


def test_a_run_that_starts_its_own_ray_gives_the_caller_its_sigterm_handler_back(tmp_path, bad_input, local_ref):
    """ray.init sets a SIGTERM handler that raises SystemExit and ray.shutdown leaves it: an in-process run that
    started its own Ray puts the caller's handler back (a training script that called augment keeps its SIGTERM)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("not run: a Ray is already up in this process (this test runs before the module's Ray)")

    def callers(signum, frame):
        raise AssertionError("not called")

    before = signal.signal(signal.SIGTERM, callers)
    try:
        augment([bad_input], tmp_path / "own", load_recipe("default"), engine="ray", workers=1, **RUN)
        assert signal.getsignal(signal.SIGTERM) is callers
    finally:
        signal.signal(signal.SIGTERM, before)
    assert not ray.is_initialized()
    assert _files(tmp_path / "own", state=True) == _files(local_ref, state=True)


def test_ray_writes_the_bytes_of_the_local_engine(ray_local, tmp_path, bad_input, local_ref, capsys):
    """Shards, rejects, completion records and manifest (but for 'engine') equal the local engine's, bad lines
    and a duplicate id from an earlier shard included; the progress line counts every record."""
    out = tmp_path / "ray"
    manifest = augment([bad_input], out, load_recipe("default"), engine="ray", progress=True, **RUN)
    assert "30/30 records" in capsys.readouterr().err.rsplit("\r", 1)[-1]
    assert _files(out, state=True) == _files(local_ref, state=True)
    assert (_engine(out), _engine(local_ref)) == ("ray", "local")
    assert manifest["counts"]["rejected"] == 4
    assert manifest["reject_reasons"] == {"duplicate id": 1, "malformed JSON": 1, "missing messages": 1,
                                          "not UTF-8": 1}
    assert len(manifest["shards"]) == 8


def test_a_killed_worker_is_retried_and_the_bytes_do_not_change(ray_local, tmp_path, bad_input, local_ref):
    """SIGKILL of an augmenting actor's process while it works: Ray starts it again and retries its work; the output
    equals the local run."""
    killed: list[int] = []
    stop = threading.Event()

    def kill_one_busy_worker():
        while not stop.is_set() and not killed:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                if title.startswith(b"ray::Augmenter.work") and _descends_from_us(int(pid)):
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
                    return
            time.sleep(0.01)

    watcher = threading.Thread(target=kill_one_busy_worker)
    watcher.start()
    out = tmp_path / "ray-killed"
    try:
        augment([bad_input], out, load_recipe("default"), engine="ray", **RUN)
    finally:
        stop.set()
        watcher.join()
    assert killed, "no actor was caught working"
    assert _files(out, state=True) == _files(local_ref, state=True)


def _descends_from_us(pid: int) -> bool:
    """True when ``pid`` is a descendant of this process (a worker of this module's Ray, not of another run's)."""
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == os.getpid():
            return True
    return False


def test_without_ray_the_error_names_the_install_command(tmp_path, bad_input, monkeypatch, capsys):
    """--engine ray where Ray cannot be imported: exit 2, "pip install 'hsa[ray]'", nothing written."""
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    out = tmp_path / "out"
    assert main(["augment", str(bad_input), "--out", str(out), "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'hsa[ray]'" in err and "--engine ray" in err
    assert not out.exists()
    with pytest.raises(AugmentError, match=r"pip install 'hsa\[ray\]'"):
        augment([bad_input], out, load_recipe("default"), engine="ray")


def test_ray_and_local_ranks_merge_into_the_single_run(ray_local, tmp_path, bad_input):
    """Rank 0 on Ray, rank 1 on the local engine: hsa merge gives the one-process run's bytes (ids unique: a
    duplicate across ranks stops a merge, whatever the engines)."""
    inp = tmp_path / "unique.jsonl"
    inp.write_bytes(b"".join(bad_input.read_bytes().splitlines(keepends=True)[:-1]))
    single = tmp_path / "single"
    augment([inp], single, load_recipe("default"), **RUN)
    parts = [tmp_path / "r0", tmp_path / "r1"]
    augment([inp], parts[0], load_recipe("default"), engine="ray", rank=0, world_size=2, **RUN)
    augment([inp], parts[1], load_recipe("default"), engine="local", rank=1, world_size=2, **RUN)
    merged = tmp_path / "merged"
    merge(parts, merged)
    assert _files(merged) == _files(single)
    assert _engine(merged) == "local+ray"


def _stopped_after(src: Path, dst: Path, shards_done: int) -> Path:
    """A copy of the finished run ``src`` as a run stopped after its first ``shards_done`` shards leaves it."""
    import shutil

    shutil.copytree(src, dst)
    for p in [*dst.iterdir(), *(dst / STATE_DIR).iterdir()]:
        k = int(p.name[6:11]) if p.name.startswith("shard-") else None
        if p.is_file() and (k is None and p.name != "run.json" or k is not None and k >= shards_done):
            p.unlink()
    return dst


@pytest.mark.parametrize("first,then", [("ray", "local"), ("local", "ray")])
def test_resume_finishes_a_stopped_run_on_either_engine(ray_local, tmp_path, bad_input, local_ref, first, then):
    """A run stopped after 3 shards, by either engine, is finished by --resume on the other: the same bytes."""
    ref = local_ref
    if first == "ray":
        ref = tmp_path / "ray-full"
        augment([bad_input], ref, load_recipe("default"), engine="ray", **RUN)
    stopped = _stopped_after(ref, tmp_path / "stopped", 3)
    assert len(list((stopped / STATE_DIR).glob("*.done.json"))) == 3 and not (stopped / "manifest.json").exists()
    with pytest.raises(AugmentError, match="--resume"):
        augment([bad_input], stopped, load_recipe("default"), engine=then, **RUN)
    augment([bad_input], stopped, load_recipe("default"), engine=then, resume=True, **RUN)
    assert _files(stopped, state=True) == _files(local_ref, state=True)
    assert _engine(stopped) == then


def test_strict_stops_at_the_first_reject_in_input_order(ray_local, tmp_path, bad_input):
    """--strict on Ray names the first bad line, keeps the shard before it, and leaves no unfinished shard."""
    out = tmp_path / "strict"
    with pytest.raises(AugmentError, match=r"--strict: .*in\.jsonl:6: malformed JSON"):
        augment([bad_input], out, load_recipe("default"), engine="ray", strict=True, **RUN)
    assert sorted(p.name for p in out.glob("shard-*")) == ["shard-00000.arrow"]
    assert [p.name for p in (out / STATE_DIR).glob("*.done.json")] == ["shard-00000.done.json"]


def test_file_uris_in_and_out(ray_local, tmp_path, bad_input, local_ref):
    """Input and output as filesystem URIs (what s3:// and gs:// go through): the bytes of the local engine reading
    the same URI (rejects name the input as given); --resume reads the state back from the URI."""
    uri_in, uri = f"file://{bad_input}", f"file://{tmp_path}/bucket/run"
    augment([uri_in], uri, load_recipe("default"), engine="ray", **RUN)
    out = tmp_path / "bucket" / "run"
    augment([uri_in], tmp_path / "local", load_recipe("default"), **RUN)
    got = _files(out, state=True)
    assert got == _files(tmp_path / "local", state=True)
    assert got["shard-00003.arrow"] == _files(local_ref)["shard-00003.arrow"]  # the rows: as from the plain path
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"][0]["path"] == uri_in
    assert manifest["inputs"][0]["sha256"] == hashlib.sha256(bad_input.read_bytes()).hexdigest()
    assert json.loads((out / "rejects.jsonl").read_text().splitlines()[0])["input"] == uri_in
    with pytest.raises(AugmentError, match="not empty"):
        augment([uri_in], uri, load_recipe("default"), engine="ray", **RUN)
    for p in [out / "manifest.json", *(out / STATE_DIR).glob("shard-0000[5-7]*"), *out.glob("shard-0000[5-7]*")]:
        p.unlink()
    augment([uri_in], uri, load_recipe("default"), engine="ray", resume=True, **RUN)
    assert _files(out, state=True) == got


def test_cli_summary_is_the_local_engines(ray_local, tmp_path, bad_input, capsys):
    """hsa augment --engine ray prints the local engine's end-of-run summary."""
    args = [str(bad_input), "--variants", "2", "--shard-size", "4", "--workers", "2"]
    assert main(["augment", *args, "--out", str(tmp_path / "l")]) == 0
    local = capsys.readouterr().out.replace(str(tmp_path / "l"), "OUT")
    assert main(["augment", *args, "--out", str(tmp_path / "r"), "--engine", "ray"]) == 0
    assert capsys.readouterr().out.replace(str(tmp_path / "r"), "OUT") == local
    assert "rejected" in local


def test_the_local_engine_refuses_an_object_storage_output(tmp_path, bad_input):
    """--out s3://... without --engine ray: an error that says which engine writes there, and no local folder."""
    with pytest.raises(AugmentError, match="--engine ray"):
        augment([bad_input], "s3://bucket/run", load_recipe("default"))
    assert not Path("s3:").exists()


def test_uri_inputs_read_as_their_paths(tmp_path, fixture_lines):
    """JSONL.gz and Parquet inputs given as file:// URIs make the shards their local paths make (local engine)."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    gz = tmp_path / "in.jsonl.gz"
    gz.write_bytes(gzip.compress(("\n".join(fixture_lines[:6]) + "\n").encode()))
    parquet = tmp_path / "in.parquet"
    rows = [json.loads(line) for line in fixture_lines[6:10]]
    pq.write_table(pa.Table.from_pylist([{"id": r["id"], "messages": json.dumps(r["messages"]),
                                          "tools": json.dumps(r["tools"])} for r in rows]), parquet)
    run = {"variants": 1, "shard_size": 4, "recipe": load_recipe("tools")}
    augment([gz, parquet], tmp_path / "paths", run.pop("recipe"), **run)
    augment([f"file://{gz}", f"file://{parquet}"], tmp_path / "uris", load_recipe("tools"), **run)
    shards = {k: v for k, v in _files(tmp_path / "paths").items() if k.startswith("shard-")}
    assert len(shards) == 3
    assert shards == {k: v for k, v in _files(tmp_path / "uris").items() if k.startswith("shard-")}
    with pytest.raises(AugmentError, match="does not exist"):
        augment([f"file://{tmp_path}/missing.jsonl"], tmp_path / "x", load_recipe("tools"))


def _shared_harness_input(path: Path, records: int, harnesses: int) -> Path:
    """``records`` generated records over ``harnesses`` shared harnesses, in runs of three (record i has harness
    (i // 3) % n: a harness is not a parity of the position)."""
    import random

    from fixtures.livestream.generate import make_harness, make_record

    shared = [make_harness(random.Random(f"ray-harness-{k}")) for k in range(harnesses)]
    rng = random.Random(7)
    path.write_text("".join(json.dumps(make_record(rng, i, 0, shared[i // 3 % harnesses])) + "\n"
                            for i in range(records)))
    return path


def test_a_shards_lines_go_to_actors_by_harness_and_a_harness_keeps_its_actor():
    """split, as the Ray driver calls it: every line once, each actor's lines in input order, a harness on one
    actor from shard to shard."""
    from hsa.io import InputLine
    from hsa.pipeline.workers import harness_key, split

    tools = [[{"type": "function", "function": {"name": f"t{h}", "parameters": {"type": "object"}}}]
             for h in range(4)]
    lines = [InputLine("in.jsonl", i + 1, json.dumps({"id": f"r{i}", "messages": [], "tools": tools[(i // 3) % 4]})
                       .encode(), i) for i in range(48)]
    sticky: dict = {}
    actor_of: dict = {}
    for start in range(0, 48, 12):  # four shards of 12 lines
        parts = split(lines[start:start + 12], 2, sticky)
        assert sorted(x.pos for part in parts for x in part) == list(range(start, start + 12))
        for w, part in enumerate(parts):
            assert [x.pos for x in part] == sorted(x.pos for x in part)
            for x in part:
                assert actor_of.setdefault(harness_key(x), w) == w
    assert sorted(actor_of.values()) == [0, 0, 1, 1]


def test_each_harness_is_augmented_by_one_actor_and_one_shard_uses_every_cpu(ray_local, tmp_path, monkeypatch):
    """A run of one shard over four shared harnesses: each harness's lines go to one of the two actors, both actors
    work, and the bytes are the local engine's."""
    from hsa.pipeline import ray_engine

    from hsa.pipeline.workers import harness_key

    inp = _shared_harness_input(tmp_path / "shared.jsonl", 24, 4)
    sent: list[list] = []  # what each call of split gave the actors

    def recording(items, actors, sticky):
        sent.append(split(items, actors, sticky))
        return sent[-1]

    split = ray_engine.split
    monkeypatch.setattr(ray_engine, "split", recording)
    run = {"variants": 2, "shard_size": 1000}
    augment([inp], tmp_path / "ray", load_recipe("default"), engine="ray", **run)
    augment([inp], tmp_path / "local", load_recipe("default"), **run)
    assert _files(tmp_path / "ray", state=True) == _files(tmp_path / "local", state=True)
    assert len(sent) == 1 and sum(map(len, sent[0])) == 24 and all(sent[0])  # one shard, both actors work
    actors_of: dict = {}
    for w, part in enumerate(sent[0]):
        for item in part:
            actors_of.setdefault(harness_key(item), set()).add(w)
    assert len(actors_of) == 4 and all(len(ws) == 1 for ws in actors_of.values())


def test_an_actor_that_cannot_set_up_is_an_error_not_a_hang(ray_local, tmp_path):
    """A recipe the actors cannot build (checked by the driver in a real run; here given to the engine directly):
    Ray does not start the actor again for an error of its own set-up, and the run raises with the actor's cause."""
    from hsa.io import InputLine
    from hsa.pipeline.executor import Progress
    from hsa.pipeline.ray_engine import run_shards

    bad = {"__version__": 1, "transform": {"transform": "no.such.transform"}}
    (tmp_path / STATE_DIR).mkdir()
    items = [InputLine("in.jsonl", i + 1, json.dumps({"id": f"r{i}", "messages": []}).encode(), i) for i in range(4)]
    start = time.monotonic()
    with pytest.raises(Exception, match="no.such.transform"):
        run_shards(tmp_path, items, shard_size=2, seen_ids=set(), recipe_config=bad, options={}, batch_size=2,
                   workers=1, address=None, strict=False, progress=Progress(False))
    assert time.monotonic() - start < 120
    assert not list(tmp_path.glob("shard-*"))


def test_an_actor_waiting_for_a_cpu_does_not_hold_the_run_up(ray_local, tmp_path, bad_input, local_ref):
    """On a Ray it joins, --workers 3 asks for more actors than the 2 CPUs (as for a cluster an autoscaler grows):
    the third waits for a CPU that never comes, the run goes on with the two that are set up, writes the local
    engine's bytes, and leaves no actor holding a CPU."""
    start = time.monotonic()
    augment([bad_input], tmp_path / "three", load_recipe("default"), engine="ray", workers=3, **RUN)
    assert time.monotonic() - start < 120
    assert _files(tmp_path / "three", state=True) == _files(local_ref, state=True)
    deadline = time.monotonic() + 10
    while ray_local.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray_local.available_resources().get("CPU", 0) == 2
