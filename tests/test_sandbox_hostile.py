"""Hostile records: each attack of issue 28's table is a hook in a record, run through ``hsa augment`` and
``hsa validate``, and judged from outside.

One augment run holds three benign fixture records and one hostile record per attack (:mod:`hsa.sandbox.attacks`),
with ``--workers 2``; a second run holds the benign records alone. For each attack: the victim files are unchanged,
the loopback listeners received nothing (they are bounded and closed here), no process and no worker folder is left,
hsa was not signalled (it finishes and writes its manifest), the input is unchanged and nothing is planted in the
output, and the secret (a file, hsa's environment) reached none of what hsa wrote; the benign records' rows are the
same bytes as in the run without the hostile records. The recipe replays recorded hook events (``hook.sync``), so a
hook's answer is written into its rows: what a hook could read would be in the output.

The same runs are made as an unprivileged user when the suite runs as root (a uid switch; Landlock, seccomp, the
limits and, where user namespaces are allowed, bubblewrap need no privilege).

An attack that no layer of this machine stops (:data:`hsa.sandbox.attacks.ATTACK_THREATS` against the probe's
``open``: no Landlock in the kernel, no libseccomp, ...) is skipped with the layers that are off and why; the layers
stand alone, so a machine without bubblewrap or user namespaces still runs every attack. ``.ci/run`` sets
``HSA_SANDBOX_REQUIRED=1``, which turns such a skip into a failure: CI on this project's machines runs them all.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hsa.sandbox.attacks import ATTACK_THREATS, ATTACKS, attack_hook, judge, leftover_processes, make_targets
from tests.conftest import FIXTURES, ROOT, run_watching

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook sandbox's layers are Linux's")

BENIGN = 3  # fixture records 0..2
BASE = 4  # fixture record 4 carries a recorded event of its pre_reply hook 'forbidden_claims'
RECIPE = {"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": [
    {"transform": "hook.sync"}, {"transform": "tool.rename", "styles": ["camel"], "p": 1.0}]}}
NOBODY = 65534


def _skip_unless_stopped(attack: str) -> None:
    """Skip ``attack`` (fail under ``HSA_SANDBOX_REQUIRED``) when no layer on this machine stops a threat it needs
    stopped, naming those threats and the layers that are off with their reasons."""
    from hsa.sandbox import layers

    st = layers.status()
    gaps = [t for t in ATTACK_THREATS[attack] if t in st.open]
    if not gaps:
        return
    off = "; ".join(f"{k}: {v['why']}" for k, v in st.layers.items() if not v["on"])
    why = f"not run: no layer on this machine stops {', '.join(gaps)} (off: {off}); see hsa sandbox check"
    if os.environ.get("HSA_SANDBOX_REQUIRED"):
        pytest.fail(why + " (HSA_SANDBOX_REQUIRED is set: CI expects every layer these attacks need)")
    pytest.skip(why)


def _hostile(name: str, base: dict, targets) -> dict:
    """Fixture record ``base`` whose recorded hook ('forbidden_claims') is the attack ``name``."""
    rec = json.loads(json.dumps(base))
    rec["id"] = f"hostile-{name}"
    i = next(k for k, h in enumerate(rec["hooks"]) if h["name"] == "forbidden_claims")
    attack = attack_hook(name, targets)
    rec["hooks"][i] = {**rec["hooks"][i], "entry": "check", "source": attack["source"]}
    return rec


def _homes(tmp: str | Path | None = None) -> dict[str, int]:
    """Worker folders of this code (``hsa-hook-<pid>-*``) now in ``tmp`` (default: the temporary folder), with their
    pid. The runs below give their hsa a temporary folder of its own, so that tests running beside them (pytest -n)
    are not taken for theirs."""
    out = {}
    for p in glob.glob(os.path.join(str(tmp or tempfile.gettempdir()), "hsa-hook-*-*")):
        pid = os.path.basename(p)[len("hsa-hook-"):].split("-", 1)[0]
        if pid.isdigit():
            out[p] = int(pid)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _python_for(uid: int) -> list[str] | None:
    """A command that runs hsa's CLI with an interpreter ``uid`` can read (this one, or the system's of the same
    version with this environment's packages on its path), or None."""
    from hsa.sandbox.layers import unreadable_by

    site = [p for p in sys.path if p.endswith("site-packages")]
    ok = lambda path: all(unreadable_by(p, uid, uid) is None for p in [path, str(ROOT), *site])  # noqa: E731
    boot = (f"import sys; sys.path[:0] = {[str(ROOT), *site]!r}; from hsa.cli import main; "
            "sys.argv[0] = 'hsa'; raise SystemExit(main())")
    if ok(sys.executable) and unreadable_by(os.path.dirname(os.__file__), uid, uid) is None:
        return [sys.executable, "-c", boot]
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.path.exists(system) and ok(system) and unreadable_by(f"/usr/lib/python{sys.version_info.major}."
                                                               f"{sys.version_info.minor}", uid, uid) is None:
        return [system, "-c", boot]
    return None


def test_root_drops_to_an_unprivileged_uid_when_the_interpreter_allows(tmp_path):
    """hsa as root with an interpreter uid 65534 can read: the identity layer is on, applied by every worker of the
    battery (a worker that could not switch would turn it off), and every attack is blocked."""
    if os.geteuid() != 0:
        pytest.skip("not run: the identity layer is for hsa run as root")
    cmd = _python_for(NOBODY)
    if cmd is None:
        pytest.skip(f"not run: no interpreter with this environment's packages is readable by uid {NOBODY}")
    for attack in ATTACKS:
        _skip_unless_stopped(attack)
    res = subprocess.run([*cmd, "sandbox", "check", "--json"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"})
    report = json.loads(res.stdout)
    assert report["status"]["layers"]["identity"] == {"on": True, "how": "uid/gid 65534, no groups"}, res.stderr
    assert all(r["blocked"] for r in report["attacks"].values()), report["attacks"]
    assert res.returncode == 0, res.stderr


class Run:
    """One pair of runs (benign alone, benign + hostile) with its targets, as one user."""

    def __init__(self, root: Path, uid: int | None):
        self.root, self.uid = root, uid
        if uid is not None:
            os.chown(root, uid, uid)
        lines = FIXTURES.read_text(encoding="utf-8").splitlines()
        benign = [json.loads(lines[i]) for i in range(BENIGN)]
        base = json.loads(lines[BASE])
        self.benign_ids = {r["id"] for r in benign}
        self.input = root / "in.jsonl"
        self.targets = make_targets(root / "targets", input_path=str(self.input), out="")
        self.out_dir = root / f"out-{self.targets['token']}"  # the token in hsa's command line: attacks find hsa
        self.targets["out"] = str(self.out_dir)
        hostile = [_hostile(name, base, self.targets) for name in ATTACKS]
        records = benign[:1] + hostile[:5] + benign[1:] + hostile[5:]
        self.input.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        (root / "benign.jsonl").write_text("".join(json.dumps(r) + "\n" for r in benign), encoding="utf-8")
        (root / "recipe.json").write_text(json.dumps(RECIPE), encoding="utf-8")
        self.tmp = root / "tmp"  # hsa's TMPDIR: its worker folders, and no one else's
        self.tmp.mkdir()
        os.chmod(self.tmp, 0o1777)
        if uid is not None:
            for p in [root, *root.rglob("*")]:
                if not p.is_socket():
                    os.chown(p, uid, uid)
        self.input_sha = hashlib.sha256(self.input.read_bytes()).hexdigest()
        self.homes_before = set(_homes(self.tmp))
        self.logs: dict[str, subprocess.CompletedProcess] = {}

    def hsa(self, tag: str, *argv: str) -> subprocess.CompletedProcess:
        cmd = _python_for(self.uid) if self.uid is not None else [sys.executable, "-m", "hsa.cli"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "HSA_TEST_SECRET": self.targets["_secret"], "HOME": str(self.root), "TMPDIR": str(self.tmp)}
        if self.uid is None:
            env["PYTHONPATH"] = str(ROOT)
        res = subprocess.run([*cmd, *argv], cwd=self.root, env=env, capture_output=True, text=True, timeout=600,
                             user=self.uid, group=self.uid, extra_groups=[] if self.uid is not None else None)
        self.logs[tag] = res
        return res

    def augment_all(self) -> None:
        common = ["--variants", "2", "--seed", "3", "--recipe", str(self.root / "recipe.json")]
        self.hsa("augment", "augment", str(self.input), "--out", str(self.out_dir), "--workers", "2", *common)
        self.after_augment = self.judge()
        self.hsa("validate", "validate", str(self.out_dir))
        self.after_validate = self.judge()
        # the run without hostile records, and the exports, need no separate hsa process
        from hsa.cli import main

        main(["augment", str(self.root / "benign.jsonl"), "--out", str(self.root / "baseline"), "--workers", "1",
              "--quiet", *common])
        main(["export", str(self.root / "baseline"), "--out", str(self.root / "baseline.jsonl")])
        main(["export", str(self.out_dir), "--out", str(self.root / "hostile.jsonl")])
        done = [pid for pid in self.pids() if not _alive(pid)]  # the run's processes (others may run beside it)
        self.left = leftover_processes([self.targets["token"]] + [f"hsa-hook-{p}-" for p in done])
        self.left_homes = [p for p, pid in _homes(self.tmp).items() if p not in self.homes_before and not _alive(pid)]

    def pids(self) -> set[int]:
        return {pid for p, pid in _homes(self.tmp).items() if p not in self.homes_before}

    def written_texts(self) -> list[str]:
        texts = []
        for folder in (self.out_dir,):
            for p in folder.rglob("*") if folder.exists() else ():
                if p.is_file():
                    texts.append(p.read_bytes().decode("utf-8", "replace"))
        for name in ("hostile.jsonl",):
            if (self.root / name).exists():
                texts.append((self.root / name).read_text(encoding="utf-8"))
        texts += [r.stdout + r.stderr for r in self.logs.values()]
        return texts

    def judge(self) -> dict[str, list[str]]:
        return judge(self.targets, texts=self.written_texts(), input_sha=self.input_sha, input_path=str(self.input),
                     out=str(self.out_dir))

    def hook_messages(self, attack: str) -> list[str]:
        """The messages the hostile hook of ``attack`` returned, as written into its record's rows (hook events)."""
        out = []
        for line in (self.root / "hostile.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("source_id") == f"hostile-{attack}":
                out += [e["decision"]["message"] for e in row.get("hook_events") or []
                        if isinstance(e.get("decision"), dict) and "message" in e["decision"]]
        return out

    def rows(self, name: str) -> dict[str, str]:
        """Exported rows of the benign records, by id, as written."""
        out = {}
        for line in (self.root / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("source_id") in self.benign_ids:
                out[row["id"]] = line
        return out


def _runs(uid: int | None):
    """The runs as ``uid`` (None: the suite's user) in a folder of their own (outside pytest's, which another uid
    cannot enter), removed after."""
    root = Path(tempfile.mkdtemp(prefix="hsa-hostile-"))
    os.chmod(root, 0o755)
    try:
        run = Run(root, uid)
        try:
            run.augment_all()
        finally:
            run.targets.close()
        yield run
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def as_root_or_user():
    """The runs as the user the suite runs as."""
    yield from _runs(None)


@pytest.fixture(scope="module")
def as_nobody():
    """The runs as uid 65534 (the suite runs as root), with an interpreter that user can read."""
    if os.geteuid() != 0:
        pytest.skip("not run: the suite does not run as root, so the runs above already were unprivileged")
    if _python_for(NOBODY) is None:
        pytest.skip(f"not run: no interpreter with this environment's packages is readable by uid {NOBODY}")
    yield from _runs(NOBODY)


def _check_run(run: Run, attack: str) -> None:
    _skip_unless_stopped(attack)
    aug = run.logs["augment"]
    assert aug.returncode == 0, aug.stderr[-2000:]
    manifest = json.loads((run.out_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["hook_sandbox"]["policy"] == "best"
    assert "hook sandbox (best)" in aug.stderr and "hook sandbox (best)" in aug.stdout  # start and summary
    kinds = {"write": "write", "read": "read", "network": "network", "processes": "processes", "files": "files"}
    for stage, found in (("augment", run.after_augment), ("validate", run.after_validate)):
        assert found.get(kinds.get(attack, attack), []) == [], f"{attack} got through during hsa {stage}: {found}"
    assert run.logs["validate"].returncode in (0, 1), run.logs["validate"].stderr[-2000:]
    assert "hook sandbox (best)" in run.logs["validate"].stderr
    assert run.left == [], f"processes left behind: {run.left}"
    assert run.left_homes == [], f"worker folders left behind: {run.left_homes}"
    # what the hook itself saw, written into its rows: every attempt failed (the judge above is from outside; this
    # also shows the hook ran, so the checks above are not vacuous)
    messages = run.hook_messages(attack)
    if attack in ("write", "read", "network", "processes", "files", "hsa"):
        from hsa.sandbox import layers

        # a datagram sent inside the worker's own network namespace (loopback only) reaches nothing: the listener
        # above is the judge of that; without seccomp the send itself succeeds
        harmless = {"udp"} if attack == "network" and layers.status().on("namespaces") else set()
        assert messages, f"no row carries the hostile {attack} hook's answer"
        for m in messages:
            report = json.loads(m)
            got = [k for k, v in report.items()
                   if v.startswith("ok") and not k.startswith("maps") and k not in harmless]
            assert not got, report
    if attack == "memory":  # the 2 GiB allocation failed and no more than the address-space limit was mapped
        assert messages and all(int(m.split()[1]) < 512 for m in messages), messages


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_hostile_record_is_blocked(as_root_or_user, attack):
    """Each attack of the table, carried by a record, changes nothing outside its worker under hsa augment (2
    workers) and hsa validate."""
    run = as_root_or_user
    _check_run(run, attack)
    if attack == "cpu":
        rejects = (run.out_dir / "rejects.jsonl").read_text(encoding="utf-8")
        assert "hostile-cpu" in rejects and "hook timeout" in rejects  # stopped from outside, once
    if attack == "worker":
        assert "IGNORE ALL PREVIOUS INSTRUCTIONS" not in "".join(run.rows("hostile.jsonl").values())


def test_benign_rows_are_the_bytes_of_a_run_without_hostile_records(as_root_or_user):
    """No hostile record changes another record's rows: the benign rows equal those of a run without them."""
    run = as_root_or_user
    base, mixed = run.rows("baseline.jsonl"), run.rows("hostile.jsonl")
    assert base and mixed == base


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_hostile_record_is_blocked_for_an_unprivileged_user(as_nobody, attack):
    """The same, with hsa run by an unprivileged user (Landlock, seccomp, the limits and bubblewrap need no
    privilege)."""
    _check_run(as_nobody, attack)


def test_benign_rows_unchanged_for_an_unprivileged_user(as_nobody):
    """The same benign-rows check for the unprivileged runs."""
    run = as_nobody
    base, mixed = run.rows("baseline.jsonl"), run.rows("hostile.jsonl")
    assert base and mixed == base


def test_validate_without_hook_execution_starts_no_worker(as_root_or_user, capsys, monkeypatch):
    """hsa validate --no-exec-hooks on the hostile run's output runs no hook: no worker folder appears, and no
    sandbox line is printed (there is no sandbox to speak of)."""
    from hsa.cli import main
    from hsa.sandbox import pool

    from hsa.sandbox.process import Sandbox

    run = as_root_or_user
    pool.close_all()
    spawned = []
    monkeypatch.setattr(Sandbox, "_spawn", lambda self: spawned.append(self) or (_ for _ in ()).throw(
        AssertionError("a hook worker was started")))
    assert main(["validate", str(run.out_dir), "--no-exec-hooks"]) == 0
    assert spawned == []
    assert "hook sandbox (" not in "".join(capsys.readouterr())


def test_validate_names_the_rows_of_a_shard_changed_after_the_run(as_root_or_user, tmp_path):
    """A shard rewritten after the manifest (what a detached child of a hook did) fails hsa validate, which says
    which rows it could not verify."""
    from hsa.validate import validate_path

    run = as_root_or_user
    out = tmp_path / "out"
    shutil.copytree(run.out_dir, out)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert not validate_path(out, exec_hooks=False).violations
    shard = out / manifest["shards"][0]["file"]
    shard.write_bytes(shard.read_bytes() + b"\0")
    report = validate_path(out, exec_hooks=False)
    rows = manifest["shards"][0]["rows"]
    assert report.violations["integrity"] == 1
    assert any(f"rows 0-{rows - 1} could not be verified" in line for line in report.lines)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_no_worker_or_folder_outlives_a_killed_run(tmp_path, how):
    """hsa augment --workers 2 killed in the middle of a hook that never returns: no hook worker is left running;
    its folders are removed at once (SIGTERM) or by the next hsa that starts a worker (SIGKILL)."""
    import signal
    import time

    from hsa.sandbox import pool
    from hsa.sandbox import process as sandbox_process

    lines = FIXTURES.read_text(encoding="utf-8").splitlines()
    recs = [json.loads(lines[i]) for i in range(4)]
    for r in recs:  # every record's reply hook hangs: the run is in a hook when it is killed
        i = next(k for k, h in enumerate(r["hooks"]) if h["event"] == "pre_reply")
        r["hooks"][i]["source"] += "\nimport time\nwhile True:\n    time.sleep(0.01)\n"
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    tmp = tmp_path / "tmp"  # hsa's TMPDIR: its worker folders, and no one else's
    tmp.mkdir()
    before = set(_homes(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "hsa.cli", "augment", str(src), "--out", str(tmp_path / "out"),
                             "--workers", "2", "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not [p for p in _homes(tmp) if p not in before]:
        time.sleep(0.05)  # until a hook worker runs
    homes = [p for p in _homes(tmp) if p not in before]
    assert homes, "no hook worker started"
    time.sleep(0.3)
    proc.send_signal(getattr(signal, how))
    proc.wait(timeout=60)
    mine = {pid for p, pid in _homes(tmp).items() if p not in before}
    marks = [f"hsa-hook-{pid}-" for pid in mine] + [str(tmp_path)]
    # the kernel ends a worker whose hsa died (bwrap's --die-with-parent, PR_SET_PDEATHSIG) asynchronously: on a
    # loaded machine that takes more than a moment, so wait for it (bounded) before judging
    deadline = time.monotonic() + 15
    while leftover_processes(marks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftover_processes(marks) == []
    if how == "SIGKILL":  # the next hsa that starts a worker, with the same temporary folder, sweeps them
        sandbox_process._SWEPT.clear()
        old, tempfile.tempdir = tempfile.tempdir, str(tmp)
        try:
            pool.worker_for(b"sweeper").run([{"source": "def f(p):\n    return 0\n", "entry": "f",
                                              "style": "function", "payload": {}}])
            pool.close_all()
        finally:
            tempfile.tempdir = old
    assert [p for p, pid in _homes(tmp).items() if p not in before and pid in mine and not _alive(pid)] == []


def test_an_attack_no_layer_stops_is_skipped_with_the_layers_off_or_fails_under_ci(monkeypatch):
    """On a machine where no layer stops what an attack needs stopped (here: Landlock and seccomp reported off),
    the attack is skipped, naming the threats and the layers off with their reasons; under HSA_SANDBOX_REQUIRED
    (.ci/run) the same is a failure. A missing bubblewrap alone leaves nothing open: nothing is skipped."""
    from hsa.sandbox import layers

    def fake(off: dict[str, str]):
        lay = {k: ({"on": False, "why": off[k]} if k in off else {"on": True, "how": "test"}) for k in layers.LAYERS}
        covered = {k for k in layers.LAYERS if k not in off} | {"nproc"}
        open_ = [t for t, by in layers.THREATS.items() if not covered.intersection(by)]
        return layers.Status("best", lay, open_)

    monkeypatch.delenv("HSA_SANDBOX_REQUIRED", raising=False)
    monkeypatch.setattr(layers, "status", lambda: fake({"namespaces": "no bwrap (test)"}))
    for attack in ATTACKS:
        _skip_unless_stopped(attack)  # nothing open: returns
    monkeypatch.setattr(layers, "status", lambda: fake({"files": "the kernel has no Landlock (test)",
                                                         "syscalls": "libseccomp unavailable (test)"}))
    with pytest.raises(pytest.skip.Exception, match=r"not run: no layer on this machine stops file reads outside "
                       r"the interpreter \(off: files: the kernel has no Landlock \(test\); syscalls: libseccomp"):
        _skip_unless_stopped("read")
    _skip_unless_stopped("write")  # bubblewrap's read-only root still stops it
    _skip_unless_stopped("cpu")  # the limits need no layer
    monkeypatch.setenv("HSA_SANDBOX_REQUIRED", "1")
    with pytest.raises(pytest.fail.Exception, match="HSA_SANDBOX_REQUIRED is set"):
        _skip_unless_stopped("network")  # unix sockets: only seccomp stops them


def test_a_finished_pool_run_leaves_no_worker_or_folder(tmp_path):
    """hsa augment --workers 2 that runs to its end stops every hook worker of its pool's processes and removes
    their folders itself (not the next hsa that starts a worker)."""
    lines = FIXTURES.read_text(encoding="utf-8").splitlines()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(line + "\n" for line in lines[:8]), encoding="utf-8")
    (tmp_path / "recipe.json").write_text(json.dumps(RECIPE), encoding="utf-8")
    tmp = tmp_path / "tmp"  # hsa's TMPDIR: its worker folders, and no one else's
    tmp.mkdir()
    seen: set[str] = set()  # the worker folders of the run (so the checks below are not vacuous)
    code, _, err = run_watching([sys.executable, "-m", "hsa.cli", "augment", str(src), "--out", str(tmp_path / "out"),
                                 "--workers", "2", "--variants", "2", "--seed", "3", "--recipe",
                                 str(tmp_path / "recipe.json"), "--quiet"], tmp_path, lambda: seen.update(_homes(tmp)),
                                every=0.01, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})
    assert code == 0, err[-2000:]
    assert seen, "no hook worker started"
    assert leftover_processes([str(tmp)]) == []
    assert sorted(_homes(tmp)) == []
