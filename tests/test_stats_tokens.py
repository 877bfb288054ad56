"""``hsa stats`` numbers against a direct computation from the rows, and ``--tokenizer`` with a local tokenizer."""

from __future__ import annotations

import json

import pytest

from hsa import load_recipe
from hsa.cli import main
from hsa.io import iter_rows
from hsa.pipeline import augment
from hsa.stats import _split, compute_stats


@pytest.fixture(scope="module")
def out(tmp_path_factory, fixture_lines):
    """12 fixture records, 3 variants each, in shards of 10 rows (several shards and batches)."""
    d = tmp_path_factory.mktemp("stats")
    src = d / "in.jsonl"
    src.write_text("\n".join(fixture_lines[:12]) + "\n")
    augment([src], d / "out", load_recipe("default"), variants=3, shard_size=10, keep_original=True)
    return d / "out"


def _local_tokenizer(path):
    """A word-level tokenizer trained here on a few words (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["order link price stock the a is", "reply skill tool"],
                            trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(str(path))
    return path


def test_stats_match_the_rows(out):
    """Counts, lengths and distinct names equal what a direct pass over every row computes."""
    rows = list(iter_rows(out))
    stats = compute_stats(out)
    assert stats["rows"] == len(rows) == 48
    assert stats["sources"] == 12
    want: dict[str, int] = {}
    for r in rows:
        for t in r["transforms"]:
            want[t["name"]] = want.get(t["name"], 0) + 1
    assert stats["transforms"] == want
    assert stats["unchanged_rows"] == sum(1 for r in rows if not r["transforms"]) >= 12
    chars = sorted(len(_split(r["messages"])[0]) for r in rows)
    assert stats["lengths"]["prompt_chars"]["max"] == chars[-1]
    assert stats["lengths"]["prompt_chars"]["min"] == chars[0]
    renamed = {}
    for r in rows:
        inverse = {v: k for k, v in (r["mapping"] or {}).get("tools", {}).items()}
        for t in r["tools"]:
            name = (t.get("function") or t)["name"]
            renamed.setdefault(inverse.get(name, name), set()).add(name)
    assert stats["names"]["tools"] == {k: len(v) for k, v in renamed.items()}


def test_stats_tokens_with_a_local_tokenizer(out, tmp_path, capsys):
    """--tokenizer adds token lengths counted with that tokenizer; --json leaves out the raw histogram data."""
    from transformers import AutoTokenizer

    path = _local_tokenizer(tmp_path / "tok")
    assert main(["stats", str(out), "--tokenizer", str(path), "--json", str(tmp_path / "s.json"),
                 "--html", str(tmp_path / "s.html")]) == 0
    text = capsys.readouterr().out
    assert "prompt_tokens" in text and "completion_tokens" in text
    stats = json.loads((tmp_path / "s.json").read_text())
    assert not any(k.startswith("_") for k in stats)
    tok = AutoTokenizer.from_pretrained(str(path))
    counts = sorted(len(tok(_split(r["messages"])[1], add_special_tokens=False)["input_ids"]) for r in iter_rows(out))
    assert stats["lengths"]["completion_tokens"]["max"] == counts[-1]
    assert stats["lengths"]["completion_tokens"]["min"] == counts[0]
    assert counts[-1] < stats["lengths"]["completion_chars"]["max"]  # words, not characters
    page = (tmp_path / "s.html").read_text()  # --html writes the page of `hsa report`, lengths in tokens
    assert 'id="variants"' in page and f"tokens per row ({path}, chat template with tools)" not in page
    assert f"tokens per row ({path}, message text only)" in page


#: a chat template that renders the tool names, then each message's role and text content
TEMPLATE = ("{% for t in tools or [] %}{{ t.function.name }} {% endfor %}"
            "{% for m in messages %}{{ m.role }} {{ m.content if m.content is string else '' }} {% endfor %}")


def test_stats_render_whole_rows_with_the_chat_template(out, tmp_path):
    """With a chat template, rendered_tokens counts each whole row as the template renders it, tools included."""
    from transformers import AutoTokenizer

    path = _local_tokenizer(tmp_path / "tok")
    tok = AutoTokenizer.from_pretrained(str(path))
    tok.chat_template = TEMPLATE
    tok.save_pretrained(str(path))
    stats = compute_stats(out, tokenizer=str(path))
    want = []
    for r in iter_rows(out):
        names = [(t.get("function") or t)["name"] for t in r["tools"]]
        text = "".join(n + " " for n in names) + "".join(
            f"{m['role']} {m['content'] if isinstance(m.get('content'), str) else ''} " for m in r["messages"])
        want.append(len(tok(text, add_special_tokens=False)["input_ids"]))
    assert stats["lengths"]["rendered_tokens"]["max"] == max(want)
    assert stats["lengths"]["rendered_tokens"]["min"] == min(want)
    assert "unrendered_rows" not in stats


def test_stats_count_rows_the_template_cannot_render(out, tmp_path):
    """A template that raises is counted with its first error; the other statistics are still computed."""
    from transformers import AutoTokenizer

    path = _local_tokenizer(tmp_path / "tok")
    tok = AutoTokenizer.from_pretrained(str(path))
    tok.chat_template = "{{ raise_exception('this template renders no tools') }}"
    tok.save_pretrained(str(path))
    stats = compute_stats(out, tokenizer=str(path))
    assert stats["unrendered_rows"]["rows"] == stats["rows"] == 48
    assert "this template renders no tools" in stats["unrendered_rows"]["first_error"]
    assert stats["lengths"]["completion_tokens"]["max"] > 0 and "rendered_tokens" not in stats["lengths"]
