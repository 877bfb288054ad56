"""to_chat as real chat templates need it: results named and unwrapped, compat rewrites, and the harness check."""

from __future__ import annotations

import re

import pytest
from tests.trainers_support import tiny_model  # noqa: F401  (pytest fixture)

from trainers.common import CHAT_COMPAT, TrainerInputError, check_template_renders_harness, to_chat

TOOLS = [{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {}}}},
         {"type": "function", "function": {"name": "b", "parameters": {"type": "object", "properties": {}}}}]


def _parallel(ids=("c1", "c2")):
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": {}}} for i, n in zip(ids, "ab")]
    return {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "both"},
                         {"role": "assistant", "content": "On it.", "tool_calls": calls},
                         {"role": "tool", "tool_call_id": ids[1], "content": "B"},
                         {"role": "tool", "tool_call_id": ids[0], "content": "A"},
                         {"role": "assistant", "content": "done", "train": False},
                         {"role": "system", "content": "Reply in English."}, {"role": "user", "content": "ok"}],
            "tools": TOOLS}


def test_results_are_named_after_their_calls_and_text_blocks_joined():
    """A result without a name gets its call's name (Hermes templates need it); MCP text blocks become text."""
    row = _parallel()
    row["messages"][4]["content"] = [{"type": "text", "text": '{"x": 1}'}, {"type": "text", "text": "more"}]
    chat = to_chat(row)
    results = [m for m in chat["messages"] if m["role"] == "tool"]
    assert [(m["name"], m["content"]) for m in results] == [("b", "B"), ("a", '{"x": 1}\nmore')]


def test_split_parallel_calls_gives_one_call_per_turn_with_its_result():
    """split_parallel_calls: each call its own assistant turn, followed by its own result; train flags follow."""
    chat = to_chat(_parallel(), compat=["split_parallel_calls"])
    roles = [(m["role"], [c["id"] for c in m.get("tool_calls") or []], m.get("tool_call_id")) for m in chat["messages"]]
    assert roles[2:6] == [("assistant", ["c1"], None), ("tool", [], "c1"), ("assistant", ["c2"], None), ("tool", [], "c2")]
    assert chat["messages"][2]["content"] == "On it." and chat["messages"][4]["content"] == ""
    assert [m["content"] for m in chat["messages"] if m["role"] == "tool"] == ["A", "B"]
    assert len(chat["train"]) == len(chat["messages"]) and chat["train"][6] is False


def test_split_parallel_calls_without_results_gives_one_turn_per_call():
    """Parallel calls with no results after them (xLAM answers) become one assistant turn per call."""
    row = {"query": "both", "answers": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}],
           "tools": [{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]}
    chat = to_chat(row, compat=["split_parallel_calls"])
    assert [(m["role"], [c["function"]["name"] for c in m.get("tool_calls") or []]) for m in chat["messages"]] == \
        [("user", []), ("assistant", ["a"]), ("assistant", ["b"])]
    assert chat["train"] == [True, True, True]


def test_alnum9_ids_are_consistent_between_calls_and_results():
    """alnum9_call_ids: every id is 9 letters and digits, and a result keeps pointing at its call."""
    chat = to_chat(_parallel(ids=("toolu_01A", "toolu_01B")), compat=["alnum9_call_ids"])
    calls = {c["id"]: c["function"]["name"] for m in chat["messages"] for c in m.get("tool_calls") or []}
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in calls)
    assert {m["tool_call_id"]: m["name"] for m in chat["messages"] if m["role"] == "tool"} == calls


def test_system_as_user_keeps_the_first_system_message():
    """system_as_user: a later system message (a hook's) is sent as a user message; the first stays."""
    chat = to_chat(_parallel(), compat=["system_as_user"])
    assert [m["role"] for m in chat["messages"]][0] == "system"
    assert chat["messages"][-2] == {"role": "user", "content": "Reply in English."}
    assert to_chat(_parallel())["messages"][-2]["role"] == "system"


def test_unknown_compat_is_an_error():
    """A misspelt rewrite names the known ones, in to_chat and in template_compat, which the trainers and
    evaluation call first (it dropped an unknown name without a word, so to_chat never saw it)."""
    from trainers.common import template_compat

    with pytest.raises(TrainerInputError, match="unknown chat_compat.*split_parallel_calls"):
        to_chat(_parallel(), compat=["split_calls"])
    with pytest.raises(TrainerInputError, match=r"unknown chat_compat \['split_calls'\]"):
        template_compat(lambda m, t: "", ["split_calls"])
    assert set(CHAT_COMPAT) == {"split_parallel_calls", "alnum9_call_ids", "system_as_user", "fold_system",
                                "merge_user_turns", "system_in_last_user", "string_arguments",
                                "tool_call_tags"}


def _render_with(template: str):
    from transformers.utils.chat_template_utils import render_jinja_template

    def render(messages, tools):
        return render_jinja_template(conversations=[list(messages)], tools=list(tools) if tools else None,
                                     chat_template=template)[0][0]
    return render


CALLS = ("{% for m in messages %}{{ m.role }}: {{ m.content }}{% for c in m.tool_calls or [] %} "
         "[{{ c.function.name }}({{ c.function.arguments | tojson }})]{% endfor %}\n{% endfor %}")


@pytest.mark.parametrize("template,problem", [
    (CALLS, "does not render the 'tools' list"),  # tools ignored (SmolLM3 reads xml_tools)
    ("{% if tools %}{{ tools | tojson }}\n{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n"
     "{% endfor %}", "does not render assistant 'tool_calls'"),  # calls dropped (granite, phi)
    ("{% if tools %}{{ tools | tojson }}\n{% endif %}" + CALLS, None),
    # a template for plain chat: no tool role (its own error, before: raised as it is, out of hsa eval run)
    ("{% for m in messages %}{% if m.role not in ('system', 'user', 'assistant') %}"
     "{{ raise_exception('roles must be user or assistant') }}{% endif %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
     "cannot render this conversation with its tool calls and results (TemplateError: roles must be user or"),
])
def test_templates_that_hide_the_harness_are_refused(template, problem):
    """A template whose text is the same without tools, or without the calls, is an error naming the fix."""
    chat = to_chat(_parallel())
    if problem is None:
        check_template_renders_harness(_render_with(template), chat)
        return
    with pytest.raises(TrainerInputError, match=re.escape(problem) + ".*--chat_template_path"):
        check_template_renders_harness(_render_with(template), chat, where="row 1")


def test_bundled_template_renders_the_harness():
    """trainers/data/hsa_chatml_tools.jinja passes the check on an augmented fixture record."""
    from trainers.common import bundled_path

    template = bundled_path("hsa_chatml_tools.jinja").read_text(encoding="utf-8")
    check_template_renders_harness(_render_with(template), to_chat(_parallel()))


def test_sft_refuses_a_template_that_ignores_tools(tiny_model, fixture_records):  # noqa: F811
    """trainers.sft stops before training when the chat template never shows the tools."""
    from transformers import AutoTokenizer

    from trainers.sft import build_dataset

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    rows = [r for r in fixture_records[:20] if any(m.get("tool_calls") for m in r["messages"])][:3]
    assert len(build_dataset(rows, tok)) == 3  # the tiny model's own template shows tools and calls
    tok.chat_template = ("{% for m in messages %}{{ m.role }}: {% if m.role == 'assistant' %}{% generation %}"
                         "{{ m.content }}{% for c in m.tool_calls or [] %} [{{ c.function.name }}]{% endfor %}"
                         "{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}")
    with pytest.raises(TrainerInputError, match="does not render the 'tools' list"):
        build_dataset(rows, tok)


def test_stage_errors_are_one_line_and_exit_2(tmp_path, capsys):
    """A bad option or a missing model is one 'error:' line on stderr and exit status 2, not a traceback."""
    from trainers.sft import main

    assert main(["--model_name_or_path", str(tmp_path / "missing"), "--dataset", "x.jsonl",
                 "--output_dir", str(tmp_path / "o"), "--warmup_stpes", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert main(["--model_name_or_path", str(tmp_path / "missing"), "--dataset", "x.jsonl",
                 "--output_dir", str(tmp_path / "o"), "--chat_compat", "foo"]) == 2
    assert "does not exist" in capsys.readouterr().err
