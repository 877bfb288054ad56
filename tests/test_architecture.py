"""The house rules of docs/architecture.md, checked from the source with Python's ast.

Over hsa/, transforms/ and trainers/ (function-level imports included):

1. no import circles between modules;
2. the core (hsa/, the command line hsa/cli.py aside) never imports transforms/ or trainers/;
3. no private name (`_x`) is imported from, or read off, another module: what two modules share is public in the
   module where it belongs (private *modules* such as hsa._json are fine inside their own package);
4. no module is over 1,000 lines.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hsa", "transforms", "trainers")
MAX_LINES = 1000
CLI_MODULES = {"hsa.cli", "hsa.evaluation.cli", "hsa.bench.cli"}  # the command line may load the plugin packages


def _modules(root: Path = ROOT) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom, modules: dict[str, Path]) -> str:
    if not node.level:
        return node.module or ""
    is_pkg = modules[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in modules:
            return cand
    return None


def _scan(module: str, modules: dict[str, Path]) -> tuple[set[str], list[str]]:
    """(modules imported, private names taken from other modules) of one module."""
    tree = ast.parse(modules[module].read_text(encoding="utf-8"))
    deps: set[str] = set()
    private: list[str] = []
    aliases: dict[str, str] = {}  # local name -> our module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _known(a.name, modules)
                if target:
                    deps.add(target)
                    if a.asname:
                        aliases[a.asname] = target
                    else:
                        aliases[a.name.split(".")[0]] = _known(a.name.split(".")[0], modules) or target
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(module, node, modules)
            target = _known(src, modules)
            if not target:
                continue
            for a in node.names:
                sub = _known(f"{src}.{a.name}", modules)
                if sub and sub != target and sub == f"{src}.{a.name}":
                    deps.add(sub)  # `from pkg import submodule`
                    aliases[a.asname or a.name] = sub
                    continue
                deps.add(target)
                if a.name.startswith("_") and not a.name.startswith("__") and target != module:
                    private.append(f"{module} takes {target}.{a.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            target = aliases[node.value.id]
            if f"{target}.{node.attr}" not in modules and target != module:
                private.append(f"{module} takes {target}.{node.attr}")
    deps.discard(module)
    return deps, private


SCANS = {m: _scan(m, MODULES) for m in MODULES}


def _cycles(scans: dict[str, tuple[set[str], list[str]]] = SCANS) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(scans[v][0]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(scans):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    got = _cycles()
    assert not got, f"import circles (each a set of modules that import each other, function-level imports too): {got}"


def test_core_does_not_import_plugins_or_trainers() -> None:
    got = sorted(
        f"{m} imports {d}"
        for m, (deps, _) in SCANS.items()
        if m.split(".")[0] == "hsa" and m not in CLI_MODULES
        for d in deps
        if d.split(".")[0] in ("transforms", "trainers")
    )
    assert not got, "the core imports the plugin package or the trainers:\n" + "\n".join(got)


def test_no_private_names_across_modules() -> None:
    got = sorted({p for _, (_, private) in SCANS.items() for p in private})
    assert not got, "private names used across modules (make them public where they belong):\n" + "\n".join(got)


def test_no_module_over_1000_lines() -> None:
    got = sorted(
        f"{m} {n}" for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert not got, f"modules over {MAX_LINES} lines (split them by concept):\n" + "\n".join(got)


def test_every_module_compiles_without_a_warning() -> None:
    """An invalid escape in a docstring (``\\ s``) is a warning today and an error in a later Python: none in the code."""
    import warnings

    got = []
    for m, p in MODULES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compile(p.read_text(encoding="utf-8"), str(p), "exec")
        got += [f"{m}:{w.lineno}: {w.message}" for w in caught]
    assert not got, "\n".join(got)


def test_the_checker_sees_a_circle_and_a_private_import(tmp_path: Path) -> None:
    """The checks above can fail: a planted circle and a planted private import are found."""
    (tmp_path / "hsa").mkdir()
    (tmp_path / "hsa" / "__init__.py").write_text("")
    (tmp_path / "hsa" / "a.py").write_text("from hsa.b import _hidden\n")
    (tmp_path / "hsa" / "b.py").write_text("def f():\n    from . import a\n    return a._secret\n_hidden = 1\n")
    modules = _modules(tmp_path)
    scans = {m: _scan(m, modules) for m in modules}
    assert _cycles(scans) == [["hsa.a", "hsa.b"]]
    assert scans["hsa.a"][1] == ["hsa.a takes hsa.b._hidden"]
    assert scans["hsa.b"][1] == ["hsa.b takes hsa.a._secret"]


def test_renamed_modules_old_names_are_gone() -> None:
    """hsa.rewrite, hsa.prompt_import and hsa.verify were one release's aliases of renames, prompt_model and
    invariants (issue 29 removes them): importing an old name fails, and nothing in the package still uses one."""
    import importlib
    import sys

    for old in ("rewrite", "prompt_import", "verify"):
        sys.modules.pop(f"hsa.{old}", None)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"hsa.{old}")
    root = Path(__file__).resolve().parents[1]
    users = [str(f.relative_to(root)) for d in ("hsa", "trainers", "transforms", "benchmarks", "examples")
             for f in (root / d).rglob("*.py")
             if re.search(r"\bhsa\.(rewrite|prompt_import|verify)\b|from hsa import (rewrite|prompt_import|verify)\b",
                          f.read_text(encoding="utf-8"))]
    assert users == []


_CACHE_CALL = re.compile(r"""\b(?:_cache\.lru|cache\.lru|_lru|lru|memoize)\(\s*["']([a-z_]+\.[a-z_]+)["']""")


def test_docs_architecture_lists_every_named_cache_and_only_those():
    """docs/architecture.md's cache table names each hsa.cache.lru cache of hsa/ and transforms/, and no other."""
    in_code = {m.group(1) for path in MODULES.values() if path.relative_to(ROOT).parts[0] != "trainers"
               for m in _CACHE_CALL.finditer(path.read_text(encoding="utf-8"))}
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc[doc.index("## The caches"):doc.index("## The path of one record")]
    in_doc = set(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", table, re.M))
    assert in_code, "no cache found: the pattern no longer matches how caches are made"
    assert in_doc == in_code, f"only in the code: {sorted(in_code - in_doc)}; only in the doc: {sorted(in_doc - in_code)}"
