"""Applies that copy only the parts they change (issue 8): same variants as deep copies, inputs untouched."""

from __future__ import annotations

import json

import pytest

from hsa import _json
from hsa.pipeline import rng_for
from hsa.recipes import load_recipe, recipe_from_dict
from hsa.records import normalize
from hsa.transform import Combinator, registry, run
from tests.conftest import FIXTURES

#: Leaves whose apply shares the unchanged parts of the record with its input.
SHARING = ["hook.rename_locals", "hook.restyle", "tool.reorder", "tool.describe", "tool.drop_descriptions",
           "tool.distractors", "tool.values", "tool.nest", "tool.flatten", "tool.swap_names", "tool.add_required",
           "skill.describe", "skill.restructure", "skill.catalog", "prompt.reorder",
           "prompt.delimiters", "prompt.titles", "prompt.paraphrase", "prompt.tool_format", "prompt.placement"]

#: The sharing leaves first (always), then the leaves that rewrite records in place after a deep copy.
SHARING_FIRST = {"transform": "meta.sequence", "transforms": [
    {"transform": "hook.rename_locals", "p": 0.5, "p_hook": 1.0},
    {"transform": "hook.restyle", "p": 0.5},
    {"transform": "tool.describe", "p": 0.5},
    {"transform": "tool.drop_descriptions", "p": 0.3},
    {"transform": "tool.distractors", "n": [1, 2]},
    {"transform": "tool.reorder"},
    {"transform": "skill.describe", "p": 0.7},
    {"transform": "skill.restructure", "p": 0.7},
    {"transform": "skill.catalog", "distractors": [0, 2]},
    {"transform": "prompt.reorder"},
    {"transform": "prompt.delimiters"},
    {"transform": "prompt.titles", "p": 0.7},
    {"transform": "prompt.paraphrase", "p": 0.5},
    {"transform": "tool.rename", "p": 0.7},
    {"transform": "tool.param_rename", "p": 0.5},
    {"transform": "tool.nest", "p": 0.5},
    {"transform": "tool.values", "modes": ["enum", "default"], "p": 0.5},
    {"transform": "skill.rename", "p": 0.6},
    {"transform": "prompt.tool_format"},
    {"transform": "prompt.placement"},
    {"transform": "hook.message_format"},
    {"transform": "trajectory.strip_retries", "p": 0.5},
]}


@pytest.fixture(scope="module")
def sources() -> list[dict]:
    lines = FIXTURES.read_text(encoding="utf-8").splitlines()
    return [normalize(json.loads(line)) for line in lines[:300:20]]


@pytest.fixture
def isolated(monkeypatch):
    """Every leaf's apply given and returning private deep copies: what apply did when it cloned everything."""
    def patch(cls):
        orig = cls.apply
        monkeypatch.setattr(cls, "apply", lambda self, record, params: _json.copy(orig(self, _json.copy(record), params)))
    return lambda: [patch(cls) for name, cls in registry().items() if not issubclass(cls, Combinator)]


def _variants(recipe, sources) -> list[str]:
    out = []
    for source in sources:
        snapshot = _json.canonical(source)
        for k in range(1, 5):
            variant, applied, _ = run(recipe, source, rng_for(0, source["id"], k))
            out.append(_json.canonical([variant, [a.to_json() for a in applied]]))
            assert _json.canonical(source) == snapshot, f"{source['id']} variant {k} changed its source"
    return out


def test_sharing_leaves_are_registered():
    """Every name in SHARING is a registered leaf transform."""
    assert set(SHARING) <= set(registry())


@pytest.mark.parametrize("recipe", [load_recipe("default"), recipe_from_dict({"__version__": 1, "transform": SHARING_FIRST})],
                         ids=["default", "sharing-first"])
def test_shared_parts_give_the_variants_of_private_copies(recipe, sources, isolated):
    """Recipes over fixture records give the same variants as with deep copies around every apply; sources stay."""
    shared = _variants(recipe, sources)
    isolated()
    assert _variants(recipe, sources) == shared


def _with_skill_enum(source: dict) -> dict:
    """``source`` with the skill names listed as an enum of the skill tool's argument (skill.catalog extends it)."""
    out = _json.copy(source)
    st = out["skill_tool"]
    for t in out["tools"]:
        if t["name"] == st["name"]:
            t["parameters"]["properties"][st["argument"]]["enum"] = [s["name"] for s in out["skills"]]
    return out


@pytest.mark.parametrize("name", SHARING)
def test_sharing_apply_leaves_its_input_alone(name, sources):
    """Each sharing leaf, applied straight to fixture records, changes none of them and gives what a deep copy gives."""
    from tests.transform_table import TABLE

    transform = TABLE[name]()
    applied = 0
    for source in sources + [_with_skill_enum(s) for s in sources[:5]]:
        snapshot = _json.canonical(source)
        for k in range(3):
            params = transform.sample(source, rng_for(0, source["id"], k))
            if not isinstance(params, dict):
                continue
            out = transform.apply(source, _json.copy(params))
            assert _json.canonical(source) == snapshot, f"{name} changed {source['id']}"
            assert _json.canonical(out) == _json.canonical(transform.apply(_json.copy(source), params))
            applied += 1
    assert applied or name == "prompt.tool_format"
