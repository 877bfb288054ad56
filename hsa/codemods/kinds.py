"""The kinds of :mod:`hsa.codemods.restyle`'s rewrites (and the names that read frames, which both codemods refuse
to rewrite around), in a module of their own so that a recipe can be checked
without importing libcst (a run whose records have no hooks never parses one)."""

from __future__ import annotations

__all__ = ["RESTYLE_KINDS", "FRAME_NAMES", "reads_frames"]

RESTYLE_KINDS = ("quotes", "format", "percent", "bool_return", "not_in", "imports", "empty_literal")


#: Names that read a frame, and so a caller's local names (``sys._getframe(1).f_locals``), its line numbers or a
#: function's code names: a module that uses one has no local renamed and no line moved. pyparsing's
#: ``autoname_elements`` names parser elements by its caller's locals. (A library that reads its caller's frame
#: under another name cannot be seen.)
FRAME_NAMES = frozenset({"_getframe", "currentframe", "f_locals", "f_back", "f_code", "f_lineno", "tb_frame",
                         "gi_frame", "cr_frame", "ag_frame", "getouterframes", "getinnerframes", "getframeinfo",
                         "autoname_elements"})


def reads_frames(names: set[str] | frozenset[str]) -> bool:
    """Whether a module whose names and attribute names are ``names`` reads frames: one of :data:`FRAME_NAMES`, or
    ``inspect.stack`` / ``inspect.trace``."""
    return bool(names & FRAME_NAMES) or ("inspect" in names and bool({"stack", "trace"} & names))
