"""The hook sandbox: limits, isolation, batching and caching, and the invariant-7 check."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import sandbox as sb
from hsa.hooks_model import decision_of
from hsa.records import normalize
from hsa.renames import rename_tools
from tests.conftest import FIXTURES


def fn(source: str, payload: dict | None = None, entry: str = "f") -> dict:
    return {"source": source, "entry": entry, "style": "function", "payload": payload or {}}


def test_runs_a_function_hook_and_returns_json(box):
    """A function hook's return value comes back as JSON."""
    out = box.run([fn("def f(p):\n    return {'decision': 'allow', 'n': len(p), 's': {'b', 'a'}}\n", {"x": 1})])
    assert out == [{"ok": True, "value": {"decision": "allow", "n": 1, "s": ["a", "b"]}}]


def test_a_hook_that_raises_is_an_error_outcome_not_a_limit(box):
    """An exception is part of the hook's behaviour: reported by type, no limit flag."""
    out = box.run([fn("def f(p):\n    return p['missing']\n")])[0]
    assert out["ok"] is False and out["error"] == "KeyError" and not out.get("limit")


def test_hang_is_stopped_and_the_next_call_still_runs(box):
    """A hook that loops forever is stopped at the time limit; the worker keeps serving."""
    out = box.run([fn("def f(p):\n    while True:\n        pass\n"), fn("def f(p):\n    return 7\n")])
    assert out[0]["error"] == "timeout" and out[0]["limit"] is True
    assert out[1] == {"ok": True, "value": 7}


def test_stuck_in_c_code_is_killed_by_the_parent(box):
    """Catastrophic regex backtracking (no Python bytecode runs) is killed from outside."""
    src = "import re\ndef f(p):\n    return bool(re.match(r'(a+)+$', 'a' * 64 + 'b'))\n"
    out = box.run([fn(src), fn("def f(p):\n    return 1\n")])
    assert out[0]["limit"] is True and out[0]["error"] in ("timeout", "cpu limit")
    assert out[1]["value"] == 1


def test_memory_limit(box):
    """Allocating beyond the address-space limit is a limit outcome."""
    out = box.run([fn("def f(p):\n    return len(bytearray(2 * 1024 ** 3))\n")])[0]
    assert out["error"] == "memory limit" and out["limit"] is True


def test_crash_is_reported_and_the_worker_restarts(box):
    """``os._exit`` kills the worker: a crash outcome, then a fresh worker."""
    box.run([fn("def f(p):\n    return 0\n")])
    starts = box.starts
    out = box.run([fn("import os\ndef f(p):\n    os._exit(3)\n"), fn("def f(p):\n    return 2\n")])
    assert out[0]["error"] == "crash" and out[1]["value"] == 2 and box.starts == starts + 1


def test_no_secret_reaches_a_hook():
    """The worker's environment is built from nothing: a parent's API key is not visible."""
    os.environ["HSA_TEST_API_KEY"] = "sk-secret"
    b = sb.Sandbox(time_limit=2)
    try:
        env = b.run([fn("import os\ndef f(p):\n    return dict(os.environ)\n")])[0]["value"]
    finally:
        b.close()
        del os.environ["HSA_TEST_API_KEY"]
    assert "HSA_TEST_API_KEY" not in env and "sk-secret" not in json.dumps(env)
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONHASHSEED"}


def test_isolated_flags_and_no_file_writes(box):
    """No user site, no site-packages, safe path; file contents cannot be written (RLIMIT_FSIZE 0)."""
    src = ("import sys, os\ndef f(p):\n    fl = sys.flags\n    try:\n        with open('x.txt', 'w') as fh:\n"
           "            fh.write('data')\n        wrote = os.path.getsize('x.txt')\n    except OSError:\n"
           "        wrote = 0\n    return [fl.no_user_site, fl.no_site, fl.safe_path, wrote]\n")
    assert box.run([fn(src)])[0]["value"] == [1, 1, True, 0]


def test_fresh_namespace_for_every_call(box):
    """Module state does not leak from one call to the next."""
    src = "N = [0]\ndef f(p):\n    N[0] += 1\n    return N[0]\n"
    assert [o["value"] for o in box.run([fn(src), fn(src)])] == [1, 1]


def test_set_order_is_the_same_in_every_worker():
    """PYTHONHASHSEED is fixed, so a hook that lists a set gives the same order in any worker."""
    src = "def f(p):\n    return list({'item_qa', 'promo_qa', 'logistics_qa', 'after_sales_qa', 'x1', 'x2'})\n"
    a, b = sb.Sandbox(), sb.Sandbox()
    try:
        assert a.run([fn(src)]) == b.run([fn(src)])
    finally:
        a.close()
        b.close()


def test_a_worker_loads_neither_json_nor_re_before_its_hooks():
    """The worker speaks JSON through the C codec alone: ``import json`` (and re, enum, functools with it) is a
    third of a worker's start, paid once per hook set, so only a hook that imports them pays it."""
    b = sb.Sandbox(time_limit=2)
    try:
        src = ("import sys\ndef f(p):\n"
               "    return sorted(m for m in ('json', 're', 'enum', 'functools') if m in sys.modules)\n")
        assert b.run([fn(src, {"x": [1.5, "é", None]})])[0] == {"ok": True, "value": []}
    finally:
        b.close()


_ODD = st.sampled_from("\"\\\n\x00\x7f\ud83d\udca9\u2028")  # escapes, controls, lone surrogates
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(st.characters(codec="utf-8") | _ODD),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_the_workers_codec_writes_and_reads_what_the_json_module_does(value):
    """The worker's own ``_dumps``/``_loads`` give json.dumps's bytes (both ``ensure_ascii`` settings) and read back
    what json.loads reads, NaN and big integers included."""
    from hsa.sandbox import _worker as w

    for ascii in (True, False):
        text = w._dumps(value, ascii=ascii)
        assert text == json.dumps(value, ensure_ascii=ascii, allow_nan=True)
        assert json.dumps(w._loads(text)) == json.dumps(json.loads(text))
        assert json.dumps(w._loads(text.encode("utf-8", "surrogatepass") + b"\n")) == json.dumps(json.loads(text))


def test_the_workers_codec_fails_as_the_json_module_does():
    """What json.dumps refuses the worker refuses with the same error, and a refused value leaves nothing behind
    for the next one (its circular-reference markers are its own)."""
    from hsa.sandbox import _worker as w

    loop: list = []
    loop.append(loop)
    for bad in ({"s": {1, 2}}, loop, [object()]):
        try:
            json.dumps(bad)
        except (TypeError, ValueError) as e:
            expected = (type(e), str(e))
        try:
            w._dumps(bad)
        except (TypeError, ValueError) as e:
            assert (type(e), str(e)) == expected
        else:
            raise AssertionError(f"{bad!r} was written")
    same = [1, 2]
    assert w._dumps([same, same]) == "[[1, 2], [1, 2]]"
    try:
        w._loads('{"a": 1} x')
    except ValueError as e:
        assert "extra data" in str(e)
    else:
        raise AssertionError("trailing data was read")


def test_the_worker_takes_the_json_module_where_the_c_codec_differs(monkeypatch):
    """``_json``'s arguments are CPython's internals: where its encoder takes others (another interpreter, a later
    version), the worker's self-check sends it to the json module instead of failing every answer."""
    import _json
    import sys
    import types

    from hsa.sandbox.process import _worker_source

    def other_arguments(*args):
        raise TypeError("make_encoder() takes other arguments here")

    fake = types.ModuleType("_json")
    fake.__dict__.update({k: getattr(_json, k) for k in dir(_json) if not k.startswith("__")})
    fake.make_encoder = other_arguments
    monkeypatch.setitem(sys.modules, "_json", fake)
    ns: dict = {"__name__": "worker_probe"}
    exec(compile(_worker_source(), "_worker.py", "exec"), ns)
    assert "json" in ns and ns["_dumps"]({"a": [1.5, "é"]}, ascii=False) == '{"a": [1.5, "é"]}'
    assert ns["_loads"](b'{"a": NaN}\n')["a"] != ns["_loads"](b'{"a": NaN}\n')["a"]  # NaN, read by json


def test_claude_code_script_exit_2_blocks(box):
    """A command hook's exit code 2 with stderr becomes a deny decision carrying the stderr text."""
    src = ("import json, sys\nd = json.load(sys.stdin)\nif d['tool_name'] == 'Bash':\n"
           "    print('no shell', file=sys.stderr)\n    sys.exit(2)\n")
    hook = {"name": "g", "event": "pre_tool_use", "entry": "__main__", "source": src}
    out = box.run([{"source": src, "entry": "__main__", "style": "script",
                    "payload": {"tool_name": "Bash", "tool_input": {}}}])[0]
    assert out["value"]["exit_code"] == 2
    assert decision_of(hook, out) == {"decision": "deny", "message": "no shell"}


def test_claude_code_json_output(box):
    """``permissionDecision`` and ``updatedInput`` on stdout become the decision."""
    src = ("import json, sys\nd = json.load(sys.stdin)\nprint(json.dumps({'hookSpecificOutput': {"
           "'permissionDecision': 'allow', 'updatedInput': {**d['tool_input'], 'timeout': 30}}}))\n")
    hook = {"name": "g", "event": "pre_tool_use", "entry": "__main__", "source": src}
    out = box.run([{"source": src, "entry": "__main__", "style": "script",
                    "payload": {"tool_name": "Bash", "tool_input": {"command": "ls"}}}])[0]
    assert decision_of(hook, out) == {"decision": "allow", "updated_input": {"command": "ls", "timeout": 30}}


def test_agents_sdk_hooks_run_with_stub_objects(box):
    """An Agents SDK RunHooks method runs (async) with context/agent/tool stubs; context changes come back."""
    src = ("from agents import RunHooks\nclass H(RunHooks):\n"
           "    async def on_tool_start(self, context, agent, tool):\n"
           "        if tool.name == 'drop_table':\n            raise PermissionError('blocked')\n"
           "        context.context.setdefault('seen', []).append(tool.name)\n")
    call = {"source": src, "entry": "H.on_tool_start", "style": "method"}
    ok, blocked = box.run([{**call, "payload": {"tool_name": "ls", "tool_input": {}, "context": {}}},
                           {**call, "payload": {"tool_name": "drop_table", "tool_input": {}, "context": {}}}])
    assert ok["value"] == {"return": None, "context": {"seen": ["ls"]}}
    assert blocked["error"] == "PermissionError"


def test_replay_is_cached_per_source_and_payload():
    """Thousands of identical (hook, payload) calls execute once."""
    sb.reset_stats()
    hook = {"name": "h", "event": "pre_reply", "entry": "f", "source": "def f(p):\n    return len(p['reply'])\n"}
    outs = sb.replay_many([(hook, {"reply": "x" * (i % 3)}) for i in range(3000)])
    assert [o["value"] for o in outs[:3]] == [0, 1, 2]
    st = sb.stats()
    assert st["calls"] == 3000 and st["executed"] <= 3 and st["cache_hits"] >= 2997


def _fixture(i: int = 0) -> dict:
    return normalize(json.loads(FIXTURES.read_text().splitlines()[i]))


def test_check_hooks_passes_a_synced_variant():
    """Invariant 7 holds for a renamed fixture record (hooks run on mapped payloads)."""
    src = _fixture(0)
    var = rename_tools(src, {t["name"]: t["name"].upper() for t in src["tools"]})
    assert sb.check_hooks(src, var) == []


def test_check_hooks_catches_a_wrong_rewrite():
    """A hook whose literal was not renamed with its tool behaves differently, and is caught."""
    src = _fixture(0)
    var = rename_tools(src, {t["name"]: t["name"].upper() for t in src["tools"]})
    i = next(k for k, h in enumerate(var["hooks"]) if h["name"] == "check_tool_params")
    var["hooks"][i]["source"] = src["hooks"][i]["source"]  # the hook left as it was
    v = sb.check_hooks(src, var)
    assert v and v[0].invariant == "hooks" and v[0].reason == "rewritten hook behaves differently"


def test_check_hooks_rejects_a_hanging_hook():
    """A variant hook that hangs rejects the variant with the limit as the reason."""
    sb.configure(time_limit=0.5)
    try:
        src = _fixture(0)
        var = rename_tools(src, {src["tools"][0]["name"]: "renamed_tool_x"})
        i = next(k for k, h in enumerate(var["hooks"]) if h["event"] == "pre_reply")
        var["hooks"][i]["source"] = var["hooks"][i]["source"] + "\nwhile True:\n    pass\n"
        v = sb.check_hooks(src, var)
        assert v and v[0].reason == "hook timeout"
    finally:
        sb.configure()


def test_no_execution_when_turned_off():
    """With execution off (--no-exec-hooks) the run check reports nothing and runs nothing."""
    src = _fixture(0)
    var = rename_tools(src, {t["name"]: t["name"].upper() for t in src["tools"]})
    var["hooks"][0]["source"] = "def check(payload):\n    while True:\n        pass\n"
    sb.set_execution(False)
    try:
        assert sb.check_hooks(src, var) == []
    finally:
        sb.set_execution(True)
