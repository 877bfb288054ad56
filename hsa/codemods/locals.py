"""hook.rename_locals: scope-aware, capture-free renames of local variables and private helpers.

A *unit* is one name bound in one scope (a function, a comprehension, or — for
private helpers — the module); renaming a unit renames its bindings and every
access that LibCST's :class:`~libcst.metadata.ScopeProvider` resolves to them, in
nested scopes too. New names are fresh (no identifier of the module has them, no
builtin, no keyword), so no rename can capture or be captured.

Never renamed (each with the reason it is refused):

- parameters of module-level functions and methods (callers may pass them by
  keyword), and parameters of a nested function that is not only called directly
  with positional arguments;
- module-level names, unless ``module_helpers=True`` and the name is private
  (``_x``), not in ``__all__`` and not mentioned in any string (``getattr``);
- class-level names (attributes), imports, names declared ``global``/``nonlocal``;
- every name of a function that calls ``locals()``, ``vars()``, ``dir()``,
  ``eval``/``exec`` or uses ``globals()`` (then: the whole module);
- a name shown by a self-documenting f-string (``f"{x=}"`` prints the name);
- a helper function used other than by direct calls (returned, stored, passed:
  its ``__name__``/``__qualname__`` are visible);
- a name bound by a comprehension with several ``for`` clauses or by ``:=`` inside a
  comprehension (LibCST 1.x ties reads in a later clause to the enclosing
  function's variable of the same name, and puts such ``:=`` targets in the
  comprehension's scope instead of the function's);
- a name with any occurrence that the scope analysis does not resolve to the unit;
- every name of a module that reads frames (``sys._getframe``, ``inspect.currentframe`` /
  ``stack``, ``f_locals``, pyparsing's ``autoname_elements``: a caller's local names are
  visible there);
- a name used in an annotation under ``from __future__ import annotations`` (the
  annotation is kept as text, which ``typing.get_type_hints`` evaluates by name);
- a nested helper of a module that uses ``logging`` (a log record names the function
  that calls the logger: ``funcName``).

Cost: the analysis of a source (scopes, one collecting walk, one codegen that notes
where each Name is) is done once and cached; units are then selected per
(``module_helpers``, ``protect``), and a rename splices the new names in at the
noted offsets, which gives the text a :class:`RenameLocals` pass would.
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import random
from contextlib import contextmanager
from functools import lru_cache
from itertools import accumulate
from typing import Optional

import libcst as cst
from libcst.metadata import (BaseMetadataProvider, ClassScope, ComprehensionScope, ExpressionContextProvider,
                             FunctionScope, GlobalScope, Scope, ScopeProvider)

from hsa.codemods._cst import parse
from hsa.codemods.kinds import reads_frames
from hsa.codemods.spans import literal_value

__all__ = ["LocalUnit", "local_units", "rename_locals", "rename_locals_edits", "RenameLocals", "fresh_name", "NAME_STYLES"]

_DYNAMIC_FUNCS = frozenset({"locals", "vars", "dir", "eval", "exec"})


@dataclasses.dataclass(frozen=True)
class LocalUnit:
    """One renameable name: ``key`` is ``"<scope path>:<name>"`` (``"check_reply.visible_length:text"``)."""

    key: str
    name: str
    scope: str
    kind: str  # "local" | "param" | "helper"


class _Seen:
    """What one traversal records for the unit analysis before scopes are known (filled by :class:`_Collect`)."""

    def __init__(self) -> None:
        self.identifiers: set[str] = set()
        #: (node, node whose scope is the new scope, scope path) for functions, comprehensions and lambdas
        self.scope_sites: list[tuple[cst.CSTNode, cst.CSTNode, str]] = []
        #: ids of Names that are no variable occurrence: ``x.attr``, ``f(kw=...)``, import aliases, global/nonlocal
        self.not_variables: set[int] = set()
        #: id(call.func) -> call: "is this access the callee of a direct call?"
        self.calls: dict[int, cst.Call] = {}
        self.dynamic_calls: list[cst.Call] = []
        self.uses_globals = False
        self.declarations: list[tuple[cst.CSTNode, list[str]]] = []
        self.self_documenting: set[int] = set()
        self.strings: list[cst.SimpleString] = []
        self.fstring_texts: list[str] = []
        #: names whose scopes LibCST gets wrong: targets of a comprehension with several ``for`` clauses
        #: (a read in a later clause may be tied to the enclosing function's variable of the same name)
        #: and ``:=`` targets inside a comprehension (they bind in the enclosing function, not the comprehension)
        self.misscoped: set[str] = set()
        #: ids of Names inside annotations (kept as text under ``from __future__ import annotations``)
        self.annotation_names: set[int] = set()
        self.future_annotations = False


class _Collect(cst.CSTVisitor):
    """One traversal that fills a :class:`_Seen`; everything that needs scopes is looked up afterwards.

    It replaces ``ParentNodeProvider`` and the separate visitor passes of scope paths,
    ``locals()``/``eval`` calls, ``global``/``nonlocal``, self-documenting f-strings,
    strings and identifiers (each a full LibCST walk, the dominant cost).
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen = _Seen()
        self.stack: list[str] = []
        self.counters: list[int] = [0]
        self.comprehensions = 0  # depth of comprehensions around the node visited

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node.name.value)
        self.seen.scope_sites.append((node, node.body, ".".join(self.stack)))
        self.counters.append(0)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()
        self.counters.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.append(node.name.value)
        self.counters.append(0)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()
        self.counters.pop()

    def _nested(self, node: cst.CSTNode, body: cst.CSTNode, kind: str) -> None:
        self.counters[-1] += 1
        self.seen.scope_sites.append((node, body, ".".join(self.stack + [f"<{kind}{self.counters[-1]}>"])))

    def _comprehension(self, node) -> None:
        self.comprehensions += 1
        clauses, comp_for = [], node.for_in
        while comp_for is not None:
            clauses.append(comp_for)
            comp_for = comp_for.inner_for_in
        if len(clauses) > 1:
            for clause in clauses:
                self.seen.misscoped.update(_bound_names(clause.target))

    def leave_ListComp(self, original_node) -> None:
        self.comprehensions -= 1

    leave_SetComp = leave_GeneratorExp = leave_DictComp = leave_ListComp

    def visit_ListComp(self, node) -> None:
        self._nested(node, node.elt, "comp")
        self._comprehension(node)

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._nested(node, node.key, "comp")
        self._comprehension(node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if self.comprehensions and isinstance(node.target, cst.Name):
            self.seen.misscoped.add(node.target.value)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._nested(node, node.body, "lambda")

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.seen.annotation_names.update(_name_ids(node.annotation))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.module, cst.Name) and node.module.value == "__future__" and not isinstance(
                node.names, cst.ImportStar) and any(a.name.value == "annotations" for a in node.names
                                                    if isinstance(a.name, cst.Name)):
            self.seen.future_annotations = True

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.identifiers.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.seen.not_variables.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.seen.not_variables.add(id(node.keyword))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if isinstance(node.name, cst.Name):
            self.seen.not_variables.add(id(node.name))

    def visit_NameItem(self, node: cst.NameItem) -> None:
        self.seen.not_variables.add(id(node.name))

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.calls[id(node.func)] = node
        if isinstance(node.func, cst.Name):
            if node.func.value == "globals":
                self.seen.uses_globals = True
            elif node.func.value in _DYNAMIC_FUNCS and (node.func.value in ("eval", "exec") or not node.args):
                self.seen.dynamic_calls.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self.seen.declarations.append((node, [n.name.value for n in node.names]))

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.seen.declarations.append((node, [n.name.value for n in node.names]))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if node.equal is not None:
            self.seen.self_documenting.update(_name_ids(node.expression))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.seen.strings.append(node)

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.seen.fstring_texts.append(node.value)


def _bound_names(target: cst.BaseExpression) -> set[str]:
    """The names a ``for`` target binds (``x``, ``(k, v)``, ``[a, *rest]``)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound_names(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return set()


def _name_ids(node: cst.CSTNode) -> set[int]:
    out: set[int] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n):
            out.add(id(n))

    node.visit(V())
    return out


class _Scopes(BaseMetadataProvider[Optional[Scope]]):
    """The mapping ``ScopeProvider`` gives (node -> scope), computed without a ``MetadataWrapper``.

    Resolving ``ScopeProvider`` through a wrapper costs two extra full walks: both it and
    its dependency ``ExpressionContextProvider`` are batchable providers whose only
    method is ``visit_Module`` (each runs its own visitor), so the batched walk, and
    the ``inspect.getmembers`` of every batched visitor, are pure overhead here. This
    runs the two ``visit_Module`` directly; ``scopes`` is the same mapping in the same order.
    """

    METADATA_DEPENDENCIES = (ExpressionContextProvider,)

    def __init__(self, module: cst.Module):
        super().__init__()
        self._contexts = ExpressionContextProvider()
        self._contexts.visit_Module(module)
        ScopeProvider.visit_Module(self, module)  # type: ignore[arg-type] - ScopeVisitor(self) needs get/set_metadata
        self.scopes: dict[cst.CSTNode, Optional[Scope]] = dict(self._computed)

    def get_metadata(self, key, node, *default):
        if key is ExpressionContextProvider:
            return self._contexts.get_metadata(key, node, *default)
        return super().get_metadata(key, node, *default)


def _name_offsets(module: cst.Module) -> tuple[str, dict[int, list[int]]]:
    """The module's code and, for each Name node (by id), the character offsets of its value in it.

    One codegen pass whose state notes where each Name's value token goes (a Name emits
    its parentheses, then its value inside ``record_syntactic_position``). The codegen
    state is not public LibCST API: without it the offsets are empty and renames fall
    back to a :class:`RenameLocals` pass (see :class:`_Units`).
    """
    try:
        from libcst._nodes.internal import CodegenState
    except ImportError:  # pragma: no cover - another LibCST layout
        return module.code, {}

    class NameSpots(CodegenState):
        def __init__(self):
            super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
            self.spots: dict[int, list[int]] = {}

        @contextmanager
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            if type(node) is cst.Name:
                self.spots.setdefault(id(node), []).append(len(self.tokens))
            yield

    state = NameSpots()
    module._codegen(state)
    ends = list(accumulate(map(len, state.tokens), initial=0))
    return "".join(state.tokens), {i: [ends[k] for k in ks] for i, ks in state.spots.items()}


class _Analysis:
    """Everything about a source that does not depend on ``module_helpers``/``protect``, computed once.

    Holds the parsed module (shared with the other codemods through :func:`hsa.codemods._cst.parse`),
    its scopes, what :class:`_Collect` saw, the module's code and the character offset of
    every Name node in it (for renames as splices).
    """

    def __init__(self, source: str):
        self.module = parse(source)
        self.scopes = _Scopes(self.module).scopes
        collect = _Collect()
        self.module.visit(collect)
        seen = self.seen = collect.seen
        self.identifiers = frozenset(seen.identifiers)
        self.paths: dict[int, str] = {}
        self.scope_node: dict[int, cst.CSTNode] = {}
        for node, body, path in seen.scope_sites:
            sc = self.scopes.get(body)
            if sc is not None:
                self.paths[id(sc)] = path
                self.scope_node[id(sc)] = node
        self.dynamic: set[int] = set()
        self.uses_globals = seen.uses_globals
        for call in seen.dynamic_calls:
            sc = self.scopes.get(call)
            while sc is not None and not isinstance(sc, GlobalScope):
                self.dynamic.add(id(sc))
                sc = sc.parent
            if call.func.value in ("eval", "exec"):
                self.uses_globals = True
        self.declared: set[tuple[int, str]] = set()
        for node, names in seen.declarations:
            sc = self.scopes.get(node)
            while sc is not None and not isinstance(sc, GlobalScope):
                for n in names:
                    self.declared.add((id(sc), n))
                sc = sc.parent
            for n in names:
                self.declared.add((-1, n))  # a module-level name written from a function
        self.exported = _all_names(self.module)
        self.reads_frames = reads_frames(self.identifiers)
        self._strings: set[str] | None = None
        self.occurrences: dict[str, list] = {}
        for node, scope in self.scopes.items():
            if isinstance(node, cst.Name):
                self.occurrences.setdefault(node.value, []).append((node, scope))
        self.code, self.offsets = _name_offsets(self.module)

    def path(self, scope) -> str:
        if isinstance(scope, GlobalScope):
            return "<module>"
        return self.paths.get(id(scope), "?")

    @property
    def strings(self) -> set[str]:
        """The words of every string of the module (a name mentioned there may be looked up with getattr)."""
        if self._strings is None:
            out: set[str] = set()
            for node in self.seen.strings:
                try:
                    value = literal_value(node)
                except Exception:  # noqa: BLE001
                    continue
                if isinstance(value, str):
                    out.update(value.replace(",", " ").replace("'", " ").replace('"', " ").split())
            for text in self.seen.fstring_texts:
                out.update(text.split())
            self._strings = out
        return self._strings


@lru_cache(maxsize=64)
def _analysis(source: str) -> _Analysis:
    return _Analysis(source)


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
                out.append(literal_value(n))
            except Exception:  # noqa: BLE001
                pass

    node.visit(V())
    return out


class _Units:
    """The units of one source for one (``module_helpers``, ``protect``), light enough to cache many.

    ``units`` maps a key to the unit and the ``(offset, length)`` of each of its Name
    nodes in ``code``; ``nodes`` keeps the nodes only when a splice is not possible
    (a Name not met exactly once by codegen), then :class:`RenameLocals` is used.
    """

    def __init__(self, source: str, module_helpers: bool, protect: frozenset[str]):
        a = _analysis(source)
        self.refused: dict[str, str] = {}
        self.module_helpers = module_helpers
        self.protect = protect
        found = self._compute(a)
        self.code = source if a.code == source else a.code  # the cache key's string, not a copy, when equal
        self.identifiers = a.identifiers
        self.units: dict[str, tuple[LocalUnit, tuple[tuple[int, int], ...]]] = {}
        self.module: cst.Module | None = None
        self.nodes: dict[str, list[cst.Name]] = {}
        for key, (unit, nodes) in found.items():
            spans = []
            for n in nodes:
                offs = a.offsets.get(id(n), ())
                if len(offs) != 1 or a.code[offs[0]:offs[0] + len(n.value)] != n.value:
                    self.module = a.module
                    break
                spans.append((offs[0], len(n.value)))
            self.units[key] = (unit, tuple(spans))
            self.nodes[key] = nodes
        if self.module is None:
            self.nodes = {}

    def _refuse(self, key: str, reason: str) -> None:
        self.refused.setdefault(key, reason)

    def _compute(self, idx: _Analysis) -> dict[str, tuple[LocalUnit, list[cst.Name]]]:
        units: dict[str, tuple[LocalUnit, list[cst.Name]]] = {}
        scopes = {id(s): s for s in idx.scopes.values() if s is not None}
        dynamic, uses_globals = idx.dynamic, idx.uses_globals
        declared = idx.declared
        self_doc = idx.seen.self_documenting
        exported = idx.exported
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
                elif idx.reads_frames:
                    reason = ("the module reads frames (sys._getframe, inspect.currentframe/stack, f_locals, "
                              "autoname_elements...): a caller's local names are visible")
                elif (id(sc), name) in declared or (isinstance(sc, GlobalScope) and (-1, name) in declared):
                    reason = "declared global or nonlocal"
                elif name.startswith("__") and name.endswith("__"):
                    reason = "dunder name"
                elif name in idx.seen.misscoped:
                    reason = ("bound by a comprehension with several for clauses or by := in a comprehension "
                              "(the scope analysis may tie its reads to the wrong variable)")
                elif isinstance(sc, GlobalScope) and not (self.module_helpers and name.startswith("_")):
                    reason = "module-level name (public interface)"
                elif isinstance(sc, GlobalScope) and (name in exported or name in idx.strings):
                    reason = "named in __all__ or in a string"
                for a in assigns:
                    if reason:
                        break
                    node = a.node
                    if isinstance(node, cst.Name):
                        nodes.append(node)
                    elif isinstance(node, cst.Param):
                        fn = idx.scope_node.get(id(sc))
                        ok, why = self._param_ok(idx, sc, fn)
                        if not ok:
                            reason = why
                        else:
                            unit_kind = "param"
                            nodes.append(node.name)
                    elif isinstance(node, cst.FunctionDef):
                        if node.decorators:
                            reason = "decorated function"
                        elif "logging" in idx.identifiers:
                            reason = "the module logs (a log record names the function calling it: funcName)"
                        elif any(id(ref.node) not in idx.seen.calls for ref in a.references):
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
                    missing = self._unresolved(idx, sc, name, {id(n) for n in nodes})
                    if missing:
                        reason = missing
                if reason is None and any(id(n) in self_doc for n in nodes):
                    reason = "shown by a self-documenting f-string (f\"{x=}\")"
                if reason is None and idx.seen.future_annotations and any(
                        id(n) in idx.seen.annotation_names for n in nodes):
                    reason = ("named in an annotation under from __future__ import annotations (kept as text: "
                              "__annotations__ and typing.get_type_hints would show the new name)")
                if reason is None and name in self.protect:
                    reason = "protected name"
                if reason is not None:
                    self._refuse(key, reason)
                    continue
                unique = list({id(n): n for n in nodes}.values())
                units[key] = (LocalUnit(key, name, path, unit_kind), unique)
        return units

    @staticmethod
    def _param_ok(idx: _Analysis, sc, fn) -> tuple[bool, str]:
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
                    call = idx.seen.calls.get(id(ref.node))  # the call whose callee is this access, if any
                    if not (call is not None
                            and all(arg.keyword is None and not arg.star for arg in call.args)):
                        return False, "the function is used other than by direct positional calls"
                break
        return True, ""

    @staticmethod
    def _unresolved(idx: _Analysis, sc, name: str, nodes: set[int]) -> str | None:
        """An occurrence of ``name`` in ``sc`` (or a nested scope resolving to it) that is not in ``nodes``."""
        not_variables = idx.seen.not_variables
        for node, node_scope in idx.occurrences.get(name, ()):
            if id(node) in nodes or id(node) in not_variables:
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

    The text is the module's code with the new names spliced in at the offsets of the
    units' Name nodes (found once per source), which is what a :class:`RenameLocals`
    pass and codegen give, without walking the tree per call.
    """
    return rename_locals_edits(source, renames, module_helpers=module_helpers, protect=protect)[0]


def rename_locals_edits(source: str, renames: dict[str, str], *, module_helpers: bool = False,
                        protect: frozenset[str] = frozenset()) -> tuple[str, list[tuple[int, int, str]] | None]:
    """:func:`rename_locals`, and the edits it made as ``(byte start, byte end, new name)`` in ``source``
    (None when the LibCST transform path was taken), for :func:`hsa.codemods.analysis.carry`."""
    if not renames:
        return source, []
    u = _units(source, module_helpers, frozenset(protect))
    taken = u.identifiers | set(dir(builtins))
    edits: dict[int, tuple[int, str]] = {}
    by_id: dict[int, str] = {}
    seen: set[str] = set()
    for key, new in renames.items():
        if key not in u.units:
            why = u.refused.get(key, "no such unit")
            raise ValueError(f"hook.rename_locals: {key!r} cannot be renamed ({why}); "
                             f"renameable: {sorted(u.units)[:10]}")
        unit, spans = u.units[key]
        if not new.isidentifier() or keyword.iskeyword(new) or new in taken or new in seen:
            raise ValueError(f"hook.rename_locals: new name {new!r} for {key!r} is not a fresh identifier")
        if unit.scope == "<module>" and not new.startswith("_"):
            raise ValueError(f"hook.rename_locals: {key!r} is a private helper; its new name must start with '_'")
        seen.add(new)
        if u.module is not None:
            for n in u.nodes[key]:
                by_id[id(n)] = new
        for offset, length in spans:
            edits[offset] = (length, new)
    if u.module is not None:
        return u.module.visit(RenameLocals(by_id)).code, None
    code = u.code
    out: list[str] = []
    last = 0
    for offset in sorted(edits):
        length, new = edits[offset]
        out.append(code[last:offset])
        out.append(new)
        last = offset + length
    out.append(code[last:])
    if code != source:  # offsets are in the module's code; they are not offsets of ``source``
        return "".join(out), None
    if source.isascii():
        spans = [(offset, offset + length, new) for offset, (length, new) in sorted(edits.items())]
    else:
        spans = []
        for offset, (length, new) in sorted(edits.items()):
            start = len(source[:offset].encode("utf-8"))
            spans.append((start, start + len(source[offset:offset + length].encode("utf-8")), new))
    return "".join(out), spans


#: How new names are drawn: each takes the old name's words and returns a candidate.
NAME_STYLES = ("camel", "snake", "prefix", "suffix", "short")
_PREFIXES = ("the_", "cur_", "my_", "tmp_", "this_")
_SUFFIXES = ("_val", "_v", "_obj", "_item", "_ref", "_1")


def fresh_name(old: str, rng: random.Random, taken: set[str]) -> str:
    """A fresh identifier for ``old`` in a drawn style; never in ``taken``, never a keyword or builtin."""
    from hsa.names import split_words

    lead = "_" if old.startswith("_") and not old.startswith("__") else ""
    words = split_words(old) or ["v"]
    styles = list(NAME_STYLES)
    rng.shuffle(styles)
    candidates = []
    for style in styles:
        if style == "camel" and len(words) > 1:
            candidates.append(lead + words[0] + "".join(w.capitalize() for w in words[1:]))
        elif style == "snake" and len(words) > 1:
            candidates.append(lead + "_".join(words))
        elif style == "prefix":
            candidates.append(lead + rng.choice(_PREFIXES) + "_".join(words))
        elif style == "suffix":
            candidates.append(lead + "_".join(words) + rng.choice(_SUFFIXES))
        elif style == "short":
            short = "".join(w[0] for w in words) if len(words) > 1 else words[0][:3]
            candidates.append(lead + short)
    candidates.append(lead + "_".join(words) + "_" + str(rng.randint(2, 99)))
    bad = set(dir(builtins)) | taken
    for c in candidates:
        if c != old and c.isidentifier() and not keyword.iskeyword(c) and c not in bad:
            return c
    k = 2
    while f"{lead}{'_'.join(words)}_{k}" in bad:
        k += 1
    return f"{lead}{'_'.join(words)}_{k}"


def identifiers_of(source: str) -> set[str]:
    """Every identifier of ``source`` (what a fresh name must avoid); a new set each call."""
    return set(_identifiers_of(source))


@lru_cache(maxsize=1024)
def _identifiers_of(source: str) -> frozenset[str]:
    return _analysis(source).identifiers


__all__ += ["identifiers_of"]
_ = FunctionScope, ComprehensionScope


def codemod(renames: dict[str, str], *, module_helpers: bool = False):
    """``hook.rename_locals`` as a LibCST Codemod class bound to ``renames``; a refused unit skips the file."""
    from libcst.codemod import Codemod, SkipFile

    class _RenameLocals(Codemod):
        def transform_module_impl(self, tree: cst.Module) -> cst.Module:
            try:
                return cst.parse_module(rename_locals(tree.code, renames, module_helpers=module_helpers))
            except ValueError as exc:
                self.warn(str(exc))
                raise SkipFile(str(exc)) from None

    return _RenameLocals


__all__ += ["codemod"]
