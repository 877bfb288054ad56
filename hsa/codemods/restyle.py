"""hook.restyle: surface rewrites that are provably equivalent, each refusing where it is not.

Every rewrite keeps the value and the order of evaluation; the conditions below are
what makes that so (assumption throughout: builtins are not replaced at run time).

``quotes``
    ``'abc'`` <-> ``"abc"`` when the body has no quote character and no backslash,
    outside f-strings. Refuses triple quotes and strings inside f-string expressions.
``format``
    ``"a {} b {x!r:>4}".format(v, x=w)`` -> ``f"a {v} b {w!r:>4}"``: ``str.format`` and
    f-strings both call ``format(value, spec)`` after the same conversion. Arguments
    must be local names or numbers, each used; fields must be plain (no ``.attr``,
    ``[key]``, nested ``{}`` in the spec, no conversion but ``!s``/``!r``/``!a``: ``"{!x}"``
    raises at run time, ``f"{v!x}"`` does not compile), numbering not mixed. Refuses otherwise.
``percent``
    ``"a %s b %r" % (v, w)`` -> ``f"a {v!s} b {w!r}"``: ``%s``/``%r``/``%a`` call
    ``str``/``repr``/``ascii``, exactly what ``!s``/``!r``/``!a`` do. Only with a tuple
    of local names or numbers, the directive count equal to its length, no flags,
    widths or mapping keys (``%d`` truncates floats and is refused).

    Both refuse a site that starts right after a keyword with no space
    (``assert"%s"%(a,)``, ``x if"{}".format(b)else y``, ``return"%s" % (a,)``): a string
    with a prefix needs the space (``iff"{b}"`` does not parse). With its own
    parentheses (``return("%s" % (a,))``) the site is rewritten.
``bool_return``
    ``if c: return True / else: return False`` (or the ``if`` followed by ``return
    False``) -> ``return bool(c)``; the inverse form -> ``return not (c)``. Truth is
    tested once either way. The parentheses of ``c`` are dropped inside ``bool(...)``
    except those of a tuple (``bool((a, b))``, not ``bool(a, b)``) and of a yield.
    Refuses comments inside, a shadowed ``bool``, and an ``elif`` (``elif c: return
    True / else: return False``): ``return bool(c)`` would replace the whole chain,
    dropping the ``if`` before it.
``not_in``
    ``not x in y`` -> ``x not in y``; ``not x is y`` -> ``x is not y`` (same bytecode).
``imports``
    ``import a, b`` -> one statement per name; ``from m import a, b`` likewise. Same
    bindings in the same order. Refuses a trailing comment.
``empty_literal``
    ``dict()``/``list()``/``tuple()`` -> ``{}``/``[]``/``()`` when the name is not rebound
    anywhere in the module.

How it runs: each source is analysed once (:func:`_analysis`, cached): one code
generation pass over the cached parse (:func:`hsa.codemods._cst.parse`) finds every site
and refusal, in the order a :class:`Restyle` transformer would, and notes where each
site's text lies. A selection is then applied as text splices: each selected site's
replacement is generated in the context it sits in (indentation, newline), sites
selected inside a selected site are spliced into its replacement. Where splicing could
differ from a transform (a multi-name import rewritten in a block that also has an
``if``/``return`` site, the test of ``return bool(...)`` being a site itself, a
replacement that fails to build) the selection runs through :class:`Restyle` instead,
which gives the text of the transform. Both find the same sites: an ``elif`` is noted
when its ``if`` is entered, and the transformer takes from the finder which nodes start
right after a keyword (:class:`Restyle` run alone finds them itself in ``visit_Module``).
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import Any, Callable

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import ClassScope, GlobalScope, MetadataWrapper, ScopeProvider

from hsa.codemods._cst import parse
from hsa.codemods.kinds import RESTYLE_KINDS, reads_frames
from hsa.codemods.quoting import escape
from hsa.codemods.spans import literal_value

__all__ = ["KINDS", "restyle", "restyle_sites", "Restyle"]

KINDS = RESTYLE_KINDS


def _quote_of(node: cst.SimpleString) -> str | None:
    rest = node.value[len(node.prefix):]
    if rest[:3] in ('"""', "'''"):
        return None
    return rest[0]


def _shadowed(source: str) -> set[str]:
    """Every name the module binds anywhere (assignments, defs, parameters, imports...): found with :mod:`ast`;
    a star import adds the builtins the restyles rely on, and :data:`READS_FRAMES` marks a module that reads
    frames (:func:`hsa.codemods.kinds.reads_frames`): through a frame,
    a function's line numbers are visible."""
    import ast

    out: set[str] = set()
    seen: set[str] = set()  # every name and attribute read or written, for the frame check
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            seen.add(node.id)
            if not isinstance(node.ctx, ast.Load):
                out.add(node.id)
        elif isinstance(node, ast.Attribute):
            seen.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
            seen.add(node.name.split(".")[-1])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
    if "*" in out:  # ``from m import *`` may bind any name, the builtins the restyles call included
        out |= _STAR_MAY_BIND
    if reads_frames(seen):
        out.add(READS_FRAMES)
    return out


#: The builtins a restyle writes a call of, or replaces a call of: a star import may rebind them.
_STAR_MAY_BIND = frozenset({"bool", "dict", "list", "tuple"})
#: In :func:`_shadowed`'s set when the module reads frames: a frame shows line numbers, so no restyle may move
#: a line (``imports`` adds lines, ``bool_return`` removes them).
READS_FRAMES = "<reads frames>"


def _has_comments(node: cst.CSTNode) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Comment(self, n):
            found.append(n)

    node.visit(V())
    return bool(found)


def _returns_bool(block) -> bool | None:
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    return _return_bool_stmt(block.body[0])


def _return_bool_stmt(st) -> bool | None:
    if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
        return None
    r = st.body[0]
    if isinstance(r, cst.Return) and isinstance(r.value, cst.Name) and r.value.value in ("True", "False") \
            and not r.value.lpar:
        return r.value.value == "True"
    return None


# -- the replacements (built from the updated node by the transformer, from the original by the splicer)

def _fstring(text: str, node: cst.BaseExpression) -> cst.BaseExpression:
    return cst.parse_expression(text).with_changes(lpar=node.lpar, rpar=node.rpar)


def _empty_literal(name: str, node: cst.Call) -> cst.BaseExpression:
    if name == "dict":
        return cst.Dict([], lpar=node.lpar, rpar=node.rpar)
    if name == "list":
        return cst.List([], lpar=node.lpar, rpar=node.rpar)
    return cst.Tuple([], lpar=node.lpar or [cst.LeftParen()], rpar=node.rpar or [cst.RightParen()])


def _bool_return(test: cst.BaseExpression, positive: bool, leading_lines) -> cst.SimpleStatementLine:
    if positive:
        # A tuple (``bool(a, b)``) and a yield (a syntax error) need their parentheses as an argument.
        arg = test if isinstance(test, (cst.Tuple, cst.Yield)) else test.with_changes(lpar=[], rpar=[])
        value = cst.Call(cst.Name("bool"), [cst.Arg(arg)])
    else:
        needs = isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar
        expr = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if needs else test
        value = cst.UnaryOperation(cst.Not(), expr)
    return cst.SimpleStatementLine([cst.Return(value)]).with_changes(leading_lines=leading_lines)


def _not_in(node: cst.UnaryOperation) -> cst.Comparison:
    cmp = node.expression
    op = cmp.comparisons[0].operator
    new_op = cst.NotIn() if isinstance(op, cst.In) else cst.IsNot()
    target = cmp.comparisons[0].with_changes(operator=new_op)
    return cmp.with_changes(comparisons=[target], lpar=node.lpar, rpar=node.rpar)


def _import_lines(node: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine]:
    lines = []
    for k, alias in enumerate(node.body[0].names):
        alias = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        stmt = node.body[0].with_changes(names=[alias])
        if isinstance(stmt, cst.ImportFrom):
            stmt = stmt.with_changes(lpar=None, rpar=None)
        lines.append(cst.SimpleStatementLine([stmt], leading_lines=node.leading_lines if k == 0 else ()))
    return lines


class _Rules:
    """The conditions of every restyle, shared by the site finder and :class:`Restyle`.

    Each method looks at an original node, counts the near misses it refuses in
    ``refused`` (reason -> n) and says whether (and how) the node is a site.
    """

    shadowed: set[str]
    scopes: Any  # ScopeProvider results, needed only when a format or percent site may exist
    refused: dict[str, int]
    _fstring_depth: int
    _elifs: set[int]  # ids of the ``If`` nodes that are the ``elif`` of another (noted before they are left)

    def _note_elif(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))

    #: Whether the text of a node starts right after a keyword (``assert"%s"%(a,)``, ``if"{}".format(b)``):
    #: the finder reads it from the code generated so far, :class:`Restyle` takes the finder's answers.
    _after_keyword: Callable[[cst.BaseExpression], bool]

    def _glued(self, kind: str, node: cst.BaseExpression) -> bool:
        """Refuse an f-string rewrite of ``node`` where it would start right after a keyword.

        ``if"{}".format(b)`` is valid, ``iff"{b}"`` is not (an unparenthesised string with a
        prefix needs a space after a keyword), so the rewrite could not be built.
        """
        if not node.lpar and self._after_keyword(node):
            self._refuse(kind, "right after a keyword with no space (an f-string there would not parse)")
            return True
        return False

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

    def _quotes_value(self, node: cst.SimpleString) -> str | None:
        """The swapped literal when ``node`` is a quotes site."""
        q = _quote_of(node)
        if q is None or self._fstring_depth:
            return None
        body = node.value[len(node.prefix) + 1:-1]
        other = '"' if q == "'" else "'"
        if "\\" in body or other in body or q in body:
            self._refuse("quotes", "body has a quote or a backslash")
            return None
        return node.prefix + other + body + other

    def _format_fstring(self, node: cst.Call) -> str | None:
        """The f-string text when ``node`` is a format site; ``""`` when refused, None when not a candidate."""
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
            parsed = list(string.Formatter().parse(literal_value(s)))
        except (ValueError, Exception):  # noqa: BLE001 - a template str.format rejects: leave it
            self._refuse("format", "template does not parse")
            return ""
        used_pos: set[int] = set()
        used_kw: set[str] = set()
        auto = manual = False
        pieces = []
        next_auto = 0
        for literal, field, spec, conv in parsed:
            pieces.append(escape(literal, q, fstring=True))
            if field is None:
                continue
            if spec and ("{" in spec or "}" in spec):
                self._refuse("format", "nested field in a format spec")
                return ""
            if conv not in (None, "s", "r", "a"):  # str.format raises at run time; an f-string does not compile
                self._refuse("format", "conversion other than !s, !r or !a")
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
            spec_text = ":" + escape(spec, q, fstring=True) if spec else ""
            part = "{" + code + (f"!{conv}" if conv else "") + spec_text + "}"
            pieces.append(part)
        if auto and manual:
            self._refuse("format", "automatic and manual field numbering mixed")
            return ""
        if used_pos != set(range(len(positional))) or used_kw != set(keywords):
            self._refuse("format", "an argument is not used")
            return ""
        if self._glued("format", node):
            return ""
        return "f" + q + "".join(pieces) + q

    def _empty_literal_name(self, node: cst.Call) -> str | None:
        """``dict``/``list``/``tuple`` when ``node`` is an empty_literal site."""
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("dict", "list", "tuple") and not node.args:
            if func.value in self.shadowed:
                self._refuse("empty_literal", f"{func.value} is rebound in the module")
                return None
            return func.value
        return None

    def _percent_fstring(self, node: cst.BinaryOperation) -> str | None:
        """The f-string text when ``node`` is a percent site."""
        if not (isinstance(node.operator, cst.Modulo) and isinstance(node.left, cst.SimpleString)):
            return None
        s = node.left
        q = _quote_of(s)
        if q is None or "b" in s.prefix.lower() or self._fstring_depth:
            self._refuse("percent", "bytes or triple-quoted template")
            return None
        if not isinstance(node.right, cst.Tuple) or any(isinstance(e, cst.StarredElement)
                                                        for e in node.right.elements):
            self._refuse("percent", "right operand is not a tuple display")
            return None
        values = [e.value for e in node.right.elements]
        if not all(self._local_name(v) for v in values):
            self._refuse("percent", "an argument is not a local name or a number")
            return None
        text = literal_value(s)
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
                return None
            if k >= len(values):
                self._refuse("percent", "more directives than values")
                return None
            pieces.append(escape("".join(literal), q, fstring=True))
            literal = []
            code = cst.Module([]).code_for_node(values[k])
            pieces.append("{" + code + "!" + nxt + "}")
            k += 1
            i += 2
        if k != len(values):
            self._refuse("percent", "fewer directives than values")
            return None
        if self._glued("percent", node):
            return None
        pieces.append(escape("".join(literal), q, fstring=True))
        return "f" + q + "".join(pieces) + q

    def _bool_if(self, node: cst.If) -> bool | None:
        """For an ``if``/``else`` bool_return site: whether it returns ``bool(c)`` (True) or ``not c``."""
        if not isinstance(node.orelse, cst.Else):
            return None
        a, b = _returns_bool(node.body), _returns_bool(node.orelse.body)
        if a is None or b is None or a == b:
            return None
        if id(node) in self._elifs:  # ``return bool(c)`` would replace the whole if/elif chain
            self._refuse("bool_return", "an elif (the rewrite would drop the if before it)")
            return None
        return self._bool_allowed(a, _has_comments(node.body) or _has_comments(node.orelse)
                                  or bool(node.orelse.leading_lines))

    def _bool_pair(self, st: cst.If, nxt: cst.BaseStatement) -> bool | None:
        """For an ``if`` (no ``else``) and the statement after it forming a bool_return site: as :meth:`_bool_if`."""
        a = _returns_bool(st.body)
        b = _return_bool_stmt(nxt)
        if a is None or b is None or a == b:
            return None
        return self._bool_allowed(a, _has_comments(st.body) or _has_comments(nxt))

    def _bool_allowed(self, a: bool, comments: bool) -> bool | None:
        """``a`` for a bool_return site that may be rewritten; None (with the refusal noted) when comments
        would be lost or ``bool`` is not the builtin."""
        if comments:
            self._refuse("bool_return", "comments inside")
            return None
        if READS_FRAMES in self.shadowed:
            self._refuse("bool_return", "the module reads frames, which show line numbers")
            return None
        if a and "bool" in self.shadowed:
            self._refuse("bool_return", "bool is rebound in the module")
            return None
        return a

    @staticmethod
    def _is_not_in(node: cst.UnaryOperation) -> bool:
        if not isinstance(node.operator, cst.Not) or not isinstance(node.expression, cst.Comparison):
            return False
        cmp = node.expression
        return len(cmp.comparisons) == 1 and isinstance(cmp.comparisons[0].operator, (cst.In, cst.Is))

    def _is_imports(self, node: cst.SimpleStatementLine) -> bool:
        if len(node.body) != 1:
            return False
        imp = node.body[0]
        if isinstance(imp, cst.Import) and len(imp.names) > 1 or \
                isinstance(imp, cst.ImportFrom) and not isinstance(imp.names, cst.ImportStar) \
                and len(imp.names) > 1:
            if node.trailing_whitespace.comment is not None or _has_comments(imp):
                self._refuse("imports", "comment on the import")
                return False
            if READS_FRAMES in self.shadowed:
                self._refuse("imports", "the module reads frames, which show line numbers")
                return False
            return True
        return False


class Restyle(_Rules, cst.CSTTransformer):
    """All restyles in one transform pass; ``selected`` maps a kind to the site indices to rewrite (None: all).

    Sites are numbered per kind in visit order of the original tree, so counting (with
    nothing selected) and rewriting see the same numbers. ``counts`` and ``refused``
    (reason -> n) are filled as the pass goes. :func:`restyle` splices text instead and
    uses this class only where a splice could differ from it.
    """

    def __init__(self, selected: dict[str, set[int] | None], shadowed: set[str], scopes=None,
                 after_keyword: frozenset[int] | None = None):
        super().__init__()
        self.selected = selected
        self.shadowed = shadowed
        self.scopes = scopes
        self.counts = {k: 0 for k in KINDS}
        self.applied = {k: 0 for k in KINDS}
        self.refused = {}
        self._fstring_depth = 0
        self._elifs = set()
        # ids of the original nodes the site finder saw right after a keyword (None: found in visit_Module)
        self._keyword_glued = after_keyword

    def visit_Module(self, node):
        if self._keyword_glued is None:
            finder = _Finder(node, self.shadowed, self.scopes)
            node._codegen(finder)
            self._keyword_glued = frozenset(finder.after_keyword)

    def _after_keyword(self, node):
        return id(node) in self._keyword_glued

    def visit_If(self, node):
        self._note_elif(node)

    def _site(self, kind: str) -> bool:
        """Count a site of ``kind``; True when it is selected for rewriting."""
        i = self.counts[kind]
        self.counts[kind] += 1
        sel = self.selected.get(kind, set())
        ok = sel is None or i in sel
        if ok:
            self.applied[kind] += 1
        return ok

    def visit_FormattedString(self, node):
        self._fstring_depth += 1

    def leave_FormattedString(self, original_node, updated_node):
        self._fstring_depth -= 1
        return updated_node

    def leave_SimpleString(self, original_node, updated_node):
        value = self._quotes_value(original_node)
        if value is None or not self._site("quotes"):
            return updated_node
        return updated_node.with_changes(value=value)

    def leave_Call(self, original_node, updated_node):
        text = self._format_fstring(original_node)
        if text:
            if not self._site("format"):
                return updated_node
            return _fstring(text, updated_node)
        name = self._empty_literal_name(original_node)
        if name is None or not self._site("empty_literal"):
            return updated_node
        return _empty_literal(name, updated_node)

    def leave_BinaryOperation(self, original_node, updated_node):
        text = self._percent_fstring(original_node)
        if text is None or not self._site("percent"):
            return updated_node
        return _fstring(text, updated_node)

    def leave_If(self, original_node, updated_node):
        a = self._bool_if(original_node)
        if a is None or not self._site("bool_return"):
            return updated_node
        return _bool_return(updated_node.test, a, updated_node.leading_lines)

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
                a = self._bool_pair(st, orig[i + 1])
                if a is not None and self._site("bool_return"):
                    out.append(_bool_return(new[i].test, a, new[i].leading_lines))
                    i += 2
                    changed = True
                    continue
            out.append(new[i])
            i += 1
        return updated_node.with_changes(body=out) if changed else updated_node

    def leave_UnaryOperation(self, original_node, updated_node):
        if not self._is_not_in(original_node) or not self._site("not_in"):
            return updated_node
        return _not_in(updated_node)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not self._is_imports(original_node) or not self._site("imports"):
            return updated_node
        return cst.FlattenSentinel(_import_lines(updated_node))


# ---------------------------------------------------------------------------- sites found once per source

class _Site:
    """One site: where its text lies in the module's token stream and how to build its replacement."""

    __slots__ = ("kind", "index", "node", "start", "end", "indent", "build", "conflict", "_rendered")

    def __init__(self, kind: str, index: int, node: cst.CSTNode, start: int, end: int, indent: tuple[str, ...],
                 build: Callable[[], Any]):
        self.kind = kind
        self.index = index
        self.node = node  # the original node (for bool_return after an ``if``: the ``if``)
        self.start = start  # token span [start, end) in the module's code generation
        self.end = end
        self.indent = indent  # indentation tokens in force where the site starts
        self.build = build  # the replacement node(s), from the original nodes
        self.conflict = False  # an import whose rewrite would change the numbering of bool_return sites
        self._rendered = None


_TRACKED = frozenset({cst.SimpleString, cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.If,
                      cst.SimpleStatementLine})


class _Finder(_Rules, CodegenState):
    """Code generation of the module that finds the sites as it goes (nodes leave in the transformer's order).

    ``tokens`` ends as the module's code (the trailing newline of a module without one
    is kept: :func:`_splice` drops it like :class:`libcst.Module` does).
    """

    def __init__(self, module: cst.Module, shadowed: set[str], scopes):
        CodegenState.__init__(self, default_indent=module.default_indent, default_newline=module.default_newline)
        self.shadowed = shadowed
        self.scopes = scopes
        self.refused = {}
        self._fstring_depth = 0
        self._elifs = set()
        self.after_keyword: set[int] = set()  # what :meth:`_after_keyword` said yes to: Restyle asks the same
        self.counts = {k: 0 for k in KINDS}
        self.sites: list[_Site] = []
        self._indent: tuple[str, ...] = ()
        self._start: dict[int, tuple[int, tuple[str, ...]]] = {}
        self._line_end: dict[int, int] = {}
        self._import_sites: dict[int, _Site] = {}

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)
        self._indent = tuple(self.indent_tokens)

    def decrease_indent(self) -> None:
        self.indent_tokens.pop()
        self._indent = tuple(self.indent_tokens)

    def pop_trailing_newline(self) -> None:
        pass

    def before_codegen(self, node: cst.CSTNode) -> None:
        t = type(node)
        if t in _TRACKED:
            self._start[id(node)] = (len(self.tokens), self._indent)
            if t is cst.If:
                self._note_elif(node)
        elif t is cst.FormattedString:
            self._fstring_depth += 1

    def _after_keyword(self, node):
        # A string can follow a word character directly only when that word is a keyword.
        tokens = self.tokens
        k = self._start[id(node)][0]
        while k and not tokens[k - 1]:
            k -= 1
        last = tokens[k - 1][-1:] if k else ""
        if last.isalnum() or last == "_":
            self.after_keyword.add(id(node))
            return True
        return False

    def after_codegen(self, node: cst.CSTNode) -> None:
        leave = _LEAVE.get(type(node))
        if leave is not None:
            leave(self, node)

    def _add(self, kind: str, node: cst.CSTNode, build: Callable[[], Any], end: int | None = None) -> _Site:
        index = self.counts[kind]
        self.counts[kind] = index + 1
        start, indent = self._start[id(node)]
        site = _Site(kind, index, node, start, len(self.tokens) if end is None else end, indent, build)
        self.sites.append(site)
        return site

    def _leave_FormattedString(self, node):
        self._fstring_depth -= 1

    def _leave_SimpleString(self, node):
        value = self._quotes_value(node)
        if value is not None:
            self._add("quotes", node, lambda: node.with_changes(value=value))

    def _leave_Call(self, node):
        text = self._format_fstring(node)
        if text:
            self._add("format", node, lambda: _fstring(text, node))
            return
        name = self._empty_literal_name(node)
        if name is not None:
            self._add("empty_literal", node, lambda: _empty_literal(name, node))

    def _leave_BinaryOperation(self, node):
        text = self._percent_fstring(node)
        if text is not None:
            self._add("percent", node, lambda: _fstring(text, node))

    def _leave_If(self, node):
        a = self._bool_if(node)
        if a is not None:
            self._add("bool_return", node, lambda: _bool_return(node.test, a, node.leading_lines))

    def _leave_IndentedBlock(self, node):
        # The transformer counts these sites with the block unchanged in length; skipping the
        # statement after a rewritten ``if`` changes nothing (it is a ``return``, not an ``if``).
        body = node.body
        found = False
        for i in range(len(body) - 1):
            st = body[i]
            if isinstance(st, cst.If) and st.orelse is None:
                a = self._bool_pair(st, body[i + 1])
                if a is not None:
                    self._add("bool_return", st, _pair_builder(st, a), end=self._line_end[id(body[i + 1])])
                    found = True
        if found:  # rewriting an import of this block would make the transformer skip these sites
            for st in body:
                site = self._import_sites.get(id(st))
                if site is not None:
                    site.conflict = True

    def _leave_UnaryOperation(self, node):
        if self._is_not_in(node):
            self._add("not_in", node, lambda: _not_in(node))

    def _leave_SimpleStatementLine(self, node):
        self._line_end[id(node)] = len(self.tokens)
        if self._is_imports(node):
            self._import_sites[id(node)] = self._add("imports", node, lambda: _import_lines(node))


def _pair_builder(st: cst.If, a: bool) -> Callable[[], cst.SimpleStatementLine]:
    return lambda: _bool_return(st.test, a, st.leading_lines)


_LEAVE = {cst.FormattedString: _Finder._leave_FormattedString, cst.SimpleString: _Finder._leave_SimpleString,
          cst.Call: _Finder._leave_Call, cst.BinaryOperation: _Finder._leave_BinaryOperation,
          cst.If: _Finder._leave_If, cst.IndentedBlock: _Finder._leave_IndentedBlock,
          cst.UnaryOperation: _Finder._leave_UnaryOperation,
          cst.SimpleStatementLine: _Finder._leave_SimpleStatementLine}


class _Analysis:
    """Everything :func:`restyle` needs about one source: the parse, scopes, sites and the module's tokens."""

    def __init__(self, source: str):
        module = parse(source)
        scopes = None
        if ".format(" in source or "%" in source:  # only these restyles need scopes (local names)
            scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
        self.source = source
        self.module = module
        self.shadowed = _shadowed(source)
        self.scopes = scopes
        finder = _Finder(module, self.shadowed, scopes)
        module._codegen(finder)
        self.counts = finder.counts
        self.refused = dict(sorted(finder.refused.items()))
        self.by_kind: dict[str, list[_Site]] = {k: [] for k in KINDS}
        for site in finder.sites:
            self.by_kind[site.kind].append(site)
        self.order = {id(s): n for n, s in enumerate(finder.sites)}  # detection order: inner sites first
        self.site_nodes = frozenset(id(s.node) for s in finder.sites)
        self.tokens = finder.tokens
        self.after_keyword = frozenset(finder.after_keyword)
        self._offsets: list[int] | None = None
        self._text: str | None = None

    def text(self) -> str:
        """The module's code as :attr:`tokens` has it (with the last newline a module without one drops)."""
        if self._text is None:
            self._text = self.source if self.module.has_trailing_newline else "".join(self.tokens)
        return self._text

    def offsets(self) -> list[int]:
        """Character offset of every token boundary of :attr:`tokens`."""
        if self._offsets is None:
            out, n = [0], 0
            for t in self.tokens:
                n += len(t)
                out.append(n)
            self._offsets = out
        return self._offsets


@lru_cache(maxsize=256)
def _analysis(source: str) -> _Analysis:
    return _Analysis(source)


class _Unsplicable(Exception):
    """A selection whose splice could differ from the transform: :func:`restyle` runs :class:`Restyle`."""


class _Recorder(CodegenState):
    """Code generation of a replacement that notes where the original site nodes inside it went."""

    def __init__(self, module: cst.Module, indent: tuple[str, ...], track: frozenset[int]):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline,
                         indent_tokens=list(indent))
        self.track = track
        self.inner: dict[int, tuple[int, int, tuple[str, ...]]] = {}
        self._open: dict[int, tuple[int, tuple[str, ...]]] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.track:
            self._open[id(node)] = (len(self.tokens), tuple(self.indent_tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        opened = self._open.pop(id(node), None)
        if opened is not None:
            self.inner[id(node)] = (opened[0], len(self.tokens), opened[1])


def _rendered(site: _Site, an: _Analysis) -> tuple[list[str], dict[int, tuple[int, int, tuple[str, ...]]]]:
    """The replacement tokens of ``site`` in its context, and where the site nodes inside it lie."""
    if site._rendered is None:
        try:
            new = site.build()
            nodes = new if isinstance(new, list) else [new]
            state = _Recorder(an.module, site.indent, an.site_nodes)
            for n in nodes:
                n._codegen(state)
            site._rendered = (state.tokens, state.inner)
        except Exception as e:  # noqa: BLE001 - the transform then gives the same text or raises the same error
            site._rendered = e
    if isinstance(site._rendered, Exception):
        raise _Unsplicable(str(site._rendered))
    return site._rendered


def _nest(sites: list[_Site], an: _Analysis) -> list[tuple[_Site, list]]:
    """The selected sites as a forest: each with the selected sites directly inside it."""
    sites = sorted(sites, key=lambda s: (s.start, -s.end, -an.order[id(s)]))
    roots: list[tuple[_Site, list]] = []
    stack: list[tuple[_Site, list]] = []
    for s in sites:
        while stack and stack[-1][0].end <= s.start:
            stack.pop()
        entry = (s, [])
        (stack[-1][1] if stack else roots).append(entry)
        stack.append(entry)
    return roots


def _compose(site: _Site, inside: list, an: _Analysis) -> list[str]:
    """Tokens of ``site`` rewritten, with the selected sites ``inside`` it rewritten too."""
    tokens, where = _rendered(site, an)
    if not inside or site.kind in ("format", "percent"):  # built from the original text: inner rewrites are lost
        return tokens
    out: list[str] = []
    pos = 0
    for child, grand in inside:
        at = where.get(id(child.node))
        if at is None or at[2] != child.indent or at[0] < pos:
            raise _Unsplicable(f"a {child.kind} site inside a {site.kind} site is not kept as it is")
        out += tokens[pos:at[0]]
        out += _compose(child, grand, an)
        pos = at[1]
    out += tokens[pos:]
    return out


def _splice(an: _Analysis, chosen: list[_Site]) -> str:
    if not chosen:
        return an.source
    if any(s.conflict for s in chosen):
        raise _Unsplicable("an import rewrite in a block with an if/return site")
    offsets, text = an.offsets(), an.text()
    if offsets[-1] != len(text):
        raise _Unsplicable("the module's code generation does not give its source back")
    pieces: list[str] = []
    pos = 0
    for site, inside in _nest(chosen, an):
        pieces.append(text[offsets[pos]:offsets[site.start]])
        pieces += _compose(site, inside, an)
        pos = site.end
    if an.module.has_trailing_newline:
        pieces.append(text[offsets[pos]:])
    elif pos < len(an.tokens):  # the module drops its last token (a newline it does not have)
        pieces.append(text[offsets[pos]:offsets[-2]])
    else:
        pieces.pop()
    return "".join(pieces)


# ---------------------------------------------------------------------------- API

def restyle_sites(source: str) -> tuple[dict[str, int], dict[str, int]]:
    """How many sites of each kind ``source`` has, and the near misses refused (reason -> count)."""
    an = _analysis(source)
    return dict(an.counts), dict(an.refused)


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
    an = _analysis(source)
    chosen: list[_Site] = []
    applied = []
    for kind in KINDS:
        want = sel.get(kind, set())
        picked = [s for s in an.by_kind[kind] if want is None or s.index in want]
        chosen += picked
        if picked:
            applied.append((kind, len(picked)))
    try:
        return _splice(an, chosen), tuple(applied)
    except _Unsplicable:
        return _transform(an, sel)


def _transform(an: _Analysis, sel: dict[str, set[int] | None]) -> tuple[str, tuple]:
    """The selection applied by :class:`Restyle` (the reference for what a splice must give)."""
    t = Restyle(sel, an.shadowed, an.scopes, an.after_keyword)
    out = an.module.visit(t)
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
