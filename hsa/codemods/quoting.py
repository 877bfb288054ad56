"""Writing a string value as the body of a Python string literal (the one escaper of the codemods).

:func:`escape` is used where a rewrite writes a new value into a literal (``hook.sync``,
``hook.message_format``: :func:`hsa.codemods.splice.render_literal`) and where a restyle writes
the text of an f-string (``format`` and ``percent``: :mod:`hsa.codemods.restyle`).
"""

from __future__ import annotations

__all__ = ["escape"]


def escape(value: str, quote: str, *, fstring: bool = False) -> str:
    """``value`` as the body of a literal quoted with ``quote`` (``'``, ``"``, a triple quote, or ``""``).

    Backslashes, the quote character and control characters are escaped (a newline or a tab
    as ``\\n`` / ``\\t``, or as ``\\x0a`` / ``\\x09`` inside triple quotes). With ``fstring``, braces
    are doubled (the body of an f-string). Evaluating ``quote + escape(v, quote) + quote`` gives
    ``v`` back (as an f-string with ``fstring``).
    """
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif quote and ch == quote[0]:
            out.append("\\" + ch)
        elif ch == "\n" and len(quote) != 3:
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t" and len(quote) != 3:
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        elif fstring and ch in "{}":
            out.append(ch * 2)
        else:
            out.append(ch)
    return "".join(out)
