"""hook.rename_locals after the speed-up gives exactly what it gave before (tests/hook_locals_oracle.py).

Checked on every hook source of the fixtures, on hook sources as the recipes rewrite them,
on the hook strings of the other hook tests and on edge cases (parentheses, line endings,
non-ASCII text, f-strings, match, walrus, global/nonlocal, eval/locals, ``__all__``...):
the same units in the same order, the same refusals with the same reasons, the same
identifiers, the same text for drawn renames, the same errors for bad ones.
"""

from __future__ import annotations

import ast
import inspect
import random
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.codemods import locals as L
from hsa.hooks_model import infer_entry
from tests import hook_locals_oracle as O
from tests.conftest import sample
from tests.hook_corpus import fixture_hooks, rewritten_hooks

FIXTURE_HOOKS = list(fixture_hooks())


def _hand_written_hooks() -> list[tuple[str, str]]:
    """Every string constant of tests/test_hook_*.py that parses as a module with a function."""
    out: dict = {}
    for path in sorted(Path(__file__).parent.glob("test_hook_*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value:
                src = textwrap.dedent(node.value)
                try:
                    ast.parse(src)
                except SyntaxError:
                    continue
                out[(src, infer_entry(src) or "")] = None
    return list(out)


#: Layouts and constructs the fixtures do not have (each parses with LibCST and Python 3.11).
EDGE_CASES = [
    # parentheses around names, non-ASCII text, no trailing newline
    'def check(payload):\n    msg = "库存不足 ¥"\n    total = (payload["n"])\n'
    '    return {"reason": (msg) + str(((total)))}',
    # CRLF, lone CR, tabs, form feed, backslash continuation, semicolons
    'def check(payload):\r\n    name = payload["tool_name"]\r\n    size = len(name); other = size + \\\r\n        1\r\n'
    '    return {"n": other}\r\n',
    'def check(payload):\r    name = payload["tool_name"]\r    return name\r',
    'def check(payload):\n\tvalue = payload.get("x")\n\tif value:\n\t\tvalue = value * 2\n\treturn value\n',
    'def check(payload):\n    \x0c# form feed\n    value = payload\n    return value\n',
    # f-strings: self-documenting, nested specs, expressions with dicts and quotes
    'def check(payload):\n    width = 10\n    item = payload["item"]\n    shown = 3\n'
    '    return f"{item:>{width}} {shown=} { {\'k\': item}[\'k\'] } {item!r:^{width}}"\n',
    # nested helpers: positional calls, keyword calls, decorators, lambdas with defaults, *args
    'import functools\n\ndef check(payload):\n    def pos(text, n):\n        return text[:n]\n'
    '    def kw(text):\n        return text\n    @functools.lru_cache\n    def deco(text):\n        return text\n'
    '    def star(*parts):\n        return parts\n    def kwonly(a, *, b):\n        return a + b\n'
    '    pick = lambda v, d=pos("x", 1): v or d\n'
    '    return pos(payload, 2), kw(text=payload), deco(payload), star(1), kwonly(1, b=2), pick(0)\n',
    # global, nonlocal, class inside a function, class attributes used in a comprehension
    'COUNT = 0\n\ndef check(payload):\n    global COUNT\n    COUNT += 1\n    seen = 0\n    def inc():\n'
    '        nonlocal seen\n        seen += 1\n    inc()\n    class Box:\n        size = 3\n'
    '        cells = [size for _ in range(2)]\n    return seen, Box.size\n',
    # walrus in a comprehension binds in the function; nested and dict/set/generator comprehensions
    'def check(payload):\n    rows = payload["rows"]\n    kept = [y for x in rows if (y := x.strip())]\n'
    '    table = {k: v for k, v in zip(rows, kept)}\n    uniq = {c for r in rows for c in r}\n'
    '    total = sum(len(r) for r in rows)\n    grid = [[c for c in r] for r in rows]\n'
    '    return kept, y, table, uniq, total, grid\n',
    # match statement captures, try/except/with/for/del, annotations (also as strings), star unpacking
    'def check(payload):\n    match payload:\n        case {"tool": name, **rest}:\n            return name, rest\n'
    '        case [*others]:\n            return others\n        case Point(x=px) if px > 0:\n'
    '            return px\n        case _:\n            pass\n    try:\n        count: int = int(payload)\n'
    '        label: "str" = str(count)\n    except ValueError as err:\n        return str(err)\n'
    '    with open(label) as fh:\n        for i, line in enumerate(fh):\n            head, *tail = line.split()\n'
    '    del head\n    return count, tail, i\n',
    # eval / exec / locals / vars / dir / globals make names unrenameable
    'def a(payload):\n    x = 1\n    return eval("x")\n\ndef b(payload):\n    y = 2\n    return vars()\n\n'
    'def c(payload):\n    z = 3\n    return dir()\n\ndef d(payload):\n    w = 4\n    return w\n',
    'def check(payload):\n    v = 1\n    return globals()["check"], v\n',
    # module helpers: private, exported in __all__, named in a string, decorated, a private class
    '__all__ = ["check", "_exported"]\n_LIMIT = 3\n\ndef _exported(s):\n    return s\n\n'
    'def _named(s):\n    return s\n\ndef _helper(s):\n    return s.strip()\n\n'
    'class _Private:\n    pass\n\n@staticmethod\ndef _deco(s):\n    return s\n\n'
    'def check(payload):\n    fn = getattr(__import__("sys"), "_named", None)\n'
    '    return _helper(payload) + _exported(payload) + _named(payload), _LIMIT, fn\n',
    # imports inside a function, dotted imports, attributes and keywords with a local's name
    'def check(payload):\n    import os.path\n    from json import dumps as dump\n    path = os.path.join("a", "b")\n'
    '    text = dump({"path": path}, indent=2)\n    payload.path = path\n    return dict(path=path, text=text)\n',
    # async function, await, async for, async comprehension
    'async def check(payload):\n    got = await payload.fetch()\n    async for part in payload.stream():\n'
    '        got += part\n    parts = [p async for p in payload.stream()]\n    return got, parts\n',
    # methods: parameters refused, locals renamed; a nested function in a method
    'class Hooks:\n    limit = 3\n\n    def on_tool_start(self, context, agent, tool):\n        seen = tool.name\n'
    '        def inner(v):\n            return v + self.limit\n        return inner(seen)\n',
    # an entry script reading stdin, module-level code
    'import json, sys\n\ndata = json.load(sys.stdin)\nname = data.get("tool_name")\n'
    'if name == "x":\n    print(json.dumps({"decision": "block"}))\n',
    # a name used before assignment in a nested scope, shadowing a builtin, loop variables reused
    'def check(payload):\n    def later():\n        return value\n    value = 1\n    len = 2\n'
    '    for value in range(len):\n        pass\n    return later(), value\n',
    # a helper referred to other than by a direct call, a parameter of a lambda, default arguments
    'def check(payload):\n    def helper(x):\n        return x\n    fns = [helper]\n'
    '    def other(x, y=helper):\n        return y(x)\n    return fns, other(1), (lambda q: q)(2)\n',
]


def _entry(source: str) -> str:
    return infer_entry(source) or ""


def _units(mod, source, kw):
    try:
        units, refused = mod.local_units(source, **kw)
    except Exception as exc:  # noqa: BLE001 - both must fail the same way
        return ("error", type(exc).__name__, str(exc))
    return [(u.key, u.name, u.scope, u.kind) for u in units], list(refused.items())


def _rename(mod, source, renames, kw):
    try:
        return mod.rename_locals(source, renames, **kw)
    except ValueError as exc:
        return ("ValueError", str(exc))


def _differences(source: str, entry: str, configs, draws=(1.0, 0.5), seed: int = 0, errors: bool = True) -> list[str]:
    """What the new code does differently from the oracle on ``source`` (empty: nothing).

    ``configs``: (module_helpers, protect the entry) pairs; ``draws``: the probability of
    renaming each unit, one request per draw; ``errors``: also compare refused requests.
    """
    out = []
    for kw in configs:
        kw = {"module_helpers": kw[0], "protect": frozenset({entry.split(".")[0]}) if kw[1] else frozenset()}
        old, new = _units(O, source, kw), _units(L, source, kw)
        if old != new:
            out.append(f"units/refused {kw}: {old} != {new}")
            continue
        if old[0] == "error":
            continue
        units = L.local_units(source, **kw)[0]
        refused = [k for k, _ in old[1]]
        taken = O.identifiers_of(source)
        if L.identifiers_of(source) != taken:
            out.append(f"identifiers: {sorted(taken ^ L.identifiers_of(source))}")
        rng = random.Random(seed)
        requests = []
        for p in draws:
            renames: dict[str, str] = {}
            for u in units:
                if rng.random() < p:
                    renames[u.key] = L.fresh_name(u.name, rng, taken | set(renames.values()))
            requests.append(renames)
        if errors:
            requests += [{k: "zz_new_name"} for k in refused[:2]] + [{"nowhere:x": "zz_new_name"}]
        if errors and units:
            requests += [{units[-1].key: new} for new in (sorted(taken)[0], "len", "class", "public_name", "9x")]
        for renames in requests:
            a, b = _rename(O, source, renames, kw), _rename(L, source, renames, kw)
            if a != b:
                out.append(f"rename {renames} {kw}:\n--- before\n{a}\n--- after\n{b}")
    return out


BOTH = ((True, True), (False, False))


def test_fixture_hooks_rename_as_before():
    """Every hook source of the fixtures: same units, refusals, identifiers and renamed text as before."""
    problems = []
    for i, (source, entry) in enumerate(sample(FIXTURE_HOOKS)):
        sparse = i % 4 != 0
        problems += _differences(source, entry, ((True, True),) if sparse else BOTH, seed=i, errors=not sparse)
    assert len(FIXTURE_HOOKS) > 100 and not problems, "\n".join(problems[:5])


def test_rewritten_hooks_rename_as_before():
    """Hook sources as the hooks and default recipes rewrite them: the same as before."""
    hooks = rewritten_hooks()
    problems = []
    for i, (source, entry) in enumerate(sample(hooks)):
        problems += _differences(source, entry, ((True, True),), seed=i, errors=i % 4 == 0)
    assert len(hooks) > 20 and not problems, "\n".join(problems[:5])


@pytest.mark.parametrize("source", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases_rename_as_before(source):
    """Edge layouts and constructs: the same units, refusals and renamed text as before, in both modes."""
    assert _differences(source, _entry(source), BOTH) == []


def test_hand_written_hooks_rename_as_before():
    """The hook strings of the other hook tests (refusal cases among them): the same as before."""
    hooks = _hand_written_hooks()
    problems = []
    for i, (source, entry) in enumerate(sample(hooks)):
        problems += _differences(source, entry, BOTH, seed=i)
    assert len(hooks) > 10 and not problems, "\n".join(problems[:5])


def test_a_real_module_renames_as_before():
    """A real module (textwrap: classes, methods, module helpers, regexes): the same as before."""
    source = Path(inspect.getfile(textwrap)).read_text(encoding="utf-8")
    assert _differences(source, "", BOTH, draws=(1.0, 0.5)) == []


def test_edge_cases_reach_the_paths_they_are_meant_for():
    """The edge cases do exercise refusals (eval, globals, nonlocal, f"{x=}", __all__) and renames of each kind."""
    reasons, kinds = set(), set()
    for source in EDGE_CASES:
        for mh in (True, False):
            units, refused = L.local_units(source, module_helpers=mh)
            reasons |= set(refused.values())
            kinds |= {u.kind for u in units}
    assert kinds == {"local", "param", "helper"}
    for needle in ("run time", "global or nonlocal", "self-documenting", "__all__ or in a string",
                   "decorated function", "other than by direct positional calls", "parameter of a lambda",
                   "keyword-only", "class name", "bound by Import"):
        assert any(needle in r for r in reasons), needle


def test_splice_fallback_gives_the_same_text(monkeypatch):
    """Without codegen offsets, renames go through a RenameLocals pass and give the same text."""
    source, entry = FIXTURE_HOOKS[1]
    L._units.cache_clear()
    L._analysis.cache_clear()
    monkeypatch.setattr(L, "_name_offsets", lambda module: (module.code, {}))
    try:
        assert L._units(source, True, frozenset({entry})).module is not None
        assert _differences(source, entry, ((True, True),)) == []
        assert _differences(EDGE_CASES[0], _entry(EDGE_CASES[0]), BOTH) == []
    finally:
        L._units.cache_clear()
        L._analysis.cache_clear()


def test_splice_is_used_for_the_fixtures():
    """The fast path (offsets of every unit's Name nodes) is taken for every fixture hook."""
    for source, entry in FIXTURE_HOOKS:
        u = L._units(source, True, frozenset({entry}))
        assert u.module is None and all(len(spans) >= 1 for _, spans in u.units.values())


def test_identifiers_of_is_a_new_set_each_call():
    """identifiers_of is cached but hands out a new set: a caller's change does not leak into the cache."""
    source = FIXTURE_HOOKS[0][0]
    first = L.identifiers_of(source)
    first.add("zz_added_by_caller")
    assert "zz_added_by_caller" not in L.identifiers_of(source)
    assert L.identifiers_of(source) == O.identifiers_of(source)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_drawn_renames_of_fixture_hooks_match(data):
    """Any subset of units of a fixture hook, with drawn fresh names, is renamed to the same text as before."""
    source, entry = data.draw(st.sampled_from(FIXTURE_HOOKS))
    kw = {"module_helpers": True, "protect": frozenset({entry})}
    units, _ = L.local_units(source, **kw)
    chosen = data.draw(st.lists(st.sampled_from(units), unique=True)) if units else []
    rng = random.Random(data.draw(st.integers(0, 2**16)))
    taken = L.identifiers_of(source)
    renames: dict[str, str] = {}
    for u in chosen:
        renames[u.key] = L.fresh_name(u.name, rng, taken | set(renames.values()))
    assert L.rename_locals(source, renames, **kw) == O.rename_locals(source, renames, **kw)
