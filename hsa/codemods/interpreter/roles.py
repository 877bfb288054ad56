"""The roles a literal plays, from what it meets: comparisons, membership, messages, rewritten inputs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import libcst as cst

from hsa.codemods.interpreter.values import AV, EMPTY_AV, Env, name_kinds
from hsa.codemods.results import Problem
from hsa.codemods.spans import literal_value

__all__ = ["Roles"]


class Roles:
    """The literal registry of an :class:`~hsa.codemods.interpreter.Interpreter` and the roles its literals get."""

    # -- the literal registry
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
        """The value of literal ``i`` (None: not a str or bytes literal, or one that does not evaluate), worked out
        once: the roles ask it of the same literal again and again."""
        values = self.lit_values
        if i in values:
            return values[i]
        node = self.nodes[i]
        value = None
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            try:
                value = literal_value(node)
            except Exception:  # noqa: BLE001 - an odd literal is simply not a name
                value = None
        elif isinstance(node, cst.FormattedStringText):
            value = node.value
        values[i] = value
        return value

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
                        self.problem(name_kinds(y), "name compared with a computed string", node)

    def member(self, x: AV, c: AV, node) -> None:
        """``x in c``."""
        for atom in c:
            tag = atom[0]
            if tag == "coll":
                self.relate(x, atom[2], node)
                self.member_uses.append((atom[1], name_kinds(x), self.C, self.line(node)))
            elif tag == "dict":
                self.relate(x, atom[2], node)
                self.member_uses.append((atom[1], name_kinds(x), self.C, self.line(node)))
            elif tag == "ti":
                for i in self.str_lits(x):
                    self.role(i, ("member", self.C, atom[1]))
                if name_kinds(x) & {"tool", "skill", "param"}:
                    self.problem(name_kinds(x) & {"tool", "skill", "param"},
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
                kinds = name_kinds(x)
                for k in ("tool", "skill"):
                    if k in kinds:
                        self.role(atom[1], ("split", k, atom[2]))
                if "param" in kinds:
                    self.problem(["param"], "parameter key looked up in a split string", node)
            elif tag == "lit":
                kinds = name_kinds(x)
                if "tool" in kinds:
                    self.role(atom[1], ("in_text", "tool"))
                if "skill" in kinds:
                    self.role(atom[1], ("in_text", "skill"))
                if "param" in kinds:
                    self.problem(["param"], "parameter key looked up in a string", node)
            elif tag in ("data", "unknown", "text"):
                kinds = name_kinds(x) & {"tool", "skill", "param"}
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

    def mark_updated(self, node: cst.BaseExpression, path: tuple, env: Env) -> None:
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
            v = env.get(node.value) or EMPTY_AV
            for a in v:
                if a[0] == "dict" and a[1] in self.nodes_by_dict:
                    self.mark_updated(self.nodes_by_dict[a[1]], path, env)
