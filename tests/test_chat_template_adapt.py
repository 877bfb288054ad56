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
    assert _needs(MISTRAL) == {"alnum9_call_ids", "fold_system", "merge_user_turns"}
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
