"""Augmented records render through real tool-calling chat-template styles (transformers' apply_chat_template).

The four templates below are written for these tests the way the model families write
theirs: Hermes (``<tool_call>`` JSON in ChatML), Llama 3.1 (tools and JSON calls in the
header format, results as ``ipython``), Mistral (``[AVAILABLE_TOOLS]`` / ``[TOOL_CALLS]`` /
``[TOOL_RESULTS]``) and Qwen 2.5 (ChatML, ``# Tools`` block, results grouped in a user
turn). Like the originals they write ``arguments | tojson``, so a call whose arguments
are a JSON string comes out double-encoded; records must give the template objects.
The tokenizer is a word-level one trained here on a few strings (no model hub).
"""

from __future__ import annotations

import json
import re

import pytest

from hsa.io import read_records
from hsa.pipeline import augment
from hsa.recipes import load_recipe
from hsa.transform import Sequence
from transforms.tool import ParamRename, ToolRename

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

HERMES = """{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. Here are the available tools: <tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
For each function call return a json object with function name and arguments within <tool_call></tool_call> XML tags.<|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role in ('user', 'system') %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- for tc in message.tool_calls or [] %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>tool
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

LLAMA31 = """{{- bos_token }}
{%- if messages[0].role == 'system' %}{%- set system_message = messages[0].content %}{%- set messages = messages[1:] %}
{%- else %}{%- set system_message = "" %}{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools %}{{- "Environment: ipython\\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- set ns = namespace(tools_done=false) %}
{%- for message in messages %}
{%- if message.role == 'user' and tools and not ns.tools_done %}
{%- set ns.tools_done = true %}
{{- '<|start_header_id|>user<|end_header_id|>\\n\\n' }}
{{- "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\\n\\n" }}
{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.\\n\\n' }}
{%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\\n\\n" }}{%- endfor %}
{{- message.content + '<|eot_id|>' }}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- for tc in message.tool_calls %}
{{- '{"name": "' + tc.function.name + '", "parameters": ' }}{{- tc.function.arguments | tojson }}{{- "}" }}
{%- if not loop.last %}{{- "\\n" }}{%- endif %}
{%- endfor %}
{{- "<|eom_id|>" }}
{%- elif message.role == 'tool' %}
{{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
{%- if message.content is mapping or message.content is iterable and message.content is not string %}{{- message.content | tojson }}{%- else %}{{- message.content }}{%- endif %}
{{- "<|eot_id|>" }}
{%- else %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"""

MISTRAL = """{{- bos_token }}
{%- set ns = namespace(last_user=-1) %}
{%- for message in messages %}{%- if message.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}
{%- for message in messages %}
{%- if message.role == 'system' %}{{- '[SYSTEM_PROMPT]' + message.content + '[/SYSTEM_PROMPT]' }}
{%- elif message.role == 'user' %}
{%- if tools and loop.index0 == ns.last_user %}{{- '[AVAILABLE_TOOLS]' + (tools | tojson) + '[/AVAILABLE_TOOLS]' }}{%- endif %}
{{- '[INST]' + message.content + '[/INST]' }}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '[TOOL_CALLS][' }}
{%- for tc in message.tool_calls %}{{- '{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) + ', "id": "' + tc.id + '"}' }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}
{{- ']' + eos_token }}
{%- elif message.role == 'assistant' %}{{- message.content + eos_token }}
{%- elif message.role == 'tool' %}{{- '[TOOL_RESULTS]{"content": ' + (message.content | tojson) + ', "call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
{%- else %}{{- raise_exception('Only system, user, assistant and tool roles are supported') }}
{%- endif %}
{%- endfor %}"""

QWEN25 = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>' + message.role }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

#: Template, and a regex that finds the calls it renders (group 1: name, group 2: the arguments JSON).
STYLES = {
    "hermes": (HERMES, re.compile(r'<tool_call>\n\{"name": "([^"]+)", "arguments": (.*)\}\n</tool_call>')),
    "llama31": (LLAMA31, re.compile(r'\{"name": "([^"]+)", "parameters": (.*)\}(?=\n\{"name"|<\|eom_id\|>)')),
    "mistral": (MISTRAL, re.compile(r'\{"name": "([^"]+)", "arguments": (.*?), "id": "[^"]*"\}(?=, \{"name"|\])')),
    "qwen25": (QWEN25, re.compile(r'<tool_call>\n\{"name": "([^"]+)", "arguments": (.*)\}\n</tool_call>')),
}
SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>",
           "<|eot_id|>", "<|eom_id|>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
           "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"]


def _tokenizer(template: str):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["You are the AI host of a live room", "call load_skill with one reply skill",
                             "tool_call name arguments link_id product_id", "Link 1 price stock"],
                            trainers.WordLevelTrainer(special_tokens=SPECIAL))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   additional_special_tokens=SPECIAL[3:], chat_template=template)


def to_chat(row: dict) -> tuple[list[dict], list[dict]]:
    """Messages and tools of an output row as chat templates want them: tool-call arguments as objects."""
    messages = []
    for m in row["messages"]:
        out = {k: m[k] for k in ("role", "content", "tool_call_id", "name") if m.get(k) is not None}
        out.setdefault("content", "")
        if m.get("tool_calls"):
            out["tool_calls"] = []
            for c in m["tool_calls"]:
                fn = c.get("function", c)
                args = fn.get("arguments")
                args = json.loads(args) if isinstance(args, str) else args
                out["tool_calls"].append({"id": c.get("id", ""), "type": "function",
                                          "function": {"name": fn["name"], "arguments": args}})
        messages.append(out)
    tools = row["tools"] if isinstance(row["tools"], list) else json.loads(row["tools"])
    return messages, tools


@pytest.fixture(scope="module")
def augmented_rows(tmp_path_factory, fixture_lines):
    """Variants of fixture records in all three prompt styles: skills, prompt and tool renames, through the pipeline."""
    folder = tmp_path_factory.mktemp("chat")
    src = folder / "in.jsonl"
    src.write_text("\n".join(fixture_lines[i] for i in range(0, 300, 25)) + "\n", encoding="utf-8")
    recipe = Sequence((load_recipe("skills"), load_recipe("prompt"), ToolRename(), ParamRename()))
    augment([src], folder / "out", recipe, variants=2, keep_original=True, progress=False,
            call_arguments="keep")  # both argument encodings reach the templates
    rows = list(read_records(folder / "out"))
    assert len(rows) == 36
    return rows


@pytest.mark.parametrize("style", sorted(STYLES))
def test_augmented_records_render_through_chat_templates(style, augmented_rows):
    """Every row renders; its calls come out in order with object arguments equal to the row's; tools and system text appear."""
    template, calls_rx = STYLES[style]
    tok = _tokenizer(template)
    for row in augmented_rows:
        messages, tools = to_chat(row)
        text = tok.apply_chat_template(messages, tools=tools, tokenize=False)
        expected = [(c["function"]["name"], c["function"]["arguments"]) for m in messages for c in m.get("tool_calls", ())]
        found = [(name, json.loads(args)) for name, args in calls_rx.findall(text)]
        assert found == expected, (style, row["id"])
        assert all(isinstance(args, dict) for _, args in found)
        for t in tools:
            assert json.dumps(t["function"]["name"]) in text
        assert messages[0]["content"] in text
        ids = tok.apply_chat_template(messages, tools=tools, tokenize=True)["input_ids"]
        assert len(ids) > len(messages)


def test_string_arguments_are_double_encoded_by_these_templates(augmented_rows):
    """Why records must hand templates objects: a JSON-string argument renders as a quoted string, not an object."""
    template, calls_rx = STYLES["hermes"]
    tok = _tokenizer(template)
    messages, tools = to_chat(augmented_rows[0])
    for m in messages:
        for c in m.get("tool_calls", ()):
            c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
    text = tok.apply_chat_template(messages, tools=tools, tokenize=False)
    decoded = [json.loads(args) for _, args in calls_rx.findall(text)]
    assert decoded and all(isinstance(a, str) for a in decoded)


def test_rows_hold_variant_harnesses(augmented_rows):
    """The rendered rows really are varied: renamed tools or skills, re-laid prompts, and both argument encodings."""
    variants = [r for r in augmented_rows if r["variant"] > 0]
    assert any(r["mapping"]["tools"] for r in variants) and any(r["mapping"]["skills"] for r in variants)
    originals = {r["source_id"]: r for r in augmented_rows if r["variant"] == 0}
    changed = sum(r["messages"][0]["content"] != originals[r["source_id"]]["messages"][0]["content"] for r in variants)
    assert changed >= len(variants) // 2
    encodings = {type(c["function"]["arguments"]).__name__ for r in augmented_rows for m in r["messages"]
                 for c in m.get("tool_calls") or ()}
    assert encodings == {"str", "dict"}
