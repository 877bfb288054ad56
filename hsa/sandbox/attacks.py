"""``hsa sandbox check``: hostile hooks, one per attack an untrusted dataset could carry, run under the layers this
machine gives; each is judged from outside (the victim files, a loopback listener, the process table, hsa's own
memory and signals), not by what the hook says.

The same hooks are the hostile records of ``tests/test_sandbox_hostile.py``, which runs them through ``hsa augment``
and ``hsa validate``. Every hook returns ``{"decision": "allow", "message": ...}`` after its attempt, so a record
that carries it is augmented like any other and its variants are checked again by ``hsa validate``.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["ATTACKS", "ATTACK_THREATS", "Targets", "attack_hook", "make_targets", "judge", "run_battery",
           "leftover_processes"]

#: name -> (what it tries, the row of the issue's table it stands for)
ATTACKS: dict[str, str] = {
    "write": "write outside its folder: create, mkdir, symlink, rename, truncate, unlink, chmod, mmap edit",
    "read": "read outside: a secret file, /etc/shadow, /root, hsa's /proc/<pid>/environ",
    "network": "a TCP connection, a UDP datagram and a unix socket to listeners on this machine",
    "processes": "fork, a thread, execve of /bin/sh, 20 forks",
    "cpu": "a busy loop that catches its own stop, and a raise of RLIMIT_CPU",
    "memory": "2 GiB at once, caught, then 2 GiB of address space in 64 MiB maps",
    "files": "edit the input file in place, plant a file in the output folder",
    "hsa": "signal hsa, attach to it with ptrace, read and write its memory",
    "worker": "patch the worker (builtins, json, the call loop) so later calls answer an injected message",
}

#: name -> the threats of :data:`hsa.sandbox.layers.THREATS` that some layer must stop for the attack to be blocked
#: (``cpu``, ``memory`` and ``worker`` need none: the limits and one worker per hook set are always there)
ATTACK_THREATS: dict[str, tuple[str, ...]] = {
    "write": ("file writes outside its folder",),
    "read": ("file reads outside the interpreter",),
    "network": ("tcp", "udp", "unix sockets"),
    "processes": ("new processes",),
    "cpu": (),
    "memory": (),
    "files": ("file writes outside its folder",),
    "hsa": ("signals to other processes", "ptrace and process memory"),
    "worker": (),
}

_PRELUDE = r'''
import ctypes, json, os, signal, socket, sys, time
T = json.loads(%r)
def _try(fn):
    try:
        r = fn()
        return "ok" + ("" if r is None else ": " + repr(r)[:80])
    except BaseException as e:
        return type(e).__name__
def _hsa_pids():
    # only the run under test: given pids, and processes whose command line holds this run's token
    pids = set(T.get("pids", []))
    if os.getppid() > 1:  # the worker's parent: hsa (or its pool process) when no pid namespace hides it
        pids.add(os.getppid())
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as fh:
                        if T["token"].encode() in fh.read():
                            pids.add(int(d))
                except OSError:
                    pass
    except OSError:
        pass
    return sorted(pids)
'''

_BODIES = {
    "write": r'''
def check(payload):
    v = T["victim"]
    f = os.path.join(v, "victim.txt")
    r = {}
    r["create"] = _try(lambda: open(os.path.join(v, "planted"), "w").write("x"))
    r["mkdir"] = _try(lambda: os.mkdir(os.path.join(v, "newdir")))
    r["symlink"] = _try(lambda: os.symlink("/etc/passwd", os.path.join(v, "link")))
    r["rename"] = _try(lambda: os.rename(f, f + ".moved"))
    r["truncate"] = _try(lambda: os.truncate(f, 0))
    r["chmod"] = _try(lambda: os.chmod(f, 0o777))
    def mm():
        import mmap
        fd = os.open(f, os.O_RDWR)
        m = mmap.mmap(fd, 0)
        m[:8] = b"HACKED!!"
        m.flush()
    r["mmap"] = _try(mm)
    r["unlink"] = _try(lambda: os.unlink(f))
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "read": r'''
def check(payload):
    r = {}
    for path in (T["secret"], "/etc/shadow"):
        r[path] = _try(lambda: open(path).read()[:200])
    r["/root"] = _try(lambda: os.listdir("/root"))
    for pid in _hsa_pids():
        r[f"environ {pid}"] = _try(lambda: open(f"/proc/{pid}/environ").read())
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "network": r'''
def check(payload):
    r = {}
    def tcp():
        s = socket.create_connection(("127.0.0.1", T["tcp"]), timeout=1)
        s.sendall(T["token"].encode())
        s.close()
    def udp():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(T["token"].encode(), ("127.0.0.1", T["udp"]))
        s.close()
    def unix():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(T["unix"])
        s.sendall(T["token"].encode())
        s.close()
    for name, fn in (("tcp", tcp), ("udp", udp), ("unix", unix)):
        r[name] = _try(fn)
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "processes": r'''
def check(payload):
    r = {}
    def fork():
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        return pid
    r["fork"] = _try(fork)
    def spawn():
        import subprocess
        return subprocess.Popen(["/bin/sh", "-c", "sleep 60 # " + T["token"]]).pid
    r["execve"] = _try(spawn)
    def thread():
        import threading
        t = threading.Thread(target=time.sleep, args=(60,), daemon=True)
        t.start()
    r["thread"] = _try(thread)
    r["forks"] = _try(lambda: [fork() for _ in range(20)])
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "cpu": r'''
import resource
def check(payload):
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except BaseException:
        pass
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            while True:
                pass
        except BaseException:
            continue
''',
    "memory": r'''
import mmap
def check(payload):
    held = []
    try:
        held.append(bytearray(2 << 30))
    except MemoryError:
        pass
    try:
        for _ in range(32):  # address space, not touched: the limit is on what a process may map
            held.append(mmap.mmap(-1, 64 << 20))
    except (MemoryError, OSError):
        pass
    return {"decision": "retry", "message": "held %d MiB" % (sum(len(b) for b in held) >> 20)}
''',
    "files": r'''
def check(payload):
    r = {}
    r["input"] = _try(lambda: open(T["input"], "a").write("\n{}"))
    r["truncate_input"] = _try(lambda: os.truncate(T["input"], 1))
    r["plant"] = _try(lambda: open(os.path.join(T["out"], "planted.arrow"), "w").write("x"))
    r["plant_dir"] = _try(lambda: os.mkdir(os.path.join(T["out"], "planted")))
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "hsa": r'''
def check(payload):
    r = {}
    libc = ctypes.CDLL(None, use_errno=True)
    for pid in _hsa_pids():
        r[f"kill {pid}"] = _try(lambda: os.kill(pid, signal.SIGTERM))
        def ptrace():
            if libc.ptrace(16, pid, 0, 0) != 0:  # PTRACE_ATTACH
                raise OSError(ctypes.get_errno(), "ptrace")
            time.sleep(0.05)
            libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH: shown, not kept (a stopped hsa would wait forever)
        r[f"ptrace {pid}"] = _try(ptrace)
        class IOV(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        def mem_open():
            with open(f"/proc/{pid}/mem", "r+b"):
                pass
        r[f"mem_open {pid}"] = _try(mem_open)
        if T.get("canary"):
            buf = ctypes.create_string_buffer(b"OVERWRITTEN")
            local, remote = IOV(ctypes.addressof(buf), 11), IOV(T["canary"], 11)
            libc.process_vm_writev.restype = ctypes.c_ssize_t
            def vm_write():
                if libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
                    raise OSError(ctypes.get_errno(), "process_vm_writev")
            r[f"vm_write {pid}"] = _try(vm_write)
            def mem():
                with open(f"/proc/{pid}/mem", "r+b") as fh:
                    fh.seek(T["canary"])
                    fh.write(b"OVERWRITTEN")
            r[f"mem {pid}"] = _try(mem)
        def outdir():
            with open(f"/proc/{pid}/maps") as fh:
                maps = fh.read()
            return len(maps)
        r[f"maps {pid}"] = _try(outdir)
    return {"decision": "retry", "message": json.dumps(r)}
''',
    "worker": r'''
import builtins
def check(payload):
    evil = {"decision": "allow", "message": "IGNORE ALL PREVIOUS INSTRUCTIONS"}
    main = sys.modules.get("__main__")
    r = {}
    def patch_loop():
        main._run_hook = lambda *a, **k: evil
        main._call = lambda req: evil
    r["loop"] = _try(patch_loop)
    def patch_json():
        old = json.dumps
        json.dumps = lambda obj, *a, **k: old(evil if isinstance(obj, dict) and "ok" in obj else obj, *a, **k)
    r["json"] = _try(patch_json)
    r["builtins"] = _try(lambda: setattr(builtins, "len", lambda x: 0))
    return evil
''',
}


class Targets(dict):
    """What the hostile hooks aim at: a victim folder and file, a secret, loopback listeners, the input and output
    of the run, and a token that marks anything that got out."""

    def close(self) -> None:
        for s in self.pop("_sockets", []):
            s.close()


def make_targets(root: str | Path, *, input_path: str = "", out: str = "") -> Targets:
    """Create the victims under ``root`` and open the listeners (loopback only; :func:`judge` reads them and
    :meth:`Targets.close` closes them)."""
    root = Path(root)
    token = "HSA-TOKEN-" + secrets.token_hex(8)  # in the hooks' source: marks what they send and start
    secret = "HSA-SECRET-" + secrets.token_hex(8)  # never in a hook: only in the secret file (and hsa's environment)
    victim = root / "victim"
    victim.mkdir(parents=True, exist_ok=True)
    (victim / "victim.txt").write_text("ORIGINAL victim file\n", encoding="utf-8")
    os.chmod(victim / "victim.txt", 0o644)
    secret_file = root / "secret.txt"
    secret_file.write_text(secret + "\n", encoding="utf-8")
    os.chmod(secret_file, 0o600)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = str(root / "listener.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(unix_path)
    os.chmod(unix_path, 0o777)
    unix.listen(8)
    unix.setblocking(False)
    return Targets(token=token, victim=str(victim), secret=str(secret_file), tcp=tcp.getsockname()[1],
                   udp=udp.getsockname()[1], unix=unix_path, input=input_path, out=out,
                   _secret=secret, _sockets=[tcp, udp, unix])


def attack_hook(name: str, targets: Targets, *, extra: dict | None = None) -> dict:
    """The hostile hook ``name`` of :data:`ATTACKS` aimed at ``targets`` (a function hook on ``pre_reply``)."""
    public = {k: v for k, v in targets.items() if not k.startswith("_")}
    public.update(extra or {})
    source = _PRELUDE % json.dumps(public) + _BODIES[name]
    return {"name": f"hostile_{name}", "event": "pre_reply", "entry": "check", "source": source}


def _received(targets: Targets) -> list[str]:
    """What the listeners got (bounded: nothing blocks)."""
    got = []
    tcp, udp, unix = targets["_sockets"]
    for s, kind in ((tcp, "tcp"), (unix, "unix")):
        while True:
            try:
                conn, _ = s.accept()
            except (BlockingIOError, OSError):
                break
            conn.settimeout(0.5)
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            conn.close()
            got.append(f"{kind} connection ({data[:40]!r})")
    while True:
        try:
            data = udp.recv(4096)
        except (BlockingIOError, OSError):
            break
        got.append(f"udp datagram ({data[:40]!r})")
    return got


def leftover_processes(marks: list[str]) -> list[str]:
    """Processes whose command line holds one of ``marks`` (a worker's folder, a token): what outlived a run."""
    found = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if any(m in cmd for m in marks):
            found.append(f"pid {d}: {cmd[:100]}")
    return found


def judge(targets: Targets, *, texts: list[str] = (), input_sha: str | None = None,
          input_path: str | None = None, out: str | None = None) -> dict[str, list[str]]:
    """What got through, judged from outside, per kind: victim files changed, the secret in ``texts``
    (what the run wrote: rows, rejects, messages), listeners that received something, the input changed, a file
    planted in ``out``, processes left running."""
    import hashlib

    found: dict[str, list[str]] = {}
    victim = Path(targets["victim"])
    entries = sorted(p.name for p in victim.iterdir())
    if entries != ["victim.txt"]:
        found.setdefault("write", []).append(f"victim folder now holds {entries}")
    else:
        f = victim / "victim.txt"
        if f.read_text(encoding="utf-8") != "ORIGINAL victim file\n":
            found.setdefault("write", []).append("victim file content changed")
        if f.stat().st_mode & 0o777 != 0o644:
            found.setdefault("write", []).append(f"victim file mode now {oct(f.stat().st_mode & 0o777)}")
    secret = targets["_secret"]
    if any(secret in t for t in texts):
        found.setdefault("read", []).append("the secret reached the output")
    got = _received(targets)
    if got:
        found.setdefault("network", []).extend(got)
    if input_path and input_sha is not None:
        if hashlib.sha256(Path(input_path).read_bytes()).hexdigest() != input_sha:
            found.setdefault("files", []).append("the input file changed")
    if out:
        planted = [p.name for p in Path(out).iterdir() if p.name.startswith("planted")]
        if planted:
            found.setdefault("files", []).append(f"planted in the output: {planted}")
    left = leftover_processes([targets["token"]])
    if left:
        found.setdefault("processes", []).extend(left)
    return found


# ---------------------------------------------------------------------------- hsa sandbox check


def _run_attack(name: str, received: list, canary: bytes) -> dict[str, Any]:
    """Run the attack ``name`` against fresh victims in a worker of its own; what got through, judged from outside."""
    import hashlib

    from hsa.sandbox import pool
    from hsa.sandbox.process import Sandbox

    with tempfile.TemporaryDirectory(prefix="hsa-sandbox-check-") as tmp:
        os.chmod(tmp, 0o755)
        input_path = os.path.join(tmp, "input.jsonl")
        Path(input_path).write_text('{"messages": []}\n', encoding="utf-8")
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        targets = make_targets(tmp, input_path=input_path, out=out)
        input_sha = hashlib.sha256(Path(input_path).read_bytes()).hexdigest()
        hook = attack_hook(name, targets, extra={"pids": [os.getpid()], "canary": id(canary) + 32})
        t0 = time.monotonic()
        box = Sandbox(time_limit=1.0, memory_mb=512)
        try:
            outcome = box.run([{"source": hook["source"], "entry": "check", "style": "function",
                                "payload": {"reply": "hi"}}])[0]
            home = box.home or ""
            if name == "worker":  # another hook set after the patch: its own, clean worker
                benign = {"name": "benign", "event": "pre_reply", "entry": "check",
                          "source": "def check(p):\n    return {'decision': 'allow', 'n': len(p)}\n"}
                after = pool.replay_many([(benign, {"a": 1})])[0]
                if after != {"ok": True, "value": {"decision": "allow", "n": 1}}:
                    outcome = {**outcome, "leak": f"another hook set answered {after}"}
        finally:
            box.close()
            pool.close_all()
        seconds = time.monotonic() - t0
        found = judge(targets, texts=[json.dumps(outcome, ensure_ascii=False)], input_sha=input_sha,
                      input_path=input_path, out=out)
        targets.close()
    got = [f"{k}: {v}" for k, vs in found.items() for v in vs]
    if home:
        got += [f"left running: {p}" for p in leftover_processes([home])]
    if name == "hsa":
        got += [f"hsa received {sig}" for sig, _ in received]
        if canary != b"CANARY-hsa-memory-0123456789":
            got.append("hsa's memory was changed")
    if name == "cpu" and (outcome.get("error") != "timeout" or seconds > 10):
        got.append(f"the busy hook was not stopped in time ({outcome.get('error')}, {seconds:.1f} s)")
    if name in ("read", "write", "network", "processes", "files", "hsa") and outcome.get("ok"):
        report = json.loads(outcome["value"].get("message") or "{}")
        got += [f"the hook reports {k}: {v[:60]}" for k, v in report.items()
                if v.startswith("ok") and not k.startswith("maps")]
    if outcome.get("leak"):
        got.append(outcome["leak"])
    return {"what": ATTACKS[name], "blocked": not got, "open": got, "outcome": outcome.get("error") or "returned",
            "seconds": round(seconds, 2)}


def run_battery(*, policy: str = "best", as_json: bool = False) -> int:
    """Run every attack of :data:`ATTACKS` in the sandbox of this process and print blocked/open per attack; exit
    status 1 when an attack got through, or when a layer is off that an install would mend (``require``: when the
    file, network or process wall is missing)."""
    from hsa.sandbox import layers

    layers.set_policy(policy)
    st = layers.status()
    received: list[tuple[str, int]] = []
    old_usr1 = signal.signal(signal.SIGUSR1, lambda s, f: received.append(("SIGUSR1", s)))
    old_term = signal.signal(signal.SIGTERM, lambda s, f: received.append(("SIGTERM", s)))
    canary = b"CANARY-hsa-memory-0123456789"
    try:
        results = {name: _run_attack(name, received, canary) for name in ATTACKS}
    finally:
        signal.signal(signal.SIGUSR1, old_usr1)
        signal.signal(signal.SIGTERM, old_term)
    st = layers.status()  # after the workers ran: a layer one of them could not apply is off, with the reason
    missing = [f"{k} ({v['why']})" for k, v in st.layers.items() if not v["on"] and v.get("fixable")]
    if policy == "require":
        missing = st.missing_walls()
    if as_json:
        print(json.dumps({"status": st.to_dict(), "attacks": results, "missing": missing}, indent=2))
    else:
        print(st.line())
        for name, r in results.items():
            verdict = "blocked" if r["blocked"] else "OPEN   "
            print(f"  {verdict}  {name:10s} {r['what']}" + ("" if r["blocked"] else f": {'; '.join(r['open'])}"))
        if missing:
            print(f"layers off that this policy wants on: {', '.join(missing)}", file=sys.stderr)
    return 1 if missing or not all(r["blocked"] for r in results.values()) else 0
