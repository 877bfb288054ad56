"""Tool-family shortcuts (issue 8): the same answers as the plain code they replace."""

from __future__ import annotations

import ast

from hsa.pipeline import rng_for
from hsa.records import normalize
from transforms import _toolhooks, tool, tool_functional


def _hook_sources(records) -> list[str]:
    return sorted({h["source"] for r in records for h in r.get("hooks") or ()})


def test_one_walk_gives_ast_walk_order_and_parents(fixture_records):
    """_toolhooks._walk lists ast.walk's nodes in its order and the parents a second walk would set."""
    sources = _hook_sources(fixture_records) + ["x = (a + b) * -c\nif x:\n    y = [i for i in x if not i]\n"]
    for source in sources:
        tree = ast.parse(source)
        nodes, parents = _toolhooks._walk(tree)
        expected: dict = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                expected[child] = node
        assert nodes == list(ast.walk(tree))
        assert all(a is b for a, b in zip(nodes, ast.walk(tree)))
        assert parents.keys() == expected.keys() and all(parents[k] is v for k, v in expected.items())


def test_tool_values_mentions_found_by_tokens_equal_find_tokens(fixture_records, monkeypatch):
    """tool.values samples the same params with the token-set test for plain forms as with find_tokens on every text."""
    transform = tool.Values(modes=("enum", "default"), p=0.7)
    sources = [normalize(r) for r in fixture_records[::10]]
    # an enum value mentioned in a text (a plain one, and one find_tokens must search for)
    extra = normalize(fixture_records[0])
    for t in extra["tools"]:
        for sub in (t["parameters"].get("properties") or {}).values():
            if isinstance(sub, dict) and sub.get("type") == "string" and "enum" not in sub:
                sub["enum"] = ["alpha_one", "beta two", "gamma"]
                break
    extra["messages"][-1]["content"] = "alpha_one or beta two"
    sources.append(extra)

    def samples():
        return [transform.sample(s, rng_for(0, s["id"], k)) for s in sources for k in range(4)]

    fast = samples()
    monkeypatch.setattr(tool_functional, "is_plain_token", lambda name: False)  # never plain: find_tokens on every text
    assert samples() == fast
    assert any(isinstance(p, dict) for p in fast)
