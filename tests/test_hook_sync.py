"""hook.sync: before/after tests (LibCST CodemodTest style) for every rewrite and every refusal."""

from __future__ import annotations

import json

import pytest
from libcst.codemod import CodemodTest

from hsa.codemods.analysis import analyze, transport, _analyze
from hsa.codemods.sync import Harness, SyncCodemod, harness_of, sync_source
from hsa.records import normalize
from hsa.renames import rename_params, rename_skills, rename_tools
from tests.conftest import FIXTURES

SCHEMAS = {
    "check_inventory": {"type": "object", "properties": {"product_id": {"type": "string"},
                                                         "sku": {"type": "object", "properties": {
                                                             "color": {"type": "string"}, "size": {"type": "string"}}}}},
    "list_coupons": {"type": "object", "properties": {"product_id": {"type": "string"}}},
    "calculate_shipping": {"type": "object", "properties": {
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "province": {"type": "string"}}},
        "express": {"type": "string", "enum": ["standard", "same_day"]}}},
    "batch_check_inventory": {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"product_id": {"type": "string"}}}}}},
    "load_skill": {"type": "object", "properties": {"skill": {"type": "string"}}},
}


def harness(tools=SCHEMAS, skills=("item_qa", "promo_qa", "logistics_qa")) -> Harness:
    record = {"tools": [{"name": n, "parameters": s} for n, s in tools.items()],
              "skills": [{"name": s} for s in skills], "skill_tool": {"name": "load_skill", "argument": "skill"}}
    return harness_of(record)


H = harness()
TOOLS = {"op": "tools", "map": {"check_inventory": "checkInventory", "list_coupons": "ListCoupons"}}
SKILLS = {"op": "skills", "map": {"item_qa": "ItemQa"}, "tool": "load_skill", "argument": "skill"}


def params(tool, *pairs):
    return {"op": "params", "tool": tool, "paths": [[list(a), list(b)] for a, b in pairs]}


class _Base(CodemodTest):
    def sync(self, before, after, step, entry="check", h=H):
        self.TRANSFORM = SyncCodemod.build(step, h, entry)
        self.assertCodemod(before, after)

    def refuse(self, before, step, reason, entry="check", h=H):
        self.TRANSFORM = SyncCodemod.build(step, h, entry)
        new, refusal = sync_source(CodemodTest.make_fixture_data(before), entry, step, h)
        assert refusal is not None and refusal.reason == reason, refusal
        self.assertCodemod(before, before, expected_skip=True, expected_warnings=[f"{reason}: {refusal.detail}"])


class TestToolNames(_Base):
    def test_comparison_and_message_follow_a_tool_rename(self):
        """A literal compared with the tool name, and the name in the hook's message, follow the rename."""
        self.sync('''
            def check(payload):
                name = payload["tool_name"]
                if name == "check_inventory":
                    return {"decision": "retry", "message": "check_inventory needs a sku."}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                name = payload["tool_name"]
                if name == "checkInventory":
                    return {"decision": "retry", "message": "checkInventory needs a sku."}
                return {"decision": "allow"}
            ''', TOOLS)

    def test_in_tuple_match_case_dict_keys_and_module_constants(self):
        """``in (...)``, ``match``/``case`` (with ``|``), dict lookups and module-level sets all follow."""
        self.sync('''
            NEEDS_ID = {"check_inventory", "list_coupons"}
            LIMITS = {"check_inventory": 2}

            def check(payload):
                name = payload.get("tool_name")
                match name:
                    case "check_inventory" | "list_coupons":
                        pass
                if name in ("list_coupons",) and len(payload["tool_input"]) > LIMITS.get(name, 9):
                    return {"decision": "deny"}
                return {"decision": "allow" if name in NEEDS_ID else "ask"}
            ''', '''
            NEEDS_ID = {"checkInventory", "ListCoupons"}
            LIMITS = {"checkInventory": 2}

            def check(payload):
                name = payload.get("tool_name")
                match name:
                    case "checkInventory" | "ListCoupons":
                        pass
                if name in ("ListCoupons",) and len(payload["tool_input"]) > LIMITS.get(name, 9):
                    return {"decision": "deny"}
                return {"decision": "allow" if name in NEEDS_ID else "ask"}
            ''', TOOLS)

    def test_matcher_string_split_and_regex_alternation(self):
        """Matcher strings (``"a|b".split("|")``, ``re.fullmatch("a|b", name)``) are rewritten part by part."""
        self.sync('''
            import re

            def check(payload):
                name = payload["tool_name"]
                if name in "check_inventory|calculate_shipping".split("|"):
                    return {"decision": "ask"}
                if re.fullmatch(r"list_coupons|load_skill", name):
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', '''
            import re

            def check(payload):
                name = payload["tool_name"]
                if name in "checkInventory|calculate_shipping".split("|"):
                    return {"decision": "ask"}
                if re.fullmatch(r"ListCoupons|load_skill", name):
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', TOOLS)

    def test_payload_keys_are_never_renamed(self):
        """A payload key equal to a renamed name keeps its value: it is protocol, not a name."""
        h = harness({"text": {"type": "object", "properties": {}}, **SCHEMAS})
        self.sync('''
            def check(payload):
                if payload.get("text") == "text":
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload.get("text") == "text":
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', {"op": "tools", "map": {"text": "write_text"}}, h=h)

    def test_prefix_predicate_that_still_holds_is_kept(self):
        """``startswith`` over tool names is kept when it gives the same answer for every renamed tool."""
        self.sync('''
            def check(payload):
                if payload["tool_name"].startswith("check"):
                    return {"decision": "ask"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload["tool_name"].startswith("check"):
                    return {"decision": "ask"}
                return {"decision": "allow"}
            ''', TOOLS)

    def test_refuses_prefix_predicate_that_changes(self):
        """``startswith`` that a rename turns from True to False refuses the variant."""
        self.refuse('''
            def check(payload):
                return {"decision": "ask" if payload["tool_name"].startswith("list_") else "allow"}
            ''', TOOLS, "predicate over names")

    def test_refuses_computed_name(self):
        """``"check_" + x`` compared with the tool name cannot be resolved: refused."""
        self.refuse('''
            def check(payload):
                kind = "inventory"
                if payload["tool_name"] == "check_" + kind:
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', TOOLS, "name compared with a value that cannot be resolved statically")

    def test_refuses_fstring_building_a_name(self):
        """An f-string that builds a name and is compared: refused."""
        self.refuse('''
            def check(payload):
                verb = "check"
                if f"{verb}_inventory" == payload["tool_name"]:
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', TOOLS, "name compared with a computed string")

    def test_refuses_getattr_dispatch(self):
        """``getattr(module, name)`` dispatch on a computed attribute: refused."""
        self.refuse('''
            import checks

            def check(payload):
                return getattr(checks, "on_" + payload["tool_name"])(payload)
            ''', TOOLS, "getattr with a computed attribute name")

    def test_refuses_eval(self):
        """``eval`` anywhere in the entry's reach: refused."""
        self.refuse('''
            def check(payload):
                return eval("{'decision': 'allow'}")
            ''', TOOLS, "dynamic code (eval)")

    def test_refuses_unresolvable_comparison(self):
        """A literal equal to a renamed tool, compared with something unresolvable: refused."""
        self.refuse('''
            import policy

            def check(payload):
                if policy.current() == "check_inventory":
                    return {"decision": "deny"}
                return {"decision": "allow"}
            ''', TOOLS, "unresolved reference")


class TestParameters(_Base):
    def test_nested_keys_follow_under_narrowing(self):
        """Keys of the tool input at any depth follow a parameter rename, for the tool the branch is about."""
        step = params("calculate_shipping", (("address",), ("shipTo",)), (("address", "city"), ("address", "town")))
        self.sync('''
            def check(payload):
                name, args = payload["tool_name"], payload["tool_input"]
                if name == "calculate_shipping":
                    address = args.get("address") or {}
                    if not address.get("city"):
                        return {"decision": "retry", "message": "Ask for the city."}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                name, args = payload["tool_name"], payload["tool_input"]
                if name == "calculate_shipping":
                    address = args.get("shipTo") or {}
                    if not address.get("town"):
                        return {"decision": "retry", "message": "Ask for the city."}
                return {"decision": "allow"}
            ''', step)

    def test_membership_and_array_items(self):
        """``"k" in args`` and keys of array items (``for item in args["items"]``) follow."""
        step = params("batch_check_inventory", (("items", "[]", "product_id"), ("items", "[]", "productId")))
        self.sync('''
            def check(payload):
                args = payload["tool_input"]
                if payload["tool_name"] == "batch_check_inventory" and "items" in args:
                    if any("product_id" not in item for item in args["items"]):
                        return {"decision": "retry"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                args = payload["tool_input"]
                if payload["tool_name"] == "batch_check_inventory" and "items" in args:
                    if any("productId" not in item for item in args["items"]):
                        return {"decision": "retry"}
                return {"decision": "allow"}
            ''', step)

    def test_identifier_like_names_in_messages_follow(self):
        """An identifier-like top-level parameter named in a message follows (as the injected message does)."""
        self.sync('''
            def check(payload):
                if payload["tool_name"] == "list_coupons" and not payload["tool_input"].get("product_id"):
                    return {"decision": "retry", "message": "Look up the product_id first."}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload["tool_name"] == "list_coupons" and not payload["tool_input"].get("productId"):
                    return {"decision": "retry", "message": "Look up the productId first."}
                return {"decision": "allow"}
            ''', params("list_coupons", (("product_id",), ("productId",))))

    def test_refuses_key_shared_with_another_tool(self):
        """A key read for several tools but renamed in one only: refused (the hook cannot tell them apart)."""
        self.refuse('''
            def check(payload):
                if payload["tool_name"] in ("check_inventory", "list_coupons"):
                    if not payload["tool_input"].get("product_id"):
                        return {"decision": "retry"}
                return {"decision": "allow"}
            ''', params("list_coupons", (("product_id",), ("productId",))), "shared parameter key")

    def test_refuses_dynamic_key(self):
        """A key taken from a variable that cannot be resolved: refused."""
        self.refuse('''
            import os

            def check(payload):
                key = os.environ.get("KEY")
                return {"decision": "deny" if payload["tool_input"][key] else "allow"}
            ''', params("list_coupons", (("product_id",), ("productId",))),
            "tool input read with a key that cannot be resolved")

    def test_refuses_iteration_over_object_keys(self):
        """Comparing keys got by iterating the input object: the comparison's literal follows the rename."""
        self.sync('''
            def check(payload):
                for key in payload["tool_input"]:
                    if payload["tool_name"] == "list_coupons" and key == "product_id":
                        return {"decision": "ask"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                for key in payload["tool_input"]:
                    if payload["tool_name"] == "list_coupons" and key == "productId":
                        return {"decision": "ask"}
                return {"decision": "allow"}
            ''', params("list_coupons", (("product_id",), ("productId",))))

    def test_rewritten_tool_input_keys_follow(self):
        """Keys of an ``updatedInput`` dict the hook builds are parameter keys and follow."""
        self.sync('''
            def check(payload):
                if payload["tool_name"] == "list_coupons":
                    return {"decision": "allow", "updatedInput": {"product_id": "P1"}}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload["tool_name"] == "list_coupons":
                    return {"decision": "allow", "updatedInput": {"productId": "P1"}}
                return {"decision": "allow"}
            ''', params("list_coupons", (("product_id",), ("productId",))))

    def test_enum_values_follow_a_value_step(self):
        """A literal compared with an enum parameter follows a value rename of that parameter."""
        step = {"op": "values", "tool": "calculate_shipping", "path": ["express"], "map": [["same_day", "express"]]}
        self.sync('''
            def check(payload):
                if payload["tool_name"] == "calculate_shipping":
                    if payload["tool_input"].get("express") == "same_day":
                        return {"decision": "ask"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload["tool_name"] == "calculate_shipping":
                    if payload["tool_input"].get("express") == "express":
                        return {"decision": "ask"}
                return {"decision": "allow"}
            ''', step)


class TestSkills(_Base):
    def test_skill_set_and_message_follow(self):
        """Skill names in a module set compared with loaded skills, and in the message, follow."""
        self.sync('''
            REPLY = {"item_qa", "promo_qa"}

            def require(payload):
                if any(s in REPLY for s in payload.get("loaded_skills", [])):
                    return {"decision": "allow"}
                return {"decision": "retry", "message": "Load item_qa or promo_qa first."}
            ''', '''
            REPLY = {"ItemQa", "promo_qa"}

            def require(payload):
                if any(s in REPLY for s in payload.get("loaded_skills", [])):
                    return {"decision": "allow"}
                return {"decision": "retry", "message": "Load ItemQa or promo_qa first."}
            ''', SKILLS, entry="require")

    def test_skill_tool_argument_value_follows(self):
        """A value compared with the skill tool's argument is a skill name and follows."""
        self.sync('''
            def check(payload):
                if payload["tool_name"] == "load_skill" and payload["tool_input"]["skill"] == "item_qa":
                    return {"decision": "ask"}
                return {"decision": "allow"}
            ''', '''
            def check(payload):
                if payload["tool_name"] == "load_skill" and payload["tool_input"]["skill"] == "ItemQa":
                    return {"decision": "ask"}
                return {"decision": "allow"}
            ''', SKILLS)

    def test_refuses_table_mutated_at_run_time(self):
        """A name table changed at run time is not a constant: refused."""
        self.refuse('''
            REPLY = {"item_qa"}

            def require(payload):
                REPLY.add(payload.get("extra", ""))
                if any(s in REPLY for s in payload.get("loaded_skills", [])):
                    return {"decision": "allow"}
                return {"decision": "retry"}
            ''', SKILLS, "a table of names is changed at run time", entry="require")


CLAUDE_SCRIPT = '''#!/usr/bin/env python3
"""Block dangerous shell commands and writes to .env (a Claude Code PreToolUse hook)."""
import json
import re
import sys

data = json.load(sys.stdin)
tool = data.get("tool_name", "")
inp = data.get("tool_input", {})
if tool == "Bash":
    cmd = inp.get("command", "")
    if re.search(r"rm\\s+-rf\\s+/", cmd):
        print("Bash: refusing to delete from the root", file=sys.stderr)
        sys.exit(2)
if re.fullmatch(r"Edit|Write", tool) and inp.get("file_path", "").endswith(".env"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "Edit and Write may not touch .env"}}))
    sys.exit(0)
sys.exit(0)
'''
CLAUDE_TOOLS = {"Bash": {"type": "object", "properties": {"command": {"type": "string"}}},
                "Edit": {"type": "object", "properties": {"file_path": {"type": "string"}}},
                "Write": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}}}


class TestClaudeCodeScript(_Base):
    def test_script_hook_follows_tool_renames(self):
        """A stdin-JSON command hook: the tool comparison, the matcher regex and the messages follow."""
        h = harness(CLAUDE_TOOLS, ())
        self.TRANSFORM = SyncCodemod.build({"op": "tools", "map": {"Bash": "run_shell", "Edit": "edit_file"}}, h,
                                           "__main__")
        after = (CLAUDE_SCRIPT.replace('tool == "Bash"', 'tool == "run_shell"')
                 .replace('"Bash: refusing', '"run_shell: refusing').replace("Edit|Write", "edit_file|Write")
                 .replace('"Edit and Write may', '"edit_file and Write may'))
        self.assertCodemod(CLAUDE_SCRIPT, after)

    def test_script_hook_follows_a_parameter_rename(self):
        """``inp.get("command")`` under ``if tool == "Bash"`` follows the rename of Bash's parameter."""
        h = harness(CLAUDE_TOOLS, ())
        self.sync(CLAUDE_SCRIPT, CLAUDE_SCRIPT.replace('inp.get("command"', 'inp.get("cmd"'),
                  params("Bash", (("command",), ("cmd",))), entry="__main__", h=h)

    def test_script_hook_refuses_key_shared_by_matched_tools(self):
        """``file_path`` read for Edit and Write, renamed in Edit only: refused."""
        h = harness(CLAUDE_TOOLS, ())
        self.refuse(CLAUDE_SCRIPT, params("Edit", (("file_path",), ("path",))), "shared parameter key",
                    entry="__main__", h=h)


AGENTS_HOOKS = '''from agents import RunHooks

BLOCKED = {"delete_repo", "drop_table"}


class Guard(RunHooks):
    async def on_tool_start(self, context, agent, tool):
        if tool.name in BLOCKED:
            raise PermissionError(f"{tool.name} is blocked")
        context.context.setdefault("calls", []).append(tool.name)

    async def on_tool_end(self, context, agent, tool, result):
        if tool.name == "drop_table" and "error" in str(result):
            context.context["failed"] = True
'''


class TestAgentsSdk(_Base):
    def test_hooks_class_follows_tool_renames(self):
        """``tool.name`` comparisons in every ``on_*`` method of a RunHooks subclass follow."""
        h = harness({"delete_repo": {"type": "object"}, "drop_table": {"type": "object"}}, ())
        self.sync(AGENTS_HOOKS, AGENTS_HOOKS.replace('"drop_table"', '"dropTable"'),
                  {"op": "tools", "map": {"drop_table": "dropTable"}}, entry="Guard.on_tool_start", h=h)


def test_transported_analysis_equals_a_fresh_one():
    """The analysis carried over a sync edit equals analysing the new source from scratch."""
    records = [normalize(json.loads(line)) for line in FIXTURES.read_text().splitlines()[:12]]
    compared = 0
    for r in records:
        r2 = rename_tools(r, {t["name"]: t["name"].title().replace("_", "") for t in r["tools"][:6]})
        tool = next(t for t in r2["tools"] if "calculate" in t["name"].lower() or "inventory" in t["name"].lower())
        props = list((tool["parameters"].get("properties") or {}))
        if props:
            r2 = rename_params(r2, tool["name"], {(props[0],): props[0] + "X"})
        r2 = rename_skills(r2, {s["name"]: s["name"].upper() for s in r2["skills"][:3]})
        for hk in r2["hooks"]:
            a, b = analyze(hk["source"], hk["entry"]), _analyze(hk["source"], hk["entry"])
            key = lambda s: (s.index, s.kind, s.value, s.start, s.end, s.line, s.roles)  # noqa: E731
            assert [key(s) for s in a.sites] == [key(s) for s in b.sites]
            assert [(p.kinds, p.tools, p.reason) for p in a.problems] == [(p.kinds, p.tools, p.reason)
                                                                          for p in b.problems]
            compared += 1
    assert compared > 30


def test_fixture_hooks_sync_without_refusal():
    """Every fixture hook follows tool, top-level parameter and skill renames without a refusal."""
    records = [normalize(json.loads(line)) for line in FIXTURES.read_text().splitlines()[::15]]
    for r in records:
        r2 = rename_tools(r, {t["name"]: t["name"].upper() for t in r["tools"]})
        r2 = rename_skills(r2, {s["name"]: s["name"] + "_v2" for s in r2["skills"]})
        assert not [n for n in r2["notes"] if n.startswith("hook sync refused")], r2["notes"]


@pytest.mark.parametrize("entry,err", [(None, "no entry"), ("missing", "not defined")])
def test_analysis_reports_a_missing_entry(entry, err):
    """A hook without a usable entry is reported, not guessed."""
    an = analyze("def check(payload):\n    return {}\n", entry)
    assert not an.ok and err in an.error


def test_unparsable_hook_is_refused_only_when_it_names_a_renamed_thing():
    """A hook that does not parse refuses a rename of a name it mentions, and ignores others."""
    bad = "def check(payload:\n    return 'check_inventory'\n"
    _, refusal = sync_source(bad, "check", TOOLS, H)
    assert refusal is not None and refusal.reason == "hook cannot be analysed"
    _, refusal = sync_source(bad, "check", {"op": "tools", "map": {"calculate_shipping": "x"}}, H)
    assert refusal is None


def test_transport_is_registered_after_a_sync():
    """After a sync, the new source's analysis is served from the cache (no fresh parse)."""
    src = 'def check(p):\n    return p["tool_name"] == "list_coupons"\n'
    new, _ = sync_source(src, "check", {"op": "tools", "map": {"list_coupons": "coupons_v9"}}, H)
    assert "coupons_v9" in new
    from hsa.codemods.analysis import _CACHE

    assert (new, "check") in _CACHE
    assert transport  # imported for the docs: the function that carried it
