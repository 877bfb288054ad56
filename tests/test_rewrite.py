"""hsa.renames helpers: what counts as free text and as a hook literal."""

from __future__ import annotations

from hsa.records import clone, normalize
from hsa.renames import hook_literals, map_texts, text_fields


def test_text_fields_are_exactly_what_map_texts_rewrites(fixture_records):
    """text_fields lists the fields map_texts visits (plus hook source), in the same order."""
    for raw in fixture_records[:20]:
        rec = normalize(raw)
        seen: list[str] = []
        map_texts(clone(rec), lambda s: seen.append(s) or s)
        assert text_fields(rec) == seen + [h["source"] for h in rec.get("hooks") or ()]


def test_hook_literals_are_plain_string_values():
    """Plain string literals (and their |-parts) count; f-strings and bytes do not; a leading f inside quotes is text."""
    source = 'A = "foo|bar"\nB = f"{A}baz"\nC = b"qux"\nD = """fix"""\nE = r"\\d"\n'
    rec = {"hooks": [{"name": "h", "source": source}]}
    assert hook_literals(rec) == {"foo|bar", "foo", "bar", "fix", "\\d"}
    assert hook_literals({"hooks": [{"name": "bad", "source": "def f(:\n  'x"}]}) == set()


_NO_PLUGIN = r'''
import importlib.abc, json, sys

class NoPlugins(importlib.abc.MetaPathFinder):
    """Refuse the plugin package: the core must not need it."""
    def find_spec(self, name, path=None, target=None):
        if name == "transforms" or name.startswith("transforms."):
            raise ImportError(f"{name} is not importable in this test")
        return None

sys.meta_path.insert(0, NoPlugins())
from hsa.records import normalize
from hsa.renames import apply_step, canonicalize, content_of

args = {"city": "Paris", "days": 3, "units": "metric"}
source = normalize({
    "id": "r1",
    "messages": [
        {"role": "user", "content": "Weather in Paris for 3 days, metric units?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps(args)}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city.",
        "parameters": {"type": "object", "required": ["city", "days"], "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "units": {"type": "string", "enum": ["metric", "imperial"]}}}}}],
})
steps = [
    {"op": "params", "tool": "get_weather", "kind": "regroup",
     "paths": [[["city"], ["where", "city"]], [["days"], ["where", "days"]]],
     "container": {"path": ["where"], "schema": {"type": "object"}, "required": True}},
    {"op": "params", "tool": "get_weather", "kind": "permute", "paths": [[["units"], ["where"]], [["where"], ["units"]]]},
    {"op": "params", "tool": "get_weather", "kind": "require", "paths": [], "fill": [[["api"], "v2"]],
     "schema": {"type": "string", "enum": ["v2"]}},
    {"op": "values", "tool": "get_weather", "path": ["where"], "map": [["metric", "METRIC"]], "texts": True},
]
variant = source
for step in steps:
    variant = apply_step(variant, step)
call = variant["messages"][1]["tool_calls"][0]["function"]
back = canonicalize(variant)
print(json.dumps({"call": call, "same": content_of(back) == content_of(source),
                  "plugins": sorted(m for m in sys.modules if m.split(".")[0] == "transforms")}))
'''


def test_canonicalize_undoes_structural_steps_with_no_plugin_imported():
    """The record-level appliers of regroup, permute, require and values steps are the core's (a fixed table):
    in a fresh interpreter where the transform library cannot even be imported, hsa.renames applies them and
    canonicalize gives the source back."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _NO_PLUGIN], capture_output=True, text=True, env=env, cwd=root,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["call"] == {"name": "get_weather",
                           "arguments": {"units": {"city": "Paris", "days": 3}, "where": "METRIC", "api": "v2"}}
    assert got["same"] is True
    assert got["plugins"] == []
