"""The data path at scale: resume after a kill, rank/world-size + merge, input kinds, stats."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hsa import load_recipe
from hsa.cli import main
from hsa.io import iter_rows
from hsa.pipeline import AugmentError, augment, merge

ROOT = Path(__file__).resolve().parents[1]


def _files(d: Path) -> dict[str, str]:
    """sha256 of the dataset files (shards, manifest minus the command line, rejects, metadata)."""
    out = {}
    for p in sorted(d.iterdir()):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "manifest.json":
                m = json.loads(data)
                m.pop("command", None)
                data = json.dumps(m, sort_keys=True).encode()
            out[p.name] = hashlib.sha256(data).hexdigest()
    return out


@pytest.fixture
def input_80(tmp_path, fixture_lines):
    p = tmp_path / "in80.jsonl"
    p.write_text("\n".join(fixture_lines[:80]) + "\nnot json\n", encoding="utf-8")
    return p


def test_kill_and_resume_is_byte_identical(tmp_path, input_80):
    """A run killed mid-way and finished with --resume equals an uninterrupted run, byte for byte."""
    ref = tmp_path / "ref"
    augment([input_80], ref, load_recipe("default"), variants=2, shard_size=8)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "hsa.cli", "augment", str(input_80), "--out", str(out), "--variants", "2",
           "--shard-size", "8", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    deadline = time.time() + 60
    while time.time() < deadline and len(list((out / ".hsa").glob("shard-*.done.json"))) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(list((out / ".hsa").glob("shard-*.done.json")))
    assert 3 <= done_before < 11, "the kill should land mid-run"
    assert not (out / "manifest.json").exists()
    with pytest.raises(AugmentError, match="--resume"):
        augment([input_80], out, load_recipe("default"), variants=2, shard_size=8)
    assert main(cmd[3:] + ["--resume"]) == 0
    assert _files(out) == _files(ref)


def _gone_within(marker: str, seconds: float) -> list[str]:
    """The processes that mention ``marker`` still running after up to ``seconds`` of waiting for them to end."""
    deadline = time.time() + seconds
    while (left := _processes_running(marker)) and time.time() < deadline:
        time.sleep(0.05)
    return left


def _processes_running(marker: str) -> list[str]:
    """Command lines of the live processes that mention ``marker`` (Linux /proc)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            out.append(cmd)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_keeps_finished_shards_and_leaves_no_process(tmp_path, input_80):
    """Ctrl-C on a 2-worker run exits 130 with a --resume hint and no traceback, stops every worker, and the
    resumed run equals an uninterrupted one byte for byte."""
    ref = tmp_path / "ref"
    augment([input_80], ref, load_recipe("default"), variants=2, shard_size=8)
    out = tmp_path / "interrupted"
    cmd = [sys.executable, "-m", "hsa.cli", "augment", str(input_80), "--out", str(out), "--variants", "2",
           "--shard-size", "8", "--quiet", "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and len(list((out / ".hsa").glob("shard-*.done.json"))) < 2:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the whole foreground group
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err
    assert "rerun the same command with --resume" in err and "Traceback" not in err, err
    assert _gone_within(str(out), 10) == []
    assert not (out / "manifest.json").exists()
    assert main(cmd[3:] + ["--resume"]) == 0
    assert _files(out) == _files(ref)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_with_a_killed_parent(tmp_path, input_80):
    """kill -9 of the parent (or the OOM killer) ends its pool workers at once, not after their batch."""
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "hsa.cli", "augment", str(input_80), "--out", str(out), "--variants", "4",
           "--quiet", "--workers", "2", "--batch-size", "40"]  # two batches of several seconds each
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and len(_processes_running(str(out))) < 3:  # the parent and both workers
        time.sleep(0.02)
    time.sleep(0.5)  # the workers are inside their batch
    proc.kill()
    proc.wait()
    assert _gone_within(str(out), 1.5) == []  # a worker left alone would run its batch for seconds more
    assert b"Traceback" not in proc.stderr.read()


def test_resume_refuses_a_different_run(tmp_path, input_80):
    """--resume with other options than the interrupted run is refused, naming what differs."""
    out = tmp_path / "o"
    augment([input_80], out, load_recipe("default"), variants=2, shard_size=8)
    with pytest.raises(AugmentError, match="seed"):
        augment([input_80], out, load_recipe("default"), variants=2, shard_size=8, seed=9, resume=True)


def test_ranks_and_merge_equal_one_run(tmp_path, input_80):
    """Three ranks merged give the same dataset as a single run."""
    ref = tmp_path / "ref"
    augment([input_80], ref, load_recipe("default"), variants=2, shard_size=8)
    parts = []
    for r in range(3):
        p = tmp_path / f"part{r}"
        res = augment([input_80], p, load_recipe("default"), variants=2, shard_size=8, rank=r, world_size=3)
        assert res["rank"]["rank"] == r
        parts.append(p)
    with pytest.raises(AugmentError, match="missing"):
        merge(parts[:2], tmp_path / "incomplete")
    merged = tmp_path / "merged"
    merge(parts, merged)
    assert _files(merged) == _files(ref)


def test_worker_counts_give_identical_bytes(tmp_path, input_80):
    """1 and 2 workers, different batch sizes: identical shards and manifest."""
    a, b = tmp_path / "a", tmp_path / "b"
    augment([input_80], a, load_recipe("default"), variants=2, shard_size=16, workers=1, batch_size=5)
    augment([input_80], b, load_recipe("default"), variants=2, shard_size=16, workers=2, batch_size=3)
    assert _files(a) == _files(b)


def test_input_kinds(tmp_path, fixture_lines, fixture_records):
    """JSONL.gz, Parquet and a datasets folder read the same records as JSONL; several inputs at once."""
    import datasets

    n = 6
    plain = tmp_path / "a.jsonl"
    plain.write_text("\n".join(fixture_lines[:n]) + "\n")
    gz = tmp_path / "b.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        f.write("\n".join(fixture_lines[n:2 * n]) + "\n")
    out = tmp_path / "o"
    m = augment([plain, gz], out, load_recipe("identity"), variants=1)
    assert m["counts"]["sources_written"] == 2 * n
    assert [i["path"] for i in m["inputs"]] == [str(plain), str(gz)]
    assert all(len(i["sha256"]) == 64 for i in m["inputs"])
    # an hsa output folder is an input too (closure): exact records, mapping composed
    out2 = tmp_path / "o2"
    m2 = augment([out], out2, load_recipe("default"), variants=1)
    assert m2["counts"]["sources_written"] == 2 * n
    # a datasets folder and a Parquet file made by `datasets` itself (Arrow unification adds null keys)
    simple = [{"id": f"s{i}", "messages": [{"role": "user", "content": "hi"},
                                          {"role": "assistant", "content": None, "tool_calls": [
                                              {"type": "function", "function": {"name": "f", "arguments": json.dumps({"x": i})}}]}],
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                   "type": "object", "properties": {"x": {"type": "integer"}}}}}]} for i in range(4)]
    ds = datasets.Dataset.from_list(simple)
    ds.save_to_disk(str(tmp_path / "dsdir"))
    ds.to_parquet(str(tmp_path / "d.parquet"))
    for src in (tmp_path / "dsdir", tmp_path / "d.parquet"):
        o = tmp_path / f"o-{src.name}"
        m3 = augment([src], o, load_recipe("identity"), variants=1)
        assert m3["counts"]["sources_written"] == 4, m3
        row = next(iter_rows(o))
        assert row["messages"][0] == {"role": "user", "content": "hi"}


def test_table_inputs_with_json_text_columns(tmp_path, fixture_lines):
    """Full-harness records whose nested fields a table stores as JSON text (Parquet, a datasets folder) read
    the same as the JSONL records: same augmented rows, nothing rejected, each parsed field noted."""
    import datasets

    records = [json.loads(line) for line in fixture_lines[:5]]
    texts = [{k: v if isinstance(v, str) else json.dumps(v) for k, v in r.items()} for r in records]
    ds = datasets.Dataset.from_list(texts)
    assert ds.features["hooks"].dtype == "string"  # the columns really are JSON text
    ds.save_to_disk(str(tmp_path / "dsdir"))
    ds.to_parquet(str(tmp_path / "t.parquet"))
    plain = tmp_path / "p.jsonl"
    plain.write_text("\n".join(fixture_lines[:5]) + "\n")
    augment([plain], tmp_path / "o-plain", load_recipe("default"), variants=1)
    want = [r["messages"] for r in iter_rows(tmp_path / "o-plain")]
    for src in (tmp_path / "dsdir", tmp_path / "t.parquet"):
        out = tmp_path / f"o-{src.name}"
        m = augment([src], out, load_recipe("default"), variants=1)
        assert m["counts"]["rejected"] == 0, (out / "rejects.jsonl").read_text()
        rows = list(iter_rows(out))
        assert [r["messages"] for r in rows] == want
        assert "'hooks' was a JSON string; parsed" in rows[0]["notes"]


def test_hub_input_is_pinned_to_a_commit(tmp_path, monkeypatch):
    """A hub id is read at the commit its head had when the run started, recorded in the manifest; a resume
    reads that commit again after the head moved (the hub and datasets are stand-ins: tests stay offline)."""
    import datasets
    import huggingface_hub

    heads = iter(["a" * 40, "b" * 40])
    reads: list[tuple] = []

    class Info:
        def __init__(self):
            self.sha = next(heads)

    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", lambda self, repo_id, revision=None: Info())
    rows = [{"id": f"h{i}", "messages": [{"role": "user", "content": f"hi {i}"}]} for i in range(3)]

    def load_dataset(name, split=None, streaming=False, revision=None):
        reads.append((name, split, revision))
        return iter(rows)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    m = augment(["hf://owner/data:test"], tmp_path / "o", load_recipe("identity"), variants=1, shard_size=2)
    assert m["counts"]["sources_written"] == 3
    assert m["inputs"][0]["revision"] == "a" * 40
    assert reads and set(reads) == {("owner/data", "test", "a" * 40)}
    # the head moves on; resuming the same command reads the recorded commit, not the new head
    (tmp_path / "o" / "shard-00001.arrow").unlink()
    done = tmp_path / "o" / ".hsa" / "shard-00001.done.json"
    done.unlink()
    reads.clear()
    m2 = augment(["hf://owner/data:test"], tmp_path / "o", load_recipe("identity"), variants=1, shard_size=2,
                 resume=True)
    assert m2["inputs"][0]["revision"] == "a" * 40
    assert set(reads) == {("owner/data", "test", "a" * 40)}
    assert m2["counts"]["sources_written"] == 3


def test_missing_hub_dataset_is_a_clear_error(tmp_path):
    """An input that is neither a file nor reachable on the hub fails with a message, not a traceback."""
    with pytest.raises(AugmentError):
        augment(["no/such-file-or-dataset.jsonl"], tmp_path / "o", load_recipe("identity"))


def test_stats_command(tmp_path, input_80, capsys):
    """hsa stats reports rows, transforms, rejects, lengths and name diversity; --html writes a report."""
    out = tmp_path / "o"
    augment([input_80], out, load_recipe("default"), variants=2, shard_size=30)
    capsys.readouterr()
    assert main(["stats", str(out), "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    assert "160 rows from 80 sources" in text
    stats = json.loads((tmp_path / "r.json").read_text())
    assert stats["rejects"] == {"malformed JSON": 1}
    assert stats["transforms"]["tool.rename"] > 0
    assert stats["lengths"]["prompt_chars"]["p50"] > 500
    assert max(stats["names"]["tools"].values()) > 1
    assert "<svg" in (tmp_path / "r.html").read_text()


def test_validate_checks_accounting(tmp_path, input_80):
    """hsa validate DIR fails when the manifest's accounting does not add up."""
    out = tmp_path / "o"
    augment([input_80], out, load_recipe("default"), variants=1, shard_size=40)
    assert main(["validate", str(out)]) == 0
    m = json.loads((out / "manifest.json").read_text())
    m["counts"]["rejected"] += 1
    (out / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(out)]) == 1


def test_output_does_not_depend_on_the_hash_seed(tmp_path, fixture_lines):
    """Two runs under different PYTHONHASHSEED values write byte-identical datasets (no set-order leaks)."""
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(fixture_lines[:12]) + "\n", encoding="utf-8")
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"o{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "hsa.cli", "augment", str(p), "--out", str(out), "--variants", "3",
                        "--quiet"], cwd=ROOT, env=env, check=True)
        outs.append(_files(out))
    assert outs[0] == outs[1]


def test_stats_survive_a_completion_record():
    """Stats written to a shard's completion record read back equal, so resumed and merged runs count right."""
    from collections import Counter

    from hsa.pipeline import Stats

    s = Stats(input_records=5, sources_written=4, rejected=1, rows_written=12, task_changing_variants=2,
              reject_reasons=Counter({"malformed JSON": 1}), applied=Counter({"tool.rename": 3}),
              skipped=Counter({("tool.values", "no value can change: a, b"): 2}))
    assert Stats.from_json(json.loads(json.dumps(s.to_json()))) == s
    assert (Stats.from_json(s.to_json()) + s).input_records == 10


def test_progress_total_counts_every_input_kind(tmp_path, fixture_lines):
    """The progress line's total (for its ETA) counts JSONL lines, Parquet rows and datasets-folder rows
    without reading records; a hub stream has no total."""
    import datasets

    from hsa.io import InputSource
    from hsa.pipeline.executor import count_items

    plain = tmp_path / "a.jsonl"
    plain.write_text("\n".join(fixture_lines[:3]) + "\n\n")  # the blank line is no record
    ds = datasets.Dataset.from_list([{"messages": json.dumps([{"role": "user", "content": str(i)}])}
                                     for i in range(5)])
    ds.to_parquet(str(tmp_path / "b.parquet"))
    ds.save_to_disk(str(tmp_path / "c"))
    sources = [InputSource.resolve(p) for p in (plain, tmp_path / "b.parquet", tmp_path / "c")]
    assert count_items(sources) == 3 + 5 + 5
    assert count_items(sources + [InputSource("owner/name", "hub")]) is None


def test_aborting_a_shard_after_it_was_closed_keeps_it(tmp_path):
    """An interrupt that lands while a finished shard is handed over must not fail on, or remove, that shard."""
    from hsa.io import ShardFile

    shard = ShardFile(tmp_path / "shard-00000.arrow")
    shard.close()
    shard.abort()  # what the run's cleanup did when Ctrl-C came between two shards
    assert (tmp_path / "shard-00000.arrow").exists() and not (tmp_path / "shard-00000.arrow.tmp").exists()
    unfinished = ShardFile(tmp_path / "shard-00001.arrow")
    unfinished.abort()
    assert not (tmp_path / "shard-00001.arrow.tmp").exists() and not (tmp_path / "shard-00001.arrow").exists()
