"""Issue 16 item 12: rows adapted to what a chat template needs, found by rendering probes through it.

A hand-written Mistral-style template (tests/data/mistral_like_tools.jinja: 9-character call ids, strict
user/assistant alternation) and the real templates trl ships (Llama 3.1: one call per turn; Qwen 3.5: no
late system message)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hsa.chat_template import adapt, fold_system, merge_user_turns, render, template_needs
from tests.trainers_support import shards, tiny_model  # noqa: F401

MISTRAL = (Path(__file__).parent / "data" / "mistral_like_tools.jinja").read_text(encoding="utf-8")
trl = pytest.importorskip("trl")
TRL = Path(trl.__file__).parent / "chat_templates"


def _needs(template: str) -> set[str]:
    return set(template_needs(lambda m, t: render(template, m, t)))


def test_probes_find_what_each_template_needs():
    """Needs come from rendering probes, not from names: Mistral-style ids, alternation and late system; Llama
    3.1's one call per turn; Qwen 3.5's system-first rule; nothing for Qwen 2.5."""
    assert _needs(MISTRAL) == {"alnum9_call_ids", "fold_system", "merge_user_turns", "system_in_last_user"}
    assert _needs((TRL / "llama3_1.jinja").read_text()) == {"split_parallel_calls"}
    assert _needs((TRL / "qwen3_5_nothink.jinja").read_text()) == {"fold_system"}
    assert _needs((TRL / "qwen2_5.jinja").read_text()) == set()
    renamed = MISTRAL.replace("Tool call IDs", "Call ids")  # the same rules under another text: same needs
    assert _needs(renamed) == _needs(MISTRAL)


def test_fold_and_merge_keep_every_text_and_count():
    """A late system message goes into the next user turn (or the previous one); consecutive user turns are
    joined; train flags stay aligned; the counts say how many."""
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A1"}, {"role": "system", "content": "HOOK"},
            {"role": "user", "content": "U2"}, {"role": "user", "content": "U3"},
            {"role": "assistant", "content": "A2"}, {"role": "tool", "tool_call_id": "x", "content": "R"},
            {"role": "system", "content": "LATE"}]
    out, flags, n = fold_system(msgs, [True] * len(msgs))
    assert n == 2 and [m["role"] for m in out] == ["system", "user", "assistant", "user", "user", "assistant",
                                                    "tool"]
    assert out[3]["content"] == "HOOK\n\nU2" and out[-1]["content"] == "R\n\nLATE" and len(flags) == len(out)
    out, flags, n = merge_user_turns(out, flags)
    assert n == 1 and out[3]["content"] == "HOOK\n\nU2\n\nU3" and len(flags) == len(out)
    _, _, counts = adapt(msgs, [True] * len(msgs), ["fold_system", "merge_user_turns", "alnum9_call_ids"])
    assert counts == {"fold_system": 2, "merge_user_turns": 1, "alnum9_call_ids": 1}


def test_system_prompt_kept_for_a_template_that_renders_it_beside_a_final_user_turn_only():
    """Mistral v0.3's templates (and the test's Mistral-style one) render the system message only when the last
    message is a user turn (``loop.last``). A training row ends with an assistant turn, so before
    ``system_in_last_user`` the harness's system prompt was in no rendered row, and no probe said so. Now it goes
    before the text of the last user turn (mistral-common's place for it), and the rendering holds it."""
    from hsa.chat_template import system_in_last_user

    msgs = [{"role": "system", "content": "HARNESS PROMPT"}, {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"},
            {"role": "assistant", "content": "A2"}]
    assert "HARNESS PROMPT" not in render(MISTRAL, msgs, None)  # what the template does on its own
    out, flags, n = system_in_last_user(msgs, [False, True, True, True, True])
    assert n == 1 and flags == [True] * 4 and [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert out[2]["content"] == "HARNESS PROMPT\n\nU2" and out[0] == msgs[1]
    text = render(MISTRAL, adapt(msgs, [True] * 5, sorted(_needs(MISTRAL)))[0], None)
    assert "[INST] HARNESS PROMPT\n\nU2[/INST]" in text
    # no system message, or no user turn to carry it: nothing changes
    assert system_in_last_user(msgs[1:], [True] * 4)[2] == 0
    assert system_in_last_user(msgs[:1], [True])[0] == msgs[:1]
    # content parts (a multimodal user turn): the prompt goes in as a text part first
    parts = [msgs[0], {"role": "user", "content": [{"type": "text", "text": "U"}]}]
    assert system_in_last_user(parts, [True, True])[0][0]["content"][0] == {"type": "text",
                                                                             "text": "HARNESS PROMPT\n\n"}


def test_fold_system_probe_wants_the_first_system_message_too():
    """A template that keeps only the last system message it meets (DeepSeek-R1's distills, as trl ships them)
    rendered a hook's late note and dropped the first system message, the harness's prompt; the probe of
    ``fold_system`` looked for the late note only, so nothing was adapted. It now wants both."""
    template = (TRL / "deepseek_r1_distill.jinja").read_text()
    assert "fold_system" in _needs(template)
    msgs = [{"role": "system", "content": "HARNESS PROMPT"}, {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A1"}, {"role": "system", "content": "HOOK NOTE"},
            {"role": "user", "content": "U2"}, {"role": "assistant", "content": "A2"}]
    assert "HARNESS PROMPT" not in render(template, msgs, None)
    text = render(template, adapt(msgs, [True] * 6, sorted(_needs(template)))[0], None)
    assert "HARNESS PROMPT" in text and "HOOK NOTE" in text


def _hook_row(row):
    """``row`` with a hook's system note after the first tool result and two user turns in a row."""
    msgs = list(row["messages"])
    k = next(i for i, m in enumerate(msgs) if m["role"] == "tool")
    first_user = next(i for i, m in enumerate(msgs) if m["role"] == "user")
    msgs.insert(k + 1, {"role": "system", "content": "Hook: answer in one sentence."})
    msgs.insert(first_user + 1, {"role": "user", "content": "and quickly please"})
    return {**row, "messages": msgs}


def test_sft_adapts_rows_for_a_mistral_style_template(tiny_model, shards, capsys):  # noqa: F811
    """SFT with a Mistral-style template trains on augmented rows (call ids like call_1, a hook's late system
    note, two user turns) instead of failing, and reports each adaptation."""
    from transformers import AutoTokenizer

    from trainers.common import iter_rows
    from trainers.sft import LongRowStats, build_dataset

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = MISTRAL
    rows = [_hook_row(r) for r in iter_rows(str(shards))]
    stats = LongRowStats()
    ds = build_dataset(rows, tok, max_length=None, stats=stats)
    assert len(ds) == len(rows)
    assert stats.adapted["alnum9_call_ids"][0] == len(rows)
    assert stats.adapted["fold_system"] == (len(rows), len(rows))
    assert stats.adapted["merge_user_turns"][0] == len(rows)
    err = capsys.readouterr().err
    assert "needs alnum9_call_ids" in err and "rows adapted to the chat template" in err
    text = tok.decode(ds["input_ids"][0])
    ids = re.findall(r'"id": "([^"]+)"', text)
    assert ids and all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)
    assert all(f'"call_id": "{i}"' in text for i in ids)  # each result carries its call's new id


def test_export_for_a_template_adapts_and_counts(tmp_path, shards, capsys):  # noqa: F811
    """hsa export --template writes rows the template renders (llama 3.1: one call per turn; Mistral style:
    9-character ids, consistent in calls and results), and says what it adapted."""
    from hsa.cli import main

    out = tmp_path / "llama.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(TRL / "llama3_1.jinja")]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(len(m.get("tool_calls") or ()) <= 1 for r in rows for m in r["messages"])
    assert all(isinstance(c["function"]["arguments"], dict) for r in rows for m in r["messages"]
               for c in m.get("tool_calls") or ())
    err = capsys.readouterr().err
    assert "needs split_parallel_calls" in err and "split_parallel_calls:" in err and "0 failed" in err
    template = tmp_path / "mistral.jinja"
    template.write_text(MISTRAL)
    out = tmp_path / "mistral.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(template)]) == 0
    for r in map(json.loads, out.read_text().splitlines()):
        calls = [c["id"] for m in r["messages"] for c in m.get("tool_calls") or ()]
        results = [m["tool_call_id"] for m in r["messages"] if m["role"] == "tool"]
        assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in calls) and sorted(calls) == sorted(results)
        render(MISTRAL, r["messages"], r["tools"])  # renders as written


SMOLLM2 = Path(__file__).parent / "data" / "smollm2_instruct.jinja"  # renders role and content only


@pytest.mark.parametrize("template, problem", [
    (SMOLLM2.read_text(encoding="utf-8"), "does not render the 'tools' list"),
    ("{% if tools %}{{ tools | tojson }}\n{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n"
     "{% endfor %}", "does not render assistant 'tool_calls'"),  # tools shown, calls dropped
    # the probe's calls rendered, real ones dropped: caught on the first row with tools and calls
    ("{% if tools %}{{ tools | tojson }}\n{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}"
     "{% for c in m.tool_calls or [] %}{% if c.function.name.startswith('probe_') %}{{ c | tojson }}{% endif %}"
     "{% endfor %}\n{% endfor %}", "does not render assistant 'tool_calls'"),
])
def test_export_refuses_a_template_that_hides_the_harness(tmp_path, shards, capsys, template,  # noqa: F811
                                                          problem):
    """hsa export --template runs the check trainers.sft runs: a template that renders neither the tools nor
    the calls (SmolLM2-Instruct's own) is exit 2, names the bundled template, writes nothing (before: exit 0,
    "N rows written ...; 0 failed", rows with no tool and an empty assistant turn)."""
    from hsa.cli import main

    path = tmp_path / "t.jinja"
    path.write_text(template, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 2
    err = capsys.readouterr().err
    assert problem in err and "hsa_chatml_tools.jinja" in err and "0 failed" not in err
    assert not out.exists()


#: A template for plain chat (as many model cards ship): strict user/assistant turns, no tool role.
PLAIN_CHAT = ("{% if messages[0]['role'] == 'system' %}{% set offset = 1 %}{% else %}{% set offset = 0 %}{% endif %}"
              "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == offset) %}"
              "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
              "{% endif %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
              "{% endfor %}")


def test_export_refuses_a_template_that_takes_no_tool_turns(tmp_path, shards, capsys):  # noqa: F811
    """A plain-chat template refuses every row with a tool turn, whatever hsa rewrites: exit 2 at the first row
    with calls, once the probe has failed the same way, naming why and the bundled template (before: exit 1 and
    one "the template still refuses it" line for every row)."""
    from hsa.cli import main

    path = tmp_path / "plain.jinja"
    path.write_text(PLAIN_CHAT, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 2
    err = capsys.readouterr().err
    assert "cannot render a tool call and its result" in err and "fails the same way" in err
    assert "hsa_chatml_tools.jinja" in err and "still refuses" not in err
    assert not out.exists()


def test_a_template_that_refuses_only_the_probe_still_exports(tmp_path, shards, capsys):  # noqa: F811
    """The probe alone does not refuse a template: one that raises on the probe's own tool names (something of
    real rows the probe lacks) renders the rows, and every row is written."""
    from hsa.cli import main
    from trainers.common import bundled_template

    picky = ("{% for m in messages %}{% for c in m.tool_calls or [] %}{% if c.function.name.startswith('probe_') %}"
             "{{ raise_exception('not a real tool') }}{% endif %}{% endfor %}{% endfor %}")
    path = tmp_path / "picky.jinja"
    path.write_text(picky + Path(bundled_template()).read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 0
    err = capsys.readouterr().err
    assert "0 failed" in err and len(out.read_text().splitlines()) > 0


# --------------------------------------------------------------------------- templates met in vLLM's examples

#: Written for the tests in the manner of Mistral 3's tool template: an id of at least 9 characters, its last 9
#: rendered (Mistral v0.3's wants exactly 9; the old probe's 12-character id passed this one, and every row
#: with ids like ``call_1`` failed).
MISTRAL3_LIKE = (
    "{% if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
    "{% for m in messages %}{% if m.role == 'assistant' and m.tool_calls %}[TOOL_CALLS]"
    "{% for c in m.tool_calls %}{% if c.id is not defined or c.id | length < 9 %}"
    "{{ raise_exception('Tool call IDs should be alphanumeric strings with length >= 9! ' + c.id) }}{% endif %}"
    "{{ {'name': c.function.name, 'arguments': c.function.arguments, 'id': c.id[-9:]} | tojson }}{% endfor %}"
    "{% elif m.role == 'tool' %}{% if m.tool_call_id | length < 9 %}"
    "{{ raise_exception('Tool call IDs should be alphanumeric strings with length >= 9!') }}{% endif %}"
    "[TOOL_RESULTS]{{ m.tool_call_id[-9:] }}: {{ m.content }}[/TOOL_RESULTS]"
    "{% else %}[{{ m.role }}]{{ m.content }}{% endif %}{% endfor %}")

#: Written for the tests in the manner of Apertus's template: a call's arguments joined to the text as a string,
#: which fails on an object (the form the Hugging Face templates and trl take).
STRING_ARGS = (
    "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
    "{% for m in messages %}{% if m.role == 'assistant' %}<assistant>{% generation %}{{ m.content or '' }}"
    "{% if m.tool_calls %}<calls>["
    "{% for c in m.tool_calls %}{{ '{\"' + c.function.name + '\": ' + c.function.arguments + '}' }}"
    "{% if not loop.last %}, {% endif %}{% endfor %}]</calls>{% endif %}</end>{% endgeneration %}"
    "{% else %}<{{ m.role }}>{{ m.content }}{% endif %}{% endfor %}")


def _export(tmp_path, shards, capsys, template: str):  # noqa: F811
    """``hsa export SHARDS --template T`` for a template text: (exit code, standard error, the output path)."""
    from hsa.cli import main

    path = tmp_path / "template.jinja"
    path.write_text(template, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    code = main(["export", str(shards), "--out", str(out), "--template", str(path)])
    return code, capsys.readouterr().err, out


def test_a_template_wanting_at_least_nine_characters_gets_nine_character_ids(tmp_path, shards, capsys):  # noqa: F811
    """The id probe uses a short id with an underscore (``call_1``, as most datasets write them), so a template
    that wants *at least* 9 characters is found too, and every row exports (before: every row refused)."""
    assert _needs(MISTRAL3_LIKE) == {"alnum9_call_ids"}
    code, err, out = _export(tmp_path, shards, capsys, MISTRAL3_LIKE)
    assert code == 0 and "needs alnum9_call_ids" in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(re.fullmatch(r"[A-Za-z0-9]{9}", c["id"]) for r in rows for m in r["messages"]
                        for c in m.get("tool_calls") or ())


def test_string_arguments_for_a_template_that_joins_them_as_text(tmp_path, shards, capsys):  # noqa: F811
    """A template that concatenates a call's arguments fails on an object; the probe finds it and the rows
    carry the arguments as JSON text, each the same object as before, rendered once (not double-encoded)."""
    from hsa.chat_template import string_arguments

    assert _needs(STRING_ARGS) == {"string_arguments"}
    assert _needs((TRL / "qwen2_5.jinja").read_text()) == set()  # a template that takes objects keeps them
    msgs = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"q": "café", "n": [1, 2]}}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"k\": 1}"}}]}]
    out_msgs, flags, n = string_arguments(msgs, [True])
    assert n == 1 and flags == [True]
    assert msgs[0]["tool_calls"][0]["function"]["arguments"] == {"q": "café", "n": [1, 2]}  # the input unchanged
    assert out_msgs[0]["tool_calls"][0]["function"]["arguments"] == '{"q": "café", "n": [1, 2]}'
    assert out_msgs[0]["tool_calls"][1] is msgs[0]["tool_calls"][1]  # text already: untouched

    code, err, out = _export(tmp_path, shards, capsys, STRING_ARGS)
    assert code == 0 and "needs string_arguments" in err and "string_arguments:" in err and "0 failed" in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = {r["id"]: r for r in map(json.loads, _plain_export(tmp_path, shards).read_text().splitlines())}
    calls = 0
    for r in rows:
        src_calls = [c for m in source[r["id"]]["messages"] for c in m.get("tool_calls") or ()]
        got = [c for m in r["messages"] for c in m.get("tool_calls") or ()]
        assert [json.loads(c["function"]["arguments"]) for c in got] == \
            [_as_object(c["function"]["arguments"]) for c in src_calls]
        text = render(STRING_ARGS, r["messages"], r["tools"])
        assert all(c["function"]["arguments"] in text for c in got)
        calls += len(got)
    assert calls > 0


def _plain_export(tmp_path, shards):  # noqa: F811
    from hsa.cli import main

    out = tmp_path / "plain.jsonl"
    assert main(["export", str(shards), "--out", str(out)]) == 0
    return out


def _as_object(arguments):
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def test_a_probe_that_fails_for_two_reasons_finds_both():
    """A template that wants 9-character ids *and* string arguments fails the id probe both ways alone; with
    the rewrite the other probe found it renders, so both are needed."""
    both = MISTRAL3_LIKE.replace("'arguments': c.function.arguments", "'arguments': '' + c.function.arguments")
    assert _needs(both) == {"alnum9_call_ids", "string_arguments"}


def test_a_template_that_does_not_compile_is_named_with_its_line(tmp_path, shards, capsys):  # noqa: F811
    """A syntax error (one in a template published with vLLM's examples: ``{% set x = tool | tojson}``) is
    reported as that, with its line, before any probe: exit 2, nothing written (before: "it takes no tool
    turns"); the trainers' --chat_template_path says the same."""
    from hsa.cli import main
    from trainers.common import TrainerInputError, _read_template

    path = tmp_path / "broken.jinja"
    path.write_text("{% for tool in tools %}\n{% set tool_json = tool | tojson}\n{% endfor %}", encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a valid Jinja template: line 2: unexpected '}'" in err and "tool | tojson}" in err
    assert not out.exists()
    with pytest.raises(TrainerInputError, match="--chat_template_path .*broken.jinja: not a valid Jinja template: "
                                                "line 2"):
        _read_template(str(path))


@pytest.mark.parametrize("prefix, says", [
    # raises on any user message: no rewrite helps (one that raised on any system message, as vLLM's
    # granite-20b-fc template does, is now adapted: system_in_last_user puts the prompt in the last user turn)
    ("{% for m in messages %}{% if m.role == 'user' %}{{ raise_exception('Unexpected role') }}{% endif %}"
     "{% endfor %}", "nor a probe of a system message, a question and an answer the same way: it renders no "
                     "conversation hsa writes"),
    ("{% if tools %}{{ raise_exception('no tools here') }}{% endif %}",
     "a probe of two tools (each parameter typed and described) and no tool turn fails the same way: it cannot "
     "render a tool list"),
])
def test_a_refusal_says_where_the_template_fails(tmp_path, shards, capsys, prefix, says):  # noqa: F811
    """When the probe and the first row with calls both fail, the refusal says what the template cannot
    render: any conversation, a tool list, or (the plain-chat case above) a tool turn."""
    from hsa.cli import main
    from trainers.common import bundled_template

    path = tmp_path / "t.jinja"
    path.write_text(prefix + Path(bundled_template()).read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and "takes no tool turns" not in err and not out.exists()


def test_rows_a_template_refuses_are_summed_up_by_error(tmp_path, shards, capsys):  # noqa: F811
    """A template that cannot render something some rows have (here a tool name that is no Python identifier,
    as a template writing calls as Python would; vLLM's Command-R template fails the same way on a parameter
    without a description) renders the probe, exports the rows it takes, and ends with the refused rows
    counted by the template's error, instead of only one line per row."""
    from hsa.cli import main
    from trainers.common import bundled_template

    identifiers_only = (
        "{% for t in tools or [] %}{% if '-' in t.function.name %}"
        "{{ raise_exception('tool names must be Python identifiers') }}{% endif %}{% endfor %}")
    path = tmp_path / "t.jinja"
    path.write_text(identifiers_only + Path(bundled_template()).read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    code = main(["export", str(shards), "--out", str(out), "--template", str(path)])
    err = capsys.readouterr().err
    written, failed = map(int, re.search(r"(\d+) rows written for the template .*; (\d+) failed", err).groups())
    hyphenated = [r["id"] for r in map(json.loads, _plain_export(tmp_path, shards).read_text().splitlines())
                  if any("-" in (t.get("function") or t)["name"] for t in r.get("tools") or ())]
    assert 0 < failed == len(hyphenated) and written > 0 and code == 1
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] and \
        not set(hyphenated) & {json.loads(line)["id"] for line in out.read_text().splitlines()}
    assert (f"rows the template refused, by its error: {failed} rows: TemplateError: tool names must be Python "
            "identifiers") in err


def test_sft_trains_with_string_arguments_for_such_a_template(tiny_model, shards, capsys):  # noqa: F811
    """The trainers find the same need through the tokenizer's apply_chat_template: every row tokenizes, its
    calls' arguments rendered once, as JSON text."""
    from transformers import AutoTokenizer

    from trainers.common import iter_rows
    from trainers.sft import LongRowStats, build_dataset

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = STRING_ARGS
    rows = list(iter_rows(str(shards)))
    stats = LongRowStats()
    ds = build_dataset(rows, tok, max_length=None, stats=stats)
    assert len(ds) == len(rows) and stats.adapted["string_arguments"][0] == len(rows)
    assert "needs string_arguments" in capsys.readouterr().err
    text = tok.decode(ds["input_ids"][0])
    assert re.search(r'<calls>\[\{"[\w-]+": \{"', text)  # {"name": {...}}: the object's text, not a quoted string


#: Written for the tests in the manner of vLLM's Phi-4-mini and InternLM2 templates: the arguments printed as
#: they are, which for an object is Python's ``{'a': 1}`` in the training text, not JSON.
PRINTS_ARGS = (
    "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
    "{% for m in messages %}<{{ m.role }}>{{ m.content or '' }}{% for c in m.tool_calls or [] %}"
    "{\"name\": \"{{ c.function.name }}\", \"arguments\": {{ c.function.arguments }}}{% endfor %}{% endfor %}")


def test_a_template_that_prints_the_arguments_object_gets_json_text(tmp_path, shards, capsys):  # noqa: F811
    """Rendering renders (so no error shows it), but the text holds Python's form of the object; the probe
    looks for it, and the rows carry JSON text, which the template prints as JSON."""
    assert _needs(PRINTS_ARGS) == {"string_arguments"}
    code, err, out = _export(tmp_path, shards, capsys, PRINTS_ARGS)
    assert code == 0 and "writes the arguments object as Python prints it" in err
    for r in map(json.loads, out.read_text().splitlines()):
        text = render(PRINTS_ARGS, r["messages"], r["tools"])
        for c in (c for m in r["messages"] for c in m.get("tool_calls") or ()):
            assert f'"arguments": {c["function"]["arguments"]}' in text
            json.loads(c["function"]["arguments"])


def test_a_template_that_renders_only_a_marker_for_calls_is_refused(tmp_path, shards, capsys):  # noqa: F811
    """A template that writes a marker for a turn with calls but not the calls (vLLM's small Mistral template:
    ``'[TOOL_CALLS]' + content``) would train the marker alone: refused like one that drops the calls."""
    from hsa.chat_template import harness_not_rendered
    from hsa.cli import main

    marker_only = ("{% if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
                   "{% for m in messages %}{% if m.tool_calls %}[TOOL_CALLS]{{ m.content }}</s>"
                   "{% else %}[{{ m.role }}]{{ m.content }}{% endif %}{% endfor %}")
    path = tmp_path / "m.jinja"
    path.write_text(marker_only, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(path)]) == 2
    assert "has 'tool_calls' but not which" in capsys.readouterr().err and not out.exists()
    # a template that renders the calls passes, with arguments as objects or as text
    chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}]
    assert harness_not_rendered(lambda m, t: render(STRING_ARGS, m, t), chat, None) is None


#: Written for the tests in the manner of vLLM's Nemotron templates: a conversation's last assistant turn is held
#: as a generation prefill, and only its text is rendered.
PREFILL_LAST = (
    "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
    "{% set last = messages[-1] if messages[-1].role == 'assistant' else none %}"
    "{% for m in (messages[:-1] if last else messages) %}<{{ m.role }}>{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<TOOLCALL>{{ c.function | tojson }}</TOOLCALL>{% endfor %}{% endfor %}"
    "{% if last %}<assistant>{% generation %}{{ last.content }}{% endgeneration %}{% endif %}")


def test_a_template_that_drops_a_last_turns_calls(tmp_path, capsys):
    """Rows that end with calls (xLAM, BFCL) would export and train with no call under such a template: export
    leaves them out, listed and counted, and writes the others; the SFT trainer refuses the template."""
    from hsa.chat_template import probe_final_calls_dropped
    from hsa.cli import main
    from trainers.common import TrainerInputError, check_template_renders_harness

    fn = (lambda m, t: render(PREFILL_LAST, m, t))
    assert "drops the calls of a conversation's last assistant turn" in probe_final_calls_dropped(fn)
    assert probe_final_calls_dropped(lambda m, t: render(STRING_ARGS, m, t), ["string_arguments"]) is None
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string", "description": "The city."}},
                                                   "required": ["city"]}}}]
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}
    ends_with_call = {"id": "q1", "tools": tools, "messages": [{"role": "user", "content": "Weather in Oslo?"}, call]}
    ends_with_text = {"id": "q2", "tools": tools, "messages": [
        {"role": "user", "content": "Weather in Oslo?"}, call,
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 3}"},
        {"role": "assistant", "content": "It is 3 degrees in Oslo."}]}
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in (ends_with_call, ends_with_text)) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "aug"), "--variants", "1", "--quiet"]) == 0
    path = tmp_path / "p.jinja"
    path.write_text(PREFILL_LAST, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(tmp_path / "aug"), "--out", str(out), "--template", str(path)]) == 1
    err = capsys.readouterr().err
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written and all(r["messages"][-1].get("tool_calls") is None for r in written)
    assert {r["source_id"] for r in written} == {"q2"}
    assert f"{len(written)} rows written" in err and "ends with calls, and the template drops" in err
    chat = {"messages": ends_with_text["messages"], "tools": tools}
    with pytest.raises(TrainerInputError, match="drops the calls of a conversation's last assistant turn"):
        check_template_renders_harness(fn, chat, final_turn=True)
    check_template_renders_harness(fn, chat)  # prompts for evaluation end before the turn: no matter there


def test_named_templates_give_the_one_for_tools(tmp_path, tiny_model, shards, capsys):  # noqa: F811
    """A tokenizer with named templates (Hermes 2 Pro, Command-R: a ``default`` that renders no tools and a
    ``tool_use`` one) is read for its ``tool_use`` template, as apply_chat_template picks it when given tools:
    from tokenizer_config.json's list, a folder's additional_chat_templates/, and the trainers' tokenizer
    (before: ``default``, refused for not rendering the tools)."""
    from transformers import AutoTokenizer

    from hsa.chat_template import read_template, tool_template
    from hsa.cli import main
    from trainers.common import bundled_template
    from trainers.sft import training_template

    tools_tpl = Path(bundled_template()).read_text(encoding="utf-8")
    plain = SMOLLM2.read_text(encoding="utf-8")  # renders role and content only
    config = tmp_path / "tok" / "tokenizer_config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"chat_template": [{"name": "default", "template": plain},
                                                    {"name": "tool_use", "template": tools_tpl}]}))
    assert read_template(str(config)) == tools_tpl == read_template(str(config.parent))
    assert tool_template({"default": plain}) == plain and tool_template(plain) == plain
    folder = tmp_path / "saved"
    (folder / "additional_chat_templates").mkdir(parents=True)
    (folder / "chat_template.jinja").write_text(plain, encoding="utf-8")
    (folder / "additional_chat_templates" / "tool_use.jinja").write_text(tools_tpl, encoding="utf-8")
    assert read_template(str(folder)) == tools_tpl
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(shards), "--out", str(out), "--template", str(config.parent)]) == 0
    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = {"default": plain, "tool_use": tools_tpl}
    assert training_template(tok) == tools_tpl


#: Written for the tests in the manner of SmolLM3's template: the tools and an instruction to answer in
#: <tool_call> tags go into the system turn, and every message is rendered by its text alone (no tool_calls).
CONTENT_ONLY_TAGS = (
    "<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n{% endif %}"
    "{% if tools %}<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\nFor each function call, "
    "return a json object with function name and arguments within <tool_call></tool_call> XML tags.{% endif %}"
    "<|im_end|>\n{% for m in messages if m.role != 'system' %}"
    "{% set role = 'user' if m.role == 'tool' else m.role %}<|im_start|>{{ role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content or '' }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}")


def test_a_template_that_renders_text_only_and_asks_for_tags_gets_calls_as_tags(tmp_path, shards, capsys):  # noqa: F811
    """SmolLM3's template renders a message's text and never its tool_calls, and tells the model to answer in
    <tool_call> tags. Every row was refused ("does not render assistant 'tool_calls'"); the rows now carry each
    call as those tags in the assistant's text, which the template renders and hsa eval reads back as the same
    calls. A template that drops calls without asking for the tags stays refused: the form is the template's."""
    from hsa.evaluation.parsers import parse

    from hsa.cli import main

    assert _needs(CONTENT_ONLY_TAGS) == {"tool_call_tags", "fold_system"}  # it drops a late system message too
    code, err, out = _export(tmp_path, shards, capsys, CONTENT_ONLY_TAGS)
    assert code == 0 and "needs tool_call_tags" in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert main(["export", str(shards), "--out", str(tmp_path / "plain.jsonl")]) == 0
    plain = [json.loads(line) for line in (tmp_path / "plain.jsonl").read_text().splitlines()]
    assert rows and not any(m.get("tool_calls") for r in rows for m in r["messages"])
    tagged = 0
    for row, source in zip(rows, plain, strict=True):
        want = [[(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]
                for m in source["messages"] if m.get("tool_calls")]
        texts = [m["content"] for m in row["messages"] if "<tool_call>" in (m.get("content") or "")]
        got = [[(c["name"], c["arguments"]) for c in parse(text).calls] for text in texts]
        assert got == want
        assert all(text in render(CONTENT_ONLY_TAGS, row["messages"], row["tools"]) for text in texts)
        tagged += len(texts)
    assert tagged
    other_form = CONTENT_ONLY_TAGS.replace("<tool_call></tool_call> XML tags", "<|tool_call_start|> markers")
    assert _needs(other_form) == {"fold_system"}
    assert _export(tmp_path, shards, capsys, other_form)[0] == 2


def _text_beside_call_row() -> dict:
    """A record whose assistant says what it is about to do and calls a tool in the same turn, as Claude Code and
    Anthropic-format trajectories do in most turns."""
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                             "parameters": {"type": "object", "properties": {
                                                 "city": {"type": "string", "description": "City name"}},
                                                 "required": ["city"]}}}
    return {"id": "beside", "tools": [tool], "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Let me check the forecast first.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather",
                                                              "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "RAINY_7C"},
        {"role": "assistant", "content": "It rains in Oslo, 7 degrees."}]}


def test_a_template_that_drops_the_text_beside_calls_is_reported(tmp_path, capsys):
    """Llama 3.1's template (as trl ships it) renders an assistant turn's calls and not the text beside them:
    "Let me check the forecast first." was in no rendered row, and nothing said so. ``hsa export --template`` now
    says so before the first row and counts the turns that lose their text; Qwen 2.5's template renders that text
    and gets no such line."""
    from hsa.chat_template import probe_text_with_calls_dropped, texts_beside_calls
    from hsa.cli import main

    llama = (TRL / "llama3_1.jinja").read_text()
    qwen = (TRL / "qwen2_5.jinja").read_text()
    assert "renders the calls alone" in probe_text_with_calls_dropped(lambda m, t: render(llama, m, t),
                                                                      ["split_parallel_calls"])
    assert probe_text_with_calls_dropped(lambda m, t: render(qwen, m, t)) is None
    row = _text_beside_call_row()
    assert texts_beside_calls(row["messages"]) == 1
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(row) + "\n" + json.dumps({**row, "id": "beside-2"}) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--variants", "2", "--workers", "1"]) == 0
    for name, template, says in (("llama", llama, True), ("qwen", qwen, False)):
        path = tmp_path / f"{name}.jinja"
        path.write_text(template, encoding="utf-8")
        out = tmp_path / f"{name}.jsonl"
        capsys.readouterr()
        assert main(["export", str(tmp_path / "out"), "--out", str(out), "--template", str(path)]) == 0
        err = capsys.readouterr().err
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 4 and all(texts_beside_calls(r["messages"]) == 1 for r in rows)
        for r in rows:  # the rows keep the text; the template's rendering of them does not
            said = next(m["content"] for m in r["messages"] if m.get("tool_calls"))
            assert (said in render(template, r["messages"], r["tools"])) is not says
        assert ("drops the text of an assistant turn that also calls tools" in err) is says
        assert ("the template leaves out the text beside the calls of 4 assistant turns (in 4 rows; their calls are "
                "kept)" in err) is says


def test_sft_counts_the_text_a_template_drops_beside_calls(tiny_model, capsys):  # noqa: F811
    """The SFT data path logs and counts the same loss (``LongRowStats.lost``), here for
    gpt-oss's training template, which renders such text only when no answer follows the calls."""
    from transformers import AutoTokenizer

    from trainers.sft import LongRowStats, build_dataset

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = (TRL / "gptoss_training.jinja").read_text()  # gpt-oss: such text only before no answer
    stats = LongRowStats()
    row = _text_beside_call_row()
    build_dataset([row, {**row, "id": "b2"}, {**row, "id": "b3", "messages": row["messages"][:2] + [
        {**row["messages"][2], "content": ""}] + row["messages"][3:]}], tok, stats=stats)
    assert stats.lost == {"text beside calls": (2, 2)}
    assert "leaves out the text beside the calls of 2 assistant turns (in 2 rows" in capsys.readouterr().err


def test_a_template_that_renders_no_reasoning_is_reported(tmp_path, capsys):
    """Rows from Anthropic-format or Claude Code trajectories carry ``thinking`` as ``reasoning_content``; Llama
    3.1's template renders it on no turn, so no row trained it and nothing said so. ``hsa export --template`` now
    says so and counts the turns; a template with a reasoning format (trl's Qwen 3 template renders the
    last answer's) gets no such line."""
    from hsa.chat_template import probe_reasoning_dropped, template_losses
    from hsa.cli import main

    llama = (TRL / "llama3_1.jinja").read_text()
    assert "renders no assistant turn's reasoning_content" in probe_reasoning_dropped(
        lambda m, t: render(llama, m, t), ["split_parallel_calls"])
    qwen3 = (TRL / "qwen3.jinja").read_text()
    assert "reasoning" not in template_losses(lambda m, t: render(qwen3, m, t))
    row = _text_beside_call_row()
    row["messages"][-1]["reasoning_content"] = "The tool said rain; say so."
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--variants", "2", "--workers", "1"]) == 0
    path = tmp_path / "llama.jinja"
    path.write_text(llama, encoding="utf-8")
    capsys.readouterr()
    assert main(["export", str(tmp_path / "out"), "--out", str(tmp_path / "rows.jsonl"), "--template", str(path)]) == 0
    err = capsys.readouterr().err
    assert "the template leaves out the reasoning_content of 2 assistant turns (in 2 rows)" in err
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert all(r["messages"][-1]["reasoning_content"] == "The tool said rain; say so." for r in rows)
