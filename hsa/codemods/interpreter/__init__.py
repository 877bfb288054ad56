"""The abstract interpreter of hook source (see :mod:`hsa.codemods.analysis` for what it finds).

:class:`Interpreter` walks a hook's entry (and every helper it calls) over LibCST nodes; it is
put together from one part per thing it interprets:

- :mod:`~hsa.codemods.interpreter.values`: the value model (atoms, abstract values, environments);
- :mod:`~hsa.codemods.interpreter.roles`: the roles literals get from what they meet;
- :mod:`~hsa.codemods.interpreter.expressions`: expressions;
- :mod:`~hsa.codemods.interpreter.calls`: calls (builtins, the standard library, methods, the hook's functions);
- :mod:`~hsa.codemods.interpreter.statements`: statements and control flow.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from hsa.codemods.interpreter.calls import Calls, method_node
from hsa.codemods.interpreter.expressions import Expressions
from hsa.codemods.interpreter.roles import Roles
from hsa.codemods.interpreter.statements import Statements
from hsa.codemods.interpreter.values import CTX, DATA_AV, Env, PAYLOAD, TOOLOBJ
from hsa.codemods.results import Problem

__all__ = ["Interpreter", "AGENT_EVENTS", "default_entries"]

#: OpenAI Agents SDK hook methods and the harness events they stand for.
AGENT_EVENTS = {"on_tool_start": "pre_tool_use", "on_tool_end": "post_tool_use", "on_agent_start": "agent_start",
                "on_agent_end": "agent_end", "on_handoff": "handoff", "on_llm_start": "llm_start",
                "on_llm_end": "llm_end", "on_start": "agent_start", "on_end": "agent_end"}  # RunHooks and AgentHooks


class Interpreter(Statements, Calls, Expressions, Roles):
    """One walk of one hook source: ``run(entries)``, then ``finish()``; the roles, problems and reads found."""

    def __init__(self, module: cst.Module, source: bytes, spans, style: str, literals: list):
        self.module = module
        self.source_bytes = source
        self.spans = spans
        self.style = style
        self.roles: dict[int, set] = {}
        self.problems: list[Problem] = []
        self.nodes: list[cst.CSTNode] = []
        self.lit_values: dict[int, Any] = {}  # Roles.lit_value's, by literal
        self.index: dict[int, int] = {}
        self.kind_of: dict[int, str] = {}
        self.memo: dict = {}
        self.active: set = set()
        self.narrow: dict[int, frozenset | None] = {}
        self.mutated: set[int] = set()
        self.member_uses: list[tuple[int, frozenset, frozenset | None, int]] = []
        self.reads: set[str] = set()
        self.classes: dict[str, cst.ClassDef] = {}
        self.module_env = Env()
        self.C: frozenset | None = None  # tool-name constraint in force
        self.depth = 0
        for node, kind in literals:  # string literals, f-string texts and comments, in source order
            self._add(node, kind)

    # -- drivers
    def run(self, entries: tuple[str, ...]) -> str | None:
        self.funcs: list = []
        self.returns_stack: list[set] = [set()]
        self.coll_nodes: list = []
        self.dict_nodes: list = []
        self.nodes_by_dict: dict = {}
        self.class_list: list = []
        self.classes_by_id: dict = {}
        self.module_env = Env()
        if self.style == "script":
            self.module_env.vars["__name__"] = DATA_AV
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
                fn = method_node(cls, meth) if cls is not None else None
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
                        args.append(DATA_AV)
                self.call_function(self.lid_func(fn), args, {}, fn, self_atom=("self", cid))
        return None

    def finish(self) -> None:
        """Problems that depend on the whole walk: name tables mutated at run time."""
        for cid, kinds, tools, line in self.member_uses:
            if cid in self.mutated and kinds & {"tool", "skill", "param"}:
                self.problems.append(Problem(frozenset(kinds & {"tool", "skill", "param"}), tools,
                                             "a table of names is changed at run time", f"line {line}", line))


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
