"""hook.restyle by text splices gives exactly what the transform it replaced gave (tests/hook_restyle_oracle.py).

Same sites, numbering and refusals (``restyle_sites``), same text and applied counts (``restyle``) for every
kind, every kind alone and random selections, the same error where the transform raised; on the fixture
hooks, hooks rewritten by the hook recipe, the restyle before/after cases, stdlib modules and the cases
where a splice is not exact (there :func:`restyle` runs the transform). Three bugs the oracle keeps are fixed on
purpose (an ``elif`` as a bool_return site, ``bool(a, b)`` from a tuple test, f-strings glued to a keyword): in the
sources of :data:`FIXED_BUGS` the kinds concerned are checked against the expected new result instead
(tests/test_hook_restyle_bugs.py checks the behaviour), every other kind still against the oracle.
"""

from __future__ import annotations

import ast
import colorsys
import inspect
import json
import random
import shlex
import textwrap
from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

from hsa.codemods import restyle as R
from hsa.codemods import rewrite_module
from tests import hook_restyle_oracle as O
from tests.conftest import sample
from tests.hook_corpus import rewritten_hooks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"


def _hook_sources(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for h in json.loads(line).get("hooks") or []:
            out.append(h["source"])
    return list(dict.fromkeys(out))


def _codemod_test_sources() -> list[str]:
    """The ``before`` sources of TestRestyle in tests/test_hook_codemods.py (``self.t`` and ``src =`` strings)."""
    tree = ast.parse((ROOT / "tests" / "test_hook_codemods.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TestRestyle")
    out = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "t" \
                and node.args and isinstance(node.args[0], ast.Constant):
            out.append(node.args[0].value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            out.append(node.value.value)
    return [CodemodTest.make_fixture_data(s) for s in out]


#: Bug 1 of the oracle: an ``elif`` returning booleans became ``return bool(b)`` of the outer block.
ELIF_CASE = "def f(a, b):\n    if a:\n        x = 1\n    elif b:\n        return True\n    else:\n        return False\n"
ELIF_CASE_2 = ("def f(a):\n    if a:\n        return True\n    elif a > 1:\n        return False\n    else:\n"
               "        return True\n")
#: Bug 2: a tuple test became ``bool(a, b)``.
TUPLE_CASE = "def f(a, b):\n    if (a, b):\n        return True\n    else:\n        return False\n"
#: Bug 3: a replacement that needs a space after a keyword (the transform raised CSTValidationError).
GLUED_CASE = ("def f(a, b, c):\n    assert\"%s\"%(a,)\n    x = a if\"{}\".format(b)else c\n    y = not\"a\"in b\n"
              "    return\"%s\" % (a,)\n")

#: Where a splice differs from a transform unless handled (and a few neighbours of those cases).
EDGE_CASES = [
    # an ``elif`` returning booleans (the old transform turned it into a statement of the outer block)
    ELIF_CASE,
    # a multi-name import in a block with an if/return site: rewriting it shifts the bool_return numbering
    "def f(x):\n    import os, sys\n    if x:\n        return True\n    return False\n\n"
    "def g(y):\n    if y:\n        return False\n    return True\n",
    # the test of ``return bool(...)`` / ``return not ...`` is a site itself
    "def f(x, y):\n    if not x in y:\n        return True\n    else:\n        return False\n\n"
    "def g(x, y):\n    if (not x in y):\n        return True\n    return False\n\n"
    "def h(x, y):\n    if not x in y:\n        return False\n    return True\n\n"
    "def k(x, y):\n    if dict():\n        return True\n    return False\n",
    # a replacement that needs a space after a keyword (the old transform raised)
    GLUED_CASE,
    # no trailing newline
    "import os, sys\nx = 'a'\ny = not x in 'abc'\nfrom m import a, b",
    "x = dict()",
    "def f(x):\n    if x:\n        return True\n    return False",
    # sites inside sites
    "def f(name, x, y, c):\n    a = \"tool {}\".format(name)\n    b = not \"a\" in y\n    if not \"a\" in y:\n"
    "        return False\n    return True\n\n"
    "def g(a, b, c):\n    return not (not a in b) in c, \"%s\" % (a,), ('x' if not 'y' in c else \"z\")\n",
    # CRLF, tabs, expressions over several lines in nested blocks
    "def f(a, b):\r\n\tif a:\r\n\t\tx = (\r\n\t\t\tnot a in b\r\n\t\t)\r\n\t\ty = (\"%s and %r\" %\r\n\t\t\t(a, b))\r\n"
    "\t\tif (a and\r\n\t\t\t\tb):\r\n\t\t\treturn True\r\n\t\treturn False\r\n\treturn 'q'\r\n",
    "class A:\n    def f(self, a,\n          b):\n        if (a and\n                b):\n            return True\n"
    "        return False\n\n    def g(self, a, b):\n        if (a or\n            not a in b):\n"
    "            return False\n"
    "        else:\n            return True\n",
    # semicolons, comments, imports over several lines
    "import a, b; x = 1\nx = not a in b; y = dict()\n# lead\nimport c, d\nfrom m import (e,\n    f,\n)\n"
    "import g, h  # keep\nfrom n import (i,  # note\n    j)\ndef f():\n    # a note\n    import os, sys\n\n"
    "    return (tuple()), list(), {}\n",
    # f-strings
    "def f(a, b):\n    return f\"{a!r} {'x'} {b:>{a}}\", f'{\"%s\" % (a,)}', f\"{'{}'.format(a)}\", 'plain' 'two', "
    "b'bytes', r'raw'\n",
    # errors: scopes refuse a module-level nonlocal; a source that does not parse
    "nonlocal x\ny = \"%s\" % (x,)\n",
    "def f(:\n",
    # rebound builtins
    "bool = int\ndict = 1\ndef f(x):\n    if x:\n        return True\n    return False\n"
    "def g():\n    return dict(), list(), tuple()\n",
    "", "\n", "# only a comment", "if True:\n    pass\nelse:\n    pass\n",
    # str.format and % variants, accepted and refused
    "G = 1\nclass C:\n    k = 2\n    def m(self, a, b, n):\n"
    "        return (\"{} {}\".format(a, b), \"{0} {1}\".format(a, b), \"{x}\".format(x=a), "
    "\"{!r:>{w}}\".format(a, w=b),\n"
    "                \"{0.real}\".format(a), \"{}\".format(G), \"{}\".format(k), \"{}\".format(self), "
    "\"{}\".format(a, b),\n"
    "                \"{} {0}\".format(a), \"{}\".format(*b), \"{}\".format(1), \"{}\".format(1.5), "
    "\"{:%}\".format(a),\n"
    "                \"%s %s\" % (a, b), \"%d\" % (a,), \"%s\" % a, \"%%s %s\" % (n,), \"%s\" % (a, b), "
    "\"%s %s\" % (a,),\n"
    "                b\"%s\" % (a,), \"%s\" % (*b,), \"%s\" % (G,), u\"%r\" % (a,), \"{}{{}}\".format(a), "
    "\"{}\".format((a)),\n"
    "                \"%s\" % ((a),), \"tab\\\\t{}\".format(a), \"it's {}\".format(a), 'say \"{}\"'.format(a))\n",
    ELIF_CASE_2,
    TUPLE_CASE,
]

_GLUED = "right after a keyword with no space (an f-string there would not parse)"
#: The sources where the oracle's bugs are fixed: kind -> (sites, refused reasons, ``restyle`` of that kind alone).
FIXED_BUGS = {
    ELIF_CASE: {"bool_return": (0, {"an elif (the rewrite would drop the if before it)": 1}, ELIF_CASE)},
    ELIF_CASE_2: {"bool_return": (0, {"an elif (the rewrite would drop the if before it)": 1}, ELIF_CASE_2)},
    TUPLE_CASE: {"bool_return": (1, {}, "def f(a, b):\n    return bool((a, b))\n")},
    GLUED_CASE: {"format": (0, {_GLUED: 1}, GLUED_CASE), "percent": (0, {_GLUED: 2}, GLUED_CASE)},
}


def _without(outcome, kinds):
    """``restyle_sites`` counts and refusals less those of ``kinds``."""
    counts, refused = outcome
    return ({k: v for k, v in counts.items() if k not in kinds},
            {r: n for r, n in refused.items() if r.split(":")[0] not in kinds})


def _without_kinds(sel, kinds):
    """A selection with ``kinds`` left out (None: every other kind)."""
    if not kinds:
        return sel
    return {k: v for k, v in ({k: None for k in R.KINDS} if sel is None else sel).items() if k not in kinds}


def _corpus(name: str) -> list[str]:
    if name == "fixture hooks":
        return _hook_sources(FIXTURES)
    if name == "hook recipe output":
        sources = [source for source, _ in rewritten_hooks()]
        random.Random(0).shuffle(sources)
        return sources[:60]
    if name == "renamed locals":
        return [rewrite_module(s, seed=k, restyles=False)[0] for k, s in enumerate(_hook_sources(FIXTURES)[::12])]
    if name == "codemod tests":
        return _codemod_test_sources()
    if name == "stdlib":
        return [inspect.getsource(m) for m in (textwrap, shlex, colorsys)]
    return EDGE_CASES


def _outcome(f, *args):
    """What ``f(*args)`` gives, or the error it raises (type and message)."""
    try:
        return f(*args)
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return ("raises", type(exc).__name__, str(exc))


def _selections(counts: dict[str, int], rng: random.Random, n: int) -> list:
    sels: list = [None] + [{k: None} for k in R.KINDS]
    for _ in range(n):
        p = rng.choice([0.2, 0.5, 0.8])
        sels.append({k: [i for i in range(c) if rng.random() < p] for k, c in counts.items()})
    return sels


@pytest.mark.parametrize("corpus", ["fixture hooks", "hook recipe output", "renamed locals", "codemod tests",
                                    "stdlib", "edge cases"])
def test_restyle_matches_the_transform_it_replaced(corpus):
    """Sites, refusals, output text, applied counts and errors equal the old transform's, for many selections."""
    sources = _corpus(corpus) if corpus == "edge cases" else sample(_corpus(corpus))
    rng = random.Random(7)
    compared = 0
    for source in sources:
        fixed = FIXED_BUGS.get(source, {})
        sites = _outcome(O.restyle_sites, source)
        if fixed:
            assert _without(R.restyle_sites(source), fixed) == _without(sites, fixed), source
        else:
            assert _outcome(R.restyle_sites, source) == sites, source
        if sites[0] == "raises":
            assert _outcome(R.restyle, source, None) == _outcome(O.restyle, source, None)
            continue
        for sel in _selections(sites[0], rng, 30 if corpus == "edge cases" else 4):
            sel = _without_kinds(sel, fixed)
            assert _outcome(R.restyle, source, sel) == _outcome(O.restyle, source, sel), (sel, source)
            compared += 1
    assert compared >= len(sources)


@pytest.mark.parametrize("corpus", ["fixture hooks", "edge cases"])
def test_transform_fallback_matches_the_old_transform(corpus):
    """The transform :func:`restyle` falls back to gives the old transform's text, counts and errors too."""
    rng = random.Random(3)
    for source in sample(_corpus(corpus), 4 if corpus == "fixture hooks" else 2):
        try:
            an = R._analysis(source)
        except Exception:  # noqa: BLE001 - sources the old code rejects too (checked above)
            continue
        for sel in _selections(an.counts, rng, 4):
            sel = _without_kinds(sel, FIXED_BUGS.get(source, {}))
            norm = {k: None for k in R.KINDS} if sel is None else {k: None if v is None else set(v)
                                                                      for k, v in sel.items()}
            assert _outcome(R._transform, an, norm) == _outcome(O._restyle_cached, source, _key(sel)), (sel, source)


@pytest.mark.parametrize("source", list(FIXED_BUGS))
def test_fixed_bugs_differ_from_the_oracle_as_expected(source):
    """Where the oracle kept a bug, the kinds concerned give the expected sites, refusals and text (both paths)."""
    counts, refused = R.restyle_sites(source)
    an = R._analysis(source)
    for kind, (n, reasons, text) in FIXED_BUGS[source].items():
        assert counts[kind] == n, kind
        assert {r.split(": ", 1)[1]: c for r, c in refused.items() if r.startswith(kind + ":")} == reasons, kind
        assert R.restyle(source, {kind: None})[0] == text
        assert R._transform(an, {kind: None})[0] == text
    assert O.restyle_sites(source) != (counts, refused) or O.restyle(source)[0] != R.restyle(source)[0]


def _key(sel):
    return None if sel is None else tuple(sorted((k, None if v is None else tuple(sorted(v))) for k, v in sel.items()))


def test_fixture_hooks_never_need_the_transform(monkeypatch):
    """Every selection on the fixture hooks is applied by splicing (the fast path), not by the fallback transform."""
    def refuse(*_):
        raise AssertionError("restyle fell back to the transform")

    monkeypatch.setattr(R, "_transform", refuse)
    R._restyle_cached.cache_clear()
    rng = random.Random(11)
    for source in _hook_sources(FIXTURES):
        counts, _ = R.restyle_sites(source)
        for sel in _selections(counts, rng, 3):
            R.restyle(source, sel)


@pytest.mark.parametrize("source, selected, reason", [
    (EDGE_CASES[1], {"imports": [0], "bool_return": [1]}, "import rewrite in a block"),
    (EDGE_CASES[2], {"not_in": [0], "bool_return": [0]}, "not_in site inside a bool_return"),
])
def test_unsplicable_selections_run_the_transform(monkeypatch, source, selected, reason):
    """A selection whose splice could differ from the transform goes through the transform, for the stated reason."""
    seen = []
    real = R._Unsplicable.__init__

    def note(self, *args):
        seen.append(args[0])
        real(self, *args)

    monkeypatch.setattr(R._Unsplicable, "__init__", note)
    R._restyle_cached.cache_clear()
    assert _outcome(R.restyle, source, selected) == _outcome(O.restyle, source, selected)
    assert any(reason in s for s in seen), seen
