"""Calls: builtins, the standard library (``json``, ``re``, ``sys``), methods of tracked values, the hook's own code."""

from __future__ import annotations

import re
import sys
from typing import Any

import libcst as cst

from hsa.codemods.interpreter.values import (ARGSJSON, AV, DATA_AV, EMPTY_AV, Env, INT, PAYLOAD, PKEYS, STDIN, TOOL,
                                             UNKNOWN_AV, name_kinds, pk_atom, string_kinds, text_atom, ti_atom)

__all__ = ["Calls", "DYNAMIC_BUILTINS", "method_node"]

_STDLIB = frozenset(sys.stdlib_module_names)
#: Builtins that run or reach code by name: a hook using one cannot be analysed.
DYNAMIC_BUILTINS = frozenset({"eval", "exec", "compile", "globals", "locals", "vars", "__import__", "setattr",
                              "delattr"})
_STR_PREDICATES = frozenset({"startswith", "endswith"})
_DATA_BUILTINS = frozenset({"len", "isinstance", "issubclass", "bool", "int", "float", "abs", "round", "range",
                            "print", "hash", "id", "type", "callable", "ord", "chr", "repr", "ascii", "divmod",
                            "pow", "sum", "hex", "oct", "bin", "iter", "next", "object", "super", "Exception",
                            "ValueError", "KeyError", "TypeError", "RuntimeError", "PermissionError",
                            "SystemExit", "NotImplementedError", "AssertionError"})
_COPY_BUILTINS = frozenset({"set", "frozenset", "list", "tuple", "sorted", "reversed"})
_MUTATORS = frozenset({"add", "append", "extend", "insert", "update", "remove", "discard", "clear", "pop",
                       "setdefault", "popitem"})


class Calls:
    """What a call returns and the roles its arguments get (``call`` by callee atom, ``call_bound`` by method)."""

    def ev_Call(self, node, env):
        fn = self.ev(node.func, env)
        args = [self.ev(a.value, env) for a in node.args]
        kw = {a.keyword.value: v for a, v in zip(node.args, args) if a.keyword is not None}
        pos = [v for a, v in zip(node.args, args) if a.keyword is None and not a.star]
        arg_nodes = [a.value for a in node.args if a.keyword is None and not a.star]
        out: set = set()
        for f in fn:
            out |= self.call(f, pos, kw, arg_nodes, node, env)
        return frozenset(out) or UNKNOWN_AV

    def call(self, f: tuple, pos: list, kw: dict, arg_nodes: list, node, env) -> AV:
        tag = f[0]
        all_args = pos + list(kw.values())
        if tag == "builtin":
            name = f[1]
            if name in DYNAMIC_BUILTINS:
                self.problem(["tool", "skill", "param", "value"], f"dynamic code ({name})", node)
                return UNKNOWN_AV
            if name in ("getattr", "hasattr"):
                if len(arg_nodes) >= 2 and self._key_of(arg_nodes[1]) is not None:
                    self.role(self.lid(arg_nodes[1]), ("struct",))
                    return DATA_AV
                self.problem(["tool", "skill", "param", "value"], "getattr with a computed attribute name", node)
                return UNKNOWN_AV
            if name == "str":
                return pos[0] if pos else DATA_AV
            if name in _COPY_BUILTINS:
                if not pos:
                    return frozenset({("coll", -1, EMPTY_AV)})
                v = pos[0]
                if any(a[0] in ("ti", "skills") for a in v):
                    return frozenset(a for a in v if a[0] in ("ti", "skills")) | frozenset(
                        {("coll", -1, self.elements(frozenset(a for a in v if a[0] not in ("ti", "skills"))))}
                        if any(a[0] not in ("ti", "skills") for a in v) else ())
                return frozenset({("coll", _coll_id(v), self.elements(v))})
            if name == "dict":
                if pos and any(a[0] == "ti" for a in pos[0]):
                    return frozenset(a for a in pos[0] if a[0] == "ti")
                return frozenset({("dict", -1, EMPTY_AV, frozenset().union(*kw.values()) if kw else EMPTY_AV)})
            if name in ("min", "max"):
                return frozenset().union(*pos) if pos else DATA_AV
            if name == "enumerate":
                return frozenset({("coll", -1, frozenset({("tuple", (frozenset({INT}),
                                                                     self.elements(pos[0]) if pos else UNKNOWN_AV))}))})
            if name in ("len", "range"):
                return frozenset({INT}) if name == "len" else frozenset({("coll", -1, frozenset({INT}))})
            if name == "zip":
                return frozenset({("coll", -1, frozenset({("tuple", tuple(self.elements(p) for p in pos))}))})
            if name in ("any", "all", "filter", "map"):
                return DATA_AV
            if name == "format":
                return frozenset({text_atom(name_kinds(frozenset().union(*pos)) if pos else ())})
            if name in _DATA_BUILTINS:
                if name == "print":
                    self._print(pos, kw)
                return DATA_AV
            return UNKNOWN_AV
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
                    return frozenset({ti_atom(())})
                return DATA_AV if not name_kinds(v) else UNKNOWN_AV
            if dotted == "json.dumps":
                kinds = name_kinds(frozenset().union(*all_args)) if all_args else frozenset()
                return frozenset({text_atom(kinds)})
            if dotted in ("copy.copy", "copy.deepcopy"):
                return pos[0] if pos else UNKNOWN_AV
            if root == "re" and dotted.split(".")[-1] in ("match", "fullmatch", "search", "compile", "findall",
                                                          "sub", "split", "finditer"):
                fname = dotted.split(".")[-1]
                pat = arg_nodes[0] if arg_nodes else None
                pi = self.lid(pat) if pat is not None and self._key_of(pat) is not None else None
                if fname == "compile":
                    return frozenset({("regex", pi)}) if pi is not None else DATA_AV
                subject = pos[1] if len(pos) > 1 else EMPTY_AV
                self._regex_use(pi, fname, subject, node)
                if pi is not None and TOOL in subject:
                    self.narrow[id(node)] = _alternation(self.lit_value(pi), fname)
                return DATA_AV
            if dotted in ("sys.exit", "os._exit"):
                return DATA_AV
            if dotted == "sys.stderr.write" or dotted == "sys.stdout.write":
                self.mark_message(frozenset().union(*pos) if pos else EMPTY_AV)
                return DATA_AV
            if root in _STDLIB:
                return DATA_AV if not any(name_kinds(a) for a in all_args) else UNKNOWN_AV
            kinds = name_kinds(frozenset().union(*all_args)) if all_args else frozenset()
            if kinds:
                self.problem(kinds, f"name passed to {dotted}(), outside the standard library", node)
            return UNKNOWN_AV
        if tag == "func":
            return self.call_function(f[1], pos, kw, node, self_atom=None)
        if tag == "method":
            cls = self.classes_by_id.get(f[1])
            fn = method_node(cls, f[2]) if cls is not None else None
            if fn is not None:
                return self.call_function(self.lid_func(fn), pos, kw, node, self_atom=("self", f[1]))
            return DATA_AV
        if tag == "class":
            return frozenset({("self", f[1])})
        if tag == "bound":
            return self.call_bound(f[1], f[2], pos, kw, arg_nodes, node)
        if tag == "regex":
            return DATA_AV
        kinds = name_kinds(frozenset().union(*all_args)) if all_args else frozenset()
        if kinds:
            self.problem(kinds, "name passed to a function that cannot be analysed", node)
        return UNKNOWN_AV

    def _print(self, pos, kw) -> None:
        target = kw.get("file")
        if target is None or any(a[0] == "module" and a[1] == "sys.stderr" for a in target):
            self.mark_message(frozenset().union(*pos) if pos else EMPTY_AV)

    def _regex_use(self, pi: int | None, fname: str, subject: AV, node) -> None:
        kinds = string_kinds(subject)
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
                return UNKNOWN_AV
            found = self.lookup(recv_av, arg_nodes[0], pos[0], node)
            default = pos[1] if len(pos) > 1 else DATA_AV
            return found | default
        if tag == "ti":
            if meth == "keys":
                return frozenset({("coll", -1, frozenset({pk_atom(recv[1])}))})
            if meth == "values":
                return frozenset({("coll", -1, frozenset({ti_atom(recv[1] + ("*",))}))})
            if meth == "items":
                return frozenset({("coll", -1, frozenset({("tuple", (frozenset({pk_atom(recv[1])}),
                                                                     frozenset({ti_atom(recv[1] + ("*",))})))}))})
            if meth == "copy":
                return recv_av
            if meth in ("update", "setdefault"):
                for n in arg_nodes:
                    self.mark_updated(n, recv[1], Env())
                return DATA_AV
            if meth in ("strip", "lower", "upper", "split", "startswith", "endswith", "replace", "format",
                        "join", "isdigit", "isalpha", "count", "find", "index", "rstrip", "lstrip"):
                if meth in _STR_PREDICATES or meth in ("isdigit", "isalpha", "count", "find", "index"):
                    return DATA_AV
                return frozenset({ti_atom(recv[1])}) if meth in ("strip", "lower", "upper", "rstrip", "lstrip") \
                    else DATA_AV
            return DATA_AV
        if tag == "payload":
            if meth == "keys":
                return frozenset({("coll", -1, frozenset({PKEYS}))})
            if meth in ("values", "items", "copy"):
                self.problem(["tool", "param", "value", "skill"], f"payload.{meth}() exposes every field", node)
                return UNKNOWN_AV
            return DATA_AV
        if tag == "stdin":
            if meth in ("read", "readline"):
                return frozenset({("stdin_text",)})
            return DATA_AV
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
                return DATA_AV
            return frozenset({text_atom([tag])})
        if tag == "pk":
            if meth in _STR_PREDICATES:
                self.problem(["param"], f"{meth}() on a parameter key", node)
                return DATA_AV
            return frozenset({text_atom(["param"])})
        if tag in ("lit", "text"):
            kinds = name_kinds(frozenset().union(*pos)) if pos else frozenset()
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
                    own = own | name_kinds(frozenset().union(*[self.elements(v) for v in pos]) if pos else EMPTY_AV)
                return frozenset({text_atom(own, lits + extra)})
            if meth in _STR_PREDICATES or meth in ("isdigit", "isalpha", "isupper", "islower", "count", "find"):
                return DATA_AV
            return frozenset({text_atom(recv[1] if tag == "text" else (), lits)})
        if tag in ("coll", "dict"):
            if meth in _MUTATORS:
                if recv[1] >= 0:
                    self.mutated.add(recv[1])
                if meth in ("pop", "setdefault") and tag == "dict" and arg_nodes:
                    return self.lookup(recv_av, arg_nodes[0], pos[0], node)
                return DATA_AV
            if meth == "get" and tag == "coll":
                return UNKNOWN_AV
            if meth in ("keys",) and tag == "dict":
                return frozenset({("coll", recv[1], recv[2])})
            if meth == "values" and tag == "dict":
                return frozenset({("coll", -1, recv[3])})
            if meth == "items" and tag == "dict":
                return frozenset({("coll", -1, frozenset({("tuple", (recv[2], recv[3]))}))})
            if meth == "copy":
                return recv_av
            return DATA_AV
        if tag == "regex":
            if meth in ("match", "fullmatch", "search", "findall", "sub", "split", "finditer"):
                subject = pos[0] if meth != "sub" else (pos[1] if len(pos) > 1 else EMPTY_AV)
                self._regex_use(recv[1], meth, subject, node)
            return DATA_AV
        if tag == "split":
            return DATA_AV
        if tag in ("data", "unknown", "self") and meth in ("get", "pop", "setdefault", "__getitem__") and arg_nodes \
                and self._key_of(arg_nodes[0]) is not None:
            self.role(self.lid(arg_nodes[0]), ("struct",))
        if tag == "data":
            kinds = name_kinds(frozenset().union(*pos)) if pos else frozenset()
            if kinds and meth not in ("write", "append", "add", "extend", "format", "join", "get"):
                self.problem(kinds, f"name passed to .{meth}() of a value that cannot be analysed", node)
            if meth in ("format", "join"):
                return frozenset({text_atom(kinds)})
            return DATA_AV
        return UNKNOWN_AV

    # -- the hook's own functions
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
            return UNKNOWN_AV
        self.active.add(key)
        self.depth += 1
        env = Env(defenv)
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
                env.vars[p.name.value] = UNKNOWN_AV
        for p in params.kwonly_params:
            env.vars[p.name.value] = kw.get(p.name.value) or (self.ev(p.default, self.module_env)
                                                               if p.default is not None else UNKNOWN_AV)
        if isinstance(params.star_arg, cst.Param):
            env.vars[params.star_arg.name.value] = frozenset({("coll", -1, frozenset().union(*args[len(plist):])
                                                               if len(args) > len(plist) else EMPTY_AV)})
        if params.star_kwarg is not None:
            env.vars[params.star_kwarg.name.value] = UNKNOWN_AV
        self.returns_stack.append(set())
        if isinstance(fn, cst.Lambda):
            self.returns_stack[-1] |= self.ev(fn.body, env)
        else:
            self.block(fn.body, env)
        out = frozenset(self.returns_stack.pop()) or DATA_AV
        self.depth -= 1
        self.active.discard(key)
        self.memo[key] = out
        return out


_ALT = re.compile(r"^\^?\(?([A-Za-z0-9_\-]+(?:\|[A-Za-z0-9_\-]+)*)\)?\$?$")


def _alternation(pattern: Any, fname: str) -> frozenset | None:
    """The names a regex test can match when it is a plain alternation anchored at both ends."""
    if not isinstance(pattern, str):
        return None
    m = _ALT.match(pattern)
    if not m:
        return None
    anchored = fname == "fullmatch" or (pattern.endswith("$") and (fname == "match" or pattern.startswith("^")))
    return frozenset(m.group(1).split("|")) if anchored else None


def method_node(cls: cst.ClassDef | None, name: str):
    if cls is None:
        return None
    for st in cls.body.body:
        if isinstance(st, cst.FunctionDef) and st.name.value == name:
            return st
    return None



def _coll_id(v: AV) -> int:
    ids = [a[1] for a in v if a[0] == "coll"]
    return ids[0] if len(ids) == 1 and len(v) == 1 else -1
