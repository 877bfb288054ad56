"""Typed mapping steps: one class per step op, each owning its inverse and how it carries calls and messages.

A mapping step is stored as JSON (docs/design.md, "The mapping"; :mod:`hsa.mapping` lists the ops), and that form
does not change: a typed step wraps the step's own dict, read only, and :meth:`Step.to_json` gives that same dict
back. What a step *means* lives here, once:

- :meth:`Step.invert`: the step that undoes it (what :meth:`hsa.mapping.Mapping.inverse` returns, step by step);
- :meth:`Step.carry_call`: a tool call carried through it, forward or back;
- :meth:`Step.message_carry`: what its record-level applier (:data:`hsa.renames.STEP_APPLIERS`) does to the
  messages of a record (calls, tool-result names, texts), run by :func:`hsa.step_carry.carry_messages`: the
  appliers carry their messages with it, and so does the messages-only path (:func:`hsa.renames.carry_messages`,
  the split undo);
- what readers ask of a step instead of its string op: :attr:`Step.renames_tools`, :attr:`Step.renames_skills`,
  :attr:`Step.tool` (the tool whose calls it changes), :attr:`Step.changes_calls`, :attr:`Step.task_preserving`.

>>> s = Step.from_json({"op": "tools", "map": {"get_weather": "fetchWeather"}})
>>> s.renames_tools, s.invert().to_json()
(True, {'op': 'tools', 'map': {'fetchWeather': 'get_weather'}})
>>> s.carry_call({"name": "get_weather", "arguments": {}}, True)
{'name': 'fetchWeather', 'arguments': {}}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from hsa import _json
from hsa.names import is_identifier_like

__all__ = ["Step", "ToolsStep", "SkillsStep", "ParamsStep", "RegroupStep", "PermuteStep", "RequireStep",
           "ValuesStep", "RestoreStep", "OpaqueStep", "UnknownStep", "step_of", "steps_of", "step_class",
           "rename_pairs", "rename_through"]

ARRAY = "[]"
Call = dict[str, Any]


# --------------------------------------------------------------------------- argument paths (params and values steps)


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


def rename_pairs(renames: dict[tuple, str]) -> list[list[list]]:
    """The ``paths`` of the params step of a parameter rename ``{old path: new last key}`` (unchanged names left
    out): each old path with every renamed key along it replaced."""
    pairs = []
    for path in renames:
        new_path = tuple(renames.get(path[:i + 1], k) if k != ARRAY else k for i, k in enumerate(path))
        pairs.append([list(path), list(new_path)])
    return pairs


def _path_names(path: Iterable) -> Iterable[str]:
    return (k for k in path if isinstance(k, str) and k != ARRAY)


# --------------------------------------------------------------------------- steps


class Step:
    """One mapping step: its JSON dict (``data``, shared and read only) and what it means.

    Build one with :meth:`from_json` (or :func:`step_of`); the class follows the step's ``op`` (and, for a
    ``params`` step, its ``kind``)."""

    __slots__ = ("data",)
    #: The step's ``op`` in its JSON form.
    op: ClassVar[str | None] = None
    renames_tools: ClassVar[bool] = False
    renames_skills: ClassVar[bool] = False
    #: The kind of name the step changes, as the hook analysis names the kinds (``"tool"``, ``"skill"``,
    #: ``"param"``, ``"value"``); None for a step that changes no name (restore, opaque).
    renames_kind: ClassVar[str | None] = None
    #: Whether a tool call can come out of the step other than it went in.
    changes_calls: ClassVar[bool] = True
    #: False for a task-changing step (``tool.irrelevance``).
    task_preserving: ClassVar[bool] = True

    def __init__(self, data: dict):
        self.data = data

    @staticmethod
    def from_json(data: dict | Step) -> Step:
        """The typed step of a step's JSON dict (a step given is returned as it is)."""
        if isinstance(data, Step):
            return data
        return step_class(data)(data)

    def to_json(self) -> dict:
        """The step's JSON dict: the very dict it was made from (never changed)."""
        return self.data

    # -- what readers ask
    #: Whether the step renames tools or skills (a ``map`` of names).
    renames_names: ClassVar[bool] = False
    #: The tool whose calls (and only those) the step changes, by its name before the step; None for a step that is
    #: not about one tool (a params, values and skills step has it as an attribute).
    tool: ClassVar[str | None] = None

    def renamed(self) -> dict[str, str]:
        """The names the step renames, old -> new, without those it keeps (tools and skills steps)."""
        return {}

    def names(self) -> set[str]:
        """Every tool, skill and parameter name the step names, before or after it."""
        return set()

    # -- meaning
    def invert(self) -> Step:
        """The step that undoes this one."""
        return self

    def carry_call(self, call: Call, forward: bool) -> Call:
        """``call`` carried through the step: towards the variant (``forward``) or back to the source."""
        return call

    def hook_text_map(self) -> dict[str, str]:
        """The token renames the step applies to text a hook reads or writes (hook payloads, decisions, the
        messages hooks injected: :func:`hsa.hooks_model.text_map`); none for a step that renames no name."""
        return {}

    def message_carry(self) -> tuple[tuple, ...]:
        """What the step's record-level applier does to a record's messages, as entries that
        :func:`hsa.step_carry.carry_messages` runs in order: ``("call", tool or None, renamed tools or None, step)`` (the calls
        ``step`` carries: those of ``tool``, or those named in ``renamed``), ``("name", renames)`` (tool-result
        names), ``("text", table, kind, results too)`` (a rename of message texts: ``kind`` ``"tool"`` or ``"skill"``
        for a name rename, None for whole tokens) and ``("mentions", tool, own, everywhere)`` (a parameter rename:
        ``own`` in the results of the tool's calls, ``everywhere`` in every message)."""
        raise ValueError(f"no message carry for mapping step op {self.op!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Step) and _json.canonical(self.data) == _json.canonical(other.data)

    def __hash__(self) -> int:
        return hash(_json.canonical(self.data))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.data!r})"


class _NameStep(Step):
    """A rename of tools or skills: ``{"op": ..., "map": {old: new}}``."""

    __slots__ = ()
    renames_names = True

    def renamed(self) -> dict[str, str]:
        return {k: v for k, v in self.data["map"].items() if k != v}

    def names(self) -> set[str]:
        table = self.data["map"]
        return set(table) | set(table.values())

    def hook_text_map(self) -> dict[str, str]:
        return self.renamed()  # every text, as the messages' texts

    def rename(self, name: str, forward: bool) -> str:
        """``name`` through the step's table (forward) or its inverse."""
        return rename_through(self.data, name, forward)


class ToolsStep(_NameStep):
    """``{"op": "tools", "map": {old: new}}``: tool names (a bijection)."""

    __slots__ = ()
    op = "tools"
    renames_tools = True
    renames_kind = "tool"

    def invert(self) -> Step:
        return ToolsStep({"op": "tools", "map": {v: k for k, v in self.data["map"].items()}})

    def carry_call(self, call: Call, forward: bool) -> Call:
        table = self.data["map"] if forward else {v: k for k, v in self.data["map"].items()}
        return {"name": table.get(call["name"], call["name"]), "arguments": call["arguments"]}

    def message_carry(self) -> tuple[tuple, ...]:
        renames = self.renamed()
        if not renames:
            return ()
        return (("call", None, renames, ToolsStep({"op": "tools", "map": renames})), ("name", renames),
                ("text", renames, "tool", True))


class _ToolStep(Step):
    """A step about one tool's calls (``{"tool": name, ...}``): params and values steps."""

    __slots__ = ("tool",)  # type: ignore[misc]

    def __init__(self, data: dict):
        self.data = data
        self.tool = data.get("tool")

    def names(self) -> set[str]:
        return {self.tool} if isinstance(self.tool, str) else set()


class SkillsStep(_NameStep, _ToolStep):
    """``{"op": "skills", "map": {old: new}, "tool": name, "argument": key}``: skill names, as passed to the skill
    tool ``tool`` (its name as of this step) in ``argument``."""

    __slots__ = ()
    op = "skills"
    renames_skills = True
    renames_kind = "skill"

    def names(self) -> set[str]:
        return _NameStep.names(self) | _ToolStep.names(self)

    def invert(self) -> Step:
        d = self.data
        return SkillsStep({"op": "skills", "tool": d["tool"], "argument": d["argument"],
                           "map": {v: k for k, v in d["map"].items()}})

    def carry_call(self, call: Call, forward: bool) -> Call:
        args = call["arguments"]
        if call["name"] != self.data["tool"] or not isinstance(args, dict):
            return call
        arg = self.data["argument"]
        value = args.get(arg)
        table = self.data["map"] if forward else {v: k for k, v in self.data["map"].items()}
        if isinstance(value, str) and value in table:
            args = dict(args)
            args[arg] = table[value]
        return {"name": call["name"], "arguments": args}

    def message_carry(self) -> tuple[tuple, ...]:
        renames = self.renamed()
        if not renames:
            return ()
        return (("call", self.data["tool"], None, self), ("text", renames, "skill", True))


class ParamsStep(_ToolStep):
    """``{"op": "params", "tool": name, "paths": [[old_path, new_path], ...]}``: argument paths of one tool, at any
    depth (longest prefix wins); optional ``mentions`` (``{"own": {old: new}, "all": {old: new}}``: the names whose
    mentions in texts follow), ``fill`` / ``drop`` (arguments that exist only in the variant) and other keys (a
    ``kind`` naming the record-level applier, and its data), all kept by :meth:`invert`. Without a ``kind`` it is
    a rename of parameters (:func:`hsa.renames.rename_params`)."""

    __slots__ = ()
    op = "params"
    renames_kind = "param"

    @property
    def kind(self) -> str | None:
        return self.data.get("kind")

    def mentions(self) -> tuple[dict[str, str], dict[str, str]]:
        """``(own, everywhere)``: the parameter names whose mentions follow in the tool's own texts and results, and
        in every text; none for a step made before steps said so."""
        m = self.data.get("mentions") or {}
        return dict(m.get("own") or {}), dict(m.get("all") or {})

    def hook_text_map(self) -> dict[str, str]:
        """Identifier-like names of top-level parameters only (a name renamed two ways: none)."""
        out: dict[str, str] = {}
        bad: set[str] = set()
        for src, dst in self.data["paths"]:
            if len(src) == 1 and len(dst) == 1 and src[0] != dst[0] and is_identifier_like(src[0]):
                if src[0] in out and out[src[0]] != dst[0]:
                    bad.add(src[0])
                out[src[0]] = dst[0]
        return {k: v for k, v in out.items() if k not in bad}

    def names(self) -> set[str]:
        out = super().names()
        for pair in self.data.get("paths", ()):
            for path in pair:
                out.update(_path_names(path))
        for path, _ in [*(self.data.get("fill") or ()), *(self.data.get("drop") or ())]:
            out.update(_path_names(path))
        return out

    def invert(self) -> Step:
        step = self.data
        inv = {**step, "paths": [[b, a] for a, b in step["paths"]]}  # other keys (a "kind" and its data) travel
        if isinstance(step.get("mentions"), dict):  # which mentions of the names follow, the other way
            inv["mentions"] = {k: {v: o for o, v in table.items()} for k, table in step["mentions"].items()}
        inv.pop("fill", None), inv.pop("drop", None)
        if step.get("fill"):
            inv["drop"] = step["fill"]
        if step.get("drop"):
            inv["fill"] = step["drop"]
        return type(self)(inv)

    def carry_call(self, call: Call, forward: bool) -> Call:
        step = self.data
        name, args = call["name"], call["arguments"]
        if name != step["tool"]:
            return call
        pairs = [(tuple(a), tuple(b)) if forward else (tuple(b), tuple(a)) for a, b in step["paths"]]
        if not forward:
            args = _fill(args, step.get("fill"), step.get("drop"))
        args = move_paths(args, pairs)
        if forward:
            args = _fill(args, step.get("drop"), step.get("fill"))
        return {"name": name, "arguments": args}

    def message_carry(self) -> tuple[tuple, ...]:
        step = self.data
        out: list[tuple] = []
        if not step.get("kind"):  # a rename: its calls as the step rename_params makes of the names it changes
            renames = {tuple(p): n for p, n in {tuple(a): b[-1] for a, b in step["paths"]}.items() if p[-1] != n}
            if renames:
                out.append(("call", step["tool"], None,
                            ParamsStep({"op": "params", "tool": step["tool"], "paths": rename_pairs(renames)})))
        else:
            out.append(("call", step["tool"], None, self))
        own, everywhere = self.mentions()
        if own or everywhere:
            out.append(("mentions", step["tool"], own, everywhere))
        return tuple(out)


class RegroupStep(ParamsStep):
    """A ``params`` step of kind ``regroup``: parameters nested under a new object or flattened out of one
    (``tool.nest``, ``tool.flatten``)."""

    __slots__ = ()


class PermuteStep(ParamsStep):
    """A ``params`` step of kind ``permute``: parameter names swapped between siblings."""

    __slots__ = ()


class RequireStep(ParamsStep):
    """A ``params`` step of kind ``require``: a required parameter with one allowed value (``fill``), dropped on the
    way back."""

    __slots__ = ()


class ValuesStep(_ToolStep):
    """``{"op": "values", "tool": name, "path": path, "map": [[old, new], ...]}``: values at one argument path (enum
    renames, re-drawn defaults), compared strictly; ``"texts": true``: whole-token mentions of the string values
    follow in every text but tool results."""

    __slots__ = ()
    op = "values"
    renames_kind = "value"

    def invert(self) -> Step:
        return ValuesStep({**self.data, "map": [[b, a] for a, b in self.data["map"]]})

    def carry_call(self, call: Call, forward: bool) -> Call:
        if call["name"] != self.data["tool"]:
            return call
        return {"name": call["name"],
                "arguments": _map_values(call["arguments"], tuple(self.data["path"]), self.data["map"], forward)}

    def text_table(self) -> dict[str, str]:
        """The string values whose whole-token mentions follow (``"texts": true``), unchanged ones left out."""
        if not self.data.get("texts"):
            return {}
        table = {a: b for a, b in self.data["map"] if isinstance(a, str) and isinstance(b, str)}
        return {k: v for k, v in table.items() if k != v}

    def message_carry(self) -> tuple[tuple, ...]:
        table = self.text_table()
        return (("call", self.data["tool"], None, self),) + ((("text", table, None, False),) if table else ())


class RestoreStep(Step):
    """``{"op": "restore", "patch": patch, "fmt": {...}}``: no call changes; on the way back the record's content
    is patched into the source's (:func:`hsa.renames.canonicalize`)."""

    __slots__ = ()
    op = "restore"
    changes_calls = False


class OpaqueStep(Step):
    """``{"op": "opaque", ...}``: a task-changing step (``tool.irrelevance``): nothing maps."""

    __slots__ = ()
    op = "opaque"
    changes_calls = False
    task_preserving = False


class UnknownStep(Step):
    """A step of an op this version does not know: carrying a call through it is an error."""

    __slots__ = ()

    @property
    def op(self) -> Any:  # type: ignore[override]
        return self.data.get("op")

    def carry_call(self, call: Call, forward: bool) -> Call:
        raise ValueError(f"unknown mapping step op {self.data.get('op')!r}; expected tools, params, values, skills, "
                         "restore or opaque")


_CLASSES: dict[Any, type[Step]] = {"tools": ToolsStep, "skills": SkillsStep, "values": ValuesStep,
                                   "restore": RestoreStep, "opaque": OpaqueStep}
_PARAMS_KINDS: dict[Any, type[ParamsStep]] = {"regroup": RegroupStep, "permute": PermuteStep,
                                              "require": RequireStep}


def rename_through(data: dict, name: str, forward: bool) -> str:
    """``name`` through the table of the tools or skills step whose JSON is ``data`` (forward) or its inverse:
    :meth:`ToolsStep.rename` without making the step."""
    table = data["map"] if forward else {v: k for k, v in data["map"].items()}
    return table.get(name, name)


def step_class(data: dict) -> type[Step]:
    """The class of the typed step of a step's JSON dict, without making the step: for a reader that asks only
    what the class says (:attr:`Step.renames_tools`, :attr:`Step.task_preserving`, ...)."""
    op = data.get("op")
    if op == "params":
        return _PARAMS_KINDS.get(data.get("kind"), ParamsStep)
    return _CLASSES.get(op, UnknownStep)


def step_of(data: dict | Step) -> Step:
    """:meth:`Step.from_json`."""
    return Step.from_json(data)


def steps_of(steps: Iterable[dict | Step]) -> list[Step]:
    """The typed steps of a list of steps' JSON dicts."""
    return [Step.from_json(s) for s in steps]
