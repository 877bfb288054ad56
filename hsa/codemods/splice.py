"""New values written into the literals of a hook source: each literal rendered, the edits spliced.

Used by ``hook.sync`` (:mod:`hsa.codemods.sync`) and ``hook.message_format``
(:mod:`hsa.codemods.messages`). A literal keeps its prefix and quotes where the new value
allows; edits are spliced at the byte spans of the analysis, so every other byte stays.
"""

from __future__ import annotations

from hsa.codemods import Refusal, Refused
from hsa.codemods.quoting import escape
from hsa.codemods.results import NAME_ROLES, Analysis, LiteralSite
from hsa.names import replace_tokens

__all__ = ["render_literal", "apply_edits"]


def render_literal(site: LiteralSite, old_text: str, new_value: str, table: dict[str, str] | None) -> str:
    """Source text of ``site`` with value ``new_value``, keeping its prefix and quotes where possible."""
    if site.kind == "comment":
        return new_value
    if site.kind == "ftext":  # the value of an f-string part is its source text ("{{" for a brace)
        if "\\" in old_text or "\\" in new_value:
            raise Refused("escaped f-string text", f"line {site.line}: cannot rewrite {old_text!r} with escapes")
        return new_value
    prefix, quote = site.prefix, site.quote
    body = old_text[len(prefix) + len(quote):len(old_text) - len(quote)]
    if table is not None and "\\" not in body:
        candidate = replace_tokens(body, table)
        if candidate == new_value:
            return prefix + quote + candidate + quote
    if "\\" not in body and "\\" not in new_value and (not quote or quote[0] not in new_value) \
            and (len(quote) == 3 or "\n" not in new_value):
        return prefix + quote + new_value + quote
    prefix = prefix.replace("r", "").replace("R", "")
    return prefix + quote + escape(new_value, quote) + quote


def _splice(an: Analysis, edits: dict[int, str], table: dict[str, str]
           ) -> tuple[str, dict[int, str], list[tuple[int, int, int]]]:
    """Splice the edits into the source: the new source, the new value of every changed site, the spans replaced."""
    data = an.source.encode("utf-8")
    by_index = {s.index: s for s in an.sites}
    leaf: dict[int, tuple[LiteralSite, str]] = {}  # site index -> (site, new text)
    values = dict(edits)
    for index, new_value in edits.items():
        site = by_index[index]
        if site.kind == "concat":
            parts = [by_index[i] for i in site.parts]
            if site.role_names() & NAME_ROLES or not table:
                raise Refused("name split across implicitly concatenated strings",
                              f"line {site.line}: {site.value!r} would become {new_value!r}")
            new_parts = [replace_tokens(p.value, table) for p in parts]
            if "".join(new_parts) != new_value:
                raise Refused("name split across implicitly concatenated strings",
                              f"line {site.line}: {site.value!r} holds a renamed name across its parts")
            for p, nv in zip(parts, new_parts):
                if nv != p.value:
                    leaf[p.index] = (p, render_literal(p, data[p.start:p.end].decode("utf-8"), nv, table))
                    values[p.index] = nv
        else:
            text_role = not (site.role_names() & NAME_ROLES)
            leaf[index] = (site, render_literal(site, data[site.start:site.end].decode("utf-8"), new_value,
                                                table if text_role else None))
    pieces: list[bytes] = []
    replaced: list[tuple[int, int, int]] = []
    pos = 0
    for site, text in sorted(leaf.values(), key=lambda x: x[0].start):
        encoded = text.encode("utf-8")
        pieces.append(data[pos:site.start])
        pieces.append(encoded)
        replaced.append((site.start, site.end, len(encoded)))
        pos = site.end
    pieces.append(data[pos:])
    return b"".join(pieces).decode("utf-8"), values, replaced


def apply_edits(an: Analysis, edits: dict[int, str], table: dict[str, str]
                ) -> tuple[str, dict[int, str], list[tuple[int, int, int]]] | Refusal:
    """The edits (new values by site index) spliced into ``an.source``: the new source, the new value of
    every changed site and the spans replaced (``(old start, old end, new length)``);
    or the :class:`~hsa.codemods.Refusal` of the first edit that cannot be written."""
    try:
        return _splice(an, edits, table)
    except Refused as exc:
        return exc.refusal
