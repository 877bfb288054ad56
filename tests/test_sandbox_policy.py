"""``--hook-sandbox require|best|off``: what each policy starts, what the manifest and the run's lines say, and
``require`` refusing a machine where a wall is missing."""

from __future__ import annotations

import json

import pytest

from hsa.cli import main
from hsa.sandbox import layers, pool
from tests.conftest import FIXTURES


@pytest.fixture
def fresh_policy():
    """The process's policy and probe put back after the test."""
    yield
    layers.set_policy("best")
    layers.reset()
    pool.close_all()


@pytest.fixture
def two_records(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(FIXTURES.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    return src


def test_off_keeps_the_limits_and_says_so(two_records, tmp_path, capsys, fresh_policy):
    """--hook-sandbox off: the manifest lists every layer but the limits as off, and what stays open."""
    out = tmp_path / "out"
    assert main(["augment", str(two_records), "--out", str(out), "--variants", "1", "--workers", "1",
                 "--hook-sandbox", "off"]) == 0
    entry = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["hook_sandbox"]
    assert entry["policy"] == "off" and entry["layers"]["limits"]["on"]
    assert not any(v["on"] for k, v in entry["layers"].items() if k != "limits")
    assert "tcp" in entry["open"] and "new processes" in entry["open"]
    printed = capsys.readouterr()
    assert "hook sandbox (off)" in printed.out  # the summary line


def test_best_starts_workers_with_the_layers_the_probe_found(fresh_policy):
    """Under best, a worker reports every layer the probe found available as applied."""
    layers.set_policy("best")
    st = layers.status()
    box = pool.worker_for(b"policy-test")
    assert box.run([{"source": "def f(p):\n    return 1\n", "entry": "f", "style": "function", "payload": {}}]) == \
        [{"ok": True, "value": 1}]
    applied = {k for k, v in box.layers.items() if v == "ok"}
    assert st.on("files") == ("landlock" in applied) and st.on("syscalls") == ("seccomp" in applied)
    assert "limits" in applied


def test_require_refuses_a_machine_without_a_wall(two_records, tmp_path, capsys, fresh_policy):
    """--hook-sandbox require with the file layer missing: hsa augment and hsa validate stop before any hook runs,
    naming the wall and what stays open."""
    layers.set_policy("require")
    layers.disable("files", "turned off by the test")
    out = tmp_path / "out"
    assert main(["augment", str(two_records), "--out", str(out), "--variants", "1", "--workers", "1", "--quiet",
                 "--hook-sandbox", "require"]) == 2
    err = capsys.readouterr().err
    assert "--hook-sandbox require: no layer keeps files (file reads outside the interpreter" in err
    assert not (out / "manifest.json").exists()
    assert main(["validate", str(two_records), "--hook-sandbox", "require"]) == 2
    assert "--hook-sandbox require" in capsys.readouterr().err


def test_a_layer_that_fails_in_the_worker_is_dropped_under_best_and_fatal_under_require(fresh_policy, monkeypatch):
    """A worker that cannot apply a layer it was asked for serves nothing; best goes on without the layer and says
    why, require raises."""
    layers.set_policy("best")
    if not layers.status().on("syscalls"):
        pytest.skip("not run: no seccomp layer on this machine")
    monkeypatch.setattr(layers, "seccomp_program", lambda: b"\x00" * 8)  # one invalid BPF instruction
    box = pool.worker_for(b"failing-layer")
    assert box.run([{"source": "def f(p):\n    return 2\n", "entry": "f", "style": "function", "payload": {}}]) == \
        [{"ok": True, "value": 2}]
    st = layers.status()
    assert not st.on("syscalls") and "failed in the worker" in st.layers["syscalls"]["why"]
    pool.close_all()
    layers.reset()
    layers.set_policy("require")
    box = pool.worker_for(b"failing-layer-require")
    with pytest.raises(layers.SandboxError, match="could not be confined: seccomp"):
        box.run([{"source": "def f(p):\n    return 2\n", "entry": "f", "style": "function", "payload": {}}])


def test_the_rl_trainer_takes_the_option():
    """python -m trainers.rl --hook_sandbox off parses; an unknown policy does not."""
    pytest.importorskip("trl")
    from trainers.rl import RLArguments

    assert RLArguments(hook_sandbox="off").hook_sandbox == "off"
    assert dict(RLArguments.__dataclass_fields__["hook_sandbox"].metadata)["choices"] == ("require", "best", "off")


def test_sandbox_check_blocks_every_attack_and_fails_on_a_missing_layer(capsys, fresh_policy):
    """hsa sandbox check: every attack blocked under the layers of this machine (exit 0); a layer off for a reason
    an install would mend makes it exit 1 and name it."""
    from tests.test_sandbox_hostile import _skip_unless_stopped
    from hsa.sandbox.attacks import ATTACKS

    for attack in ATTACKS:
        _skip_unless_stopped(attack)
    assert main(["sandbox", "check", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["attacks"]) >= {"write", "read", "network", "processes", "cpu", "memory", "files", "hsa",
                                      "worker"}
    assert all(r["blocked"] for r in report["attacks"].values()), report["attacks"]
    layers.set_policy("best")
    layers.disable("syscalls", "failed in the worker: seccomp: turned off by the test")
    assert main(["sandbox", "check"]) == 1
    assert "layers off that this policy wants on: syscalls" in capsys.readouterr().err


def test_an_interpreter_under_tmp_stays_visible_in_the_namespace(monkeypatch, tmp_path):
    """bwrap mounts an empty /tmp; a virtualenv under /tmp (a CI checkout there) is bound back read-only, before the
    worker's own folder. Before: bwrap could not exec the interpreter and the namespaces layer was off there."""
    venv = tmp_path / "venv"
    venv.mkdir()
    assert str(venv).startswith("/tmp/"), "pytest's tmp_path is under /tmp on the machines this runs on"
    monkeypatch.setattr(layers.sys, "prefix", str(venv))
    monkeypatch.setitem(layers._STATE, "bwrap", {"path": "/usr/bin/bwrap"})
    args = layers.bwrap_args(str(tmp_path / "home"), keep_caps=False)
    tmpfs = args.index("--tmpfs")
    bind = [i for i in range(len(args) - 2) if args[i:i + 3] == ["--ro-bind", str(venv), str(venv)]]
    assert bind and bind[0] > tmpfs and bind[0] < args.index("--chdir"), args


def test_the_bwrap_probe_run_ahead_is_the_one_status_takes(monkeypatch, fresh_policy):
    """``probe_ahead`` runs the bwrap probe in its own thread (so ``hsa augment`` reads its recipe meanwhile), and
    ``status`` takes that result instead of probing again; nothing is started for ``off`` or once the status is
    known."""
    import threading

    ran: list[str] = []

    def fake() -> tuple:
        ran.append(threading.current_thread().name)
        return "bubblewrap (/x/bwrap): made up", None, "/x/bwrap"

    layers.reset()
    monkeypatch.setattr(layers, "_try_bwrap", fake)
    layers.probe_ahead("off")
    assert "thread" not in layers._AHEAD
    layers.set_policy("best")
    layers.probe_ahead("best")
    st = layers.status()
    assert ran == ["hsa-bwrap-probe"]  # once, in the thread: status did not probe again
    assert st.layers["namespaces"] == {"on": True, "how": "bubblewrap (/x/bwrap): made up"}
    assert layers._STATE["bwrap"] == {"path": "/x/bwrap"}
    layers.probe_ahead("best")  # the status is known: nothing to run ahead
    assert "thread" not in layers._AHEAD and ran == ["hsa-bwrap-probe"]
    layers.reset()
    st = layers.status()  # without a probe ahead: run in this thread
    assert ran == ["hsa-bwrap-probe", threading.current_thread().name]
