"""hook.rename_locals as it was before the splice rewrite (commit 2713d63): an oracle for tests only.

Plus the refusals added later, written here on their own (a parent map, ``ast`` and plain visitors):
helpers used other than as a callee, names that LibCST mis-scopes in comprehensions, every name of a
module that reads frames, names in annotations under ``from __future__ import annotations``, and helpers
of a module that logs (2026-12-06).

tests/test_hook_locals_fast.py checks that :mod:`hsa.codemods.locals` gives exactly what this code gives
(same units, refusals, identifiers and output text of every rename). Do not use it outside the tests.
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
from functools import lru_cache

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope, MetadataWrapper, ParentNodeProvider, ScopeProvider

__all__ = ["LocalUnit", "local_units", "rename_locals", "RenameLocals", "identifiers_of"]

_DYNAMIC_FUNCS = frozenset({"locals", "vars", "dir", "eval", "exec"})


@dataclasses.dataclass(frozen=True)
class LocalUnit:
    """One renameable name: ``key`` is ``"<scope path>:<name>"`` (``"check_reply.visible_length:text"``)."""

    key: str
    name: str
    scope: str
    kind: str  # "local" | "param" | "helper"


class _Index:
    """Scopes, their paths and every Name occurrence of a module, computed once."""

    def __init__(self, module: cst.Module):
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.scopes = self.wrapper.resolve(ScopeProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.module = module
        self.paths: dict[int, str] = {}
        self.scope_node: dict[int, cst.CSTNode] = {}
        self._name_scopes()

    def _name_scopes(self) -> None:
        index = self
        counters: list[int] = [0]
        stack: list[str] = []

        def scope_of(node):
            try:
                return index.scopes[node]
            except KeyError:
                return None

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                stack.append(node.name.value)
                sc = scope_of(node.body)
                if sc is not None:
                    index.paths[id(sc)] = ".".join(stack)
                    index.scope_node[id(sc)] = node
                counters.append(0)

            def leave_FunctionDef(self, node):
                stack.pop()
                counters.pop()

            def visit_ClassDef(self, node):
                stack.append(node.name.value)
                counters.append(0)

            def leave_ClassDef(self, node):
                stack.pop()
                counters.pop()

            def _comp(self, node, body):
                counters[-1] += 1
                name = f"<comp{counters[-1]}>"
                sc = scope_of(body)
                if sc is not None:
                    index.paths[id(sc)] = ".".join(stack + [name])
                    index.scope_node[id(sc)] = node

            def visit_ListComp(self, node):
                self._comp(node, node.elt)

            visit_SetComp = visit_GeneratorExp = visit_ListComp

            def visit_DictComp(self, node):
                self._comp(node, node.key)

            def visit_Lambda(self, node):
                counters[-1] += 1
                sc = scope_of(node.body)
                if sc is not None:
                    index.paths[id(sc)] = ".".join(stack + [f"<lambda{counters[-1]}>"])
                    index.scope_node[id(sc)] = node

        self.module.visit(V())

    def path(self, scope) -> str:
        if isinstance(scope, GlobalScope):
            return "<module>"
        return self.paths.get(id(scope), "?")


def _identifiers(module: cst.Module) -> set[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node):
            names.add(node.value)

    module.visit(V())
    return names


def _strings(module: cst.Module) -> set[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, node):
            try:
                value = node.evaluated_value
            except Exception:  # noqa: BLE001
                return
            if isinstance(value, str):
                out.update(value.replace(",", " ").replace("'", " ").replace('"', " ").split())

        def visit_FormattedStringText(self, node):
            out.update(node.value.split())

    module.visit(V())
    return out


def _dynamic_scopes(module: cst.Module, index: _Index) -> tuple[set[int], bool]:
    """Scopes (ids) whose names may be read by name at run time, and whether globals() is used."""
    out: set[int] = set()
    uses_globals = [False]

    class V(cst.CSTVisitor):
        def visit_Call(self, node):
            if isinstance(node.func, cst.Name):
                if node.func.value == "globals":
                    uses_globals[0] = True
                elif node.func.value in _DYNAMIC_FUNCS and (node.func.value in ("eval", "exec")
                                                             or not node.args):
                    sc = index.scopes.get(node)
                    while sc is not None and not isinstance(sc, GlobalScope):
                        out.add(id(sc))
                        sc = sc.parent
                    if node.func.value in ("eval", "exec"):
                        uses_globals[0] = True

    module.visit(V())
    return out, uses_globals[0]


def _declared(module: cst.Module, index: _Index) -> set[tuple[int, str]]:
    """(scope id, name) pairs declared global or nonlocal, in that scope and every enclosing function scope."""
    out: set[tuple[int, str]] = set()

    class V(cst.CSTVisitor):
        def _decl(self, node, names):
            sc = index.scopes.get(node)
            while sc is not None and not isinstance(sc, GlobalScope):
                for n in names:
                    out.add((id(sc), n))
                sc = sc.parent
            for n in names:
                out.add((-1, n))  # a module-level name written from a function

        def visit_Global(self, node):
            self._decl(node, [n.name.value for n in node.names])

        def visit_Nonlocal(self, node):
            self._decl(node, [n.name.value for n in node.names])

    module.visit(V())
    return out


_FRAME_NAMES = {"_getframe", "currentframe", "f_locals", "f_back", "f_code", "f_lineno", "tb_frame", "gi_frame",
                "cr_frame", "ag_frame", "getouterframes", "getinnerframes", "getframeinfo", "autoname_elements"}


def _observed(module: cst.Module) -> tuple[bool, set[int], bool]:
    """(the module reads frames, ids of Names in annotations when it has ``from __future__ import annotations``
    else nothing, the module names ``logging``)."""
    names: set[str] = set()
    in_annotations: set[int] = set()
    future = []

    class Inner(cst.CSTVisitor):
        def visit_Name(self, node):
            in_annotations.add(id(node))

    class V(cst.CSTVisitor):
        def visit_Name(self, node):
            names.add(node.value)

        def visit_Annotation(self, node):
            node.annotation.visit(Inner())

        def visit_ImportFrom(self, node):
            if isinstance(node.module, cst.Name) and node.module.value == "__future__" and not isinstance(
                    node.names, cst.ImportStar):
                future.extend(a.name.value for a in node.names if isinstance(a.name, cst.Name))

    module.visit(V())
    frames = bool(names & _FRAME_NAMES) or ("inspect" in names and bool({"stack", "trace"} & names))
    return frames, (in_annotations if "annotations" in future else set()), "logging" in names


def _self_documenting(module: cst.Module) -> set[int]:
    """Ids of Name nodes inside ``f"{x=}"`` expressions."""
    out: set[int] = set()

    class Inner(cst.CSTVisitor):
        def visit_Name(self, node):
            out.add(id(node))

    class V(cst.CSTVisitor):
        def visit_FormattedStringExpression(self, node):
            if node.equal is not None:
                node.expression.visit(Inner())

    module.visit(V())
    return out


def _all_names(module: cst.Module) -> set[str]:
    out: set[str] = set()
    for st in module.body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
                        for node in _walk_strings(small.value):
                            out.add(node)
    return out


def _walk_strings(node: cst.CSTNode) -> list[str]:
    out: list[str] = []

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, n):
            try:
                out.append(n.evaluated_value)
            except Exception:  # noqa: BLE001
                pass

    node.visit(V())
    return out


def _misscoped(source: str) -> set[str]:
    """Targets of comprehensions with several ``for`` clauses, and ``:=`` targets inside comprehensions."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if len(node.generators) > 1:
                for gen in node.generators:
                    out.update(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
            for sub in ast.walk(node):
                if isinstance(sub, ast.NamedExpr):
                    out.add(sub.target.id)
    return out


class _Units:
    def __init__(self, source: str, module_helpers: bool, protect: frozenset[str]):
        self.module = cst.parse_module(source)
        self.index = _Index(self.module)
        self.refused: dict[str, str] = {}
        self.units: dict[str, tuple[LocalUnit, list[cst.Name]]] = {}
        self.module_helpers = module_helpers
        self.protect = protect
        self.occurrences: dict[str, list] = {}
        for node, scope in self.index.scopes.items():
            if isinstance(node, cst.Name):
                self.occurrences.setdefault(node.value, []).append((node, scope))
        self._compute()

    def _refuse(self, key: str, reason: str) -> None:
        self.refused.setdefault(key, reason)

    def _compute(self) -> None:
        idx = self.index
        scopes = {id(s): s for s in idx.scopes.values() if s is not None}
        dynamic, uses_globals = _dynamic_scopes(self.module, idx)
        declared = _declared(self.module, idx)
        self_doc = _self_documenting(self.module)
        exported = _all_names(self.module)
        strings = _strings(self.module)
        misscoped = _misscoped(self.module.code)
        reads_frames, annotation_names, logs = _observed(self.module)
        # every access of a name, by scope, to cross-check the resolution
        for sc in scopes.values():
            if isinstance(sc, ClassScope):
                continue
            path = idx.path(sc)
            by_name: dict[str, list] = {}
            for a in sc.assignments:
                by_name.setdefault(a.name, []).append(a)
            for name, assigns in by_name.items():
                key = f"{path}:{name}"
                if name in self.protect and isinstance(sc, GlobalScope):
                    self._refuse(key, "protected name")
                    continue
                unit_kind = "local"
                nodes: list[cst.Name] = []
                reason = None
                if id(sc) in dynamic or (uses_globals and isinstance(sc, GlobalScope)):
                    reason = "scope reads names at run time (locals/vars/dir/eval/exec/globals)"
                elif reads_frames:
                    reason = ("the module reads frames (sys._getframe, inspect.currentframe/stack, f_locals, "
                              "autoname_elements...): a caller's local names are visible")
                elif (id(sc), name) in declared or (isinstance(sc, GlobalScope) and (-1, name) in declared):
                    reason = "declared global or nonlocal"
                elif name.startswith("__") and name.endswith("__"):
                    reason = "dunder name"
                elif name in misscoped:
                    reason = ("bound by a comprehension with several for clauses or by := in a comprehension "
                              "(the scope analysis may tie its reads to the wrong variable)")
                elif isinstance(sc, GlobalScope) and not (self.module_helpers and name.startswith("_")):
                    reason = "module-level name (public interface)"
                elif isinstance(sc, GlobalScope) and (name in exported or name in strings):
                    reason = "named in __all__ or in a string"
                for a in assigns:
                    if reason:
                        break
                    node = a.node
                    if isinstance(node, cst.Name):
                        nodes.append(node)
                    elif isinstance(node, cst.Param):
                        fn = idx.scope_node.get(id(sc))
                        ok, why = self._param_ok(sc, fn)
                        if not ok:
                            reason = why
                        else:
                            unit_kind = "param"
                            nodes.append(node.name)
                    elif isinstance(node, cst.FunctionDef):
                        if node.decorators:
                            reason = "decorated function"
                        elif logs:
                            reason = "the module logs (a log record names the function calling it: funcName)"
                        elif not all(isinstance(idx.parents.get(r.node), cst.Call)
                                     and idx.parents[r.node].func is r.node for r in a.references):
                            reason = ("the function is used other than by direct calls (its __name__ and "
                                      "__qualname__ would show the new name)")
                        else:
                            unit_kind = "helper"
                            nodes.append(node.name)
                    elif isinstance(node, cst.ClassDef):
                        reason = "class name"
                    else:
                        reason = f"bound by {type(node).__name__}"
                if reason is None:
                    for a in assigns:
                        for ref in a.references:
                            if not isinstance(ref.node, cst.Name):
                                reason = "referenced from a string annotation"
                                break
                            if any(r not in assigns for r in ref.referents):
                                reason = "an access may refer to another binding"
                                break
                            nodes.append(ref.node)
                        if reason:
                            break
                if reason is None:
                    missing = self._unresolved(sc, name, {id(n) for n in nodes})
                    if missing:
                        reason = missing
                if reason is None and any(id(n) in self_doc for n in nodes):
                    reason = "shown by a self-documenting f-string (f\"{x=}\")"
                if reason is None and any(id(n) in annotation_names for n in nodes):
                    reason = ("named in an annotation under from __future__ import annotations (kept as text: "
                              "__annotations__ and typing.get_type_hints would show the new name)")
                if reason is None and name in self.protect:
                    reason = "protected name"
                if reason is not None:
                    self._refuse(key, reason)
                    continue
                unique = list({id(n): n for n in nodes}.values())
                self.units[key] = (LocalUnit(key, name, path, unit_kind), unique)

    def _param_ok(self, sc, fn) -> tuple[bool, str]:
        idx = self.index
        if not isinstance(fn, cst.FunctionDef):
            return False, "parameter of a lambda"
        parent_scope = sc.parent
        if isinstance(parent_scope, (GlobalScope, ClassScope)):
            return False, "parameter of a module-level function or method (callers may pass it by keyword)"
        p = fn.params
        if p.star_arg is not None and isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None \
                or p.kwonly_params or p.posonly_params:
            return False, "parameter of a function with *args, **kwargs or keyword-only parameters"
        for a in parent_scope.assignments:
            if a.name == fn.name.value and a.node is fn:
                for ref in a.references:
                    parent = idx.parents.get(ref.node)
                    if not (isinstance(parent, cst.Call) and parent.func is ref.node
                            and all(arg.keyword is None and not arg.star for arg in parent.args)):
                        return False, "the function is used other than by direct positional calls"
                break
        return True, ""

    def _unresolved(self, sc, name: str, nodes: set[int]) -> str | None:
        """An occurrence of ``name`` in ``sc`` (or a nested scope resolving to it) that is not in ``nodes``."""
        idx = self.index
        for node, node_scope in self.occurrences.get(name, ()):
            if id(node) in nodes:
                continue
            parent = idx.parents.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            if isinstance(parent, (cst.ImportAlias, cst.NameItem)):
                continue
            s = node_scope
            # walk outwards until the scope that binds the name
            while s is not None and not isinstance(s, GlobalScope) and s is not sc:
                if any(a.name == name for a in s.assignments) and not isinstance(s, ClassScope):
                    break
                s = s.parent
            if s is sc:
                return "an occurrence of the name is not resolved to this binding"
        return None


@lru_cache(maxsize=512)
def _units(source: str, module_helpers: bool, protect: frozenset[str]) -> _Units:
    return _Units(source, module_helpers, protect)


def local_units(source: str, *, module_helpers: bool = False, protect: frozenset[str] = frozenset()
                ) -> tuple[list[LocalUnit], dict[str, str]]:
    """The renameable units of ``source`` (document order) and the refused ones with their reasons."""
    u = _units(source, module_helpers, frozenset(protect))
    units = [unit for unit, _ in u.units.values()]
    return units, dict(u.refused)


class RenameLocals(cst.CSTTransformer):
    """Rename the Name nodes given by identity (found with :class:`ScopeProvider`) to new values."""

    def __init__(self, renames: dict[int, str]):
        super().__init__()
        self.renames = renames
        self.count = 0

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(id(original_node))
        if new is None:
            return updated_node
        self.count += 1
        return updated_node.with_changes(value=new)


def rename_locals(source: str, renames: dict[str, str], *, module_helpers: bool = False,
                  protect: frozenset[str] = frozenset()) -> str:
    """``source`` with units renamed (``{unit key: new name}``, keys from :func:`local_units`).

    Raises ``ValueError`` naming the unit when a key is not a renameable unit of
    ``source`` or a new name is not fresh.
    """
    if not renames:
        return source
    u = _units(source, module_helpers, frozenset(protect))
    taken = _identifiers(u.module) | set(dir(builtins))
    by_id: dict[int, str] = {}
    seen: set[str] = set()
    for key, new in renames.items():
        if key not in u.units:
            why = u.refused.get(key, "no such unit")
            raise ValueError(f"hook.rename_locals: {key!r} cannot be renamed ({why}); "
                             f"renameable: {sorted(u.units)[:10]}")
        unit, nodes = u.units[key]
        if not new.isidentifier() or keyword.iskeyword(new) or new in taken or new in seen:
            raise ValueError(f"hook.rename_locals: new name {new!r} for {key!r} is not a fresh identifier")
        if unit.scope == "<module>" and not new.startswith("_"):
            raise ValueError(f"hook.rename_locals: {key!r} is a private helper; its new name must start with '_'")
        seen.add(new)
        for n in nodes:
            by_id[id(n)] = new
    return u.module.visit(RenameLocals(by_id)).code


def identifiers_of(source: str) -> set[str]:
    """Every identifier of ``source`` (what a fresh name must avoid)."""
    return _identifiers(cst.parse_module(source))
