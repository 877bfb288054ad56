"""What an expression evaluates to: literals, names, attributes, lookups, operators, comparisons, containers."""

from __future__ import annotations

import libcst as cst

from hsa.codemods.interpreter.calls import DYNAMIC_BUILTINS
from hsa.codemods.interpreter.values import (ARGSJSON, AV, DATA, DATA_AV, Env, INT, MESSAGE_KEYS, PAYLOAD_KEYS, PKEYS,
                                             SKILL, SKILLS, STDIN, TOOL, UNKNOWN, UNKNOWN_AV, UPDATED_KEYS, name_kinds,
                                             text_atom, ti_atom)
from hsa.codemods.spans import concat_parts, literal_value

__all__ = ["Expressions"]


class Expressions:
    """``ev(node, env)``: the abstract value of an expression (``ev_<NodeClass>`` per node class), narrowing
    the tool-name constraint where a test (``==``, ``in``, ``and``, a regex match) decides the tool."""

    def ev(self, node: cst.BaseExpression, env: Env) -> AV:
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is None:
            for child in node.children:
                if isinstance(child, cst.BaseExpression):
                    self.ev(child, env)
            return UNKNOWN_AV
        return m(node, env)

    def ev_SimpleString(self, node, env):
        return frozenset({("lit", self.lid(node))}) if "b" not in node.prefix.lower() else DATA_AV

    def ev_ConcatenatedString(self, node, env):
        if any(isinstance(p, cst.FormattedString) for p in (node.left, node.right)):
            self.ev(node.left, env)
            self.ev(node.right, env)
            parts = [self.lid(n) for n in concat_parts(node) if isinstance(n, cst.SimpleString)]
            return frozenset({text_atom((), parts)})
        return frozenset({("lit", self.lid(node))})

    def ev_FormattedString(self, node, env):
        kinds: set[str] = set()
        lits = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                lits.append(self.lid(part))
            else:
                v = self.ev(part.expression, env)
                kinds |= name_kinds(v)
                for a in v:
                    if a[0] == "text":
                        lits.extend(a[2])
                if part.format_spec:
                    for sp in part.format_spec:
                        if isinstance(sp, cst.FormattedStringExpression):
                            self.ev(sp.expression, env)
        return frozenset({text_atom(kinds, lits)})

    def ev_Integer(self, node, env):
        return frozenset({INT})

    def ev_Float(self, node, env):
        return DATA_AV

    ev_Imaginary = ev_Float

    def ev_Ellipsis(self, node, env):
        return DATA_AV

    def ev_Name(self, node, env):
        v = env.get(node.value)
        if v is not None:
            return v
        if node.value in ("True", "False", "None"):
            return DATA_AV
        if node.value == "__name__":
            return DATA_AV
        if node.value in DYNAMIC_BUILTINS:
            return frozenset({("builtin", node.value)})
        import builtins

        if hasattr(builtins, node.value):
            return frozenset({("builtin", node.value)})
        return UNKNOWN_AV

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
        return frozenset(out) or UNKNOWN_AV

    def _key_of(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            try:
                value = literal_value(node)
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
                    kind = PAYLOAD_KEYS.get(k)
                    if kind == "tool":
                        out.add(TOOL)
                        self.reads.add("tool")
                    elif kind == "ti":
                        out.add(ti_atom(()))
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
                    out.add(ti_atom(path + (k,)))
                elif any(x[0] == "pk" for x in key):
                    out.add(ti_atom(path + ("*",)))
                elif key and all(x == INT for x in key):
                    out.add(ti_atom(path + ("[]",)))
                else:
                    lits = self.str_lits(key)
                    for i in lits:
                        self.role(i, ("param", self.C, path + (self.lit_value(i),)))
                        out.add(ti_atom(path + (self.lit_value(i),)))
                    if not lits or any(x[0] != "lit" for x in key):
                        self.problem(["param", "value"], "tool input read with a key that cannot be resolved",
                                     node)
                        out.add(ti_atom(path + ("*",)))
            elif tag == "dict":
                self.relate(key, a[2], node)
                self.member_uses.append((a[1], name_kinds(key), self.C, self.line(node)))
                out |= a[3] | DATA_AV
            elif tag == "coll":
                out |= a[2]
            elif tag == "tuple":
                for part in a[1]:
                    out |= part
            elif tag in ("tool", "skill", "pk", "text"):
                out.add(text_atom(name_kinds(frozenset({a}))))
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
        return frozenset(out) or UNKNOWN_AV

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
        kinds = name_kinds(base) & {"tool", "skill", "param"}
        if any(a[0] in ("tool", "skill", "pk") for a in base):
            return frozenset({text_atom(kinds)})
        if any(a[0] == "ti" for a in base):
            return frozenset({ti_atom(a[1] + ("[]",)) for a in base if a[0] == "ti"})
        if any(a[0] == "skills" for a in base):
            return frozenset({SKILLS})
        return frozenset(a for a in base if a[0] in ("coll",)) or DATA_AV

    def elements(self, av: AV) -> AV:
        out: set = set()
        for a in av:
            tag = a[0]
            if tag == "coll":
                out |= a[2]
            elif tag == "dict":
                out |= a[2]
            elif tag == "ti":
                out.add(ti_atom(a[1] + ("[]",)))
            elif tag == "skills":
                out.add(SKILL)
            elif tag == "payload":
                out.add(PKEYS)
            elif tag in ("tool", "skill", "pk", "text"):
                out.add(text_atom(name_kinds(frozenset({a}))))
            elif tag == "tuple":
                for part in a[1]:
                    out |= part
            elif tag in ("lit", "data", "stdin"):
                out.add(DATA)
            elif tag == "split":
                out.add(("splitpart", a[1], a[2]))
            else:
                out.add(UNKNOWN)
        return frozenset(out) or UNKNOWN_AV

    def ev_BinaryOperation(self, node, env):
        left = self.ev(node.left, env)
        right = self.ev(node.right, env)
        kinds = name_kinds(left | right)
        textish = any(a[0] in ("lit", "text", "tool", "skill", "pk") for a in left | right)
        if isinstance(node.operator, cst.Modulo) and any(a[0] == "lit" for a in left):
            lits = [a[1] for a in left if a[0] == "lit"] + [i for a in right if a[0] == "text" for i in a[2]] + \
                   [a[1] for a in right if a[0] == "lit"]
            return frozenset({text_atom(kinds, lits)})
        if textish and isinstance(node.operator, (cst.Add, cst.Multiply)):
            lits = [a[1] for a in left | right if a[0] == "lit"] + [i for a in left | right if a[0] == "text"
                                                                      for i in a[2]]
            return frozenset({text_atom(kinds, lits)})
        if isinstance(node.operator, (cst.BitOr, cst.BitAnd, cst.Subtract)) and \
                any(a[0] in ("coll", "dict") for a in left | right):
            elems = frozenset().union(*[a[2] for a in left | right if a[0] in ("coll", "dict")])
            return frozenset({("coll", -1, elems)})
        if left | right and all(a == INT for a in left | right):
            return frozenset({INT})
        return DATA_AV if not kinds else frozenset({text_atom(kinds)})

    def ev_UnaryOperation(self, node, env):
        v = self.ev(node.expression, env)
        if isinstance(node.operator, cst.Minus) and v and all(a == INT for a in v):
            return v
        return DATA_AV

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
                kinds = name_kinds(left | right) & {"tool", "skill", "param"}
                if any(a[0] in ("tool", "skill", "pk") for a in left | right):
                    self.problem(kinds, "names compared by order", node)
            left = right
        self.narrow[id(node)] = result_narrow
        return DATA_AV

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
                        vals.add(ti_atom(a[1] + ("*",)))
        idx = len(self.dict_nodes) + 100000
        self.dict_nodes.append(node)
        self.nodes_by_dict[idx] = node
        return frozenset({("dict", idx, frozenset(keys), frozenset(vals))})

    def _comp(self, node, env, elt_fn) -> AV:
        inner = Env(env)
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
