"""Does a hook read a tool's argument object as a whole? (Structural tool transforms must then skip.)

Renames change keys, and hook literals follow them. Structural changes (nesting,
flattening, an added required parameter, swapped parameter names, changed values)
change the argument object itself: a hook that reads it key by key (``args["k"]``,
``args.get("k")``, ``"k" in args``) is unaffected as long as those keys are left alone,
but a hook that counts, iterates, compares, prints or passes on the whole object
(``len(args)``, ``for k in args``, ``args.items()``, ``json.dumps(payload)``) may decide
differently (docs/design.md invariant 7). This module answers conservatively: when in doubt,
the hook reads the whole object.
"""

from __future__ import annotations

import ast
from collections import deque
from functools import lru_cache

from hsa.records import Record

__all__ = ["reads_whole_input", "hooks_read_whole_input", "INPUT_KEYS"]

#: Payload keys that hold the tool input.
INPUT_KEYS = frozenset({"tool_input", "tool_args", "arguments", "input", "args"})


def _const_key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_keyed_read(node: ast.AST, keys: frozenset | None) -> bool:
    """``x[k]`` / ``x.get(k, ...)`` with a constant string ``k`` (in ``keys`` when given)."""
    if isinstance(node, ast.Subscript):
        k = _const_key(node.slice)
        return k is not None and (keys is None or k in keys)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        k = _const_key(node.args[0])
        return k is not None and (keys is None or k in keys)
    return False


def _base(node: ast.AST) -> ast.AST:
    return node.value if isinstance(node, ast.Subscript) else node.func.value  # type: ignore[union-attr]


@lru_cache(maxsize=4096)
def reads_whole_input(source: str, entry: str | None = None) -> bool:
    """True when hook ``source`` (entry function ``entry``) may read the tool input or the payload other
    than key by key. Payloads are the entry's parameters (every function's first one when the entry
    is unknown) and anything read with a tool-input key; passing them to another function counts as
    a whole read."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True
    nodes, parents = _walk(tree)
    # payloads: the first parameter of every function, and anything read with an input key
    payloads: set[str] = set()
    method = entry.rsplit(".", 1)[-1] if entry else None
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
            if method is None and args:
                payloads.add(args[0])
            elif node.name == method:
                payloads.update(args if entry and "." in entry else args[:1])
        if _is_keyed_read(node, INPUT_KEYS) and isinstance(_base(node), ast.Name):
            payloads.add(_base(node).id)  # type: ignore[union-attr]
    # inputs: names bound to payload[input key] (possibly "... or {}")
    inputs: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            value = node.value
            if isinstance(value, ast.BoolOp):
                value = value.values[0]
            if _is_keyed_read(value, INPUT_KEYS):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                    return True
                inputs.add(targets[0].id)
    watched = payloads | inputs
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in watched and isinstance(node.ctx, ast.Load):
            if not _keyed_read(node, parents.get(node), parents):
                return True
        elif _is_keyed_read(node, INPUT_KEYS) and isinstance(_base(node), ast.Name) and _base(node).id in payloads:
            if not _input_expr_ok(node, parents):
                return True
    return False


def _walk(tree: ast.AST) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    """The nodes of ``tree`` in ``ast.walk`` order, and each node's parent (the last one met, as a second
    walk setting ``parents[child] = node`` would leave it): one pass instead of a walk per question."""
    nodes: list[ast.AST] = []
    parents: dict[ast.AST, ast.AST] = {}
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            todo.append(child)
        nodes.append(node)
    return nodes, parents


def _keyed_read(node: ast.AST, parent: ast.AST | None, parents: dict) -> bool:
    """``node[KEY]``, ``node.get(KEY, ...)`` or ``KEY in node`` with a constant KEY."""
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return _const_key(parent.slice) is not None
    if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "get":
        call = parents.get(parent)
        return isinstance(call, ast.Call) and bool(call.args) and _const_key(call.args[0]) is not None
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1 and isinstance(parent.ops[0], (ast.In, ast.NotIn)):
        return parent.comparators[0] is node and _const_key(parent.left) is not None
    return False


def _input_expr_ok(expr: ast.AST, parents: dict) -> bool:
    """``payload["tool_input"]`` used in place: only keyed reads of it, or bound to a name (checked as a name)."""
    parent = parents.get(expr)
    if isinstance(parent, ast.BoolOp):
        parent = parents.get(parent)
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        return True
    return _keyed_read(expr, parent, parents)


def hooks_read_whole_input(record: Record) -> bool:
    """True when a hook of ``record`` bound to a tool event may read tool inputs as a whole."""
    for h in record.get("hooks") or ():
        event = str(h.get("event", ""))
        if "tool" not in event.lower() and event not in ("", "any", "*"):
            continue
        if reads_whole_input(h.get("source", ""), h.get("entry")):
            return True
    return False
