"""One parsed LibCST module per hook source, shared by the analysis, rename_locals and restyle.

LibCST trees are immutable, so the same :class:`libcst.Module` can serve every reader of
a source; parsing (about 2 ms for a hook) then happens once per source, not once per use.
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

__all__ = ["parse"]


@lru_cache(maxsize=256)
def parse(source: str) -> cst.Module:
    """``cst.parse_module(source)``, cached per source (raises ``ParserSyntaxError`` like it)."""
    return cst.parse_module(source)
