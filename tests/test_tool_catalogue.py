"""The generated transform catalogue, the tool-family preset recipes, and task-changing variants in the pipeline stats."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from hsa.pipeline import augment
from hsa.recipes import load_recipe
from hsa.records import normalize
from hsa.transform import registry, run
from hsa.invariants import check_variant

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ["hammer", "rotbench-slight", "rotbench-medium", "rotbench-heavy", "rotbench-union", "tools"]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_catalogue", ROOT / "docs" / "gen_catalogue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalogue_is_up_to_date_with_the_registry():
    """docs/catalogue.md equals what docs/gen_catalogue.py builds from the registry now."""
    gen = _generator()
    current = (ROOT / "docs" / "catalogue.md").read_text(encoding="utf-8")
    assert gen.render() == current, "docs/catalogue.md is out of date; run: python docs/gen_catalogue.py"


def test_catalogue_lists_every_transform_with_options_and_an_example():
    """Every registered transform has a section; every tool transform has an option table and a before/after diff."""
    text = _generator().render()
    for name, cls in registry().items():
        assert f"## `{name}`" in text
        if cls.family == "tool":
            section = text.split(f"## `{name}`")[1].split("\n## ")[0]
            assert "| option | type | default |" in section and "```diff" in section, name


def test_catalogue_check_mode_fails_on_a_stale_file(tmp_path):
    """gen_catalogue --check exits 1 for a stale file and 0 for a fresh one."""
    gen = _generator()
    stale = tmp_path / "catalogue.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert gen.main(["--check", "--out", str(stale)]) == 1
    assert gen.main(["--out", str(stale)]) == 0
    assert gen.main(["--check", "--out", str(stale)]) == 0


@pytest.mark.parametrize("name", PRESETS)
def test_presets_give_verified_variants(name, fixture_records):
    """Each preset recipe applies to the fixtures and every variant passes check_variant."""
    recipe = load_recipe(name)
    applied = 0
    for i, raw in enumerate(fixture_records[:6]):
        src = normalize(raw)
        out, leaves, _ = run(recipe, src, random.Random(i))
        assert check_variant(src, out) == [], name
        applied += bool(leaves)
    assert applied >= 5


def test_hammer_masks_names_with_the_published_lengths(fixture_records):
    """hammer: masked tool names are 5-15 characters, masked parameter names 4-10."""
    recipe = load_recipe("hammer")
    for i, raw in enumerate(fixture_records[:5]):
        _, leaves, _ = run(recipe, normalize(raw), random.Random(i))
        for leaf in leaves:
            if leaf.name == "tool.rename":
                assert all(5 <= len(n) <= 15 for n in leaf.params["renames"].values())
            if leaf.name == "tool.param_rename":
                assert all(4 <= len(e["new"]) <= 10 for e in leaf.params["renames"])


def test_rotbench_heavy_swaps_names_between_tools(fixture_records):
    """rotbench-heavy permutes tool names (a bijection) and then shuffles parameters or adds a required one."""
    _, leaves, _ = run(load_recipe("rotbench-heavy"), normalize(fixture_records[0]), random.Random(0))
    swap = leaves[0].params["tools"]
    assert sorted(swap) == sorted(swap.values()) and len(leaves) == 2


def test_pipeline_counts_task_changing_variants_separately(small_jsonl, tmp_path):
    """A recipe with tool.irrelevance: the manifest counts its variants as task-changing."""
    recipe_file = tmp_path / "irr.yaml"
    recipe_file.write_text("__version__: 1\ntransform: {transform: tool.irrelevance}\n", encoding="utf-8")
    manifest = augment([small_jsonl], tmp_path / "out", load_recipe(str(recipe_file)), variants=2)
    counts = manifest["counts"]
    assert counts["task_changing_variants"] == manifest["transforms"]["tool.irrelevance"]["applied"] > 0
    manifest2 = augment([small_jsonl], tmp_path / "out2", load_recipe("rotbench-slight"), variants=1)
    assert manifest2["counts"]["task_changing_variants"] == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert rows == []


def test_python_examples_of_the_tool_chapter_run(monkeypatch):
    """Every python block of docs/transforms-tool.md runs (from the repository root) without error."""
    import re

    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "transforms-tool.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/transforms-tool.md block {i}", "exec"), {"print": lambda *a, **k: None})
