"""A name that is also a value of the task is never renamed (rows met in public data, 2026-12-06).

Renames rewrite the references to a name in every text, user messages included, and never the values a call
passes. An identifier-like name is a reference wherever it occurs, by the rule of :mod:`hsa.mentions`, which is
wrong where the user's request or a call's code uses it as a value:

- BFCL ``simple_javascript_1`` asks for "a list element stored in a variable named 'listElement'", and its tool
  has a parameter ``listElement``; BFCL's answer passes ``listElement="listElement"``. ``tool.param_rename``
  rewrote the question to "a variable named 'list_element'": another task.
- A Hermes agent trajectory runs ``python3 -c "from hermes_tools import get_schema; ..."`` through its
  ``terminal`` tool, and ``get_schema`` is also a tool. ``tool.rename`` renamed the tool ``fetch_schema``; the
  call's code, which renames do not touch, still imports ``get_schema``.

Such a name is now left alone (:func:`hsa.record_texts.data_words`); the other names of the record are renamed as
before, and plain words (``attribute``), whose mentions are told from their word uses, are unaffected.
"""

from __future__ import annotations

import json
import random

import transforms  # noqa: F401  (registers the transforms)
from hsa.record_texts import data_words
from hsa.records import normalize
from transforms.tool import ParamRename, ToolRename

BFCL_JS_1 = {"id": "simple_javascript_1", "question": [[{"role": "user", "content": (
    "Help me extract all data entries with the attribute 'data-active' set to true from a list element stored in a "
    "variable named 'listElement'?")}]], "function": [{
        "name": "getActiveDataEntries", "description": (
            "This function extracts data entries from a list element based on a specified attribute and its value. "
            "It checks for the presence of the 'data-active' attribute and whether it is set to true."),
        "parameters": {"type": "dict", "properties": {
            "listElement": {"type": "any", "description": "The list element from which to extract active data entries."},
            "attribute": {"type": "String", "description": (
                "The data attribute used to filter entries. Optional parameter with a default value of 'data-active'."),
                "default": "data-active"},
            "value": {"type": "Boolean", "description": (
                "The value of the attribute to match. Optional parameter with a default value of true."),
                "default": True}}, "required": ["listElement"]}}]}


def _tool(name: str, description: str, params: dict) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
        "required": list(params)}}}


HERMES_AGENT = {"id": "hermes-terminal", "tools": [
    _tool("terminal", "Run a shell command.", {"command": "The command line."}),
    _tool("get_schema", "The tables and columns of a connected database.", {"connection_id": "The connection."}),
    _tool("read_file", "Read a text file.", {"path": "The file path."})],
    "messages": [
        {"role": "user", "content": "Which tables does my database have?"},
        {"role": "assistant", "content": "Let me inspect the schema directly.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": json.dumps({
                "command": "python3 -c \"from hermes_tools import get_schema; print(get_schema('01a59e23'))\""})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "orders, customers"},
        {"role": "assistant", "content": "It has two tables: orders and customers."}]}


def _draws(t, record, seeds=range(40)) -> list:
    return [t.sample(record, random.Random(s)) for s in seeds]


def test_a_parameter_named_like_a_value_of_the_question_is_not_renamed():
    rec = normalize(BFCL_JS_1)
    assert "listElement" in data_words(rec) and "getActiveDataEntries" not in data_words(rec)
    draws = _draws(ParamRename(p=1.0), rec)
    renamed = [e["path"][-1] for d in draws if isinstance(d, dict) for e in d["renames"]]
    assert renamed and "listElement" not in renamed  # the others still are
    assert {"attribute", "value"} & set(renamed)
    skips = [d.reason for d in draws if not isinstance(d, dict)]
    assert all("'listElement' also in a user message" in s for s in skips if "listElement" in s)


def test_a_tool_that_a_calls_code_imports_is_not_renamed():
    rec = normalize(HERMES_AGENT)
    words = data_words(rec)
    assert "get_schema" in words and "read_file" not in words and "command" not in words  # values, not keys
    draws = _draws(ToolRename(p=1.0), rec)
    renamed = {old for d in draws if isinstance(d, dict) for old in d["renames"]}
    assert "get_schema" not in renamed and {"read_file", "terminal"} <= renamed


def test_augmented_variants_keep_the_question_and_the_code_consistent(tmp_path):
    """End to end, default recipe: no variant's question names another variable, and no variant's call imports a
    tool the variant no longer has."""
    from hsa.cli import main
    from hsa.io import read_records

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(BFCL_JS_1) + "\n" + json.dumps(HERMES_AGENT) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--variants", "8", "--workers", "1"]) == 0
    assert main(["export", str(tmp_path / "out"), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = list(read_records(str(tmp_path / "rows.jsonl")))
    assert len(rows) == 16
    for r in rows:
        if r["source_id"] == "simple_javascript_1":
            assert r["messages"][0]["content"].endswith("a variable named 'listElement'?")
        else:
            names = {(t.get("function") or t)["name"] for t in r["tools"]}
            assert "get_schema" in names and "from hermes_tools import get_schema" in json.dumps(r["messages"])
