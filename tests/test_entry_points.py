"""The built-in transform families load through the ``hsa.transforms`` entry-point group, never by an import in the
core: ``import hsa`` finds them in an installed hsa, a third-party package registers through the same group, and a
checkout without entry points gets an error that says what to do (the ``hsa`` command loads the built-ins itself).

Each case runs in a fresh interpreter: this process has the built-ins loaded already (tests/conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap

from hsa.recipes import load_recipe, recipe_to_dict
from hsa.transform import ENTRY_POINT_GROUP, modules_of, registry
from tests.entry_points_support import ROOT, dist_info, env_with, installed_checkout, pyproject

NO_ENTRY_POINTS = ("import importlib.metadata as md\n"
                   "md.entry_points = lambda **kw: md.EntryPoints(())  # a checkout on PYTHONPATH, never installed\n")


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # not from the checkout: `python -c` puts the working folder first on sys.path, and a checkout holds the
    # hsa.egg-info of its editable install, whose metadata would then shadow the stand-in of env_with
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tempfile.gettempdir(),
                          capture_output=True, text=True, timeout=120, env=env or env_with())


def test_pyproject_declares_each_builtin_family_module():
    """pyproject.toml's group names the four family modules, and every built-in transform comes from one of them."""
    declared = pyproject()["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert declared == {"tool": "transforms.tool", "skill": "transforms.skill", "prompt": "transforms.prompt",
                        "hook": "transforms.hook"}
    builtin = {n: cls.__module__ for n, cls in registry().items() if cls.__module__.startswith("transforms")}
    assert {n.split(".")[0] for n in builtin} == {"tool", "skill", "prompt", "hook", "trajectory"}
    assert set(builtin.values()) <= set(declared.values())


def test_import_hsa_finds_the_builtin_families_through_the_entry_points(tmp_path):
    """With the metadata an install writes, `import hsa` and the first lookup load every built-in family (and no
    import of transforms happens before it)."""
    proc = _python("""
        import json, sys
        import hsa
        before = "transforms" in sys.modules
        cls = hsa.get_transform("tool.rename")
        recipe = hsa.load_recipe("default")
        print(json.dumps({"before": before, "cls": cls.__module__, "names": sorted(hsa.registry())}))
        """, env_with(installed_checkout(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["before"] is False and got["cls"] == "transforms.tool"
    assert got["names"] == sorted(registry())


def test_a_third_party_package_registers_through_the_group(tmp_path):
    """A package declaring the group registers its transforms: a module entry by import, a class entry by itself."""
    pkg = tmp_path / "acme_hsa"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        import dataclasses
        from typing import ClassVar
        from hsa import Skip, Transform, register

        @register
        @dataclasses.dataclass(frozen=True)
        class Noop(Transform):
            name: ClassVar[str] = "acme.noop"
            family: ClassVar[str] = "skill"
            def sample(self, record, rng):
                return Skip("never applies")

        @dataclasses.dataclass(frozen=True)
        class Other(Noop):  # not decorated: its entry point registers it
            name: ClassVar[str] = "acme.other"
        """), encoding="utf-8")
    dist_info(tmp_path, "acme_hsa", "1.0", {ENTRY_POINT_GROUP: {"acme": "acme_hsa", "other": "acme_hsa:Other"}})
    proc = _python("""
        import hsa
        names = hsa.registry()
        print(sorted(n for n in names if n.startswith("acme.")), "tool.rename" in names)
        """, env_with(tmp_path, installed_checkout(tmp_path / "hsa-install")))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['acme.noop',", "'acme.other']", "True"]


def test_a_broken_entry_point_names_itself(tmp_path):
    """An entry point that fails to import says which entry, which distribution, and what to do."""
    dist_info(tmp_path, "broken_plugin", "0.1", {ENTRY_POINT_GROUP: {"oops": "no_such_module_for_hsa"}})
    proc = _python("import hsa\nhsa.registry()\n", env_with(tmp_path))
    assert proc.returncode == 1
    assert ("entry point oops = 'no_such_module_for_hsa' of group 'hsa.transforms' (declared by broken_plugin) "
            "failed to load: ModuleNotFoundError") in proc.stderr
    assert "uninstall it" in proc.stderr


def test_without_entry_points_the_error_says_what_to_do():
    """A checkout run through PYTHONPATH alone (no entry points): the lookup of a built-in names the fix."""
    proc = _python(NO_ENTRY_POINTS + textwrap.dedent("""
        import hsa
        for lookup in (lambda: hsa.get_transform("tool.rename"), lambda: hsa.load_recipe("default")):
            try:
                lookup()
            except (KeyError, ValueError) as exc:
                print(exc.args[0])
        import transforms
        print(hsa.get_transform("tool.rename").__name__)
        """))
    assert proc.returncode == 0, proc.stderr
    first, second, last = proc.stdout.splitlines()
    assert first.startswith("unknown transform 'tool.rename': no transform of the 'tool' family is registered")
    assert "pip install -e ." in first and "import transforms" in first and "'hsa.transforms'" in first
    assert "no transform of the" in second and "pip install -e ." in second
    assert last == "ToolRename"


def test_the_command_line_loads_the_builtins_without_entry_points():
    """`hsa transforms` lists the built-in families with no entry points declared: the CLI imports them."""
    proc = _python(NO_ENTRY_POINTS + "from hsa.cli import main\nraise SystemExit(main(['transforms']))\n")
    assert proc.returncode == 0, proc.stderr
    assert "tool.rename" in proc.stdout and "hook.sync" in proc.stdout


def test_a_fresh_worker_imports_the_modules_of_its_recipe():
    """A worker started afresh (spawn, Ray) with no entry points builds the recipe from the modules it is given."""
    recipe = load_recipe("default")
    mods = modules_of(recipe)
    assert "hsa.transform" in mods and {"transforms.tool", "transforms.skill"} <= set(mods)
    line = (ROOT / "fixtures" / "livestream" / "trajectories.jsonl").read_bytes().splitlines()[0]
    code = NO_ENTRY_POINTS + textwrap.dedent(f"""
        from hsa.io import InputLine
        from hsa.pipeline.executor import init_worker, work
        options = {{"seed": 0, "variants": 2, "keep_original": False, "exec_hooks": False}}
        init_worker({recipe_to_dict(recipe)!r}, options, modules={tuple(mods)!r})
        [(pos, result, encoded)] = work([InputLine("in.jsonl", 1, {line!r})])
        print(len(result.rows) + len(encoded), result.stats.variants_failed, len(result.rejects))
        """)
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "0", "0"]  # two variant rows, none failed: the recipe ran
    missing = _python(code.replace(f"modules={tuple(mods)!r}", "modules=()"))
    assert missing.returncode == 1 and "no transform of the" in missing.stderr


def test_the_catalogue_generator_loads_the_builtins_without_entry_points():
    """docs/gen_catalogue.py catalogues the built-in families with no entry points declared (it wrote a
    catalogue of the combinators alone)."""
    code = NO_ENTRY_POINTS + ("import runpy, sys\nsys.argv = ['gen_catalogue.py', '--check']\n"
                              f"runpy.run_path({str(ROOT / 'docs' / 'gen_catalogue.py')!r}, run_name='__main__')\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
