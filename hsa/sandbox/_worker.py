"""The hook worker: the program a sandbox process runs (``python -s -S -B -P -c <this file's text> CONFIG``).

It uses the standard library only, and imports nothing of hsa. Before it reads any hook it confines itself with
what ``CONFIG`` (JSON, built by :mod:`hsa.sandbox.layers`) asks for, in this order: the unprivileged identity
(``setgroups([])``, ``setresgid``, ``setresuid``), hard limits (address space, CPU, file size 0, open files,
processes 0: set after the identity switch, so that ``RLIMIT_NPROC`` counts the new uid), ``no_new_privs``, the
Landlock ruleset hsa built (one ``landlock_restrict_self`` on the inherited ruleset descriptor) and the seccomp
filter hsa compiled with libseccomp (one ``prctl(PR_SET_SECCOMP)``). It then writes one line saying what took
effect and serves hook calls, one JSON line each way, until its input closes.

Nothing here stops a hook: the time limit is kept by hsa, which kills the worker's whole process group when an
answer is late (a hook cannot catch that), and the hard ``RLIMIT_CPU`` ends a worker whose parent is gone.
"""

import builtins
import io
import os
import resource
import sys
import types

try:  # the codec of the json module, without the module: ``import json`` also loads re, enum, functools and
    import _json  # collections (about a third of a worker's start), which a hook that needs them imports itself

    class _Decoding:  # what json.JSONDecoder() gives the C scanner
        strict, object_hook, object_pairs_hook = True, None, None
        parse_float, parse_int = float, int
        parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__

    _SCAN = _json.make_scanner(_Decoding())

    def _no_default(o):
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    def _loads(text):
        """``json.loads`` of one JSON value that hsa wrote (str or UTF-8 bytes)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogatepass")
        value, end = _SCAN(text, 0)
        if text[end:].strip():
            raise ValueError(f"extra data after the JSON value at {end}")
        return value

    def _dumps(value, ascii=True):
        """``json.dumps(value)`` (``ensure_ascii=False`` when not ``ascii``), byte for byte: the C encoder that
        json.JSONEncoder makes, with the same arguments (a fresh one each time: its circular-reference markers)."""
        strings = _json.encode_basestring_ascii if ascii else _json.encode_basestring
        encode = _json.make_encoder({}, _no_default, strings, None, ": ", ", ", False, False, True)
        return "".join(encode(value, 0))

    # the C codec's arguments are CPython's internals: an interpreter that takes others gets the json module
    if _dumps({"a": [1, 1.5, "\u00e9", None, True]}, ascii=False) != '{"a": [1, 1.5, "\u00e9", null, true]}' or \
            _loads(b'{"a": [1, 1.5, "\\u00e9", null, true]}\n') != {"a": [1, 1.5, "\u00e9", None, True]}:
        raise ImportError("the C codec does not write or read as json does")
except Exception:  # noqa: BLE001 - no C codec, or one that takes other arguments
    import json

    def _loads(text):
        return json.loads(text)

    def _dumps(value, ascii=True):
        return json.dumps(value, ensure_ascii=ascii, allow_nan=True)

CONFIG = _loads(sys.argv[1]) if __name__ == "__main__" else {}


def _confine(cfg):
    """Apply the layers of ``cfg``; returns {layer: "ok" | error text}."""
    done = {}
    uid, gid = cfg.get("uid"), cfg.get("gid")
    if uid is not None:
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            done["identity"] = "ok" if os.getresuid() == (uid, uid, uid) else "uid did not change"
        except OSError as exc:
            done["identity"] = f"{type(exc).__name__}: {exc}"
    parent = cfg.get("parent")
    if parent is not None:  # no bubblewrap (whose --die-with-parent does it): die with hsa; set after setresuid,
        import ctypes  # which clears it

        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != parent:  # hsa died before the call
            os._exit(1)
    lim = cfg["limits"]
    try:
        for name, value in (("RLIMIT_CORE", 0), ("RLIMIT_FSIZE", 0), ("RLIMIT_NOFILE", lim["nofile"]),
                            ("RLIMIT_AS", lim["memory"]), ("RLIMIT_CPU", lim["cpu"]), ("RLIMIT_NPROC", 0)):
            resource.setrlimit(getattr(resource, name), (value, value))
        done["limits"] = "ok"
    except (OSError, ValueError) as exc:
        done["limits"] = f"{type(exc).__name__}: {exc}"
    if cfg.get("landlock_fd") is None and not cfg.get("seccomp") and not cfg.get("no_new_privs"):
        return done
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def fail(what):
        err = ctypes.get_errno()
        return f"{what}: {os.strerror(err)} (errno {err})"

    # no_new_privs: no setuid binary or file capability can give this process (or a child) privileges again;
    # Landlock and seccomp both need it when the process is not privileged. Not dumpable: /proc/<pid> of the worker
    # belongs to root and a process of the same uid cannot attach to it.
    nnp = libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    done["no_new_privs"] = "ok" if nnp else fail("prctl(PR_SET_NO_NEW_PRIVS)")
    fd = cfg.get("landlock_fd")
    if fd is not None:
        ok = libc.syscall(446, fd, 0) == 0  # landlock_restrict_self(ruleset_fd, 0)
        done["landlock"] = "ok" if ok else fail("landlock_restrict_self")
        os.close(fd)
    if cfg.get("seccomp"):
        prog_bytes = bytes.fromhex(cfg["seccomp"])

        class SockFprog(ctypes.Structure):  # struct sock_fprog
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        buf = ctypes.create_string_buffer(prog_bytes, len(prog_bytes))
        prog = SockFprog(len(prog_bytes) // 8, ctypes.addressof(buf))
        ok = libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        done["seccomp"] = "ok" if ok else fail("prctl(PR_SET_SECCOMP)")
    return done


def _agents_stub():
    try:
        import agents  # noqa: F401 (the real SDK, when installed)
        return
    except ImportError:
        pass
    m = types.ModuleType("agents")

    class _Base:
        def __class_getitem__(cls, item):
            return cls

    class RunHooks(_Base):
        pass

    class AgentHooks(_Base):
        pass

    class RunContextWrapper(_Base):
        def __init__(self, context=None):
            self.context = context

    class Agent(_Base):
        def __init__(self, name="assistant", **kw):
            self.name = name
            for k, v in kw.items():
                setattr(self, k, v)

    class Tool(_Base):
        def __init__(self, name="", description=""):
            self.name = name
            self.description = description

    class ToolContext(RunContextWrapper):
        pass

    for cls in (RunHooks, AgentHooks, RunContextWrapper, Agent, Tool, ToolContext):
        setattr(m, cls.__name__, cls)
    m.FunctionTool = Tool
    m.RunHooksBase = RunHooks
    m.AgentHooksBase = AgentHooks
    m.TContext = object
    sys.modules["agents"] = m
    lc = types.ModuleType("agents.lifecycle")
    lc.RunHooks, lc.AgentHooks = RunHooks, AgentHooks
    sys.modules["agents.lifecycle"] = lc


def _jsonable(v, depth=0):
    if depth > 50:
        return "<deep>"
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x, depth + 1) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_jsonable(x, depth + 1) for x in v), key=repr)
    return {"__object__": type(v).__name__}


CODES = {}
# code that did not compile (a SyntaxError, a RecursionError of deep nesting), by key: hsa sends a source once a
# worker, so every later call of it says the same, not only the first
UNCOMPILED = {}


def _call(req):
    key = req["k"]
    if key in UNCOMPILED:
        error, args = UNCOMPILED[key]
        raise error(*args)
    if key not in CODES:
        path = req.get("file") or os.path.join(os.getcwd(), "hook.py")
        try:
            CODES[key] = (compile(req["src"], path, "exec"), req["entry"], req["style"], path, req.get("dir"))
        except Exception as e:
            UNCOMPILED[key] = type(e), e.args
            raise
    code, entry, style, path, folder = CODES[key]
    payload = req["p"]
    out_buf, err_buf = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdout, sys.stderr = out_buf, err_buf
    if folder:  # the hook's sibling files: importable for this call only, fresh each call
        sys.path.insert(0, folder)
    try:
        return _run_hook(code, entry, style, path, payload, out_buf, err_buf)
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        if folder:
            sys.path.remove(folder)
            for name, mod in list(sys.modules.items()):
                f = getattr(mod, "__file__", None) or ""
                if f.startswith(folder + os.sep):
                    del sys.modules[name]


def _run_hook(code, entry, style, path, payload, out_buf, err_buf):
    if style == "script":
        import json  # what a script hook reads and writes is the json module's, as a real harness's would be

        sys.stdin = io.StringIO(json.dumps(payload))
        sys.argv = [path]
        ns = {"__name__": "__main__", "__builtins__": builtins, "__file__": path}
        code_ = 0
        try:
            exec(code, ns)
        except SystemExit as e:
            c = e.code
            if c is None:
                code_ = 0
            elif isinstance(c, int):
                code_ = c
            else:
                err_buf.write(str(c) + "\n")
                code_ = 1
        text = out_buf.getvalue()
        try:
            parsed = json.loads(text) if text.strip().startswith("{") else text
        except ValueError:
            parsed = text
        return {"exit_code": code_, "stdout": parsed, "stderr": err_buf.getvalue()}
    ns = {"__name__": "__hook__", "__builtins__": builtins, "__file__": path}
    if style == "method":
        _agents_stub()
    exec(code, ns)
    if style == "function":
        return ns[entry](payload)
    cls_name, _, meth = entry.partition(".")
    import asyncio
    import inspect

    obj = ns[cls_name]()
    fn = getattr(obj, meth)
    agents = sys.modules["agents"]
    ctx = agents.RunContextWrapper(payload.get("context"))
    ctx.tool_name = payload.get("tool_name")
    import json

    ctx.tool_arguments = json.dumps(payload.get("tool_input", {}))
    ctx.tool_call_id = payload.get("tool_call_id", "call_1")
    args = []
    params = list(inspect.signature(fn).parameters.values())
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if i == 0:
            args.append(ctx)
        elif p.name == "tool":
            args.append(agents.Tool(payload.get("tool_name", ""), payload.get("tool_description", "")))
        elif p.name in ("agent", "from_agent", "to_agent", "source"):
            args.append(agents.Agent(payload.get(p.name + "_name", payload.get("agent_name", "assistant"))))
        else:
            args.append(payload.get(p.name, payload.get("result")))
    ret = fn(*args)
    if inspect.iscoroutine(ret):
        ret = asyncio.run(ret)
    return {"return": ret, "context": ctx.context}


def main():
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stdin = io.StringIO("")
    os.environ.pop("PWD", None)  # bwrap sets it: the environment is the one hsa built, and nothing else
    done = _confine(CONFIG)
    proto_out.write(_dumps({"ready": done, "pid": os.getpid()}).encode() + b"\n")
    proto_out.flush()
    if any(v != "ok" for v in done.values()):
        return  # hsa asked for a layer that did not take: serve nothing (hsa says which, and why)
    while True:
        line = proto_in.readline()
        if not line:
            return
        req = _loads(line)
        fatal = False
        try:
            resp = {"ok": True, "v": _jsonable(_call(req))}
        except MemoryError:
            resp = {"ok": False, "e": "memory limit", "d": "the hook ran out of its memory limit", "lim": True}
            fatal = True
        except RecursionError as e:
            resp = {"ok": False, "e": "RecursionError", "d": str(e)[:200]}
        except BaseException as e:
            resp = {"ok": False, "e": type(e).__name__, "d": str(e)[:200]}
        try:
            data = _dumps(resp, ascii=False)
        except (TypeError, ValueError) as e:
            data = _dumps({"ok": False, "e": "output limit", "d": str(e)[:200], "lim": True})
        proto_out.write(data.encode("utf-8") + b"\n")
        proto_out.flush()
        if fatal:
            return


if __name__ == "__main__":
    main()
