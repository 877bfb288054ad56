"""Issue 16 (items 1-6, 10): task preservation on real harnesses, each defect pinned by a small hand-written case."""

from __future__ import annotations

import json
import random

import pytest

from hsa import _json
from hsa.io import InputLine
from hsa.mapping import Mapping
from hsa.pipeline import augment_record, source_row
from hsa.recipes import recipe_from_dict
from hsa.records import normalize
from hsa.renames import rename_params, rename_tools
from hsa.validate import ValidationReport, validate_records
from hsa.invariants import check_variant

SEND_EMAIL = {
    "id": "e1",
    "messages": [
        {"role": "user", "content": "Email bob@x.com that the meeting moved to 3pm."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "send_email", "arguments": {"to": "bob@x.com", "subject": "Meeting", "body": "Moved to 3pm."}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "send_email", "content": "{\"status\": \"sent\"}"},
        {"role": "assistant", "content": "Sent."},
    ],
    "tools": [{"type": "function", "function": {
        "name": "send_email", "description": "Send an email.",
        "parameters": {"type": "object", "properties": {
            "to": {"type": "string", "description": "Recipient address."},
            "subject": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "subject", "body"]}}}],
}

MASK_THEN_DISTRACTORS = {"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": [
    {"transform": "tool.rename", "styles": ["mask"], "p": 1.0}, {"transform": "tool.distractors", "n": [30, 30]}]}}


def _item(record: dict, line: int = 1) -> InputLine:
    return InputLine("in.jsonl", line, json.dumps(record).encode(), line - 1)


def _validate(rows: list[dict]) -> ValidationReport:
    items = [(f"rows[{i}]", json.loads(json.dumps(r))) for i, r in enumerate(rows)]
    return validate_records(items, ValidationReport())


# --------------------------------------------------------------------------- item 1


def test_a_distractor_never_takes_the_source_name_of_a_renamed_tool():
    """mask rename then 30 distractors: no distractor is named send_email, and validate agrees with the pipeline."""
    res = augment_record(_item(SEND_EMAIL), recipe_from_dict(MASK_THEN_DISTRACTORS), seed=0, variants=8,
                         keep_original=True)
    assert res.stats.variants_failed == 0 and len(res.rows) == 9, res.rejects
    for row in res.rows[1:]:
        names = [t["function"]["name"] for t in row["tools"]]
        assert "send_email" not in names, names
        assert len(names) > 1
    report = _validate(res.rows)
    assert not report.violations, report.lines
    assert report.variants == 8


def _renamed_with_a_distractor_named_like_the_source() -> tuple[dict, dict]:
    source = normalize(json.loads(json.dumps(SEND_EMAIL)))
    variant = rename_tools(source, {"send_email": "tool_x7Qa"})
    distractor = _json.copy(variant["tools"][0])
    distractor["name"] = "send_email"
    distractor["parameters"] = {"type": "object", "properties": {"to": {"type": "array"}}}
    variant["tools"].append(distractor)
    return source, variant


def test_check_variant_rejects_an_added_tool_with_a_source_name():
    """A variant that adds a tool named like a renamed source tool fails the per-variant check."""
    source, variant = _renamed_with_a_distractor_named_like_the_source()
    problems = check_variant(source, variant)
    assert problems and problems[0].reason == "added name equals a source name", problems
    assert "'send_email'" in problems[0].detail


def test_check_variant_rejects_an_added_parameter_with_a_source_name():
    """A parameter added beside a renamed one, under the renamed one's source name, fails the check."""
    source = normalize(json.loads(json.dumps(SEND_EMAIL)))
    variant = rename_params(source, "send_email", {("to",): "recipient"})
    props = variant["tools"][0]["parameters"]["properties"]
    props["to"] = {"type": "string", "description": "Unused."}
    problems = check_variant(source, variant)
    assert any(p.reason == "added name equals a source name" and "'to'" in p.detail for p in problems), problems
    # a parameter with a fresh name is fine
    del props["to"]
    props["verbose_flag"] = {"type": "boolean"}
    assert not [p for p in check_variant(source, variant) if p.reason == "added name equals a source name"]


def test_validate_runs_the_pipeline_check_on_variant_rows():
    """hsa validate rejects the same variant row the pipeline check rejects, with or without its source row."""
    source, variant = _renamed_with_a_distractor_named_like_the_source()
    rows = [source_row(source, 0, []), source_row(variant, 1, [])]
    with_source = _validate(rows)
    assert with_source.violations["2 round trip"] >= 1, with_source.lines
    assert any("added name equals a source name" in line for line in with_source.lines), with_source.lines
    alone = _validate(rows[1:])
    assert alone.violations, alone.lines


# --------------------------------------------------------------------------- item 4


def test_backticked_parameter_names_in_descriptions_follow_a_rename():
    """``from `author` to `recipient` ``: plain-word parameters written as code are renamed in the descriptions."""
    raw = json.loads(json.dumps(SEND_EMAIL))
    fn = raw["tools"][0]["function"]
    fn["description"] = "Send an email from `author` to `to`. The author is the signed-in user."
    fn["parameters"]["properties"]["author"] = {"type": "string", "description": "Sender; defaults to `to` if unset."}
    source = normalize(raw)
    out = rename_params(source, "send_email", {("author",): "sender", ("to",): "recipient"})
    tool = out["tools"][0]
    assert tool["description"] == "Send an email from `sender` to `recipient`. The author is the signed-in user."
    assert tool["parameters"]["properties"]["sender"]["description"] == "Sender; defaults to `recipient` if unset."
    assert out["messages"][0]["content"] == source["messages"][0]["content"]  # prose elsewhere is left alone


# --------------------------------------------------------------------------- item 5


def test_prefix_style_leaves_names_that_carry_a_namespace():
    """tool.rename's prefix style never stacks a namespace on mcp__server__x, a.b or ns:tool; plain names get one."""
    from transforms._toolnames import new_name
    from transforms.tool import ToolRename

    for name in ("mcp__paper-search__search_arxiv", "shop.get_item", "ns:tool", "files/read"):
        assert new_name(name, "prefix", random.Random(0), prefix="mcp__server__") == name
    assert new_name("search_arxiv", "prefix", random.Random(0), prefix="mcp__server__") == "mcp__server__search_arxiv"
    raw = {"messages": [{"role": "user", "content": "papers on HSA"}], "tools": [
        {"name": "mcp__paper-search__search_arxiv", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "fetch_pdf", "inputSchema": {"type": "object", "properties": {}}}]}
    record = normalize(raw)
    for seed in range(10):
        params = ToolRename(styles=("prefix",), prefixes=("mcp__server__",)).sample(record, random.Random(seed))
        assert params["renames"] == {"fetch_pdf": "mcp__server__fetch_pdf"}, params


def test_namespace_of_reads_the_common_namespace_forms():
    """namespace_of: MCP's server__tool, dotted, colon and slash namespaces; versions and dunders are none."""
    from hsa.names import namespace_of

    assert namespace_of("mcp__paper-search__search_arxiv") == "mcp__paper-search__"
    assert [namespace_of(n) for n in ("shop.get_item", "ns:tool", "files/read")] == ["shop.", "ns:", "files/"]
    assert [namespace_of(n) for n in ("search_arxiv_v2.1", "__init__", "get_item", "Bash")] == ["", "", "", ""]


# --------------------------------------------------------------------------- item 6

AGENT_HOOKS = '''from agents import AgentHooks, RunHooks


class Guard(AgentHooks):
    async def on_start(self, context, agent):
        context.context["started"] = agent.name

    async def on_end(self, context, agent, output):
        if "refund" in str(output).lower():
            context.context["flag"] = "refund promised"

    async def on_handoff(self, context, agent, source):
        context.context["from"] = source.name

    def helper(self):
        return None


class Audit(RunHooks):
    async def on_agent_start(self, context, agent):
        context.context["run"] = agent.name
'''


def test_agents_importer_takes_agent_hooks_on_start_and_on_end():
    """AgentHooks.on_start / on_end become agent_start / agent_end hooks (RunHooks keep their own names), and run."""
    from hsa.hooks_model import generated_payloads, import_agents_hooks
    from hsa.sandbox import replay

    hooks = import_agents_hooks(AGENT_HOOKS)
    assert [(h["name"], h["event"]) for h in hooks] == [
        ("Guard.on_start", "agent_start"), ("Guard.on_end", "agent_end"), ("Guard.on_handoff", "handoff"),
        ("Audit.on_agent_start", "agent_start")]
    record = normalize({"messages": [{"role": "user", "content": "My order is late."},
                                     {"role": "assistant", "content": "I will issue a refund."}], "tools": []})
    start, end = hooks[0], hooks[1]
    outcome = replay(start, generated_payloads(record, start)[0])
    assert outcome["ok"] and outcome["value"]["context"] == {"started": "assistant"}, outcome
    flags = [replay(end, p)["value"]["context"] for p in generated_payloads(record, end)]
    assert {"flag": "refund promised"} in flags, flags


# --------------------------------------------------------------------------- item 3

BASH_GUARD = ("import json, sys\nd = json.load(sys.stdin)\n"
              "if d.get('tool_name') == 'Bash' and 'rm -rf' in d['tool_input'].get('command', ''):\n    sys.exit(2)\n")


def _bash_record(hook: str | None = BASH_GUARD, user: str = "List the files in the repo.") -> dict:
    raw = {"id": "b1", "messages": [
        {"role": "user", "content": user},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": {"command": "ls"}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "Bash", "content": "README.md\nsrc"},
        {"role": "assistant", "content": "There are two entries: README.md and src."}],
        "tools": [{"type": "function", "function": {"name": "Bash", "description": "Run a shell command.",
                                                    "parameters": {"type": "object", "properties": {
                                                        "command": {"type": "string"}}, "required": ["command"]}}}]}
    if hook is not None:
        entry = "check" if hook.startswith(("def check", "RULES")) else "__main__"
        raw["hooks"] = [{"name": "guard", "event": "pre_tool_use", "entry": entry, "source": hook}]
    return raw


def test_a_plain_word_tool_name_compared_in_a_hook_is_renamed_and_the_hook_follows():
    """Bash with a hook comparing tool_name == 'Bash' is renamed; the hook follows and still blocks rm -rf."""
    from transforms.tool import ToolRename

    source = normalize(_bash_record())
    t = ToolRename(styles=("mask",))
    params = t.sample(source, random.Random(0))
    assert isinstance(params, dict) and set(params["renames"]) == {"Bash"}, params
    variant = t.apply(source, params)
    new = params["renames"]["Bash"]
    assert f"== '{new}'" in variant["hooks"][0]["source"]
    assert check_variant(source, variant, exec_hooks=True) == []


def test_plain_word_references_and_words_in_prose_and_hooks():
    """Prose: code, quotes, calls and tool-name positions are references, other uses words (decided per mention);
    hooks: a message or data literal using the word makes the name ambiguous."""
    from hsa.mentions import prose_uses
    from hsa.renames import word_uses

    def uses(user: str, hook: str | None = BASH_GUARD) -> dict:
        return word_uses(normalize(_bash_record(hook, user)), ["Bash"])

    for ref in ("Use the Bash tool to list files.", "Run `Bash` with ls.", "call Bash(ls)", "tool: Bash"):
        assert prose_uses(ref, "Bash") == (1, 0), ref
        assert uses(ref) == {}, ref
    assert prose_uses("Write a Bash script that lists files.", "Bash") == (0, 1)
    assert uses("Write a Bash script that lists files.") == {}  # prose never blocks a rename: the word stays
    message_hook = BASH_GUARD.replace("sys.exit(2)", "print('Bash may not delete trees', file=sys.stderr)\n    sys.exit(2)")
    assert uses("List the files.", message_hook) == {"Bash": "hook 'guard'"}
    data_hook = "def check(p):\n    mode = 'Bash'\n    return {'decision': 'allow', 'mode': mode}\n"
    assert uses("List the files.", data_hook) == {"Bash": "hook 'guard'"}
    dict_hook = ("RULES = {'Bash': ['rm -rf']}\ndef check(p):\n    # guards `Bash`\n"
                 "    if any(b in str(p['tool_input']) for b in RULES.get(p['tool_name'], [])):\n"
                 "        return {'decision': 'deny', 'message': 'the Bash tool may not delete trees'}\n"
                 "    return {'decision': 'allow'}\n")
    assert uses("List the files.", dict_hook) == {}
    assert prose_uses("Read the file.", "Read") == (0, 1)


def test_a_plain_word_tool_used_as_a_word_is_renamed_where_the_text_refers_to_it():
    """Issue 27 item 10: "Write a Bash script" keeps the word while the tool and "the Bash tool" are renamed."""
    from transforms.tool import ToolRename

    raw = _bash_record(user="Write a Bash script that lists files, then run it with the Bash tool.")
    source = normalize(raw)
    params = ToolRename(styles=("mask",)).sample(source, random.Random(0))
    assert set(params["renames"]) == {"Bash"}, params
    new = params["renames"]["Bash"]
    variant = ToolRename(styles=("mask",)).apply(source, params)
    assert variant["messages"][0]["content"] == f"Write a Bash script that lists files, then run it with the {new} tool."
    assert check_variant(source, variant, exec_hooks=True) == []


def test_an_ambiguous_plain_word_tool_is_skipped_under_its_own_reason():
    """A plain-word tool that a hook uses as a word is left alone, and the skip reason names it and where."""
    from transforms.tool import ToolRename

    hook = BASH_GUARD.replace("sys.exit(2)", "print('Bash may not delete trees', file=sys.stderr)\n    sys.exit(2)")
    source = normalize(_bash_record(hook))
    skip = ToolRename(styles=("mask",)).sample(source, random.Random(0))
    assert "'Bash' (in hook 'guard')" in skip.reason and "no tool name changed" not in skip.reason, skip


# --------------------------------------------------------------------------- item 2

RULES = "import json, os\nDENY = json.load(open(os.path.join(os.path.dirname(__file__), 'deny.json')))\n"
DENY = '{"Bash": ["rm -rf"]}'
ENGINE_HOOK = ("import json, sys\nfrom rules import DENY\nd = json.load(sys.stdin)\n"
               "if any(p in d['tool_input'].get('command', '') for p in DENY.get(d.get('tool_name'), [])):\n"
               "    print('blocked by rule', file=sys.stderr)\n    sys.exit(2)\n")


def _engine_record(files: dict | None) -> dict:
    raw = _bash_record(ENGINE_HOOK)
    raw["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"command": "rm -rf build"}
    if files is not None:
        raw["hooks"][0]["files"] = files
        raw["hooks"][0]["path"] = "guard.py"
    return raw


def test_a_hook_that_cannot_import_its_rule_engine_is_not_replayed_and_says_so():
    """A hook failing on every payload (its sibling module is missing) is counted, noted on rows, and --strict-hooks rejects."""
    from hsa.sandbox import not_replayed

    raw = _engine_record(None)
    stuck = not_replayed(normalize(raw))
    assert list(stuck) == ["guard"] and stuck["guard"].startswith("ModuleNotFoundError"), stuck
    recipe = recipe_from_dict({"__version__": 1, "transform": {"transform": "tool.param_rename", "styles": ["mask"]}})
    res = augment_record(_item(raw), recipe, seed=0, variants=2, keep_original=True)
    assert res.stats.sources_written == 1 and len(res.rows) == 3
    assert sum(res.stats.hooks_not_replayed.values()) == 1
    assert next(iter(res.stats.hooks_not_replayed)).startswith("guard: ModuleNotFoundError")
    for row in res.rows:
        assert any(n.startswith("hook not replayed: 'guard': ModuleNotFoundError") for n in row["notes"]), row["notes"]
    strict = augment_record(_item(raw), recipe, seed=0, variants=2, keep_original=True, strict_hooks=True)
    assert strict.rows == [] and strict.rejects[0]["reason"] == "hook not replayed"


def test_a_hook_runs_with_its_sibling_files_and_file_path():
    """With its files (a rule module that reads deny.json beside __file__) the hook really runs and is checked."""
    from hsa.sandbox import check_hooks, not_replayed, replay

    raw = _engine_record({"rules.py": RULES, "deny.json": DENY})
    source = normalize(raw)
    assert not_replayed(source) == {}
    hook = source["hooks"][0]
    blocked = replay(hook, {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})
    assert blocked["ok"] and blocked["value"]["exit_code"] == 2, blocked
    assert replay(hook, {"tool_name": "Bash", "tool_input": {"command": "ls"}})["value"]["exit_code"] == 0
    variant = rename_params(source, "Bash", {("command",): "cmd_line"})
    assert check_hooks(source, variant) == []  # the sync renamed the key; both sides ran
    broken = _json.copy(variant)
    broken["hooks"][0]["files"] = {"rules.py": RULES, "deny.json": '{"Bash": []}'}
    assert [v.reason for v in check_hooks(source, broken)] == ["rewritten hook behaves differently"]


def test_claude_settings_importer_collects_the_hooks_sibling_files():
    """import_claude_settings reads the modules a hook imports from its folder, and the files it names there."""
    from hsa.hooks_model import import_claude_settings

    fs = {".claude/hooks/guard.py": ENGINE_HOOK, ".claude/hooks/rules.py": RULES, ".claude/hooks/deny.json": DENY,
          ".claude/hooks/unrelated.py": "x = 1\n"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py"}]}]}}
    hooks, skipped = import_claude_settings(settings, lambda p: fs[p])
    assert skipped == [] and len(hooks) == 1
    assert hooks[0]["path"] == "guard.py" and hooks[0]["files"] == {"deny.json": DENY, "rules.py": RULES}
    record = normalize({**_engine_record(None), "hooks": hooks})
    from hsa.sandbox import not_replayed

    assert not_replayed(record) == {}


# --------------------------------------------------------------------------- item 10


def test_canonicalize_gives_back_the_source_record_not_only_the_calls(tmp_path):
    """Distractors, new descriptions, reordered properties and a masked tool: hsa canonicalize writes the source back."""
    from hsa.cli import main

    recipe = {"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": [
        {"transform": "tool.rename", "styles": ["mask"]}, {"transform": "tool.distractors", "n": [2, 2], "params_p": 1.0},
        {"transform": "tool.drop_descriptions", "p": 1.0}, {"transform": "tool.reorder"}]}}
    res = augment_record(_item(SEND_EMAIL), recipe_from_dict(recipe), seed=0, variants=3, keep_original=False)
    assert len(res.rows) == 3
    for row in res.rows:
        assert len(row["tools"]) == 3 and "restore" in [s["op"] for s in row["mapping"]["steps"]]
    variants = tmp_path / "variants.jsonl"
    variants.write_text("".join(json.dumps(r) + "\n" for r in res.rows), encoding="utf-8")
    assert main(["canonicalize", str(variants), "--out", str(tmp_path / "back.jsonl")]) == 0
    want = {k: v for k, v in SEND_EMAIL.items() if k != "id"}
    for line in (tmp_path / "back.jsonl").read_text(encoding="utf-8").splitlines():
        back = json.loads(line)
        got = {k: v for k, v in back.items() if k not in ("id", "notes", "transforms", "mapping", "source_id",
                                                           "variant", "extra")}
        assert json.dumps(got) == json.dumps(want)
        assert back["id"] == "e1"


def test_a_task_changing_variant_keeps_no_restore_step():
    """tool.irrelevance changes the task: it gets no restore step, and canonicalize does not claim the source back."""
    recipe = {"__version__": 1, "transform": {"transform": "tool.irrelevance"}}
    res = augment_record(_item(SEND_EMAIL), recipe_from_dict(recipe), seed=0, variants=1, keep_original=False)
    steps = res.rows[0]["mapping"]["steps"]
    assert [s["op"] for s in steps] == ["opaque"]
    assert not Mapping(steps).task_preserving
