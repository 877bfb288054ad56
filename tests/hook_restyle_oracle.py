"""The hook.restyle implementation as it was before the byte-splice rewrite (commit 2713d63): an oracle for tests only.

tests/test_hook_restyle_fast.py checks that :mod:`hsa.codemods.restyle` gives exactly what this code gives
(same sites, numbering, refusals and output text). Do not use it outside the tests.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import Any

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope, MetadataWrapper, ScopeProvider

__all__ = ["KINDS", "restyle", "restyle_sites", "Restyle"]

KINDS = ("quotes", "format", "percent", "bool_return", "not_in", "imports", "empty_literal")


def _escape_literal(text: str, quote: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        elif ch in "{}":
            out.append(ch * 2)
        else:
            out.append(ch)
    return "".join(out)


def _quote_of(node: cst.SimpleString) -> str | None:
    rest = node.value[len(node.prefix):]
    if rest[:3] in ('"""', "'''"):
        return None
    return rest[0]


def _shadowed(source: str) -> set[str]:
    """Every name the module binds anywhere (assignments, defs, parameters, imports...): found with :mod:`ast`."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
    return out


class Restyle(cst.CSTTransformer):
    """All restyles in one pass; ``selected`` maps a kind to the site indices to rewrite (None: all).

    Sites are numbered per kind in visit order of the original tree, so counting (with
    nothing selected) and rewriting see the same numbers. ``counts`` and ``refused``
    (reason -> n) are filled as the pass goes.
    """

    def __init__(self, selected: dict[str, set[int] | None], shadowed: set[str], scopes=None):
        super().__init__()
        self.selected = selected
        self.shadowed = shadowed
        self.scopes = scopes  # ScopeProvider results, needed only when a format or percent site may exist
        self.counts = {k: 0 for k in KINDS}
        self.applied = {k: 0 for k in KINDS}
        self.refused: dict[str, int] = {}
        self._fstring_depth = 0

    # -- bookkeeping
    def _site(self, kind: str) -> bool:
        """Count a site of ``kind``; True when it is selected for rewriting."""
        i = self.counts[kind]
        self.counts[kind] += 1
        sel = self.selected.get(kind, set())
        ok = sel is None or i in sel
        if ok:
            self.applied[kind] += 1
        return ok

    def _refuse(self, kind: str, reason: str) -> None:
        key = f"{kind}: {reason}"
        self.refused[key] = self.refused.get(key, 0) + 1

    def _local_name(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.Integer, cst.Float)):
            return not node.lpar
        if not isinstance(node, cst.Name) or node.lpar:
            return False
        if self.scopes is None:
            return False
        scope = self.scopes.get(node)
        if scope is None:
            return False
        assigns = scope[node.value]
        return bool(assigns) and all(not isinstance(a.scope, (GlobalScope, ClassScope))
                                     and type(a.scope).__name__ != "BuiltinScope" for a in assigns)

    # -- f-string depth
    def visit_FormattedString(self, node):
        self._fstring_depth += 1

    def leave_FormattedString(self, original_node, updated_node):
        self._fstring_depth -= 1
        return updated_node

    # -- quotes
    def leave_SimpleString(self, original_node, updated_node):
        q = _quote_of(original_node)
        if q is None or self._fstring_depth:
            return updated_node
        body = original_node.value[len(original_node.prefix) + 1:-1]
        other = '"' if q == "'" else "'"
        if "\\" in body or other in body or q in body:
            self._refuse("quotes", "body has a quote or a backslash")
            return updated_node
        if not self._site("quotes"):
            return updated_node
        return updated_node.with_changes(value=original_node.prefix + other + body + other)

    # -- str.format
    def _format_fstring(self, node: cst.Call) -> str | None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "format"
                and isinstance(func.value, cst.SimpleString)):
            return None
        s = func.value
        q = _quote_of(s)
        if q is None or "b" in s.prefix.lower():
            self._refuse("format", "bytes or triple-quoted template")
            return ""
        if self._fstring_depth:
            return ""
        positional, keywords = [], {}
        for arg in node.args:
            if arg.star:
                self._refuse("format", "*args or **kwargs")
                return ""
            if not self._local_name(arg.value):
                self._refuse("format", "an argument is not a local name or a number")
                return ""
            if arg.keyword is not None:
                keywords[arg.keyword.value] = arg.value
            else:
                positional.append(arg.value)
        try:
            parsed = list(string.Formatter().parse(s.evaluated_value))
        except (ValueError, Exception):  # noqa: BLE001 - a template str.format rejects: leave it
            self._refuse("format", "template does not parse")
            return ""
        used_pos: set[int] = set()
        used_kw: set[str] = set()
        auto = manual = False
        pieces = []
        next_auto = 0
        for literal, field, spec, conv in parsed:
            pieces.append(_escape_literal(literal, q))
            if field is None:
                continue
            if spec and ("{" in spec or "}" in spec):
                self._refuse("format", "nested field in a format spec")
                return ""
            if field == "":
                auto = True
                idx = next_auto
                next_auto += 1
                target = positional[idx] if idx < len(positional) else None
                used_pos.add(idx)
            elif field.isdigit():
                manual = True
                idx = int(field)
                target = positional[idx] if idx < len(positional) else None
                used_pos.add(idx)
            elif field.isidentifier():
                target = keywords.get(field)
                used_kw.add(field)
            else:
                self._refuse("format", "field with attribute or index access")
                return ""
            if target is None:
                self._refuse("format", "field without an argument")
                return ""
            code = cst.Module([]).code_for_node(target)
            part = "{" + code + (f"!{conv}" if conv else "") + (":" + _escape_literal(spec, q) if spec else "") + "}"
            pieces.append(part)
        if auto and manual:
            self._refuse("format", "automatic and manual field numbering mixed")
            return ""
        if used_pos != set(range(len(positional))) or used_kw != set(keywords):
            self._refuse("format", "an argument is not used")
            return ""
        return "f" + q + "".join(pieces) + q

    def leave_Call(self, original_node, updated_node):
        text = self._format_fstring(original_node)
        if text:
            if not self._site("format"):
                return updated_node
            return cst.parse_expression(text).with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        func = original_node.func
        if isinstance(func, cst.Name) and func.value in ("dict", "list", "tuple") and not original_node.args:
            if func.value in self.shadowed:
                self._refuse("empty_literal", f"{func.value} is rebound in the module")
                return updated_node
            if not self._site("empty_literal"):
                return updated_node
            if func.value == "dict":
                return cst.Dict([], lpar=updated_node.lpar, rpar=updated_node.rpar)
            if func.value == "list":
                return cst.List([], lpar=updated_node.lpar, rpar=updated_node.rpar)
            return cst.Tuple([], lpar=updated_node.lpar or [cst.LeftParen()],
                             rpar=updated_node.rpar or [cst.RightParen()])
        return updated_node

    # -- percent formatting
    def leave_BinaryOperation(self, original_node, updated_node):
        node = original_node
        if not (isinstance(node.operator, cst.Modulo) and isinstance(node.left, cst.SimpleString)):
            return updated_node
        s = node.left
        q = _quote_of(s)
        if q is None or "b" in s.prefix.lower() or self._fstring_depth:
            self._refuse("percent", "bytes or triple-quoted template")
            return updated_node
        if not isinstance(node.right, cst.Tuple) or any(isinstance(e, cst.StarredElement)
                                                        for e in node.right.elements):
            self._refuse("percent", "right operand is not a tuple display")
            return updated_node
        values = [e.value for e in node.right.elements]
        if not all(self._local_name(v) for v in values):
            self._refuse("percent", "an argument is not a local name or a number")
            return updated_node
        text = s.evaluated_value
        pieces, i, k = [], 0, 0
        literal: list[str] = []
        while i < len(text):
            ch = text[i]
            if ch != "%":
                literal.append(ch)
                i += 1
                continue
            nxt = text[i + 1:i + 2]
            if nxt == "%":
                literal.append("%")
                i += 2
                continue
            if nxt not in ("s", "r", "a"):
                self._refuse("percent", f"directive %{nxt} is not %s, %r or %a")
                return updated_node
            if k >= len(values):
                self._refuse("percent", "more directives than values")
                return updated_node
            pieces.append(_escape_literal("".join(literal), q))
            literal = []
            code = cst.Module([]).code_for_node(values[k])
            pieces.append("{" + code + "!" + nxt + "}")
            k += 1
            i += 2
        if k != len(values):
            self._refuse("percent", "fewer directives than values")
            return updated_node
        pieces.append(_escape_literal("".join(literal), q))
        if not self._site("percent"):
            return updated_node
        return cst.parse_expression("f" + q + "".join(pieces) + q).with_changes(lpar=updated_node.lpar,
                                                                                  rpar=updated_node.rpar)

    # -- if/else returning booleans
    @staticmethod
    def _returns_bool(block) -> bool | None:
        if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
            return None
        st = block.body[0]
        return Restyle._return_bool_stmt(st)

    @staticmethod
    def _return_bool_stmt(st) -> bool | None:
        if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
            return None
        r = st.body[0]
        if isinstance(r, cst.Return) and isinstance(r.value, cst.Name) and r.value.value in ("True", "False") \
                and not r.value.lpar:
            return r.value.value == "True"
        return None

    @staticmethod
    def _has_comments(node: cst.CSTNode) -> bool:
        found = []

        class V(cst.CSTVisitor):
            def visit_Comment(self, n):
                found.append(n)

        node.visit(V())
        return bool(found)

    def _bool_return(self, test: cst.BaseExpression, positive: bool) -> cst.SimpleStatementLine:
        if positive:
            value = cst.Call(cst.Name("bool"), [cst.Arg(test.with_changes(lpar=[], rpar=[]))])
        else:
            needs = isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar
            expr = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if needs else test
            value = cst.UnaryOperation(cst.Not(), expr)
        return cst.SimpleStatementLine([cst.Return(value)])

    def leave_If(self, original_node, updated_node):
        node = original_node
        if not isinstance(node.orelse, cst.Else):
            return updated_node
        a, b = self._returns_bool(node.body), self._returns_bool(node.orelse.body)
        if a is None or b is None or a == b:
            return updated_node
        if self._has_comments(node.body) or self._has_comments(node.orelse) or \
                node.orelse.leading_lines:
            self._refuse("bool_return", "comments inside")
            return updated_node
        if a and "bool" in self.shadowed:
            self._refuse("bool_return", "bool is rebound in the module")
            return updated_node
        if not self._site("bool_return"):
            return updated_node
        return self._bool_return(updated_node.test, a).with_changes(leading_lines=updated_node.leading_lines)

    def leave_IndentedBlock(self, original_node, updated_node):
        orig = list(original_node.body)
        new = list(updated_node.body)
        if len(orig) != len(new):
            return updated_node
        out = []
        i = 0
        changed = False
        while i < len(orig):
            st = orig[i]
            if isinstance(st, cst.If) and st.orelse is None and i + 1 < len(orig):
                a = self._returns_bool(st.body)
                b = self._return_bool_stmt(orig[i + 1])
                if a is not None and b is not None and a != b:
                    if self._has_comments(st.body) or self._has_comments(orig[i + 1]):
                        self._refuse("bool_return", "comments inside")
                    elif a and "bool" in self.shadowed:
                        self._refuse("bool_return", "bool is rebound in the module")
                    elif self._site("bool_return"):
                        out.append(self._bool_return(new[i].test, a).with_changes(leading_lines=new[i].leading_lines))
                        i += 2
                        changed = True
                        continue
            out.append(new[i])
            i += 1
        return updated_node.with_changes(body=out) if changed else updated_node

    # -- not in / is not
    def leave_UnaryOperation(self, original_node, updated_node):
        node = original_node
        if not isinstance(node.operator, cst.Not) or not isinstance(node.expression, cst.Comparison):
            return updated_node
        cmp = node.expression
        if len(cmp.comparisons) != 1:
            return updated_node
        op = cmp.comparisons[0].operator
        if not isinstance(op, (cst.In, cst.Is)):
            return updated_node
        if not self._site("not_in"):
            return updated_node
        new_op = cst.NotIn() if isinstance(op, cst.In) else cst.IsNot()
        ucmp = updated_node.expression
        target = ucmp.comparisons[0].with_changes(operator=new_op)
        return ucmp.with_changes(comparisons=[target], lpar=updated_node.lpar, rpar=updated_node.rpar)

    # -- imports
    def leave_SimpleStatementLine(self, original_node, updated_node):
        if len(original_node.body) != 1:
            return updated_node
        imp = original_node.body[0]
        if isinstance(imp, cst.Import) and len(imp.names) > 1 or \
                isinstance(imp, cst.ImportFrom) and not isinstance(imp.names, cst.ImportStar) \
                and len(imp.names) > 1:
            if original_node.trailing_whitespace.comment is not None or self._has_comments(imp):
                self._refuse("imports", "comment on the import")
                return updated_node
            if not self._site("imports"):
                return updated_node
            lines = []
            for k, alias in enumerate(updated_node.body[0].names):
                alias = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                stmt = updated_node.body[0].with_changes(names=[alias])
                if isinstance(stmt, cst.ImportFrom):
                    stmt = stmt.with_changes(lpar=None, rpar=None)
                lines.append(cst.SimpleStatementLine([stmt], leading_lines=updated_node.leading_lines if k == 0 else ()))
            return cst.FlattenSentinel(lines)
        return updated_node


def _prepare(source: str) -> tuple[cst.Module, set[str], Any]:
    module = cst.parse_module(source)
    scopes = None
    if ".format(" in source or "%" in source:  # only these restyles need scopes (local names)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        scopes = wrapper.resolve(ScopeProvider)
    return module, _shadowed(source), scopes


@lru_cache(maxsize=512)
def _count(source: str) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    module, shadowed, scopes = _prepare(source)
    t = Restyle({k: set() for k in KINDS}, shadowed, scopes)
    module.visit(t)
    return tuple(t.counts.items()), tuple(sorted(t.refused.items()))


def restyle_sites(source: str) -> tuple[dict[str, int], dict[str, int]]:
    """How many sites of each kind ``source`` has, and the near misses refused (reason -> count)."""
    counts, refused = _count(source)
    return dict(counts), dict(refused)


def restyle(source: str, selected: dict[str, list[int] | None] | None = None) -> tuple[str, dict[str, int]]:
    """``source`` with the selected sites rewritten (``None``: every site of every kind); and counts applied."""
    if selected is None:
        key = None
    else:
        unknown = sorted(set(selected) - set(KINDS))
        if unknown:
            raise ValueError(f"hook.restyle: unknown kind(s) {unknown}; expected some of {list(KINDS)}")
        key = tuple(sorted((k, None if v is None else tuple(sorted(v))) for k, v in selected.items()))
    code, applied = _restyle_cached(source, key)
    return code, dict(applied)


@lru_cache(maxsize=4096)
def _restyle_cached(source: str, key) -> tuple[str, tuple]:
    if key is None:
        sel: dict[str, set[int] | None] = {k: None for k in KINDS}
    else:
        sel = {k: (None if v is None else set(v)) for k, v in key}
    module, shadowed, scopes = _prepare(source)
    t = Restyle(sel, shadowed, scopes)
    out = module.visit(t)
    return out.code, tuple((k, v) for k, v in t.applied.items() if v)


def codemod(selected: dict[str, list[int] | None] | None = None):
    """``hook.restyle`` as a LibCST Codemod class; ``selected`` as in :func:`restyle` (None: every site)."""
    from libcst.codemod import Codemod, SkipFile

    class _Restyle(Codemod):
        def transform_module_impl(self, tree: cst.Module) -> cst.Module:
            new, applied = restyle(tree.code, selected)
            if not applied:
                raise SkipFile("no restyle site")
            return cst.parse_module(new)

    return _Restyle


__all__ += ["codemod"]
