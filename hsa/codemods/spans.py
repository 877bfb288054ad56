"""The string literals and comments of a hook source, in source order, and where each lies.

:func:`find_literals` gives every string literal, f-string text part and comment of a
parsed module in the order a :class:`libcst.CSTVisitor` meets them (one iterative walk
over the fields LibCST visits, :func:`_walk_literals`; a visitor where a node class cannot
be walked that way), and the byte span of each in the UTF-8 source (from one scan of the
source for its string and comment tokens where each token's text is its node's, else LibCST's
own positions). :func:`literal_value` is the value of a string literal, as LibCST's
``evaluated_value`` gives it, without a parse where the text is the value.
"""

from __future__ import annotations

import dataclasses
import re
from ast import literal_eval
from typing import NamedTuple

import libcst as cst
from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

__all__ = ["find_literals", "concat_parts", "string_parts", "literal_value"]


def find_literals(source: str, module: cst.Module) -> tuple[list, dict]:
    """``(registry, spans)`` of ``module`` parsed from ``source``: every literal, f-string text part and
    comment as ``(node, kind)`` in source order, and the byte span (``.start``, ``.length``) of each node."""
    literals = _walk_literals(module) or _visit_literals(module)
    spans = _token_spans(source, module, literals)
    if spans is None:  # odd layouts (format specs with text, tokenizer surprises): LibCST's own positions
        spans = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ByteSpanPositionProvider)
    return literals.registry, spans


class _Literals(NamedTuple):
    """The string literals and comments of a module, as one walk of its tree finds them."""

    registry: list  # (node, kind): every literal, f-string text part and comment, in visiting (source) order
    tokens: list  # (tag, node): "s" string, "f" f-string, "c" comment, outside f-strings: one per token
    concats: list  # every ConcatenatedString


#: What the walk does at a node, by class name: register it as a literal of that kind, or enter an f-string.
_LITERAL_KINDS = {"SimpleString": "simple", "ConcatenatedString": "concat", "FormattedStringText": "ftext",
                  "Comment": "comment", "FormattedString": "fstring"}
_TOKEN_TAGS = {"simple": "s", "comment": "c"}
_VISIT_HELPERS = frozenset({"visit_required", "visit_optional", "visit_sentinel", "visit_sequence",
                            "visit_iterable", "visit_body_sequence", "visit_body_iterable"})
#: Per node class: (child fields in reverse visiting order, literal kind or None); None where unknown.
_WALK: dict[type, tuple[tuple[str, ...], str | None] | None] = {}
_LEAVE_FSTRING = object()


def _child_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of node class ``cls`` that LibCST's visitors walk, in the order they walk them.

    Read from the class's ``_visit_and_replace_children``: its ``visit_*(self, "field", ...)``
    calls in the order written (keyword arguments of the rebuilt node are evaluated in that
    order). None when the method does anything else (then the caller walks with a visitor).
    Dataclass field order is not visiting order (``IfExp`` is ``body``, ``test``, ``orelse``).
    """
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls._visit_and_replace_children)))
    except (OSError, TypeError, SyntaxError):
        return None
    known = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.comprehension, ast.Lambda, ast.Try)):
            return None
        if isinstance(node, ast.IfExp):  # both branches visit the same fields, or one is "x if x is not None"
            sides = [{c.args[1].value for c in ast.walk(side) if isinstance(c, ast.Call)
                      and isinstance(c.func, ast.Name) and c.func.id in _VISIT_HELPERS
                      and len(c.args) > 1 and isinstance(c.args[1], ast.Constant)} for side in (node.body, node.orelse)]
            test = node.test
            skips_none = (isinstance(node.orelse, ast.Constant) and node.orelse.value is None
                          and isinstance(test, ast.Compare) and len(test.ops) == 1
                          and isinstance(test.ops[0], ast.IsNot) and isinstance(test.comparators[0], ast.Constant)
                          and test.comparators[0].value is None and len(sides[0]) == 1)
            if sides[0] != sides[1] and not skips_none:
                return None
            continue
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in _VISIT_HELPERS:
            args = node.args
            if (len(args) != 4 or node.keywords or not (isinstance(args[0], ast.Name) and args[0].id == "self")
                    or not isinstance(args[1], ast.Constant) or args[1].value not in known
                    or not isinstance(args[2], (ast.Name, ast.Attribute))):
                return None
            found.append((node.lineno, node.col_offset, args[1].value))
        elif isinstance(func, ast.Name) and func.id in (cls.__name__, "isinstance"):
            continue  # the rebuilt node; a type test choosing how to visit a field
        elif (isinstance(func, ast.Attribute) and func.attr == "__class__" and isinstance(func.value, ast.Name)
              and func.value.id == "self"):
            continue
        else:
            return None
    order: list[str] = []
    for _, _, name in sorted(found):
        if name not in order:
            order.append(name)
    return tuple(order)


def _walk_literals(module: cst.Module) -> _Literals | None:
    """The literals of ``module`` in the order a :class:`libcst.CSTVisitor` meets them, without one.

    One iterative walk over the visited fields of each node (:func:`_child_fields`), instead of
    LibCST's per-node and per-field visitor dispatch. None when a node class cannot be walked
    this way; :func:`_visit_literals` then gives the same result.
    """
    registry: list = []
    tokens: list = []
    concats: list = []
    walk = _WALK
    default = cst.MaybeSentinel.DEFAULT
    node_type = cst.CSTNode
    inside = 0  # f-strings around the node
    stack: list = [module]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        if node is _LEAVE_FSTRING:
            inside -= 1
            continue
        cls = node.__class__
        info = walk.get(cls)
        if info is None:
            if cls in walk:
                return None
            fields = _child_fields(cls)
            info = walk[cls] = None if fields is None else (fields[::-1], _LITERAL_KINDS.get(cls.__name__))
            if info is None:
                return None
        fields, kind = info
        if kind is not None:
            if kind == "fstring":
                if not inside:
                    tokens.append(("f", node))
                inside += 1
                push(_LEAVE_FSTRING)
            else:
                registry.append((node, kind))
                if kind == "concat":
                    concats.append(node)
                elif not inside and kind != "ftext":
                    tokens.append((_TOKEN_TAGS[kind], node))
        for name in fields:
            value = getattr(node, name)
            if value is None or value is default:
                continue
            if isinstance(value, node_type):
                push(value)
            else:
                extend(reversed(value))
    return _Literals(registry, tokens, concats)


def _visit_literals(module: cst.Module) -> _Literals:
    """:func:`_walk_literals` with a :class:`libcst.CSTVisitor` (slower; for node classes it cannot walk)."""
    out = _Literals([], [], [])
    inside = [0]

    class V(cst.CSTVisitor):
        def visit_ConcatenatedString(self, node):
            out.registry.append((node, "concat"))
            out.concats.append(node)

        def visit_SimpleString(self, node):
            out.registry.append((node, "simple"))
            if not inside[0]:
                out.tokens.append(("s", node))

        def visit_FormattedString(self, node):
            if not inside[0]:
                out.tokens.append(("f", node))
            inside[0] += 1

        def leave_FormattedString(self, node):
            inside[0] -= 1

        def visit_FormattedStringText(self, node):
            out.registry.append((node, "ftext"))

        def visit_Comment(self, node):
            out.registry.append((node, "comment"))
            if not inside[0]:
                out.tokens.append(("c", node))

    module.visit(V())
    return out


class _Span:
    __slots__ = ("start", "length")

    def __init__(self, start: int, length: int):
        self.start, self.length = start, length


#: A string literal (any prefix, one or three quotes of either kind) or a comment, in UTF-8 bytes: scanned left to
#: right, these are the tokens :mod:`tokenize` gives as STRING and COMMENT (outside them, Python code holds no quote
#: and no ``#``; Python 3.12's quotes inside an f-string's braces make a token whose text is not its node's, and the
#: caller takes LibCST's positions). A prefix letter must not end a word: ``if"x"`` is the keyword and a plain string.
_STRING_OR_COMMENT = re.compile(rb"""
    (?P<c>\#[^\r\n]*)
  | (?:(?<![A-Za-z0-9_])[rRbBuUfF]{1,2})?
    (?: \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\" | '''(?:[^'\\]|\\.|'(?!''))*'''
      | "(?:[^"\\\n]|\\.)*" | '(?:[^'\\\n]|\\.)*' )
""", re.DOTALL | re.VERBOSE)


def _token_spans(source: str, module: cst.Module, literals: _Literals) -> dict | None:
    """Byte spans of string literals, f-string text parts and comments, from one regular-expression scan of the
    source (fast path; :mod:`tokenize` gives the same tokens, some 15 times slower).

    LibCST children are in source order, so the k-th string node is the k-th string token and the k-th comment
    the k-th comment token; each token's text must be its node's. Returns None whenever the correspondence is not
    exact; the caller then asks LibCST for positions.
    """
    data = source.encode("utf-8")
    if len(source.splitlines()) != data.count(b"\n") + (bool(data) and not data.endswith(b"\n")):
        return None  # a lone "\r", form feeds and str.splitlines' other line breaks ("\r\n" is one): LibCST's positions
    strings: list[tuple[int, int]] = []
    comments: list[tuple[int, int]] = []
    for m in _STRING_OR_COMMENT.finditer(data):
        (comments if m.lastgroup == "c" else strings).append(m.span())
    order = literals.tokens
    for kind, node in order:  # strings inside f-string expressions are part of the f-string's token
        if kind == "f":
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    code = module.code_for_node(part.expression)
                    if part.format_spec or '"' in code or "'" in code:
                        return None
    out: dict = {}
    si = ci = 0
    for kind, node in order:
        if kind == "c":
            if ci >= len(comments):
                return None
            start, end = comments[ci]
            ci += 1
            if data[start:end].decode("utf-8") != node.value:
                return None
            out[node] = _Span(start, end - start)
            continue
        if si >= len(strings):
            return None
        start, end = strings[si]
        si += 1
        out[node] = _Span(start, end - start)
        if kind == "f":
            pos = start + len(node.start.encode("utf-8"))
            if data[start:pos] != node.start.encode("utf-8"):
                return None
            for part in node.parts:
                text = module.code_for_node(part).encode("utf-8")
                if data[pos:pos + len(text)] != text:
                    return None
                if isinstance(part, cst.FormattedStringText):
                    out[part] = _Span(pos, len(text))
                pos += len(text)
            if pos + len(node.end.encode("utf-8")) != end or data[pos:end] != node.end.encode("utf-8"):
                return None
        elif data[start:end] != node.value.encode("utf-8"):
            return None
    if si != len(strings) or ci != len(comments):
        return None
    for node in literals.concats:
        parts = concat_parts(node)
        first, last = out.get(parts[0]), out.get(parts[-1])
        if first is not None and last is not None:
            out[node] = _Span(first.start, last.start + last.length - first.start)
    return out


def concat_parts(node: cst.ConcatenatedString) -> list:
    out = []
    for side in (node.left, node.right):
        if isinstance(side, cst.ConcatenatedString):
            out.extend(concat_parts(side))
        else:
            out.append(side)
    return out


def literal_value(node: cst.SimpleString | cst.ConcatenatedString) -> str | bytes | None:
    """``node.evaluated_value`` (raises what it raises), read from the literal's text where that is its value: a str
    literal whose body has no backslash (or a raw one) and no carriage return; the others through
    :func:`ast.literal_eval` as LibCST does. LibCST evaluates every literal with ``literal_eval``, a parse and a
    compile each (about 20 us); a hook's analysis reads some 70 literals."""
    if type(node) is cst.SimpleString:
        text = node.value
        prefix = node.prefix.lower()
        if "b" not in prefix:
            start = len(prefix)
            quote = 3 if text.startswith(('"""', "'''"), start) else 1
            body = text[start + quote:len(text) - quote]
            if ("r" in prefix or "\\" not in body) and "\r" not in body:
                return body
        return literal_eval(text)
    if type(node) is cst.ConcatenatedString:  # LibCST's ConcatenatedString.evaluated_value, on these values
        left, right = node.left, node.right
        if isinstance(left, cst.FormattedString) or isinstance(right, cst.FormattedString):
            return None
        left_val, right_val = literal_value(left), literal_value(right)
        if right_val is None:
            return None
        if isinstance(left_val, bytes) and isinstance(right_val, bytes) or \
                isinstance(left_val, str) and isinstance(right_val, str):
            return left_val + right_val
        return None
    return node.evaluated_value


def string_parts(node) -> tuple[str, str, str]:
    """(prefix, quote, body) of a simple string literal."""
    text = node.value
    prefix = node.prefix
    rest = text[len(prefix):]
    quote = rest[:3] if rest[:3] in ('"""', "'''") else rest[:1]
    return prefix, quote, rest[len(quote):len(rest) - len(quote)]


# ---------------------------------------------------------------------------- entry point
