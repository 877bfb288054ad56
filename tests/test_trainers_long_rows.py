"""SFT on conversations longer than --max_length (issue 16 item 11): never a silent cut.

--long_rows split makes several rows, each ending in assistant turns within the window with the
system message, the tools and as much preceding context as fits; truncate and drop report what
they lose. Tiny tokenizer from tests/trainers_support.py.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.trainers_support import MINI_RECORDS, tiny_model  # noqa: F401
from trainers.common import to_chat
from trainers.sft import LongRowStats, SFTArguments, build_dataset, tokenize_chat


def _long_row(turns: int = 6) -> dict:
    base = copy.deepcopy(MINI_RECORDS[0])
    msgs = [base["messages"][0]]
    for k in range(turns):
        cid = f"c{k}"
        msgs += [{"role": "user", "content": f"price of link {k}? tell me about the colours and the sizes please"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": cid, "type": "function", "function": {
                     "name": "get_product_info_by_link_id", "arguments": {"link_id": k}}}]},
                 {"role": "tool", "tool_call_id": cid, "content": json.dumps({"price": 100 + k, "colours": ["red"]})},
                 {"role": "assistant", "content": f"Link {k} is {100 + k} yuan and comes in red."}]
    return {"id": "long-1", "messages": msgs, "tools": base["tools"]}


@pytest.fixture(scope="module")
def tokenizer(tiny_model):  # noqa: F811
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def _full(tokenizer, row):
    chat = to_chat(row)
    return tokenize_chat(tokenizer, chat["messages"], chat["tools"], chat["train"])


def _trained(tokenizer, ids, labels) -> str:
    return tokenizer.decode([i for i, lab in zip(ids, labels) if lab != -100])


def test_split_trains_every_assistant_token_once_within_the_window(tokenizer, capsys):
    """Split rows fit max_length, each ends in an assistant turn, starts with the system message and tools,
    and together train exactly the assistant tokens of the whole conversation."""
    row = _long_row()
    full = _full(tokenizer, row)
    limit = len(full["input_ids"]) // 3
    stats = LongRowStats()
    ds = build_dataset([row], tokenizer, max_length=limit, long_rows="split", stats=stats)
    assert stats.long_rows == 1 and stats.split_rows == 1 and len(ds) == stats.windows >= 3
    assert stats.cut_tokens == 0 and stats.dropped_tokens == 0
    texts = []
    for ids, labels in zip(ds["input_ids"], ds["labels"]):
        assert len(ids) <= limit
        text = tokenizer.decode(ids)
        assert "You are a shop assistant." in text and "get_product_info_by_link_id" in text
        assert labels[-1] != -100 or labels[-2] != -100  # ends in a trained assistant turn
        texts.append(_trained(tokenizer, ids, labels))
    assert "".join(texts) == _trained(tokenizer, full["input_ids"], full["labels"])
    assert sum(x != -100 for labels in ds["labels"] for x in labels) == stats.trained_tokens
    err = capsys.readouterr().err
    assert "1 of 1 conversations are longer" in err and "0 of" in err and "split into" in err


def test_truncate_and_drop_report_what_they_lose(tokenizer, capsys):
    """truncate counts the rows and assistant tokens it cuts; drop the rows and tokens it leaves out."""
    rows = [_long_row(), copy.deepcopy(MINI_RECORDS[0])]
    full = _full(tokenizer, rows[0])
    limit = len(full["input_ids"]) // 2
    short = _full(tokenizer, rows[1])
    assert len(short["input_ids"]) <= limit
    stats = LongRowStats()
    ds = build_dataset(rows, tokenizer, max_length=limit, long_rows="truncate", stats=stats)
    kept = sum(x != -100 for x in full["labels"][:limit])
    assert stats.cut_rows == 1 and stats.cut_tokens == sum(x != -100 for x in full["labels"]) - kept > 0
    assert len(ds) == 2
    assert f"{stats.cut_tokens} of {stats.trained_tokens} assistant tokens lost" in capsys.readouterr().err
    stats = LongRowStats()
    ds = build_dataset(rows, tokenizer, max_length=limit, long_rows="drop", stats=stats)
    assert len(ds) == 1 and stats.dropped_rows == 1
    assert stats.dropped_tokens == sum(x != -100 for x in full["labels"])
    assert "1 rows dropped" in capsys.readouterr().err


def test_a_turn_longer_than_the_window_is_cut_and_counted(tokenizer):
    """A single assistant turn that does not fit even with only its question is cut, and the cut is counted."""
    row = _long_row(2)
    row["messages"][-1]["content"] = "red " * 400
    stats = LongRowStats()
    full = _full(tokenizer, row)
    ds = build_dataset([row], tokenizer, max_length=200, long_rows="split", stats=stats)
    assert stats.cut_rows == 1 and 0 < stats.cut_tokens < sum(x != -100 for x in full["labels"])
    assert all(len(x) <= 200 for x in ds["input_ids"])


def test_split_is_the_default_and_bad_modes_are_refused(tokenizer):
    """The default never cuts silently (split), and an unknown mode is an error that lists the choices."""
    from trainers.common import TrainerInputError

    assert SFTArguments().long_rows == "split"
    with pytest.raises(TrainerInputError, match="--long_rows must be one of"):
        build_dataset([_long_row(1)], tokenizer, long_rows="wrap")
