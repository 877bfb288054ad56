"""Statements and control flow: assignments, imports, ``if``/``for``/``while``/``try``/``with``, ``match``."""

from __future__ import annotations

import libcst as cst

from hsa.codemods.interpreter.values import AV, DATA_AV, EMPTY_AV, Env, TOOL, UNKNOWN_AV, name_kinds, text_atom

__all__ = ["Statements"]


class Statements:
    """``block``/``stmt``: run statements over an environment; branches run on copies that are joined after."""

    def block(self, body, env: Env) -> None:
        if isinstance(body, cst.IndentedBlock) or isinstance(body, cst.SimpleStatementSuite):
            stmts = body.body
        elif isinstance(body, (list, tuple)):
            stmts = body
        else:
            stmts = [body]
        for st in stmts:
            self.stmt(st, env)

    def stmt(self, st, env: Env) -> None:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                self.small(small, env)
            return
        m = getattr(self, "st_" + type(st).__name__, None)
        if m is not None:
            m(st, env)

    def small(self, s, env: Env) -> None:
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
                old = env.get(s.target.value) or EMPTY_AV
                kinds = name_kinds(old | v)
                if any(a[0] in ("lit", "text", "tool", "skill", "pk") for a in old | v):
                    lits = [a[1] for a in old | v if a[0] == "lit"] + [i for a in old | v if a[0] == "text"
                                                                        for i in a[2]]
                    env.vars[s.target.value] = old | frozenset({text_atom(kinds, lits)})
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
                cur = self.module_env.vars.get(n.name.value, EMPTY_AV)
                self.module_env.vars[n.name.value] = cur | UNKNOWN_AV
                for a in cur:
                    if a[0] in ("coll", "dict") and a[1] >= 0:
                        self.mutated.add(a[1])
        elif isinstance(s, cst.Del):
            pass

    def bind(self, target, v: AV, env: Env) -> None:
        if isinstance(target, cst.Name):
            env.vars[target.value] = v
        elif isinstance(target, (cst.Tuple, cst.List)):
            tuples = [a for a in v if a[0] == "tuple" and len(a[1]) == len(target.elements)]
            rest = self.elements(frozenset(a for a in v if a[0] != "tuple")) if len(tuples) < len(v) else EMPTY_AV
            for k, el in enumerate(target.elements):
                part = frozenset().union(*[t[1][k] for t in tuples]) if tuples else EMPTY_AV
                self.bind(el.value, part | rest if (part | rest) else UNKNOWN_AV, env)
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
                h_env.vars[h.name.name.value] = DATA_AV
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
                self.bind(item.asname.name, DATA_AV if not name_kinds(v) else v, env)
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

    def pattern(self, pat, subject: AV, env: Env, case) -> frozenset | None:
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
        kinds = name_kinds(subject) & {"tool", "skill", "param"}
        if kinds:
            self.problem(kinds, "match pattern on a name that cannot be resolved", case)
        return None


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""
