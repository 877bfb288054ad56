"""hsa.chat.to_chat: a row as trl's conversational format, in the core (no trainers/ import)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hsa.chat import ChatInputError, to_chat
from tests.trainers_support import ROOT


def test_to_chat_reads_a_layout_and_names_results():
    """A ShareGPT row becomes messages with object arguments, a named result and OpenAI tools."""
    row = {"conversations": [{"from": "human", "value": "Quote?"},
                             {"from": "function_call", "value": '{"name": "quote", "arguments": "{\\"n\\": 1}"}'},
                             {"from": "observation", "value": "ok"}, {"from": "gpt", "value": "Done."}],
           "tools": [{"name": "quote", "parameters": {"type": "object", "properties": {"n": {"type": "int"}}}}]}
    chat = to_chat(row)
    assert chat["messages"][1]["tool_calls"][0]["function"] == {"name": "quote", "arguments": {"n": 1}}
    assert chat["messages"][2] == {"role": "tool", "content": "ok", "tool_call_id": "call_1", "name": "quote"}
    assert chat["tools"][0]["function"]["parameters"]["properties"]["n"] == {"type": "integer"}
    assert chat["train"] == [True] * 4


def test_to_chat_errors_are_chat_input_errors():
    """An unknown rewrite and a row without messages raise ChatInputError saying what to do."""
    with pytest.raises(ChatInputError, match="unknown chat_compat"):
        to_chat({"messages": []}, compat=["split_calls"])
    with pytest.raises(ChatInputError, match=r"no 'messages' column \(found: \['text'\]\)"):
        to_chat({"text": "hello"})


def test_the_core_chat_imports_no_trainers():
    """hsa.chat and hsa.stats load and convert a row without importing trainers/."""
    code = ("import sys, hsa.chat, hsa.stats; hsa.chat.to_chat({'messages': [{'role': 'user', 'content': 'hi'}]}); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'trainers'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
