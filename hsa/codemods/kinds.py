"""The kinds of :mod:`hsa.codemods.restyle`'s rewrites, in a module of their own so that a recipe can be checked
without importing libcst (a run whose records have no hooks never parses one)."""

from __future__ import annotations

__all__ = ["RESTYLE_KINDS"]

RESTYLE_KINDS = ("quotes", "format", "percent", "bool_return", "not_in", "imports", "empty_literal")
