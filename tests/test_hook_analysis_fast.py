"""The one-walk literal collection of hsa.codemods.analysis gives the same Analysis as the three visitor passes it replaced.

``_old_analyze`` below is the implementation as it was before (a ``CSTVisitor`` pass for the
literal registry, two more inside ``_token_spans``), kept here as the oracle.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import tokenize
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

from hsa.codemods import analysis as A
from hsa.codemods import spans as S
from hsa.codemods.interpreter import Interpreter
from hsa.hooks_model import infer_entry
from tests.conftest import sample
from tests.hook_corpus import fixture_hooks, rewritten_hooks

# ---------------------------------------------------------------------------- the old implementation (oracle)


def _old_registry(module: cst.Module) -> list:
    out: list = []

    class V(cst.CSTVisitor):
        def visit_ConcatenatedString(self, node):
            out.append((node, "concat"))

        def visit_SimpleString(self, node):
            out.append((node, "simple"))

        def visit_FormattedStringText(self, node):
            out.append((node, "ftext"))

        def visit_Comment(self, node):
            out.append((node, "comment"))

    module.visit(V())
    return out


def _old_token_spans(source: str, module: cst.Module) -> dict | None:
    data = source.encode("utf-8")
    line_starts = [0]
    for line in io.BytesIO(data):
        line_starts.append(line_starts[-1] + len(line))
    lines = source.splitlines(keepends=True)

    def offset(row: int, col: int) -> int:
        if row - 1 >= len(lines):
            return len(data)
        return line_starts[row - 1] + len(lines[row - 1][:col].encode("utf-8"))

    strings: list[tuple[int, int]] = []
    comments: list[tuple[int, int]] = []
    fstart = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            name = tokenize.tok_name.get(tok.type, "")
            if tok.type == tokenize.STRING:
                strings.append((offset(*tok.start), offset(*tok.end)))
            elif name == "FSTRING_START":
                fstart = offset(*tok.start)
            elif name == "FSTRING_END" and fstart is not None:
                strings.append((fstart, offset(*tok.end)))
                fstart = None
            elif tok.type == tokenize.COMMENT:
                comments.append((offset(*tok.start), offset(*tok.end)))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    if len(lines) + 1 != len(line_starts):
        return None
    out: dict = {}
    order: list = []
    nested = [False]

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, node):
            order.append(("s", node))

        def visit_FormattedString(self, node):
            order.append(("f", node))
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    code = module.code_for_node(part.expression)
                    if part.format_spec or '"' in code or "'" in code:
                        nested[0] = True
            return False

        def visit_Comment(self, node):
            order.append(("c", node))

    module.visit(V())
    if nested[0]:
        return None
    si = ci = 0
    for kind, node in order:
        if kind == "c":
            if ci >= len(comments):
                return None
            start, end = comments[ci]
            ci += 1
            if data[start:end].decode("utf-8") != node.value:
                return None
            out[node] = S._Span(start, end - start)
            continue
        if si >= len(strings):
            return None
        start, end = strings[si]
        si += 1
        out[node] = S._Span(start, end - start)
        if kind == "f":
            pos = start + len(node.start.encode("utf-8"))
            for part in node.parts:
                text = module.code_for_node(part).encode("utf-8")
                if isinstance(part, cst.FormattedStringText):
                    out[part] = S._Span(pos, len(text))
                pos += len(text)
            if pos + len(node.end.encode("utf-8")) != end:
                return None
        elif end - start != len(node.value.encode("utf-8")):
            return None
    if si != len(strings) or ci != len(comments):
        return None

    class C(cst.CSTVisitor):
        def leave_ConcatenatedString(self, node):
            parts = S.concat_parts(node)
            first, last = out.get(parts[0]), out.get(parts[-1])
            if first is not None and last is not None:
                out[node] = S._Span(first.start, last.start + last.length - first.start)

    module.visit(C())
    return out


def _old_analyze(source: str, entry: str | None) -> A.Analysis:
    style = A.entry_style(entry)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return A.Analysis(source, style, (), (), (), error=f"hook source does not parse: {str(exc).splitlines()[0]}",
                          entry=entry)
    if entry is None:
        return A.Analysis(source, style, (), (), (), error="the hook has no entry; set 'entry' to its function name")
    spans = _old_token_spans(source, module)
    if spans is None:
        spans = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ByteSpanPositionProvider)
    interp = Interpreter(module, source.encode("utf-8"), spans, style, _old_registry(module))
    entries = A.default_entries(module, style, entry)
    try:
        error = interp.run(entries)
    except RecursionError:
        error = "hook source is nested too deeply to analyse"
    interp.finish()
    sites = []
    for i, node in enumerate(interp.nodes):
        kind = interp.kind_of[id(node)]
        span = spans[node]
        value = interp.lit_value(i) if kind != "comment" else node.value
        prefix = quote = ""
        parts: tuple = ()
        if kind == "simple":
            prefix, quote, _ = S.string_parts(node)
        elif kind == "concat":
            parts = tuple(interp.lid(p) for p in S.concat_parts(node) if id(p) in interp.index)
        sites.append(A.LiteralSite(i, kind, value if isinstance(value, str) else "", span.start,
                                   span.start + span.length, interp.line(node),
                                   frozenset(interp.roles.get(i, ())), prefix, quote, parts))
    return A.Analysis(source, style, entries, tuple(sites), tuple(interp.problems), error,
                      frozenset(interp.reads), entry)


# ---------------------------------------------------------------------------- corpora

FIXTURE_HOOKS = list(fixture_hooks())


def _hand_written_hooks() -> list[tuple[str, str | None]]:
    """Every string constant of tests/test_hook_*.py that is a hook, with each entry it could have."""
    out: dict = {}
    for path in sorted(Path(__file__).parent.glob("test_hook_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            src = node.value
            if "def " not in src and "sys.stdin" not in src:
                continue
            try:
                tree = ast.parse(src)
            except SyntaxError:
                continue
            names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for entry in {infer_entry(src), *names[:3]}:
                out[(src, entry)] = None
    return list(out)


#: Layouts that take the other paths: LibCST positions (format specs, quotes in f-string expressions,
#: form feeds, "\r"), problems (whose line is known only there), IfExp order, concatenations, scripts, classes.
EDGE_CASES = [
    ('def check(payload):\n    kind = "inventory"\n    label = f"{kind:>10}"\n'
     '    if payload["tool_name"] == "check_" + kind:\n        return {"decision": "deny", "reason": label}\n'
     '    return {"decision": "allow"}\n', "check"),
    ('def check(payload):\n    args = payload["tool_input"]\n    msg = f"bad {args[\'sku\']}"  # nested quotes\n'
     '    if payload["tool_name"] == "check_inventory" and args.get("sku") == "x":\n'
     '        return {"decision": "deny", "reason": msg}\n    return {"decision": "allow"}\n', "check"),
    ('def check(payload):\n    \x0c# form feed before a comment\n    name = payload["tool_name"]\n'
     '    return {"decision": "deny" if name == "list_coupons" else "allow"}\n', "check"),
    ('def check(payload):\r    name = payload["tool_name"]  # carriage returns\r'
     '    if name == "get_size_chart":\r        return {"decision": "deny"}\r    return {}\r', "check"),
    ('def check(payload):\r\n    name = payload["tool_name"]\r\n    return {"decision": "deny"}'
     ' if name in ("a", "b") else {}\r\n', "check"),
    ('def check(payload):\n    name = payload["tool_name"]\n'
     '    verdict = "deny" if name == "calculate_shipping" else "ask" if name == "x" else "allow"\n'
     '    note = ("first part "  # a comment inside a concatenation\n'
     '            f"{name} second " "third"\n            r"\\d+")\n'
     '    data = b"bytes" + b"more"\n    if getattr(payload, name):\n        pass\n'
     '    return {"decision": verdict, "reason": note, "x": payload["tool_input"][name]}\n', "check"),
    ('import json, sys\n\n# a script hook\ndata = json.load(sys.stdin)\n'
     'if data["tool_name"] in {"check_inventory", "list_coupons"}:  # deny these\n'
     '    print(json.dumps({"decision": "deny", "reason": f"{data[\'tool_name\']!r} is off"}))\n'
     '    sys.exit(2)\n', "__main__"),
    ('from agents import RunHooks\n\nclass Guard(RunHooks):\n    async def on_tool_start(self, context, agent, tool):\n'
     '        if tool.name == "check_inventory":  # deny\n            raise PermissionError(f"{tool.name:>5} no")\n'
     '    async def on_tool_end(self, context, agent, tool, result):\n        return "done"\n',
     "Guard.on_tool_start"),
    ('def check(payload):\n    x = eval("1")\n    return {"decision": "allow" if x else "deny"}\n', "check"),
    # what the scan of strings and comments must tell apart: a prefix letter that ends a keyword, a "#" in a string,
    # quotes in a comment, escaped and doubled quotes in one and three quotes, a continued line, bytes
    ('def check(payload):\n    name = payload["tool_name"]  # say "list_coupons" or \'x\'\n'
     '    if"#" in name or"a\\"b" == name or rb\'\\d\' == name or name in (\'\'\'it\'s ""\'\'\', "#x"):\n'
     '        return {"decision": "deny", "reason": "one \\\n two"}  # "\n'
     '    return {"decision": "deny" if name == """a "b" \\""" c""" else "allow"}  # end\n', "check"),
    ('def check(payload):\n    return {"decision": "allow"}\n', None),
    ('def check(payload):\n    return {"decision": "allow"\n', "check"),
    ('def other(payload):\n    return {}\n', "check"),
]


def _same(a: A.Analysis, b: A.Analysis) -> bool:
    return dataclasses.astuple(a) == dataclasses.astuple(b)


def _outcome(analyze, source: str, entry: str | None):
    """The analysis as a plain tuple, or the type of the exception it raised (both must match)."""
    try:
        return dataclasses.astuple(analyze(source, entry))
    except Exception as exc:  # noqa: BLE001 - a crash must stay the same crash
        return type(exc)


# ---------------------------------------------------------------------------- tests


def test_fixture_hooks_analyse_as_before():
    """Every hook source of the fixtures gets the Analysis the three-visitor implementation gave."""
    assert len(FIXTURE_HOOKS) > 100
    for source, entry in FIXTURE_HOOKS:
        assert _same(A._analyze(source, entry), _old_analyze(source, entry)), (entry, source[:300])


def test_rewritten_hooks_analyse_as_before():
    """Hook sources after the default and hooks recipes' rewrites get the Analysis they got before."""
    sources = rewritten_hooks()
    assert len(sources) > 100
    for source, entry in sample(sources):
        assert _same(A._analyze(source, entry), _old_analyze(source, entry)), (entry, source[:300])


def test_hand_written_and_edge_hooks_analyse_as_before():
    """The hooks written in the hook tests, and layouts that take the fallback paths, analyse as before."""
    cases = _hand_written_hooks() + EDGE_CASES
    assert len(cases) > 40
    for source, entry in cases:
        assert _outcome(A._analyze, source, entry) == _outcome(_old_analyze, source, entry), (entry, source[:300])


def test_edge_cases_reach_the_paths_they_are_meant_for():
    """The edge cases do take LibCST's positions (and report problem lines) where the old code did."""
    fallbacks = 0
    for source, entry in EDGE_CASES:
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:
            continue
        literals = S._walk_literals(module)
        new, old = S._token_spans(source, module, literals), _old_token_spans(source, module)
        assert (new is None) == (old is None), source
        fallbacks += new is None
        if new is not None:
            assert {id(k): (v.start, v.length) for k, v in new.items()} == \
                   {id(k): (v.start, v.length) for k, v in old.items()}
    assert fallbacks >= 4
    an = A._analyze(*EDGE_CASES[0])
    assert an.problems and all(p.line == 4 for p in an.problems)


def test_walk_finds_literals_in_the_order_a_visitor_does():
    """_walk_literals lists the same nodes, in the same order, as one CSTVisitor pass (_visit_literals)."""
    for source, entry in FIXTURE_HOOKS[::3] + EDGE_CASES:
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:
            continue
        walked, visited = S._walk_literals(module), S._visit_literals(module)
        assert walked is not None
        assert walked == visited, source[:300]  # nodes compare by identity


def test_child_fields_are_libcst_visiting_order():
    """For every node of the fixture hooks, the walked fields are the ones LibCST visits, in its order."""

    class Recorder(cst.CSTVisitor):
        def __init__(self):
            self.fields: list[str] = []

        def on_visit(self, node):
            return False

        def on_visit_attribute(self, node, attribute):
            self.fields.append(attribute)

    assert S._child_fields(cst.IfExp).index("test") > S._child_fields(cst.IfExp).index("body")
    seen = 0
    tables: dict = {}  # _child_fields of each class, read once (it reads the class's source: milliseconds)
    for source, _ in FIXTURE_HOOKS[::4] + EDGE_CASES[:8]:
        stack: list = [cst.parse_module(source)]
        while stack:
            node = stack.pop()
            recorder = Recorder()
            node._visit_and_replace_children(recorder)
            if type(node) not in tables:
                tables[type(node)] = S._child_fields(type(node))
            table = tables[type(node)]
            assert recorder.fields == [f for f in table if f in recorder.fields], type(node).__name__
            missing = [f for f in table if f not in recorder.fields]
            assert all(getattr(node, f) is None for f in missing), type(node).__name__
            stack.extend(node.children)
            seen += 1
    assert seen > 5000


def test_unknown_node_class_falls_back_to_the_visitor(monkeypatch):
    """When a node class's visiting order cannot be read, the analysis walks with a visitor and is unchanged."""
    source, entry = EDGE_CASES[5]
    expected = _old_analyze(source, entry)
    monkeypatch.setitem(S._WALK, cst.Name, None)
    module = cst.parse_module(source)
    assert S._walk_literals(module) is None
    assert _same(A._analyze(source, entry), expected)
    monkeypatch.setattr(S, "_child_fields", lambda cls: None)
    monkeypatch.setattr(S, "_WALK", {})
    assert S._walk_literals(module) is None
    assert _same(A._analyze(source, entry), expected)


@pytest.mark.parametrize("cls", [cst.IfExp, cst.FormattedStringExpression, cst.ImportFrom, cst.Comment, cst.Module])
def test_child_fields_of_tricky_classes(cls):
    """Fields are read from _visit_and_replace_children, conditional visits included; leaves have none."""
    fields = S._child_fields(cls)
    assert fields is not None
    expected = {
        cst.IfExp: ("lpar", "body", "whitespace_before_if", "whitespace_after_if", "test", "whitespace_before_else",
                    "whitespace_after_else", "orelse", "rpar"),
        cst.FormattedStringExpression: ("whitespace_before_expression", "expression", "equal",
                                        "whitespace_after_expression", "format_spec"),
        cst.ImportFrom: ("whitespace_after_from", "relative", "module", "whitespace_before_import",
                         "whitespace_after_import", "lpar", "names", "rpar", "semicolon"),
        cst.Comment: (),
        cst.Module: ("header", "body", "footer"),
    }[cls]
    assert fields == expected


#: String literals whose text is not their value, or only nearly: escapes, raw and byte strings, triple quotes,
#: carriage returns, a line continuation, implicit concatenation (an f-string beside a literal evaluates to None)
LITERALS = ['"a"', "'a'", '"""a\nb"""', "'''x'''", 'r"a\\b"', 'R"a\\"b"', 'u"x"', 'U"x"', 'b"x"', 'rb"\\x"',
            'Br"x\\y"', '"a\\nb"', '"\\x41"', '"\\N{BULLET}"', '"a\\\nb"', '"""a\r\nb"""', 'r"""a\r\nb"""',
            "'it\\'s'", '"é"', '"\\\\"', 'r"\\\\"', '"a" "b"', 'b"a" b"b"', '"a" f"{x}"', 'f"{x}" "a"',
            '"a" "b" "c"', '("a"\n "b")', 'r"\\n" "\\n"', '""', "''''''", '"\\q"', '"""\\\n"""']


def _literal_outcome(fn, node):
    try:
        value = fn(node)
    except Exception as exc:  # noqa: BLE001 - the same exception is part of the answer
        return type(exc)
    return type(value), value


def _string_literals(module: cst.Module) -> list:
    """The string literals of ``module`` (simple and concatenated), as the old visitor registry finds them."""
    return [node for node, kind in _old_registry(module) if kind in ("simple", "concat")]


def _assert_literal_values(nodes: list) -> None:
    """spans.literal_value of each node is LibCST's evaluated_value, or raises the same exception."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "\q": an invalid escape warns, the same way on both sides
        for node in nodes:
            assert _literal_outcome(S.literal_value, node) == _literal_outcome(lambda n: n.evaluated_value, node), \
                cst.Module([]).code_for_node(node)


def test_literal_value_is_libcsts_evaluated_value():
    """spans.literal_value (read from the text where that is the value) gives what LibCST's evaluated_value
    gives, raising what it raises, for every string literal of the fixture and rewritten hooks and the edge
    cases above: the analysis reads every literal's value through it."""
    sources = [source for source, _ in (*FIXTURE_HOOKS, *sample(rewritten_hooks()))]
    sources += [f"x = {literal}\n" for literal in LITERALS]
    nodes = [node for source in sources for node in _string_literals(cst.parse_module(source))]
    assert len(nodes) > 5000
    _assert_literal_values(nodes)
    fast = sum(1 for node in nodes if isinstance(node, cst.SimpleString) and "\\" not in node.value)
    assert fast > len(nodes) // 2  # most literals take the text as their value


def _standard_library_modules(n: int) -> list[str]:
    """The sources of ``n`` modules of the running Python's standard library (every k-th by path, 1-12 KB): real
    code that no hook corpus was written from."""
    import sysconfig

    paths = sorted(p for p in Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")
                   if "test" not in p.parts and "site-packages" not in p.parts and 1_000 < p.stat().st_size < 12_000)
    assert len(paths) > n
    out = []
    for p in paths[::len(paths) // n][:n]:
        try:
            out.append(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return out


def test_scan_and_literal_values_on_standard_library_modules():
    """On real modules: where the scan gives spans, they are LibCST's own byte positions, and it gives them for
    most modules; every string literal's literal_value is its evaluated_value."""
    scanned = literals = 0
    modules = _standard_library_modules(30)
    for source in modules:
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:
            continue
        found = S._walk_literals(module) or S._visit_literals(module)
        spans = S._token_spans(source, module, found)
        if spans is not None:
            scanned += 1
            truth = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ByteSpanPositionProvider)
            assert {id(n): (s.start, s.length) for n, s in spans.items()} == \
                   {id(n): (truth[n].start, truth[n].length) for n in spans}, source[:200]
        nodes = _string_literals(module)
        _assert_literal_values(nodes)
        literals += len(nodes)
    assert scanned > len(modules) * 3 // 4 and literals > 500
