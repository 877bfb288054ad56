"""Which string literals of a hook name a tool, a parameter, a skill or an enum value.

The analysis is an abstract interpretation of the hook's entry over LibCST nodes.
Values are sets of *atoms* saying what a value may be: the payload, a tool name,
the tool input at an argument path, a skill name, a list of skills, plain data,
a constant string literal (by node), a container of constants, a computed string,
or unknown. Walking the entry (and every helper it calls, with the argument kinds
it is called with) gives every literal the *roles* it plays:

- ``tool`` / ``skill``: compared with a tool or skill name (``==``, ``in (...)``,
  ``match``/``case``, dict lookups, membership in module constants);
- ``param`` / ``member`` / ``value``: a key of the tool input at a path, or a value
  compared with the input at a path (paths use ``"[]"`` for items);
- predicates over names (``startswith``, regular expressions, substrings, matcher
  strings such as ``"Edit|Write"``), checked at sync time over every harness name;
- structural (payload keys, dict keys, data comparisons), ``message`` (what the
  hook tells the model) and ``unknown`` (compared with something unresolvable).

Constructs that cannot be resolved statically (a computed string compared with a
name, ``getattr`` with a computed name, dynamic keys into the tool input,
``eval``/``exec``/``globals()``, names passed to functions outside the standard
library) are *problems*, each tagged with the name kinds it endangers; a sync step
that renames such a kind refuses. The tool-name constraint in force (from ``if
name == "x"`` or ``case "x"``) is kept with every role, so a parameter key is
checked only against the tools that can reach it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import sys
from collections.abc import Iterable
from collections import OrderedDict
from typing import Any

import libcst as cst

from hsa.codemods._cst import parse as _parse
from hsa.codemods.results import (HARD_ROLES, NAME_ROLES, SOFT_ROLES, STYLES, Analysis, LiteralSite, Problem,
                                  entry_style)
from hsa.codemods.spans import concat_parts, find_literals, string_parts

__all__ = ["analyze", "transport", "cache_stats", "Analysis", "LiteralSite", "Problem", "STYLES", "entry_style",
           "MESSAGE_KEYS", "UPDATED_KEYS", "NAME_ROLES", "HARD_ROLES", "SOFT_ROLES", "AGENT_EVENTS"]

#: Keys of a decision whose value is text meant for the model.
MESSAGE_KEYS = frozenset({"message", "reason", "permissionDecisionReason", "stopReason", "systemMessage",
                          "additionalContext", "feedback"})
#: Keys of a decision whose value is a rewritten tool input.
UPDATED_KEYS = frozenset({"updatedInput", "updated_input"})
#: Payload keys and the kind of value they hold.
_PAYLOAD_KEYS = {"tool_name": "tool", "tool_input": "ti", "tool_args": "ti", "arguments": "ti",
                 "skill": "skill", "skill_name": "skill", "loaded_skills": "skills", "skills": "skills"}
#: OpenAI Agents SDK hook methods and the harness events they stand for.
AGENT_EVENTS = {"on_tool_start": "pre_tool_use", "on_tool_end": "post_tool_use", "on_agent_start": "agent_start",
                "on_agent_end": "agent_end", "on_handoff": "handoff", "on_llm_start": "llm_start",
                "on_llm_end": "llm_end", "on_start": "agent_start", "on_end": "agent_end"}  # RunHooks and AgentHooks


_STDLIB = frozenset(sys.stdlib_module_names)
_DYNAMIC = frozenset({"eval", "exec", "compile", "globals", "locals", "vars", "__import__", "setattr", "delattr"})
_STR_PREDICATES = frozenset({"startswith", "endswith"})
_DATA_BUILTINS = frozenset({"len", "isinstance", "issubclass", "bool", "int", "float", "abs", "round", "range",
                            "print", "hash", "id", "type", "callable", "ord", "chr", "repr", "ascii", "divmod",
                            "pow", "sum", "hex", "oct", "bin", "iter", "next", "object", "super", "Exception",
                            "ValueError", "KeyError", "TypeError", "RuntimeError", "PermissionError",
                            "SystemExit", "NotImplementedError", "AssertionError"})
_COPY_BUILTINS = frozenset({"set", "frozenset", "list", "tuple", "sorted", "reversed"})
_MUTATORS = frozenset({"add", "append", "extend", "insert", "update", "remove", "discard", "clear", "pop",
                       "setdefault", "popitem"})

# ---------------------------------------------------------------------------- atoms

PAYLOAD = ("payload",)
TOOL = ("tool",)
SKILL = ("skill",)
SKILLS = ("skills",)
DATA = ("data",)
UNKNOWN = ("unknown",)
STDIN = ("stdin",)
CTX = ("ctx",)
TOOLOBJ = ("toolobj",)
ARGSJSON = ("argsjson",)
PKEYS = ("pkeys",)
INT = ("data", "int")  # plain data known to be an integer (an index, a length)

AV = frozenset
_D = frozenset({DATA})
_U = frozenset({UNKNOWN})
_E: frozenset = frozenset()


def _ti(path: tuple) -> tuple:
    return ("ti", path)


def _pk(path: tuple) -> tuple:
    return ("pk", path)


def _text(kinds: Iterable[str] = (), lits: Iterable[int] = ()) -> tuple:
    return ("text", frozenset(kinds), frozenset(lits))


def _kinds(av: AV) -> frozenset[str]:
    """The name kinds a value may carry (what a rename of that kind would change)."""
    out: set[str] = set()
    for a in av:
        tag = a[0]
        if tag in ("tool", "toolobj"):
            out.add("tool")
        elif tag in ("skill", "skills"):
            out.add("skill")
        elif tag == "pk":
            out.add("param")
        elif tag in ("ti", "argsjson"):
            out |= {"param", "value"}
        elif tag == "ctx":
            out |= {"tool", "param", "value"}
        elif tag == "payload":
            out |= {"tool", "param", "value", "skill"}
        elif tag == "text":
            out |= a[1]
        elif tag == "tuple":
            for part in a[1]:
                out |= _kinds(part)
        elif tag in ("coll",):
            out |= _kinds(a[2])
        elif tag == "dict":
            out |= _kinds(a[2]) | _kinds(a[3])
    return frozenset(out)


_NAME_TAGS = frozenset({"tool", "skill", "pk", "ti", "text"})


def _string_kinds(av: AV) -> frozenset[str]:
    """Name kinds a *string* operation on ``av`` depends on: a tool-input leaf is a value, not a key."""
    out: set[str] = set()
    for a in av:
        tag = a[0]
        if tag == "tool":
            out.add("tool")
        elif tag == "skill":
            out.add("skill")
        elif tag == "pk":
            out.add("param")
        elif tag == "ti":
            out.add("value")
        elif tag == "text":
            out |= a[1]
        elif tag == "unknown":
            out |= {"tool", "skill", "param", "value"}
    return frozenset(out)


# ---------------------------------------------------------------------------- interpreter


class _Env:
    __slots__ = ("vars", "parent")

    def __init__(self, parent: _Env | None = None, vars: dict | None = None):
        self.vars: dict[str, AV] = vars if vars is not None else {}
        self.parent = parent

    def get(self, name: str) -> AV | None:
        env: _Env | None = self
        while env is not None:
            v = env.vars.get(name)
            if v is not None:
                return v
            env = env.parent
        return None

    def copy(self) -> _Env:
        return _Env(self.parent, dict(self.vars))

    def join(self, *others: _Env) -> None:
        for o in others:
            for k, v in o.vars.items():
                self.vars[k] = self.vars.get(k, _E) | v


class _Interp:
    def __init__(self, module: cst.Module, source: bytes, spans, style: str, literals: list):
        self.module = module
        self.source_bytes = source
        self.spans = spans
        self.style = style
        self.roles: dict[int, set] = {}
        self.problems: list[Problem] = []
        self.nodes: list[cst.CSTNode] = []
        self.index: dict[int, int] = {}
        self.kind_of: dict[int, str] = {}
        self.memo: dict = {}
        self.active: set = set()
        self.narrow: dict[int, frozenset | None] = {}
        self.mutated: set[int] = set()
        self.member_uses: list[tuple[int, frozenset, frozenset | None, int]] = []
        self.reads: set[str] = set()
        self.classes: dict[str, cst.ClassDef] = {}
        self.module_env = _Env()
        self.C: frozenset | None = None  # tool-name constraint in force
        self.depth = 0
        for node, kind in literals:  # string literals, f-string texts and comments, in source order
            self._add(node, kind)

    # -- literal registry
    def _add(self, node: cst.CSTNode, kind: str) -> None:
        self.index[id(node)] = len(self.nodes)
        self.kind_of[id(node)] = kind
        self.nodes.append(node)

    def lid(self, node: cst.CSTNode) -> int:
        return self.index[id(node)]

    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.source_bytes.count(b"\n", 0, self.spans[node].start) + 1
        except KeyError:
            return 0

    def role(self, i: int, role: tuple) -> None:
        self.roles.setdefault(i, set()).add(role)

    def problem(self, kinds: Iterable[str], reason: str, node: cst.CSTNode, detail: str = "") -> None:
        kinds = frozenset(kinds)
        if not kinds:
            return
        code = self.module.code_for_node(node).strip().replace("\n", " ")
        if len(code) > 80:
            code = code[:77] + "..."
        self.problems.append(Problem(kinds, self.C, reason, detail or code, self.line(node)))

    def lit_value(self, i: int) -> Any:
        node = self.nodes[i]
        try:
            if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
                return node.evaluated_value
        except Exception:  # noqa: BLE001 - an odd literal is simply not a name
            return None
        if isinstance(node, cst.FormattedStringText):
            return node.value
        return None

    def str_lits(self, av: AV) -> list[int]:
        return [a[1] for a in av if a[0] == "lit" and isinstance(self.lit_value(a[1]), str)]

    # -- roles from comparisons
    def _assign(self, x: tuple, i: int, node) -> None:
        value = self.lit_value(i)
        if not isinstance(value, str):
            return
        tag = x[0]
        if tag == "tool":
            self.role(i, ("tool",))
        elif tag == "skill":
            self.role(i, ("skill",))
        elif tag == "pk":
            self.role(i, ("param", self.C, x[1] + (value,)))
        elif tag == "ti":
            self.role(i, ("value", self.C, x[1]))
        elif tag == "unknown":
            self.role(i, ("unknown",))
        elif tag in ("data", "pkeys"):
            self.role(i, ("data_cmp",))

    def relate(self, a: AV, b: AV, node) -> None:
        """``a`` and ``b`` are compared for equality: give literals the role of what they meet."""
        for x, y in ((a, b), (b, a)):
            lits = self.str_lits(y)
            for atom in x:
                tag = atom[0]
                for i in lits:
                    self._assign(atom, i, node)
                if tag in ("tool", "skill", "pk"):
                    kind = {"tool": "tool", "skill": "skill", "pk": "param"}[tag]
                    for other in y:
                        if other[0] in ("unknown", "text", "coll", "dict", "payload", "ctx", "toolobj"):
                            self.problem([kind], "name compared with a value that cannot be resolved statically",
                                         node)
                        elif other[0] in ("data",) and tag != "pk":
                            self.problem([kind], "name compared with data that the mapping does not carry", node)
                elif tag == "ti":
                    for other in y:
                        if other[0] in ("unknown", "text"):
                            self.problem(["value"], "tool input compared with a computed value", node)
                elif tag == "text" and atom[1]:
                    if any(o[0] not in ("data",) for o in y):
                        self.problem(atom[1], "computed string built from a name is compared", node)
                elif tag == "text" and not atom[1]:
                    if any(o[0] in ("tool", "skill", "pk", "ti") for o in y):
                        self.problem(_kinds(y), "name compared with a computed string", node)

    def member(self, x: AV, c: AV, node) -> None:
        """``x in c``."""
        for atom in c:
            tag = atom[0]
            if tag == "coll":
                self.relate(x, atom[2], node)
                self.member_uses.append((atom[1], _kinds(x), self.C, self.line(node)))
            elif tag == "dict":
                self.relate(x, atom[2], node)
                self.member_uses.append((atom[1], _kinds(x), self.C, self.line(node)))
            elif tag == "ti":
                for i in self.str_lits(x):
                    self.role(i, ("member", self.C, atom[1]))
                if _kinds(x) & {"tool", "skill", "param"}:
                    self.problem(_kinds(x) & {"tool", "skill", "param"},
                                 "name looked up in tool-input data", node)
            elif tag == "skills":
                for i in self.str_lits(x):
                    self.role(i, ("skill",))
                if any(a[0] in ("unknown", "text") for a in x):
                    self.problem(["skill"], "computed value looked up among skill names", node)
            elif tag in ("payload", "pkeys"):
                for i in self.str_lits(x):
                    self.role(i, ("payload_key",))
            elif tag in ("tool", "skill"):
                for i in self.str_lits(x):
                    self.role(i, ("tool_pred" if tag == "tool" else "skill_pred", "in"))
                if any(a[0] != "lit" for a in x):
                    self.problem([tag], "substring test on a name with a computed needle", node)
            elif tag == "pk":
                self.problem(["param"], "substring test on a parameter key", node)
            elif tag == "split":
                kinds = _kinds(x)
                for k in ("tool", "skill"):
                    if k in kinds:
                        self.role(atom[1], ("split", k, atom[2]))
                if "param" in kinds:
                    self.problem(["param"], "parameter key looked up in a split string", node)
            elif tag == "lit":
                kinds = _kinds(x)
                if "tool" in kinds:
                    self.role(atom[1], ("in_text", "tool"))
                if "skill" in kinds:
                    self.role(atom[1], ("in_text", "skill"))
                if "param" in kinds:
                    self.problem(["param"], "parameter key looked up in a string", node)
            elif tag in ("data", "unknown", "text"):
                kinds = _kinds(x) & {"tool", "skill", "param"}
                if kinds:
                    self.problem(kinds, "name looked up in a container that cannot be resolved statically", node)
                if tag == "unknown":
                    for i in self.str_lits(x):
                        self.role(i, ("unknown",))

    def mark_message(self, av: AV) -> None:
        for a in av:
            if a[0] == "lit":
                self.role(a[1], ("message",))
            elif a[0] == "text":
                for i in a[2]:
                    self.role(i, ("message",))

    def mark_updated(self, node: cst.BaseExpression, path: tuple, env: _Env) -> None:
        """Keys of a dict literal given as a rewritten tool input are parameter keys."""
        if isinstance(node, cst.Dict):
            for el in node.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, (cst.SimpleString, cst.ConcatenatedString)):
                    i = self.lid(el.key)
                    value = self.lit_value(i)
                    if isinstance(value, str):
                        self.role(i, ("param", self.C, path + (value,)))
                        self.mark_updated(el.value, path + (value,), env)
                elif isinstance(el, cst.DictElement):
                    self.problem(["param"], "rewritten tool input has a computed key", el.key)
        elif isinstance(node, (cst.List, cst.Tuple)):
            for el in node.elements:
                self.mark_updated(el.value, path + ("[]",), env)
        elif isinstance(node, cst.Name):
            v = env.get(node.value) or _E
            for a in v:
                if a[0] == "dict" and a[1] in self.nodes_by_dict:
                    self.mark_updated(self.nodes_by_dict[a[1]], path, env)

    # -- expressions
    def ev(self, node: cst.BaseExpression, env: _Env) -> AV:
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is None:
            for child in node.children:
                if isinstance(child, cst.BaseExpression):
                    self.ev(child, env)
            return _U
        return m(node, env)

    def ev_SimpleString(self, node, env):
        return frozenset({("lit", self.lid(node))}) if "b" not in node.prefix.lower() else _D

    def ev_ConcatenatedString(self, node, env):
        if any(isinstance(p, cst.FormattedString) for p in (node.left, node.right)):
            self.ev(node.left, env)
            self.ev(node.right, env)
            parts = [self.lid(n) for n in concat_parts(node) if isinstance(n, cst.SimpleString)]
            return frozenset({_text((), parts)})
        return frozenset({("lit", self.lid(node))})

    def ev_FormattedString(self, node, env):
        kinds: set[str] = set()
        lits = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                lits.append(self.lid(part))
            else:
                v = self.ev(part.expression, env)
                kinds |= _kinds(v)
                for a in v:
                    if a[0] == "text":
                        lits.extend(a[2])
                if part.format_spec:
                    for sp in part.format_spec:
                        if isinstance(sp, cst.FormattedStringExpression):
                            self.ev(sp.expression, env)
        return frozenset({_text(kinds, lits)})

    def ev_Integer(self, node, env):
        return frozenset({INT})

    def ev_Float(self, node, env):
        return _D

    ev_Imaginary = ev_Float

    def ev_Ellipsis(self, node, env):
        return _D

    def ev_Name(self, node, env):
        v = env.get(node.value)
        if v is not None:
            return v
        if node.value in ("True", "False", "None"):
            return _D
        if node.value == "__name__":
            return _D
        if node.value in _DYNAMIC:
            return frozenset({("builtin", node.value)})
        import builtins

        if hasattr(builtins, node.value):
            return frozenset({("builtin", node.value)})
        return _U

    def ev_Attribute(self, node, env):
        base = self.ev(node.value, env)
        attr = node.attr.value
        out: set = set()
        for a in base:
            tag = a[0]
            if tag == "module":
                dotted = f"{a[1]}.{attr}"
                out.add(STDIN if dotted == "sys.stdin" else ("module", dotted))
            elif tag == "ctx":
                if attr == "tool_name":
                    out.add(TOOL)
                    self.reads.add("tool")
                elif attr == "tool_arguments":
                    out.add(ARGSJSON)
                    self.reads.add("param")
                else:
                    out.add(DATA)
            elif tag == "toolobj":
                if attr == "name":
                    out.add(TOOL)
                    self.reads.add("tool")
                else:
                    out.add(DATA)
            elif tag == "self":
                out.add(("method", a[1], attr))
            elif tag == "class":
                out.add(("method", a[1], attr))
            elif tag in ("tool", "skill", "pk", "text", "lit", "ti", "coll", "dict", "payload", "skills",
                         "split", "regex", "data", "stdin", "builtin"):
                out.add(("bound", a, attr))
            else:
                out.add(UNKNOWN)
        return frozenset(out) or _U

    def _key_of(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            try:
                value = node.evaluated_value
            except Exception:  # noqa: BLE001
                return None
            return value if isinstance(value, str) else None
        return None

    def lookup(self, base: AV, key_node: cst.BaseExpression | None, key: AV, node, *, store: bool = False) -> AV:
        """``base[key]`` (also ``base.get(key)``): roles for the key, and the value found."""
        k = self._key_of(key_node) if key_node is not None else None
        ki = self.lid(key_node) if k is not None else None
        out: set = set()
        for a in base:
            tag = a[0]
            if tag == "payload":
                if k is not None:
                    self.role(ki, ("payload_key",))
                    kind = _PAYLOAD_KEYS.get(k)
                    if kind == "tool":
                        out.add(TOOL)
                        self.reads.add("tool")
                    elif kind == "ti":
                        out.add(_ti(()))
                        self.reads |= {"param", "value"}
                    elif kind == "skill":
                        out.add(SKILL)
                        self.reads.add("skill")
                    elif kind == "skills":
                        out.add(SKILLS)
                        self.reads.add("skill")
                    else:
                        out.add(DATA)
                else:
                    if any(x[0] not in ("data",) for x in key):
                        self.problem(["tool", "param", "value", "skill"], "payload read with a computed key", node)
                    out.add(UNKNOWN)
            elif tag == "ti":
                path = a[1]
                if k is not None:
                    self.role(ki, ("param", self.C, path + (k,)))
                    out.add(_ti(path + (k,)))
                elif any(x[0] == "pk" for x in key):
                    out.add(_ti(path + ("*",)))
                elif key and all(x == INT for x in key):
                    out.add(_ti(path + ("[]",)))
                else:
                    lits = self.str_lits(key)
                    for i in lits:
                        self.role(i, ("param", self.C, path + (self.lit_value(i),)))
                        out.add(_ti(path + (self.lit_value(i),)))
                    if not lits or any(x[0] != "lit" for x in key):
                        self.problem(["param", "value"], "tool input read with a key that cannot be resolved",
                                     node)
                        out.add(_ti(path + ("*",)))
            elif tag == "dict":
                self.relate(key, a[2], node)
                self.member_uses.append((a[1], _kinds(key), self.C, self.line(node)))
                out |= a[3] | _D
            elif tag == "coll":
                out |= a[2]
            elif tag == "tuple":
                for part in a[1]:
                    out |= part
            elif tag in ("tool", "skill", "pk", "text"):
                out.add(_text(_kinds(frozenset({a}))))
            elif tag == "skills":
                out.add(SKILL)
            elif tag == "lit":
                out.add(DATA)
            elif tag in ("data", "stdin", "module"):
                if k is not None:
                    self.role(ki, ("struct",))
                out.add(DATA)
            else:
                if k is not None:
                    self.role(ki, ("struct",))
                out.add(UNKNOWN)
        return frozenset(out) or _U

    def ev_Subscript(self, node, env):
        base = self.ev(node.value, env)
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            idx = node.slice[0].slice.value
            key = self.ev(idx, env)
            return self.lookup(base, idx, key, node)
        for s in node.slice:
            if isinstance(s.slice, cst.Slice):
                for part in (s.slice.lower, s.slice.upper, s.slice.step):
                    if part is not None:
                        self.ev(part, env)
        kinds = _kinds(base) & {"tool", "skill", "param"}
        if any(a[0] in ("tool", "skill", "pk") for a in base):
            return frozenset({_text(kinds)})
        if any(a[0] == "ti" for a in base):
            return frozenset({_ti(a[1] + ("[]",)) for a in base if a[0] == "ti"})
        if any(a[0] == "skills" for a in base):
            return frozenset({SKILLS})
        return frozenset(a for a in base if a[0] in ("coll",)) or _D

    def elements(self, av: AV) -> AV:
        out: set = set()
        for a in av:
            tag = a[0]
            if tag == "coll":
                out |= a[2]
            elif tag == "dict":
                out |= a[2]
            elif tag == "ti":
                out.add(_ti(a[1] + ("[]",)))
            elif tag == "skills":
                out.add(SKILL)
            elif tag == "payload":
                out.add(PKEYS)
            elif tag in ("tool", "skill", "pk", "text"):
                out.add(_text(_kinds(frozenset({a}))))
            elif tag == "tuple":
                for part in a[1]:
                    out |= part
            elif tag in ("lit", "data", "stdin"):
                out.add(DATA)
            elif tag == "split":
                out.add(("splitpart", a[1], a[2]))
            else:
                out.add(UNKNOWN)
        return frozenset(out) or _U

    def ev_Call(self, node, env):
        fn = self.ev(node.func, env)
        args = [self.ev(a.value, env) for a in node.args]
        kw = {a.keyword.value: v for a, v in zip(node.args, args) if a.keyword is not None}
        pos = [v for a, v in zip(node.args, args) if a.keyword is None and not a.star]
        arg_nodes = [a.value for a in node.args if a.keyword is None and not a.star]
        out: set = set()
        for f in fn:
            out |= self.call(f, pos, kw, arg_nodes, node, env)
        return frozenset(out) or _U

    def call(self, f: tuple, pos: list, kw: dict, arg_nodes: list, node, env) -> AV:
        tag = f[0]
        all_args = pos + list(kw.values())
        if tag == "builtin":
            name = f[1]
            if name in _DYNAMIC:
                self.problem(["tool", "skill", "param", "value"], f"dynamic code ({name})", node)
                return _U
            if name in ("getattr", "hasattr"):
                if len(arg_nodes) >= 2 and self._key_of(arg_nodes[1]) is not None:
                    self.role(self.lid(arg_nodes[1]), ("struct",))
                    return _D
                self.problem(["tool", "skill", "param", "value"], "getattr with a computed attribute name", node)
                return _U
            if name == "str":
                return pos[0] if pos else _D
            if name in _COPY_BUILTINS:
                if not pos:
                    return frozenset({("coll", -1, _E)})
                v = pos[0]
                if any(a[0] in ("ti", "skills") for a in v):
                    return frozenset(a for a in v if a[0] in ("ti", "skills")) | frozenset(
                        {("coll", -1, self.elements(frozenset(a for a in v if a[0] not in ("ti", "skills"))))}
                        if any(a[0] not in ("ti", "skills") for a in v) else ())
                return frozenset({("coll", _coll_id(v), self.elements(v))})
            if name == "dict":
                if pos and any(a[0] == "ti" for a in pos[0]):
                    return frozenset(a for a in pos[0] if a[0] == "ti")
                return frozenset({("dict", -1, _E, frozenset().union(*kw.values()) if kw else _E)})
            if name in ("min", "max"):
                return frozenset().union(*pos) if pos else _D
            if name == "enumerate":
                return frozenset({("coll", -1, frozenset({("tuple", (frozenset({INT}),
                                                                     self.elements(pos[0]) if pos else _U))}))})
            if name in ("len", "range"):
                return frozenset({INT}) if name == "len" else frozenset({("coll", -1, frozenset({INT}))})
            if name == "zip":
                return frozenset({("coll", -1, frozenset({("tuple", tuple(self.elements(p) for p in pos))}))})
            if name in ("any", "all", "filter", "map"):
                return _D
            if name == "format":
                return frozenset({_text(_kinds(frozenset().union(*pos)) if pos else ())})
            if name in _DATA_BUILTINS:
                if name == "print":
                    self._print(pos, kw)
                return _D
            return _U
        if tag == "module":
            dotted = f[1]
            root = dotted.split(".")[0]
            if dotted in ("json.load",) and pos and STDIN in pos[0]:
                self.reads |= {"tool", "param", "value", "skill"}
                return frozenset({PAYLOAD})
            if dotted == "json.loads" and pos:
                v = pos[0]
                if any(a[0] == "stdin_text" for a in v):
                    self.reads |= {"tool", "param", "value", "skill"}
                    return frozenset({PAYLOAD})
                if ARGSJSON in v:
                    return frozenset({_ti(())})
                return _D if not _kinds(v) else _U
            if dotted == "json.dumps":
                kinds = _kinds(frozenset().union(*all_args)) if all_args else frozenset()
                return frozenset({_text(kinds)})
            if dotted in ("copy.copy", "copy.deepcopy"):
                return pos[0] if pos else _U
            if root == "re" and dotted.split(".")[-1] in ("match", "fullmatch", "search", "compile", "findall",
                                                          "sub", "split", "finditer"):
                fname = dotted.split(".")[-1]
                pat = arg_nodes[0] if arg_nodes else None
                pi = self.lid(pat) if pat is not None and self._key_of(pat) is not None else None
                if fname == "compile":
                    return frozenset({("regex", pi)}) if pi is not None else _D
                subject = pos[1] if len(pos) > 1 else _E
                self._regex_use(pi, fname, subject, node)
                if pi is not None and TOOL in subject:
                    self.narrow[id(node)] = _alternation(self.lit_value(pi), fname)
                return _D
            if dotted in ("sys.exit", "os._exit"):
                return _D
            if dotted == "sys.stderr.write" or dotted == "sys.stdout.write":
                self.mark_message(frozenset().union(*pos) if pos else _E)
                return _D
            if root in _STDLIB:
                return _D if not any(_kinds(a) for a in all_args) else _U
            kinds = _kinds(frozenset().union(*all_args)) if all_args else frozenset()
            if kinds:
                self.problem(kinds, f"name passed to {dotted}(), outside the standard library", node)
            return _U
        if tag == "func":
            return self.call_function(f[1], pos, kw, node, self_atom=None)
        if tag == "method":
            cls = self.classes_by_id.get(f[1])
            fn = _method_node(cls, f[2]) if cls is not None else None
            if fn is not None:
                return self.call_function(self.lid_func(fn), pos, kw, node, self_atom=("self", f[1]))
            return _D
        if tag == "class":
            return frozenset({("self", f[1])})
        if tag == "bound":
            return self.call_bound(f[1], f[2], pos, kw, arg_nodes, node)
        if tag == "regex":
            return _D
        kinds = _kinds(frozenset().union(*all_args)) if all_args else frozenset()
        if kinds:
            self.problem(kinds, "name passed to a function that cannot be analysed", node)
        return _U

    def _print(self, pos, kw) -> None:
        target = kw.get("file")
        if target is None or any(a[0] == "module" and a[1] == "sys.stderr" for a in target):
            self.mark_message(frozenset().union(*pos) if pos else _E)

    def _regex_use(self, pi: int | None, fname: str, subject: AV, node) -> None:
        kinds = _string_kinds(subject)
        if pi is not None:
            if kinds & {"tool", "skill"} and any(a[0] in ("tool", "skill") for a in subject):
                for k in kinds & {"tool", "skill"}:
                    self.role(pi, ("tool_re" if k == "tool" else "skill_pred", fname))
                if any(a[0] not in ("tool", "skill", "lit", "data") for a in subject):
                    self.problem(kinds, "regular expression over a computed name", node)
            else:
                self.role(pi, ("regex_data",))
                if kinds:
                    self.problem(kinds, "regular expression over a value built from names", node)
        elif kinds:
            self.problem(kinds, "computed regular expression applied to a name", node)

    def call_bound(self, recv: tuple, meth: str, pos, kw, arg_nodes, node) -> AV:
        tag = recv[0]
        recv_av = frozenset({recv})
        if tag in ("payload", "ti", "dict") and meth in ("get", "pop", "setdefault"):
            if not arg_nodes:
                return _U
            found = self.lookup(recv_av, arg_nodes[0], pos[0], node)
            default = pos[1] if len(pos) > 1 else _D
            return found | default
        if tag == "ti":
            if meth == "keys":
                return frozenset({("coll", -1, frozenset({_pk(recv[1])}))})
            if meth == "values":
                return frozenset({("coll", -1, frozenset({_ti(recv[1] + ("*",))}))})
            if meth == "items":
                return frozenset({("coll", -1, frozenset({("tuple", (frozenset({_pk(recv[1])}),
                                                                     frozenset({_ti(recv[1] + ("*",))})))}))})
            if meth == "copy":
                return recv_av
            if meth in ("update", "setdefault"):
                for n in arg_nodes:
                    self.mark_updated(n, recv[1], _Env())
                return _D
            if meth in ("strip", "lower", "upper", "split", "startswith", "endswith", "replace", "format",
                        "join", "isdigit", "isalpha", "count", "find", "index", "rstrip", "lstrip"):
                if meth in _STR_PREDICATES or meth in ("isdigit", "isalpha", "count", "find", "index"):
                    return _D
                return frozenset({_ti(recv[1])}) if meth in ("strip", "lower", "upper", "rstrip", "lstrip") \
                    else _D
            return _D
        if tag == "payload":
            if meth == "keys":
                return frozenset({("coll", -1, frozenset({PKEYS}))})
            if meth in ("values", "items", "copy"):
                self.problem(["tool", "param", "value", "skill"], f"payload.{meth}() exposes every field", node)
                return _U
            return _D
        if tag == "stdin":
            if meth in ("read", "readline"):
                return frozenset({("stdin_text",)})
            return _D
        if tag in ("tool", "skill"):
            if meth in _STR_PREDICATES:
                for n, v in zip(arg_nodes, pos):
                    lits = self.str_lits(v)
                    for i in lits:
                        self.role(i, ("tool_pred" if tag == "tool" else "skill_pred", meth))
                    if isinstance(n, cst.Tuple):
                        for el in n.elements:
                            if self._key_of(el.value) is not None:
                                self.role(self.lid(el.value), ("tool_pred" if tag == "tool" else "skill_pred", meth))
                            else:
                                self.problem([tag], f"{meth}() with a computed argument", node)
                    elif not lits:
                        self.problem([tag], f"{meth}() with a computed argument", node)
                return _D
            return frozenset({_text([tag])})
        if tag == "pk":
            if meth in _STR_PREDICATES:
                self.problem(["param"], f"{meth}() on a parameter key", node)
                return _D
            return frozenset({_text(["param"])})
        if tag in ("lit", "text"):
            kinds = _kinds(frozenset().union(*pos)) if pos else frozenset()
            lits = [recv[1]] if tag == "lit" else list(recv[2])
            if tag == "lit" and meth == "split" and len(arg_nodes) >= 1 and self._key_of(arg_nodes[0]) is not None:
                return frozenset({("split", recv[1], self._key_of(arg_nodes[0]))})
            if tag == "lit" and meth == "split" and not arg_nodes:
                return frozenset({("split", recv[1], None)})
            if meth in ("format", "join"):
                extra: list[int] = []
                for v in pos + list(kw.values()):
                    for a in (self.elements(v) if meth == "join" else v):
                        if a[0] == "lit":
                            extra.append(a[1])
                        elif a[0] == "text":
                            extra.extend(a[2])
                own = kinds | (recv[1] if tag == "text" else frozenset())
                if meth == "join":
                    own = own | _kinds(frozenset().union(*[self.elements(v) for v in pos]) if pos else _E)
                return frozenset({_text(own, lits + extra)})
            if meth in _STR_PREDICATES or meth in ("isdigit", "isalpha", "isupper", "islower", "count", "find"):
                return _D
            return frozenset({_text(recv[1] if tag == "text" else (), lits)})
        if tag in ("coll", "dict"):
            if meth in _MUTATORS:
                if recv[1] >= 0:
                    self.mutated.add(recv[1])
                if meth in ("pop", "setdefault") and tag == "dict" and arg_nodes:
                    return self.lookup(recv_av, arg_nodes[0], pos[0], node)
                return _D
            if meth == "get" and tag == "coll":
                return _U
            if meth in ("keys",) and tag == "dict":
                return frozenset({("coll", recv[1], recv[2])})
            if meth == "values" and tag == "dict":
                return frozenset({("coll", -1, recv[3])})
            if meth == "items" and tag == "dict":
                return frozenset({("coll", -1, frozenset({("tuple", (recv[2], recv[3]))}))})
            if meth == "copy":
                return recv_av
            return _D
        if tag == "regex":
            if meth in ("match", "fullmatch", "search", "findall", "sub", "split", "finditer"):
                subject = pos[0] if meth != "sub" else (pos[1] if len(pos) > 1 else _E)
                self._regex_use(recv[1], meth, subject, node)
            return _D
        if tag == "split":
            return _D
        if tag in ("data", "unknown", "self") and meth in ("get", "pop", "setdefault", "__getitem__") and arg_nodes \
                and self._key_of(arg_nodes[0]) is not None:
            self.role(self.lid(arg_nodes[0]), ("struct",))
        if tag == "data":
            kinds = _kinds(frozenset().union(*pos)) if pos else frozenset()
            if kinds and meth not in ("write", "append", "add", "extend", "format", "join", "get"):
                self.problem(kinds, f"name passed to .{meth}() of a value that cannot be analysed", node)
            if meth in ("format", "join"):
                return frozenset({_text(kinds)})
            return _D
        return _U

    def ev_BinaryOperation(self, node, env):
        left = self.ev(node.left, env)
        right = self.ev(node.right, env)
        kinds = _kinds(left | right)
        textish = any(a[0] in ("lit", "text", "tool", "skill", "pk") for a in left | right)
        if isinstance(node.operator, cst.Modulo) and any(a[0] == "lit" for a in left):
            lits = [a[1] for a in left if a[0] == "lit"] + [i for a in right if a[0] == "text" for i in a[2]] + \
                   [a[1] for a in right if a[0] == "lit"]
            return frozenset({_text(kinds, lits)})
        if textish and isinstance(node.operator, (cst.Add, cst.Multiply)):
            lits = [a[1] for a in left | right if a[0] == "lit"] + [i for a in left | right if a[0] == "text"
                                                                      for i in a[2]]
            return frozenset({_text(kinds, lits)})
        if isinstance(node.operator, (cst.BitOr, cst.BitAnd, cst.Subtract)) and \
                any(a[0] in ("coll", "dict") for a in left | right):
            elems = frozenset().union(*[a[2] for a in left | right if a[0] in ("coll", "dict")])
            return frozenset({("coll", -1, elems)})
        if left | right and all(a == INT for a in left | right):
            return frozenset({INT})
        return _D if not kinds else frozenset({_text(kinds)})

    def ev_UnaryOperation(self, node, env):
        v = self.ev(node.expression, env)
        if isinstance(node.operator, cst.Minus) and v and all(a == INT for a in v):
            return v
        return _D

    def ev_BooleanOperation(self, node, env):
        left = self.ev(node.left, env)
        saved = self.C
        if isinstance(node.operator, cst.And):
            s = self.narrowing(node.left)
            if s is not None:
                self.C = s if self.C is None else self.C & s
        right = self.ev(node.right, env)
        self.C = saved
        ls, rs = self.narrowing(node.left), self.narrowing(node.right)
        if isinstance(node.operator, cst.And):
            self.narrow[id(node)] = ls if rs is None else (rs if ls is None else ls & rs)
        else:
            self.narrow[id(node)] = None if ls is None or rs is None else ls | rs
        return left | right

    def narrowing(self, node) -> frozenset | None:
        return self.narrow.get(id(node))

    def ev_Comparison(self, node, env):
        left = self.ev(node.left, env)
        result_narrow = None
        for target in node.comparisons:
            right = self.ev(target.comparator, env)
            op = target.operator
            if isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
                self.relate(left, right, node)
                if isinstance(op, (cst.Equal, cst.Is)) and TOOL in left | right:
                    names = frozenset(self.lit_value(i) for i in self.str_lits(right if TOOL in left else left))
                    if names and all(a[0] == "lit" for a in (right if TOOL in left else left)):
                        result_narrow = names
            elif isinstance(op, (cst.In, cst.NotIn)):
                self.member(left, right, node)
                if isinstance(op, cst.In) and TOOL in left:
                    names = self._container_names(right)
                    if names is not None:
                        result_narrow = names
            else:
                kinds = _kinds(left | right) & {"tool", "skill", "param"}
                if any(a[0] in ("tool", "skill", "pk") for a in left | right):
                    self.problem(kinds, "names compared by order", node)
            left = right
        self.narrow[id(node)] = result_narrow
        return _D

    def _container_names(self, c: AV) -> frozenset | None:
        names: set[str] = set()
        for a in c:
            if a[0] == "tuple":
                continue
            if a[0] in ("coll", "dict") and a[1] >= 0 and a[1] not in self.mutated:
                elems = a[2]
                if not elems or any(e[0] != "lit" for e in elems):
                    return None
                names |= {self.lit_value(e[1]) for e in elems if isinstance(self.lit_value(e[1]), str)}
            else:
                return None
        return frozenset(names) if names else None

    def ev_IfExp(self, node, env):
        self.ev(node.test, env)
        saved = self.C
        s = self.narrowing(node.test)
        if s is not None:
            self.C = s if self.C is None else self.C & s
        body = self.ev(node.body, env)
        self.C = saved
        return body | self.ev(node.orelse, env)

    def _coll_literal(self, node, env) -> AV:
        elems: set = set()
        for el in node.elements:
            v = self.ev(el.value, env)
            elems |= self.elements(v) if isinstance(el, cst.StarredElement) else v
        idx = len(self.coll_nodes)
        self.coll_nodes.append(node)
        return frozenset({("coll", idx, frozenset(elems))})

    def ev_List(self, node, env):
        return self._coll_literal(node, env)

    def ev_Set(self, node, env):
        return self._coll_literal(node, env)

    def ev_Tuple(self, node, env):
        out = self._coll_literal(node, env)
        if not any(isinstance(e, cst.StarredElement) for e in node.elements):
            parts = tuple(self.ev(e.value, env) for e in node.elements)
            out = out | frozenset({("tuple", parts)})
        return out

    def ev_Dict(self, node, env):
        keys: set = set()
        vals: set = set()
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                k = self.ev(el.key, env)
                for i in self.str_lits(k):
                    self.role(i, ("dictkey",))
                keys |= k
                v = self.ev(el.value, env)
                vals |= v
                key = self._key_of(el.key)
                if key in MESSAGE_KEYS:
                    self.mark_message(v)
                if key in UPDATED_KEYS:
                    self.mark_updated(el.value, (), env)
            else:
                v = self.ev(el.value, env)
                for a in v:
                    if a[0] == "dict":
                        keys |= a[2]
                        vals |= a[3]
                    elif a[0] == "ti":
                        vals.add(_ti(a[1] + ("*",)))
        idx = len(self.dict_nodes) + 100000
        self.dict_nodes.append(node)
        self.nodes_by_dict[idx] = node
        return frozenset({("dict", idx, frozenset(keys), frozenset(vals))})

    def _comp(self, node, env, elt_fn) -> AV:
        inner = _Env(env)
        saved = self.C
        clause = node.for_in
        while clause is not None:
            it = self.ev(clause.iter, inner)
            self.bind(clause.target, self.elements(it), inner)
            for cond in clause.ifs:
                self.ev(cond.test, inner)
                s = self.narrowing(cond.test)
                if s is not None:
                    self.C = s if self.C is None else self.C & s
            clause = clause.inner_for_in
        out = elt_fn(inner)
        self.C = saved
        return out

    def ev_ListComp(self, node, env):
        return self._comp(node, env, lambda e: frozenset({("coll", -1, self.ev(node.elt, e))}))

    ev_SetComp = ev_GeneratorExp = ev_ListComp

    def ev_DictComp(self, node, env):
        return self._comp(node, env, lambda e: frozenset({("dict", -1, self.ev(node.key, e), self.ev(node.value, e))}))

    def ev_NamedExpr(self, node, env):
        v = self.ev(node.value, env)
        self.bind(node.target, v, env)
        return v

    def ev_Lambda(self, node, env):
        idx = len(self.funcs)
        self.funcs.append((node, env))
        return frozenset({("func", idx)})

    def ev_Await(self, node, env):
        return self.ev(node.expression, env)

    def ev_StarredElement(self, node, env):
        return self.ev(node.value, env)

    # -- functions
    def lid_func(self, fn: cst.FunctionDef) -> int:
        for i, (n, _) in enumerate(self.funcs):
            if n is fn:
                return i
        self.funcs.append((fn, self.module_env))
        return len(self.funcs) - 1

    def call_function(self, idx: int, pos: list, kw: dict, node, self_atom) -> AV:
        fn, defenv = self.funcs[idx]
        key = (idx, tuple(pos), tuple(sorted(kw.items())), self.C, self_atom)
        if key in self.memo:
            return self.memo[key]
        if key in self.active or self.depth > 12:
            return _U
        self.active.add(key)
        self.depth += 1
        env = _Env(defenv)
        params = fn.params
        plist = list(params.posonly_params) + list(params.params)
        args = list(pos)
        if self_atom is not None and plist:
            env.vars[plist[0].name.value] = frozenset({self_atom})
            plist = plist[1:]
        for i, p in enumerate(plist):
            if i < len(args):
                env.vars[p.name.value] = args[i]
            elif p.name.value in kw:
                env.vars[p.name.value] = kw[p.name.value]
            elif p.default is not None:
                env.vars[p.name.value] = self.ev(p.default, self.module_env)
            else:
                env.vars[p.name.value] = _U
        for p in params.kwonly_params:
            env.vars[p.name.value] = kw.get(p.name.value) or (self.ev(p.default, self.module_env)
                                                               if p.default is not None else _U)
        if isinstance(params.star_arg, cst.Param):
            env.vars[params.star_arg.name.value] = frozenset({("coll", -1, frozenset().union(*args[len(plist):])
                                                               if len(args) > len(plist) else _E)})
        if params.star_kwarg is not None:
            env.vars[params.star_kwarg.name.value] = _U
        self.returns_stack.append(set())
        if isinstance(fn, cst.Lambda):
            self.returns_stack[-1] |= self.ev(fn.body, env)
        else:
            self.block(fn.body, env)
        out = frozenset(self.returns_stack.pop()) or _D
        self.depth -= 1
        self.active.discard(key)
        self.memo[key] = out
        return out

    # -- statements
    def block(self, body, env: _Env) -> None:
        if isinstance(body, cst.IndentedBlock) or isinstance(body, cst.SimpleStatementSuite):
            stmts = body.body
        elif isinstance(body, (list, tuple)):
            stmts = body
        else:
            stmts = [body]
        for st in stmts:
            self.stmt(st, env)

    def stmt(self, st, env: _Env) -> None:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                self.small(small, env)
            return
        m = getattr(self, "st_" + type(st).__name__, None)
        if m is not None:
            m(st, env)

    def small(self, s, env: _Env) -> None:
        if isinstance(s, cst.Assign):
            v = self.ev(s.value, env)
            for t in s.targets:
                self.bind(t.target, v, env)
        elif isinstance(s, cst.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.ev(s.value, env), env)
        elif isinstance(s, cst.AugAssign):
            v = self.ev(s.value, env)
            if isinstance(s.target, cst.Name):
                old = env.get(s.target.value) or _E
                kinds = _kinds(old | v)
                if any(a[0] in ("lit", "text", "tool", "skill", "pk") for a in old | v):
                    lits = [a[1] for a in old | v if a[0] == "lit"] + [i for a in old | v if a[0] == "text"
                                                                        for i in a[2]]
                    env.vars[s.target.value] = old | frozenset({_text(kinds, lits)})
                elif any(a[0] == "coll" for a in old):
                    for a in old:
                        if a[0] == "coll" and a[1] >= 0:
                            self.mutated.add(a[1])
                    env.vars[s.target.value] = old | frozenset({("coll", -1, self.elements(v))})
                else:
                    env.vars[s.target.value] = old | v
            else:
                self.bind(s.target, v, env)
        elif isinstance(s, cst.Expr):
            self.ev(s.value, env)
        elif isinstance(s, cst.Return):
            if s.value is not None and self.returns_stack:
                self.returns_stack[-1] |= self.ev(s.value, env)
        elif isinstance(s, cst.Raise):
            if s.exc is not None:
                v = self.ev(s.exc, env)
                if isinstance(s.exc, cst.Call):
                    for a in s.exc.args:
                        self.mark_message(self.ev(a.value, env))
                del v
        elif isinstance(s, cst.Assert):
            self.ev(s.test, env)
            if s.msg is not None:
                self.mark_message(self.ev(s.msg, env))
        elif isinstance(s, cst.Import):
            for alias in s.names:
                dotted = _dotted(alias.name)
                if alias.asname is not None:
                    env.vars[alias.asname.name.value] = frozenset({("module", dotted)})
                else:
                    env.vars[dotted.split(".")[0]] = frozenset({("module", dotted.split(".")[0])})
        elif isinstance(s, cst.ImportFrom):
            mod = _dotted(s.module) if s.module is not None else ""
            if isinstance(s.names, cst.ImportStar):
                self.problem(["tool", "skill", "param", "value"], "star import", s)
                return
            for alias in s.names:
                name = _dotted(alias.name)
                bound = alias.asname.name.value if alias.asname is not None else name
                env.vars[bound] = frozenset({("module", f"{mod}.{name}" if mod else name)})
        elif isinstance(s, cst.Global):
            for n in s.names:
                cur = self.module_env.vars.get(n.name.value, _E)
                self.module_env.vars[n.name.value] = cur | _U
                for a in cur:
                    if a[0] in ("coll", "dict") and a[1] >= 0:
                        self.mutated.add(a[1])
        elif isinstance(s, cst.Del):
            pass

    def bind(self, target, v: AV, env: _Env) -> None:
        if isinstance(target, cst.Name):
            env.vars[target.value] = v
        elif isinstance(target, (cst.Tuple, cst.List)):
            tuples = [a for a in v if a[0] == "tuple" and len(a[1]) == len(target.elements)]
            rest = self.elements(frozenset(a for a in v if a[0] != "tuple")) if len(tuples) < len(v) else _E
            for k, el in enumerate(target.elements):
                part = frozenset().union(*[t[1][k] for t in tuples]) if tuples else _E
                self.bind(el.value, part | rest if (part | rest) else _U, env)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, frozenset({("coll", -1, self.elements(v))}), env)
        elif isinstance(target, cst.Subscript):
            base = self.ev(target.value, env)
            if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                idx = target.slice[0].slice.value
                key = self.ev(idx, env)
                self.lookup(base, idx, key, target, store=True)
                for a in base:
                    if a[0] in ("coll", "dict") and a[1] >= 0:
                        self.mutated.add(a[1])
        elif isinstance(target, cst.Attribute):
            self.ev(target.value, env)

    def st_If(self, st, env):
        self.ev(st.test, env)
        s = self.narrowing(st.test)
        saved = self.C
        body_env = env.copy()
        if s is not None:
            self.C = s if self.C is None else self.C & s
        self.block(st.body, body_env)
        self.C = saved
        else_env = env.copy()
        if st.orelse is not None:
            if isinstance(st.orelse, cst.If):
                self.st_If(st.orelse, else_env)
            else:
                self.block(st.orelse.body, else_env)
        env.join(body_env, else_env)

    def st_For(self, st, env):
        it = self.ev(st.iter, env)
        for _ in range(2):
            loop_env = env.copy()
            self.bind(st.target, self.elements(it), loop_env)
            self.block(st.body, loop_env)
            env.join(loop_env)
        if st.orelse is not None:
            self.block(st.orelse.body, env)

    def st_While(self, st, env):
        for _ in range(2):
            self.ev(st.test, env)
            loop_env = env.copy()
            self.block(st.body, loop_env)
            env.join(loop_env)
        if st.orelse is not None:
            self.block(st.orelse.body, env)

    def st_Try(self, st, env):
        body_env = env.copy()
        self.block(st.body, body_env)
        envs = [body_env]
        for h in st.handlers:
            h_env = env.copy()
            h_env.join(body_env)
            if h.type is not None:
                self.ev(h.type, h_env)
            if h.name is not None and isinstance(h.name.name, cst.Name):
                h_env.vars[h.name.name.value] = _D
            self.block(h.body, h_env)
            envs.append(h_env)
        if st.orelse is not None:
            self.block(st.orelse.body, body_env)
        env.join(*envs)
        if st.finalbody is not None:
            self.block(st.finalbody.body, env)

    st_TryStar = st_Try

    def st_With(self, st, env):
        for item in st.items:
            v = self.ev(item.item, env)
            if item.asname is not None:
                self.bind(item.asname.name, _D if not _kinds(v) else v, env)
        self.block(st.body, env)

    def st_FunctionDef(self, st, env):
        idx = len(self.funcs)
        self.funcs.append((st, env))
        env.vars[st.name.value] = frozenset({("func", idx)})

    def st_ClassDef(self, st, env):
        cid = len(self.class_list)
        self.class_list.append(st)
        self.classes_by_id[cid] = st
        self.classes[st.name.value] = st
        env.vars[st.name.value] = frozenset({("class", cid)})

    def st_Match(self, st, env):
        subject = self.ev(st.subject, env)
        envs = []
        for case in st.cases:
            c_env = env.copy()
            names = self.pattern(case.pattern, subject, c_env, case)
            saved = self.C
            if names is not None and TOOL in subject:
                self.C = names if self.C is None else self.C & names
            if case.guard is not None:
                self.ev(case.guard, c_env)
            self.block(case.body, c_env)
            self.C = saved
            envs.append(c_env)
        env.join(*envs)

    def pattern(self, pat, subject: AV, env: _Env, case) -> frozenset | None:
        """Bind names and give roles for ``case pat``; returns the literal strings matched (or None)."""
        if isinstance(pat, cst.MatchValue):
            v = self.ev(pat.value, env)
            self.relate(subject, v, case)
            lits = self.str_lits(v)
            return frozenset(self.lit_value(i) for i in lits) if lits and len(lits) == len(v) else None
        if isinstance(pat, cst.MatchOr):
            out: set = set()
            ok = True
            for el in pat.patterns:
                r = self.pattern(el.pattern, subject, env, case)
                if r is None:
                    ok = False
                else:
                    out |= r
            return frozenset(out) if ok else None
        if isinstance(pat, cst.MatchAs):
            if pat.pattern is not None:
                r = self.pattern(pat.pattern, subject, env, case)
            else:
                r = None
            if pat.name is not None:
                env.vars[pat.name.value] = subject
            return r
        if isinstance(pat, cst.MatchMapping):
            for el in pat.elements:
                key = self.ev(el.key, env)
                value = self.lookup(subject, el.key, key, case)
                self.pattern(el.pattern, value, env, case)
            if pat.rest is not None:
                env.vars[pat.rest.value] = subject
            return None
        if isinstance(pat, cst.MatchSequence):
            for el in pat.patterns:
                if isinstance(el, cst.MatchStar):
                    if el.name is not None:
                        env.vars[el.name.value] = frozenset({("coll", -1, self.elements(subject))})
                else:  # a MatchSequenceElement: its pattern is ``value``
                    self.pattern(el.value, self.elements(subject), env, case)
            return None
        if isinstance(pat, cst.MatchSingleton):
            return None
        kinds = _kinds(subject) & {"tool", "skill", "param"}
        if kinds:
            self.problem(kinds, "match pattern on a name that cannot be resolved", case)
        return None

    # -- drivers
    def run(self, entries: tuple[str, ...]) -> str | None:
        self.funcs: list = []
        self.returns_stack: list[set] = [set()]
        self.coll_nodes: list = []
        self.dict_nodes: list = []
        self.nodes_by_dict: dict = {}
        self.class_list: list = []
        self.classes_by_id: dict = {}
        self.module_env = _Env()
        if self.style == "script":
            self.module_env.vars["__name__"] = _D
            self.block(self.module.body, self.module_env)
            return None
        self.block(self.module.body, self.module_env)
        for entry in entries:
            if self.style == "function":
                v = self.module_env.vars.get(entry)
                funcs = [a for a in (v or ()) if a[0] == "func"]
                if not funcs:
                    return f"entry function {entry!r} is not defined at module level"
                for f in funcs:
                    self.call_function(f[1], [frozenset({PAYLOAD})], {}, self.funcs[f[1]][0], None)
            else:
                cls_name, _, meth = entry.partition(".")
                cls = self.classes.get(cls_name)
                fn = _method_node(cls, meth) if cls is not None else None
                if fn is None:
                    return f"entry method {entry!r} is not defined"
                cid = next(k for k, c in self.classes_by_id.items() if c is cls)
                params = [p.name.value for p in list(fn.params.posonly_params) + list(fn.params.params)][1:]
                args = []
                for k, p in enumerate(params):
                    if k == 0:
                        args.append(frozenset({CTX}))
                    elif p == "tool":
                        args.append(frozenset({TOOLOBJ}))
                    else:
                        args.append(_D)
                self.call_function(self.lid_func(fn), args, {}, fn, self_atom=("self", cid))
        return None

    def finish(self) -> None:
        """Problems that depend on the whole walk: name tables mutated at run time."""
        for cid, kinds, tools, line in self.member_uses:
            if cid in self.mutated and kinds & {"tool", "skill", "param"}:
                self.problems.append(Problem(frozenset(kinds & {"tool", "skill", "param"}), tools,
                                             "a table of names is changed at run time", f"line {line}", line))


_ALT = __import__("re").compile(r"^\^?\(?([A-Za-z0-9_\-]+(?:\|[A-Za-z0-9_\-]+)*)\)?\$?$")


def _alternation(pattern: Any, fname: str) -> frozenset | None:
    """The names a regex test can match when it is a plain alternation anchored at both ends."""
    if not isinstance(pattern, str):
        return None
    m = _ALT.match(pattern)
    if not m:
        return None
    anchored = fname == "fullmatch" or (pattern.endswith("$") and (fname == "match" or pattern.startswith("^")))
    return frozenset(m.group(1).split("|")) if anchored else None


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _method_node(cls: cst.ClassDef | None, name: str):
    if cls is None:
        return None
    for st in cls.body.body:
        if isinstance(st, cst.FunctionDef) and st.name.value == name:
            return st
    return None



def _coll_id(v: AV) -> int:
    ids = [a[1] for a in v if a[0] == "coll"]
    return ids[0] if len(ids) == 1 and len(v) == 1 else -1



def default_entries(module: cst.Module, style: str, entry: str | None) -> tuple[str, ...]:
    if style == "script":
        return ("__main__",)
    if style == "method":
        cls_name = entry.partition(".")[0] if entry else ""
        for st in module.body:
            if isinstance(st, cst.ClassDef) and st.name.value == cls_name:
                return tuple(f"{cls_name}.{m.name.value}" for m in st.body.body
                             if isinstance(m, cst.FunctionDef) and m.name.value in AGENT_EVENTS)
        return (entry,) if entry else ()
    return (entry,) if entry else ()


_CACHE: OrderedDict[tuple[str, str | None], Analysis] = OrderedDict()
_CACHE_SIZE = 4096
_STATS = {"hits": 0, "misses": 0, "transported": 0, "carried": 0}


def _remember(key: tuple[str, str | None], an: Analysis) -> None:
    _CACHE[key] = an
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)


def cache_stats() -> dict:
    """Hits, misses and analyses carried over from an edit (see :func:`transport`)."""
    return dict(_STATS, size=len(_CACHE))


def analyze(source: str, entry: str | None = None) -> Analysis:
    """Analyse hook ``source`` whose entry is ``entry`` (function name, ``"__main__"`` or ``"Class.method"``).

    Methods of an Agents SDK hooks class are analysed together (every ``on_*``
    method of the class), since they share the source. Cached per (source, entry).
    """
    key = (source, entry)
    an = _CACHE.get(key)
    if an is not None:
        _STATS["hits"] += 1
        _CACHE.move_to_end(key)
        return an
    _STATS["misses"] += 1
    an = _analyze(source, entry)
    _remember(key, an)
    return an


def _analyze(source: str, entry: str | None) -> Analysis:
    style = entry_style(entry)
    try:
        module = _parse(source)
    except cst.ParserSyntaxError as exc:
        return Analysis(source, style, (), (), (), error=f"hook source does not parse: {str(exc).splitlines()[0]}",
                        entry=entry)
    if entry is None:
        return Analysis(source, style, (), (), (), error="the hook has no entry; set 'entry' to its function name")
    registry, spans = find_literals(source, module)
    interp = _Interp(module, source.encode("utf-8"), spans, style, registry)
    entries = default_entries(module, style, entry)
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
            prefix, quote, _ = string_parts(node)
        elif kind == "concat":
            parts = tuple(interp.lid(p) for p in concat_parts(node) if id(p) in interp.index)
        sites.append(LiteralSite(i, kind, value if isinstance(value, str) else "", span.start,
                                 span.start + span.length, interp.line(node),
                                 frozenset(interp.roles.get(i, ())), prefix, quote, parts))
    return Analysis(source, style, entries, tuple(sites), tuple(interp.problems), error,
                    frozenset(interp.reads), entry)


# ---------------------------------------------------------------------------- an analysis carried across an edit


def _map_role(role: tuple, tools_map: dict, path_map) -> tuple:
    kind = role[0]
    if kind in ("param", "member", "value"):
        tools = role[1]
        if tools is not None and tools_map:
            tools = frozenset(tools_map.get(t, t) for t in tools)
        return (kind, tools, path_map(role[1], role[2]))
    return role


def _shifter(spliced: Iterable[tuple[int, int, int]]):
    """Where an offset of the old source lands after splices ``(old start, old end, new length)``
    that do not overlap: it moves by the growth of every splice that ends at or before it."""
    deltas = sorted((end, new_len - (end - start)) for start, end, new_len in spliced)
    ends = [e for e, _ in deltas]
    sums = list(itertools.accumulate(d for _, d in deltas))

    def shift(offset: int) -> int:
        k = bisect.bisect_right(ends, offset)
        return offset + (sums[k - 1] if k else 0)

    return shift


def transport(an: Analysis, new_source: str, new_values: dict[int, str], step: dict,
              replaced: list[tuple[int, int, int]]) -> Analysis:
    """The analysis of ``new_source``: ``an``'s source with literal values ``new_values`` (by site index).

    ``replaced`` lists the byte spans spliced, as ``(old start, old end, new length)``.
    A sync edit changes only literal text, so the tree, the data flow and every role
    stay; tool names in constraints, and argument paths of the renamed tool, follow
    the step. Equal to analysing ``new_source`` afresh (tested), at a fraction of the cost.
    """
    key = (new_source, an.entry)
    if key in _CACHE:
        return _CACHE[key]
    op = step.get("op")
    tools_map = {k: v for k, v in step["map"].items() if k != v} if op == "tools" else {}
    pairs = sorted(((tuple(a), tuple(b)) for a, b in step.get("paths", ())), key=lambda p: -len(p[0]))
    tool = step.get("tool")

    def path_map(tools, path):
        if op != "params" or (tools is not None and tool not in tools):
            return path
        for src, dst in pairs:
            if path[:len(src)] == src:
                return dst + path[len(src):]
        return path

    shift = _shifter((start, end, new_len) for start, end, new_len in replaced)

    # only tool renames (tool sets of constraints) and parameter renames (argument paths) change roles
    mapped: dict | None = {} if tools_map or op == "params" else None
    sites = []
    for site in an.sites:
        roles = site.roles
        if mapped is not None and roles:
            new_roles = []
            changed = False
            for r in roles:
                m = mapped.get(r)
                if m is None:
                    m = mapped[r] = _map_role(r, tools_map, path_map)
                changed = changed or m != r
                new_roles.append(m)
            if changed:
                roles = frozenset(new_roles)
        value = new_values.get(site.index, site.value)
        start, end = shift(site.start), shift(site.end)
        if value is site.value and start == site.start and end == site.end and roles is site.roles:
            sites.append(site)
        else:
            sites.append(LiteralSite(site.index, site.kind, value, start, end, site.line, roles, site.prefix,
                                     site.quote, site.parts))
    problems = tuple(dataclasses.replace(p, tools=frozenset(tools_map.get(t, t) for t in p.tools))
                     if p.tools is not None and tools_map else p for p in an.problems)
    out = Analysis(new_source, an.style, an.entries, tuple(sites), problems, an.error, an.reads, an.entry)
    _STATS["transported"] += 1
    _remember(key, out)
    return out


def carry(an: Analysis, new_source: str, edits: list[tuple[int, int, str]]) -> Analysis | None:
    """The analysis of ``new_source`` = ``an.source`` with ``edits`` applied, without analysing it afresh.

    ``edits`` are ``(start, end, text)`` in byte offsets of ``an.source``, not overlapping. Each
    must be one of two surface edits that change neither the tree's shape nor any literal's
    value (hook.rename_locals, hook.restyle's ``quotes``):

    - an identifier replaced by another, outside every string literal and comment;
    - a whole simple string literal re-quoted: same prefix, same body, another quote.

    Literal sites keep their values, lines and roles; offsets shift and re-quoted sites take
    their new quote. Returns None (the caller analyses afresh) when an edit is neither, when
    the edits do not give ``new_source``, or when ``an`` has an error or problems (their
    details quote code). Equal to analysing ``new_source`` afresh (tested).
    """
    if an.error is not None or an.problems:
        return None
    key = (new_source, an.entry)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    old = an.source.encode("utf-8")
    edits = sorted(edits)
    pieces, pos = [], 0
    for start, end, text in edits:
        if start < pos or end < start or end > len(old):
            return None
        pieces.append(old[pos:start])
        pieces.append(text.encode("utf-8"))
        pos = end
    pieces.append(old[pos:])
    if b"".join(pieces) != new_source.encode("utf-8"):
        return None
    simple = {(s.start, s.end): s for s in an.sites if s.kind == "simple"}
    leaves = sorted((s.start, s.end) for s in an.sites if s.kind in ("simple", "ftext", "comment"))
    requoted: dict[int, str] = {}
    for start, end, text in edits:
        site = simple.get((start, end))
        if site is not None:
            prefix = site.prefix
            rest = text[len(prefix):] if text[:len(prefix)] == prefix else None
            if rest is None or len(rest) < 2 or rest[0] not in "'\"" or rest[-1] != rest[0] or rest[:3] in ('"""', "'''"):
                return None
            old_text = old[start:end].decode("utf-8")
            if site.quote not in ("'", '"') or old_text[len(prefix) + 1:-1] != rest[1:-1]:
                return None
            body = rest[1:-1]
            if rest[0] in body or "\\" in body:  # the new quote must not need escaping
                return None
            requoted[site.index] = rest[0]
            continue
        old_text = old[start:end].decode("utf-8", errors="replace")
        if not (old_text.isidentifier() and text.isidentifier()):
            return None
        k = bisect.bisect_right(leaves, (start, len(old) + 1)) - 1
        if k >= 0 and leaves[k][1] > start:  # inside a literal or comment
            return None
        if k + 1 < len(leaves) and leaves[k + 1][0] < end:
            return None
    shift = _shifter((start, end, len(text.encode("utf-8"))) for start, end, text in edits)
    sites = tuple(dataclasses.replace(s, start=shift(s.start), end=shift(s.end),
                                      quote=requoted.get(s.index, s.quote)) for s in an.sites)
    out = Analysis(new_source, an.style, an.entries, sites, an.problems, an.error, an.reads, an.entry)
    _STATS["carried"] += 1
    _remember(key, out)
    return out


__all__ += ["carry"]


def carry_requoted(an: Analysis, new_source: str) -> Analysis | None:
    """:func:`carry` for ``new_source`` = ``an.source`` with some simple string literals re-quoted
    (hook.restyle's ``quotes``); None when ``new_source`` differs in any other way."""
    old, new = an.source.encode("utf-8"), new_source.encode("utf-8")
    if len(old) != len(new):
        return None
    edits = [(s.start, s.end, new[s.start:s.end].decode("utf-8")) for s in an.sites
             if s.kind == "simple" and old[s.start:s.end] != new[s.start:s.end]]
    return carry(an, new_source, edits) if edits else None


__all__ += ["carry_requoted"]
