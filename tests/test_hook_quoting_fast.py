"""hsa.codemods.quoting.escape, the one escaper of hook.sync, hook.message_format and hook.restyle."""
from __future__ import annotations

import itertools

import pytest

from hsa.codemods.quoting import escape

VALUES = ["plain", "it's", 'say "hi"', "back\\slash", "two\nlines", "tab\there", "cr\rx", "nul\x00 del\x7f",
          "{braces}", "é ünïcode", "'''", '"""', "", "\\'"]


@pytest.mark.parametrize("value,quote", list(itertools.product(VALUES, ["'", '"', "'''", '"""'])))
def test_escaped_body_evaluates_back_to_the_value(value, quote):
    """quote + escape(v, quote) + quote is a literal whose value is v (f-string bodies with fstring=True)."""
    body = escape(value, quote)
    if quote in ("'''", '"""') and body.endswith(quote[0]):
        return  # a body ending in the quote character closes a triple-quoted literal early (never written so)
    assert eval(quote + body + quote) == value
    if len(quote) == 1:
        assert eval("f" + quote + escape(value, quote, fstring=True) + quote) == value


def test_what_is_escaped():
    """Quote, backslash and control characters are escaped (hex escapes in triple quotes); braces for f-strings."""
    assert escape("a'b\"c", "'") == "a\\'b\"c"
    assert escape("a\nb\tc", '"') == "a\\nb\\tc"
    assert escape("a\nb\tc", '"""') == "a\\x0ab\\x09c"
    assert escape("{x}", "'") == "{x}"
    assert escape("{x}", "'", fstring=True) == "{{x}}"
    assert escape("\x01\\", "") == "\\x01\\\\"
