"""hsa.rewrite helpers: what counts as free text and as a hook literal."""

from __future__ import annotations

from hsa.records import clone, normalize
from hsa.rewrite import hook_literals, map_texts, text_fields


def test_text_fields_are_exactly_what_map_texts_rewrites(fixture_records):
    """text_fields lists the fields map_texts visits (plus hook source), in the same order."""
    for raw in fixture_records[:20]:
        rec = normalize(raw)
        seen: list[str] = []
        map_texts(clone(rec), lambda s: seen.append(s) or s)
        assert text_fields(rec) == seen + [h["source"] for h in rec.get("hooks") or ()]


def test_hook_literals_are_plain_string_values():
    """Plain string literals (and their |-parts) count; f-strings and bytes do not; a leading f inside quotes is text."""
    source = 'A = "foo|bar"\nB = f"{A}baz"\nC = b"qux"\nD = """fix"""\nE = r"\\d"\n'
    rec = {"hooks": [{"name": "h", "source": source}]}
    assert hook_literals(rec) == {"foo|bar", "foo", "bar", "fix", "\\d"}
    assert hook_literals({"hooks": [{"name": "bad", "source": "def f(:\n  'x"}]}) == set()
