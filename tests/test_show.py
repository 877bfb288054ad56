"""`hsa show`: only what a transform changed shows, long texts are diffed by word, every line is wrapped."""

from __future__ import annotations

import re

import pytest

from hsa.cli import main
from tests.trainers_support import FIXTURES, ROOT

MY_DATA = ROOT / "examples" / "my-data.jsonl"


def _augment(src, out, *args) -> None:
    assert main(["augment", str(src), "--out", str(out), "--workers", "1", "--quiet", "--seed", "0", *args]) == 0


def test_show_without_keep_original_compares_one_representation(tmp_path, monkeypatch, capsys):
    """Without --keep-original the source comes from the input file (arguments as JSON strings, Hermes tags),
    the variant from the shards (arguments as objects): an identity variant shows no difference at all
    (before: every call's arguments string-vs-object showed as a change no transform made)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(MY_DATA.read_text(encoding="utf-8"), encoding="utf-8")
    _augment("in.jsonl", "ident", "--variants", "1", "--recipe", "identity")
    for rid in ("own-001/1", "own-002/1", "own-006/1"):  # OpenAI string arguments, parallel calls, Hermes
        assert main(["show", "ident", "--id", rid]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[-1] == "(no differences)", out
    _augment("in.jsonl", "varied", "--variants", "2")
    assert main(["show", "varied", "--id", "own-001/1", "--context", "0"]) == 0
    changed = [line for line in capsys.readouterr().out.splitlines() if line[:1] in "-+~"]
    assert changed and not any('"arguments": "' in line for line in changed)


@pytest.fixture(scope="module")
def ls_shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("show")
    src = folder / "in.jsonl"
    src.write_text("\n".join(FIXTURES.read_text(encoding="utf-8").splitlines()[:1]) + "\n", encoding="utf-8")
    _augment(src, folder / "shards", "--variants", "4", "--keep-original")
    return folder / "shards"


def test_show_diffs_long_texts_by_word_and_wraps_lines(ls_shards, capsys):
    """A 2,000-character system prompt is shown line by line, a changed line once with its changed words
    marked ([-old-]{+new+}), hook source as code lines; no output line is wider than --width (before: each side
    of the system prompt was one line of about 2,300 characters)."""
    from hsa.show import show

    text = show(ls_shards, "ls-000001/2", width=80)  # prompt.delimiters, skill.rename, tool.rename, hooks
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not any("<persona>" in line and "<room>" in line for line in lines)
    words = [line for line in lines if line.startswith("~")]
    # a renamed name or a restyled word, marked in its line (which one depends on the draw)
    assert any(re.search(r"\[-[^\s\]]+-\]\{\+[^\s}]+\+\}", line) for line in words), words[:5]
    assert any(line.strip() == "def check(payload: dict) -> dict:" for line in lines)  # hook source, as code
    assert main(["show", str(ls_shards), "--id", "ls-000001/2", "--width", "60", "--no-color"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 60
