"""Augmented rows through the real chat templates that trl ships (trl/chat_templates: the models' originals).

Rendered the way the trainers render (``to_chat``, then the template): every variant's tool
and call names must appear in the text. Templates that cannot render some conversations get
the ``--chat_compat`` rewrite documented for them; templates that leave the harness out are
refused by :func:`trainers.common.check_template_renders_harness`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.trainers_support import shards  # noqa: F401  (pytest fixture)

from trainers.common import TrainerInputError, check_template_renders_harness, iter_rows, to_chat

trl = pytest.importorskip("trl")
TEMPLATES = Path(trl.__file__).parent / "chat_templates"

RENDERS = {  # template -> the rewrites it needs
    "qwen2_5": [], "qwen3": [], "qwen3_instruct_2507": [], "glm4moe": [], "nemotron_3_nano": [],
    "llama3_1": ["split_parallel_calls"], "llama3_2": ["split_parallel_calls"],
    "gptoss": ["split_parallel_calls"], "qwen3_5_nothink": ["system_as_user"],
}
HIDES_HARNESS = ["llama3", "phi3_5", "deepseekv3_training"]


def _render(name: str):
    from transformers.utils.chat_template_utils import render_jinja_template

    template = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")

    def render(messages, tools):
        return render_jinja_template(conversations=[list(messages)], tools=list(tools) if tools else None,
                                     chat_template=template, bos_token="<s>", eos_token="</s>")[0][0]
    return render


@pytest.fixture(scope="module")
def rows(shards):  # noqa: F811
    return list(iter_rows(str(shards)))


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_real_templates_render_every_augmented_row(name, rows):
    """Every row renders, with every tool and every call of the variant named in the text."""
    if not (TEMPLATES / f"{name}.jinja").is_file():
        pytest.skip(f"this trl has no {name}.jinja")
    render = _render(name)
    for row in rows:
        chat = to_chat(row, compat=RENDERS[name])
        text = render(chat["messages"], chat["tools"])
        tools = {t["function"]["name"] for t in chat["tools"] or ()}
        calls = {c["function"]["name"] for m in chat["messages"] for c in m.get("tool_calls") or ()}
        missing = sorted(n for n in tools | calls if n not in text)
        assert not missing, (name, row["id"], missing)
    check_template_renders_harness(render, to_chat(rows[0], compat=RENDERS[name]))


@pytest.mark.parametrize("name", ["llama3_1", "gptoss"])
def test_parallel_calls_need_the_split_for_single_call_templates(name, rows):
    """Without split_parallel_calls, Llama 3.1 refuses parallel calls and gpt-oss drops all but the first."""
    render = _render(name)
    row = next(r for r in rows if any(len(m.get("tool_calls") or ()) > 1 for m in r["messages"]))
    chat = to_chat(row)
    try:
        text = render(chat["messages"], chat["tools"])
    except Exception as exc:  # noqa: BLE001  (jinja raise_exception)
        assert "single tool-call" in str(exc)
        return
    calls = [c for m in chat["messages"] for c in m.get("tool_calls") or ()]
    assert text.count(calls[1]["function"]["name"]) < render(*_split(row)).count(calls[1]["function"]["name"])


def _split(row):
    chat = to_chat(row, compat=["split_parallel_calls"])
    return chat["messages"], chat["tools"]


@pytest.mark.parametrize("name", HIDES_HARNESS)
def test_templates_that_hide_the_harness_are_refused(name, rows):
    """Templates that leave the tools or the calls out of the text are refused before training."""
    if not (TEMPLATES / f"{name}.jinja").is_file():
        pytest.skip(f"this trl has no {name}.jinja")
    row = next(r for r in rows if any(m.get("tool_calls") for m in r["messages"]))
    with pytest.raises(TrainerInputError, match="does not render"):
        check_template_renders_harness(_render(name), to_chat(row))
