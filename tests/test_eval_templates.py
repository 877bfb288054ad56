"""Completions in the formats real chat templates teach their models (trl/chat_templates) parse back to the calls.

The gold assistant turn of a prompt is rendered with each template; the text the template adds after its
generation prompt is what the model would generate. `hsa.evaluation.parse` (format auto) must read exactly
the gold calls from it, names and typed arguments.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.trainers_support import shards  # noqa: F401  (pytest fixture)

trl = pytest.importorskip("trl")
TEMPLATES = Path(trl.__file__).parent / "chat_templates"

#: template -> its call format (what auto must find); one per model family that renders tool calls.
FORMATS = {
    "qwen2_5": "hermes", "qwen3": "hermes", "qwen3_instruct_2507": "hermes", "qwen3_5_nothink": "hermes",
    "qwen3_6": "hermes", "nemotron_3_nano": "hermes", "glm4moe": "hermes", "gemma4": "gemma", "gptoss": "harmony",
    "deepseekv3_training": "deepseek", "lfm2_v2": "pythonic", "llama3_1": "json", "llama3_2": "json",
    "muse_glimmer": "invoke",
}
SINGLE_CALL = {"llama3_1", "llama3_2", "gptoss"}  # templates that need one call per turn (split_parallel_calls)


@pytest.fixture(scope="module")
def cases(shards):  # noqa: F811
    from hsa.evaluation import collect
    from hsa.io import read_records
    from hsa.records import normalize

    rows = {r["id"]: normalize(r) for r in read_records(shards)}
    items, _ = collect(str(shards), turns="calls", max_prompts=12)
    out = []
    for it in items:
        gold = rows[it.prompt["row_id"]]["messages"][it.prompt["turn"]]
        out.append((it, {"role": "assistant", "content": "", "tool_calls": [
            {"id": c.get("id", f"c{i}"), "type": "function", "function": c["function"]}
            for i, c in enumerate(gold["tool_calls"])]}))
    return out


def _completion(template: str, messages: list, tools: list, gold: dict) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    def render(msgs, gen):
        return render_jinja_template(conversations=[msgs], tools=tools, chat_template=template,
                                     add_generation_prompt=gen, bos_token="<s>", eos_token="</s>")[0][0]

    prompt, full = render(messages, True), render(messages + [gold], False)
    k = 0
    while k < min(len(prompt), len(full)) and prompt[k] == full[k]:
        k += 1
    if k < len(prompt):  # the generation prompt differs from the rendered turn's start: back to a tag boundary
        k = max(prompt.rfind(">", 0, k), prompt.rfind("\n", 0, k)) + 1
    return full[k:]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_template_call_format_parses_back(name, cases):
    """Every gold call turn, as the template writes it, parses back to the same calls."""
    from hsa.evaluation import parse
    from trainers.eval import _compat

    path = TEMPLATES / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"this trl has no {name}.jinja")
    template = path.read_text(encoding="utf-8")
    checked = 0
    for it, gold in cases:
        if name in SINGLE_CALL and len(gold["tool_calls"]) > 1:
            continue
        messages = _compat(it.prompt["messages"], ["split_parallel_calls"] if name in SINGLE_CALL else [])
        text = _completion(template, messages, it.prompt["tools"], gold)
        p = parse(text, schemas=it.schemas)
        want = tuple({"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in gold["tool_calls"])
        assert p.ok and p.calls == want, (name, text[:300], p)
        assert p.format == FORMATS[name], (name, p.format)
        checked += 1
    assert checked >= 5
