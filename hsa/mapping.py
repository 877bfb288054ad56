"""The invertible mapping between a source harness and one of its variants.

A mapping is a chain of *steps*, each a small JSON object that knows how to carry a
tool call forward (``to_variant``) and back (``to_canonical``). Composition is
concatenation, so any sequence of transforms has an exact inverse. Step kinds:

``{"op": "tools", "map": {old: new}}``
    tool names (a bijection).
``{"op": "params", "tool": name, "paths": [[old_path, new_path], ...]}``
    argument paths of one tool (``name`` as of this step); a path is a list of keys,
    ``"[]"`` standing for every item of an array. Longest prefix wins, so one list
    expresses renames at any depth, nesting and flattening. Optional ``"mentions": {"own": {old:
    new}, "all": {old: new}}`` (a rename or a swap of names): the names whose mentions in texts follow,
    in the tool's own descriptions and results (``own``) and in every text (``all``). Optional ``"fill": [[path,
    value], ...]`` sets arguments that exist only in the variant (a required parameter
    with one allowed value); ``"drop"`` is its inverse. Other keys (a ``"kind"`` naming
    the record-level applier, and its data) are kept by :meth:`Mapping.inverse`.
``{"op": "values", "tool": name, "path": path, "map": [[old, new], ...]}``
    values at one argument path (enum renames, re-drawn defaults); JSON values, compared strictly.
``{"op": "skills", "map": {old: new}, "tool": name, "argument": key}``
    skill names, as passed to the skill tool ``tool`` (names as of this step) in ``argument``.
``{"op": "restore", "patch": patch, "fmt": {...}}``
    no call changes; on the way back (:func:`hsa.renames.canonicalize`) the record's content is
    patched (:mod:`hsa._patch`) into the source's: descriptions, order, added tools and parameters,
    prompt, skills, hooks and messages that no other step's inverse gives back; ``fmt`` (optional)
    says how the source was written where the variant cannot be (a skill tool given as a string).
``{"op": "opaque", ...}``
    a task-changing step (``tool.irrelevance``): nothing maps, and the variant is not task-preserving.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hsa import _json

__all__ = ["Mapping", "Call", "argument_leaves", "carry_call"]

Call = dict[str, Any]  # {"name": str, "arguments": dict}

MAPPING_VERSION = 1
ARRAY = "[]"


# --------------------------------------------------------------------------- argument paths


def argument_leaves(value: Any, prefix: tuple = (), out: dict | None = None) -> dict:
    """Every leaf of an arguments value by its path: ``(("k", key) | ("i", index), ...) -> value``; an
    empty dict or list is a leaf. What reward and scoring code compare call arguments by."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            argument_leaves(v, prefix + (("k", k),), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            argument_leaves(v, prefix + (("i", i),), out)
    else:
        out[prefix] = value
    return out


def _flatten(value: Any, prefix: tuple, out: list) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, prefix + (k,), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, prefix + (i,), out)
    else:
        out.append((prefix, value))


def _matches(pattern: tuple, path: tuple) -> bool:
    if len(pattern) > len(path):
        return False
    for p, q in zip(pattern, path):
        if p == ARRAY:
            if not isinstance(q, int):
                return False
        elif p != q or isinstance(q, int):
            return False
    return True


def _substitute(src: tuple, dst: tuple, path: tuple) -> tuple:
    """Replace the ``src`` prefix of ``path`` by ``dst``, carrying array indices across in order."""
    indices = [q for p, q in zip(src, path) if p == ARRAY]
    it = iter(indices)
    head = tuple(next(it) if d == ARRAY else d for d in dst)
    return head + path[len(src):]


def _assemble(leaves: list) -> Any:
    root: Any = None
    for path, value in leaves:
        if not path:
            return value
        if root is None:
            root = [] if isinstance(path[0], int) else {}
        node = root
        for i, key in enumerate(path):
            last = i == len(path) - 1
            nxt = None if last else ([] if isinstance(path[i + 1], int) else {})
            if isinstance(node, list):
                while len(node) <= key:
                    node.append(None)
                if last:
                    node[key] = value
                else:
                    if node[key] is None:
                        node[key] = nxt
                    node = node[key]
            else:
                if last:
                    node[key] = value
                else:
                    if key not in node:
                        node[key] = nxt
                    node = node[key]
    return root if root is not None else {}


def move_paths(arguments: dict, pairs: Iterable[tuple[tuple, tuple]]) -> dict:
    """Rewrite the key paths of ``arguments`` by ``(src, dst)`` prefix pairs, longest ``src`` first."""
    pairs = sorted(pairs, key=lambda p: -len(p[0]))
    if not pairs or not arguments:
        return _json.copy(arguments)
    leaves: list = []
    _flatten(arguments, (), leaves)
    moved = []
    for path, value in leaves:
        for src, dst in pairs:
            if _matches(src, path):
                path = _substitute(src, dst, path)
                break
        moved.append((path, value))
    out = _assemble(moved)
    return out if isinstance(out, dict) else {}


def _map_values(arguments: Any, path: tuple, table: list, forward: bool) -> Any:
    if not path:
        for old, new in table:
            a, b = (old, new) if forward else (new, old)
            if _json.strict_equal(arguments, a):
                return _json.copy(b)
        return arguments
    head, rest = path[0], path[1:]
    if head == ARRAY:
        if isinstance(arguments, list):
            return [_map_values(v, rest, table, forward) for v in arguments]
        return arguments
    if isinstance(arguments, dict) and head in arguments:
        out = dict(arguments)
        out[head] = _map_values(arguments[head], rest, table, forward)
        return out
    return arguments


def _fill(arguments: dict, remove: list | None, add: list | None) -> dict:
    """Delete the ``remove`` entries (``[path, value]``, only where the value is exactly that) and set the ``add`` ones."""
    if not remove and not add:
        return arguments
    out = _json.copy(arguments)
    for path, value in remove or ():
        node = out
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node and _json.strict_equal(node[path[-1]], value):
            del node[path[-1]]
    for path, value in add or ():
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[path[-1]] = _json.copy(value)
    return out


# --------------------------------------------------------------------------- steps


def carry_call(step: dict, call: Call, forward: bool) -> Call:
    """``call`` carried through one mapping ``step``: towards the variant (``forward``) or back to the source.

    What :meth:`Mapping.to_variant` / :meth:`Mapping.to_canonical` do step by step, and what the record-level
    appliers (:func:`hsa.renames.apply_step`) and the hook model use to carry calls and tool inputs."""
    op = step["op"]
    name, args = call["name"], call["arguments"]
    if op == "tools":
        table = step["map"] if forward else {v: k for k, v in step["map"].items()}
        return {"name": table.get(name, name), "arguments": args}
    if op == "params":
        if name != step["tool"]:
            return call
        pairs = [(tuple(a), tuple(b)) if forward else (tuple(b), tuple(a)) for a, b in step["paths"]]
        if not forward:
            args = _fill(args, step.get("fill"), step.get("drop"))
        args = move_paths(args, pairs)
        if forward:
            args = _fill(args, step.get("drop"), step.get("fill"))
        return {"name": name, "arguments": args}
    if op == "values":
        if name != step["tool"]:
            return call
        return {"name": name, "arguments": _map_values(args, tuple(step["path"]), step["map"], forward)}
    if op == "skills":
        if name != step["tool"] or not isinstance(args, dict):
            return call
        arg = step["argument"]
        value = args.get(arg)
        table = step["map"] if forward else {v: k for k, v in step["map"].items()}
        if isinstance(value, str) and value in table:
            args = dict(args)
            args[arg] = table[value]
        return {"name": name, "arguments": args}
    if op in ("opaque", "restore"):  # a task-changing step, or what the record-level inverse puts back: no call changes
        return call
    raise ValueError(f"unknown mapping step op {op!r}; expected tools, params, values, skills, restore or opaque")


def _rename_through(step: dict, name: str, forward: bool) -> str:
    table = step["map"] if forward else {v: k for k, v in step["map"].items()}
    return table.get(name, name)


class Mapping:
    """What a chain of transforms did to a harness, kept so it can be undone.

    >>> m = Mapping([{"op": "tools", "map": {"get_weather": "fetchWeather"}},
    ...              {"op": "params", "tool": "fetchWeather", "paths": [[["city"], ["location"]]]}])
    >>> m.to_variant({"name": "get_weather", "arguments": {"city": "Paris"}})
    {'name': 'fetchWeather', 'arguments': {'location': 'Paris'}}
    >>> m.to_canonical({"name": "fetchWeather", "arguments": {"location": "Paris"}})
    {'name': 'get_weather', 'arguments': {'city': 'Paris'}}
    """

    __slots__ = ("steps",)

    def __init__(self, steps: Iterable[dict] = ()):
        self.steps: list[dict] = list(steps)

    # -- construction and serialisation
    @classmethod
    def identity(cls) -> Mapping:
        return cls()

    @classmethod
    def from_dict(cls, data: dict | str | None) -> Mapping:
        """Read a mapping as stored in an output row's ``mapping`` column (dict or JSON string)."""
        if data is None:
            return cls()
        if isinstance(data, str):
            data = _json.loads(data)
        if isinstance(data, list):  # bare list of steps
            return cls(data)
        version = data.get("version", MAPPING_VERSION)
        if version != MAPPING_VERSION:
            raise ValueError(f"mapping version {version!r} is not supported (expected {MAPPING_VERSION}); "
                             "upgrade hsa to read it")
        return cls(data.get("steps", []))

    def to_dict(self) -> dict:
        """JSON form: the steps, plus composed name tables for readers (derived, ignored on read)."""
        return {"version": MAPPING_VERSION, "tools": self.tool_names(), "skills": self.skill_names(),
                "steps": self.steps}

    def then(self, other: Mapping) -> Mapping:
        """The mapping that applies ``self`` and then ``other``."""
        return Mapping(self.steps + other.steps)

    __add__ = then

    def inverse(self) -> Mapping:
        """The mapping from the variant back to the source, as a mapping of its own."""
        inv = []
        for step in reversed(self.steps):
            op = step["op"]
            if op == "tools":
                inv.append({"op": "tools", "map": {v: k for k, v in step["map"].items()}})
            elif op == "params":  # other keys (a "kind" and its data) travel with the step
                inv_step = {**step, "paths": [[b, a] for a, b in step["paths"]]}
                if isinstance(step.get("mentions"), dict):  # which mentions of the names follow, the other way
                    inv_step["mentions"] = {k: {v: o for o, v in table.items()} for k, table in step["mentions"].items()}
                inv_step.pop("fill", None), inv_step.pop("drop", None)
                if step.get("fill"):
                    inv_step["drop"] = step["fill"]
                if step.get("drop"):
                    inv_step["fill"] = step["drop"]
                inv.append(inv_step)
            elif op == "values":
                inv.append({**step, "map": [[b, a] for a, b in step["map"]]})
            elif op == "skills":
                inv.append({"op": "skills", "tool": step["tool"], "argument": step["argument"],
                            "map": {v: k for k, v in step["map"].items()}})
            else:
                inv.append(step)
        return Mapping(inv)

    # -- calls
    def to_variant(self, call: Call) -> Call:
        """Carry a call made under the source harness to the variant harness."""
        call = {"name": call["name"], "arguments": call.get("arguments") or {}}
        for step in self.steps:
            call = carry_call(step, call, True)
        return call

    def to_canonical(self, call: Call) -> Call:
        """Carry a call made under the variant harness back to the source harness."""
        call = {"name": call["name"], "arguments": call.get("arguments") or {}}
        for step in reversed(self.steps):
            call = carry_call(step, call, False)
        return call

    # -- names
    def _rename(self, op: str, name: str, forward: bool) -> str:
        for step in (self.steps if forward else reversed(self.steps)):
            if step["op"] == op:
                name = _rename_through(step, name, forward)
        return name

    def tool_to_variant(self, name: str) -> str:
        return self._rename("tools", name, True)

    def tool_to_canonical(self, name: str) -> str:
        return self._rename("tools", name, False)

    def skill_to_variant(self, name: str) -> str:
        return self._rename("skills", name, True)

    def skill_to_canonical(self, name: str) -> str:
        return self._rename("skills", name, False)

    def _names(self, op: str) -> dict[str, str]:
        current: dict[str, str] = {}  # canonical name -> name after the steps so far
        for step in self.steps:
            if step["op"] != op:
                continue
            table = step["map"]
            produced = set(current.values())
            fresh = {old: new for old, new in table.items() if old not in produced and old not in current}
            current = {c: table.get(v, v) for c, v in current.items()}
            current.update(fresh)
        return {c: v for c, v in current.items() if c != v}

    def tool_names(self) -> dict[str, str]:
        """Composed tool renames, canonical name -> variant name."""
        return self._names("tools")

    def skill_names(self) -> dict[str, str]:
        """Composed skill renames, canonical name -> variant name."""
        return self._names("skills")

    def names(self) -> set[str]:
        """Every tool, skill and parameter name a step of this mapping names, before or after it: the names the
        source (and each intermediate harness) had, which a transform that adds a tool or a parameter must avoid."""
        out: set[str] = set()
        for step in self.steps:
            op = step["op"]
            if op in ("tools", "skills"):
                out.update(step["map"])
                out.update(step["map"].values())
            if op in ("params", "values", "skills") and isinstance(step.get("tool"), str):
                out.add(step["tool"])
            if op == "params":
                for pair in step.get("paths", ()):
                    for path in pair:
                        out.update(k for k in path if isinstance(k, str) and k != ARRAY)
                for path, _ in [*(step.get("fill") or ()), *(step.get("drop") or ())]:
                    out.update(k for k in path if isinstance(k, str) and k != ARRAY)
        return out

    @property
    def task_preserving(self) -> bool:
        """False when a step changed the task (for example ``tool.irrelevance``)."""
        return all(s["op"] != "opaque" for s in self.steps)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and _json.canonical(self.steps) == _json.canonical(other.steps)

    def __repr__(self) -> str:
        return f"Mapping(tools={self.tool_names()!r}, skills={self.skill_names()!r}, steps={len(self.steps)})"
