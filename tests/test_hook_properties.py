"""Property tests: invariant 7 for random compositions of tool, parameter and skill renames."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from hsa.codemods.sync import REFUSAL_PREFIX
from hsa.names import render_style
from hsa.records import normalize
from hsa.renames import param_paths, rename_params, rename_skills, rename_tools
from hsa.sandbox import check_hooks
from hsa.testing import records
from hsa.invariants import check_variant
from tests.conftest import FIXTURES

FIXTURE = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines()]
STYLES = ("camel", "pascal", "kebab", "snake", "screaming")


@st.composite
def renamed(draw, raw: dict):
    """A record and a variant made by 1-4 renames (tools, parameters at any depth, skills) in a random order."""
    source = normalize(raw)
    variant = source
    for k in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("tools", "params", "skills")))
        if op == "tools":
            names = [t["name"] for t in variant["tools"]]
            chosen = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=len(names)))
            style = draw(st.sampled_from(STYLES))
            new = {n: f"{render_style(n, style)}_{k}" for n in chosen}
            assume(_one_to_one(new, names))  # "list" and "List" both give "list_0": two tools, one name
            variant = rename_tools(variant, new)
        elif op == "skills" and variant.get("skills"):
            names = [s["name"] for s in variant["skills"]]
            chosen = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=len(names)))
            new = {n: f"{render_style(n, draw(st.sampled_from(STYLES)))}{k}" for n in chosen}
            assume(_one_to_one(new, names))
            variant = rename_skills(variant, new)
        else:
            tools = [t for t in variant["tools"] if [p for p in param_paths(t["parameters"]) if p[-1] != "[]"]]
            if not tools:
                continue
            tool = draw(st.sampled_from(tools))
            paths = [p for p in param_paths(tool["parameters"]) if p[-1] != "[]"]
            chosen = draw(st.lists(st.sampled_from(paths), unique=True, min_size=1, max_size=3))
            variant = rename_params(variant, tool["name"], {p: f"{render_style(p[-1], 'camel')}V{k}" for p in chosen})
    return source, variant


def _one_to_one(renames: dict, names: list) -> bool:
    """Whether ``renames`` gives each renamed name its own new name, none of them a name left as it is: a drawn
    record may hold names that one style writes alike (``list``, ``List``), and a rename that merged them is no
    variant hsa would make (its samplers never draw one; invariant 1 rejects it)."""
    new = list(renames.values())
    return len(set(new)) == len(new) and not set(new) & (set(names) - set(renames))


def _holds(source: dict, variant: dict) -> None:
    refusals = [n for n in variant["notes"][len(source["notes"]):] if n.startswith(REFUSAL_PREFIX)]
    note(f"mapping: {variant['mapping']}")
    note(f"refusals: {refusals}")
    if refusals:  # the variant is refused, with the reason, never written with an inconsistent hook
        assert any(v.invariant == "hooks" and v.reason.startswith("sync refused") for v in check_variant(source, variant))
        return
    violations = check_hooks(source, variant)
    assert violations == [], violations[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FIXTURE).flatmap(renamed))
def test_invariant_7_on_fixture_records(pair):
    """Each rewritten hook, run on mapped payloads, returns the mapped output of the original (or is refused)."""
    _holds(*pair)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(hooks=True, skills=True).flatmap(renamed))
def test_invariant_7_on_generated_records(pair):
    """Invariant 7 on records drawn by hsa.testing (matchers, dict keys, match/case hooks)."""
    _holds(*pair)


def test_refusals_are_rare_on_the_fixtures():
    """Renaming every tool and skill of the fixtures is never refused: their hooks resolve statically."""
    for raw in FIXTURE[::10]:
        r = normalize(raw)
        v = rename_tools(r, {t["name"]: render_style(t["name"], "pascal") for t in r["tools"]})
        v = rename_skills(v, {s["name"]: render_style(s["name"], "camel") + "X" for s in v["skills"]})
        assert not [n for n in v["notes"] if n.startswith(REFUSAL_PREFIX)]
