"""Records over the captured MCP tool lists (fixtures/mcp) with realistic calls: a user turn, the calls a model
makes on those servers' tools (enum-valued arguments among them), their results and a reply."""

from __future__ import annotations

import copy
import json
from pathlib import Path

MCP = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "records.jsonl"

#: server -> (user request, [(tool, arguments, result)], reply)
CALLS = {
    "playwright": ("Open https://example.com, click the More information link with Shift held, and show me any "
                   "console warnings and the body of the last response.", [
        ("browser_navigate", {"url": "https://example.com"}, "Navigated to https://example.com"),
        ("browser_click", {"element": "More information link", "target": "e12", "button": "left",
                           "modifiers": ["Shift"]}, "Clicked the element"),
        ("browser_console_messages", {"level": "warning"}, "[WARNING] Deprecated API used"),
        ("browser_network_request", {"index": 3, "part": "response-body"}, "<html>...</html>"),
        ("browser_take_screenshot", {"type": "png", "scale": "css"}, "Saved screenshot page.png"),
    ], "One warning (a deprecated API); the response body is the example page."),
    "everything": ("Show me an error-style annotated message, then gzip the README as a resource link.", [
        ("get-annotated-message", {"messageType": "error", "includeImage": False}, "Error: something went wrong"),
        ("gzip-file-as-resource", {"name": "README.md.gz", "outputType": "resourceLink"},
         "Created resource link README.md.gz"),
        ("get-structured-content", {"location": "Chicago"}, '{"temperature": 21, "conditions": "Sunny"}'),
    ], "Done: the error message is shown and the gzipped README is linked."),
    "filesystem": ("List /data by size and show me the first 20 lines of notes/todo.md.", [
        ("list_directory_with_sizes", {"path": "/data", "sortBy": "size"}, "[FILE] big.csv 2.1 MB"),
        ("read_text_file", {"path": "notes/todo.md", "head": 20}, "- buy milk"),
    ], "The largest file is big.csv; your todo list starts with buying milk."),
    "git": ("What changed in /repo since the last commit? Then commit it as 'fix typo'.", [
        ("git_status", {"repo_path": "/repo"}, "modified: README.md"),
        ("git_diff_unstaged", {"repo_path": "/repo", "context_lines": 3}, "-teh\n+the"),
        ("git_commit", {"repo_path": "/repo", "message": "fix typo"}, "Changes committed"),
    ], "README.md had a typo; it is committed."),
    "time": ("What time is it in Tokyo right now?", [
        ("get_current_time", {"timezone": "Asia/Tokyo"}, '{"timezone": "Asia/Tokyo", "datetime": "2026-05-01T09:00"}'),
    ], "It is 09:00 in Tokyo."),
    "sqlite": ("List the tables in the database and describe the orders table.", [
        ("list_tables", {}, "orders, customers"),
        ("describe_table", {"table_name": "orders"}, "id INTEGER, total REAL"),
    ], "There are two tables; orders has an id and a total."),
}


def raw_records() -> dict[str, dict]:
    """The captured records (fixtures/mcp/records.jsonl) by server name."""
    out = {}
    for line in MCP.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        out[raw["id"].removeprefix("mcp-")] = raw
    return out


def with_calls(server: str) -> dict:
    """Server ``server``'s captured record, its user turn replaced by the request of :data:`CALLS`, then the
    calls (one assistant turn each), their results and the reply."""
    raw = copy.deepcopy(raw_records()[server])
    request, calls, reply = CALLS[server]
    tools = {t["name"] for t in raw["tools"]}
    messages = [m for m in raw["messages"] if m["role"] == "system"] + [{"role": "user", "content": request}]
    for i, (tool, args, result) in enumerate(calls):
        assert tool in tools, f"{server} has no tool {tool!r}"
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": result})
    messages.append({"role": "assistant", "content": reply})
    raw["messages"] = messages
    raw["id"] = f"{raw['id']}-calls"
    return raw


def all_with_calls() -> list[dict]:
    """:func:`with_calls` for every server of :data:`CALLS`, and the other captured records as they are."""
    raws = raw_records()
    return [with_calls(s) if s in CALLS else raws[s] for s in raws]


if __name__ == "__main__":  # python tests/mcp_calls.py OUT.jsonl: the records, one a line (docs/audits/structure.md)
    import sys

    with open(sys.argv[1], "w", encoding="utf-8") as f:
        for rec in all_with_calls():
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
