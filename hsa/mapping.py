"""The invertible mapping between a source harness and one of its variants.

A mapping is a chain of *steps*, each a small JSON object that knows how to carry a
tool call forward (``to_variant``) and back (``to_canonical``). Composition is
concatenation, so any sequence of transforms has an exact inverse. What each step kind means (its inverse, how
it carries calls and messages) is its typed step in :mod:`hsa.steps`; the JSON form below is what is stored. Step kinds:

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
from hsa.steps import ARRAY, Step, move_paths, rename_through, step_class, steps_of

__all__ = ["Mapping", "Call", "argument_leaves", "carry_call", "move_paths", "Step"]

Call = dict[str, Any]  # {"name": str, "arguments": dict}

MAPPING_VERSION = 1


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


# --------------------------------------------------------------------------- steps


def carry_call(step: dict | Step, call: Call, forward: bool) -> Call:
    """``call`` carried through one mapping ``step``: towards the variant (``forward``) or back to the source.

    What :meth:`Mapping.to_variant` / :meth:`Mapping.to_canonical` do step by step (:meth:`hsa.steps.Step.carry_call`
    of the typed step), and what the hook model uses to carry tool inputs."""
    return Step.from_json(step).carry_call(call, forward)


class Mapping:
    """What a chain of transforms did to a harness, kept so it can be undone.

    >>> m = Mapping([{"op": "tools", "map": {"get_weather": "fetchWeather"}},
    ...              {"op": "params", "tool": "fetchWeather", "paths": [[["city"], ["location"]]]}])
    >>> m.to_variant({"name": "get_weather", "arguments": {"city": "Paris"}})
    {'name': 'fetchWeather', 'arguments': {'location': 'Paris'}}
    >>> m.to_canonical({"name": "fetchWeather", "arguments": {"location": "Paris"}})
    {'name': 'get_weather', 'arguments': {'city': 'Paris'}}
    """

    __slots__ = ("steps", "_typed", "_classes")

    def __init__(self, steps: Iterable[dict] = ()):
        self.steps: list[dict] = list(steps)
        self._typed: list[Step] | None = None
        self._classes: list[type[Step]] | None = None

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
        """The mapping from the variant back to the source, as a mapping of its own (each step's
        :meth:`hsa.steps.Step.invert`, newest first)."""
        return Mapping([step.invert().to_json() for step in reversed(self.typed())])

    def typed(self) -> list[Step]:
        """The steps as typed steps (:mod:`hsa.steps`), in order; made once (a step's JSON is never changed)."""
        typed = self._typed
        if typed is None or len(typed) != len(self.steps):
            typed = self._typed = steps_of(self.steps)
        return typed

    def _step_classes(self) -> list[type[Step]]:
        """The typed steps' classes (:func:`hsa.steps.step_class`), for the readers that ask only what a class
        says; made once."""
        classes = self._classes
        if classes is None or len(classes) != len(self.steps):
            classes = self._classes = [step_class(s) for s in self.steps]
        return classes

    # -- calls
    def to_variant(self, call: Call) -> Call:
        """Carry a call made under the source harness to the variant harness."""
        call = {"name": call["name"], "arguments": call.get("arguments") or {}}
        for step in self.typed():
            call = step.carry_call(call, True)
        return call

    def to_canonical(self, call: Call) -> Call:
        """Carry a call made under the variant harness back to the source harness."""
        call = {"name": call["name"], "arguments": call.get("arguments") or {}}
        for step in reversed(self.typed()):
            call = step.carry_call(call, False)
        return call

    # -- names
    def _rename(self, skills: bool, name: str, forward: bool) -> str:
        pairs = list(zip(self.steps, self._step_classes()))
        for step, cls in (pairs if forward else reversed(pairs)):
            if (cls.renames_skills if skills else cls.renames_tools):
                name = rename_through(step, name, forward)
        return name

    def tool_to_variant(self, name: str) -> str:
        return self._rename(False, name, True)

    def tool_to_canonical(self, name: str) -> str:
        return self._rename(False, name, False)

    def skill_to_variant(self, name: str) -> str:
        return self._rename(True, name, True)

    def skill_to_canonical(self, name: str) -> str:
        return self._rename(True, name, False)

    def _names(self, skills: bool) -> dict[str, str]:
        current: dict[str, str] = {}  # canonical name -> name after the steps so far
        for step, cls in zip(self.steps, self._step_classes()):
            if not (cls.renames_skills if skills else cls.renames_tools):
                continue
            table = step["map"]
            produced = set(current.values())
            fresh = {old: new for old, new in table.items() if old not in produced and old not in current}
            current = {c: table.get(v, v) for c, v in current.items()}
            current.update(fresh)
        return {c: v for c, v in current.items() if c != v}

    def tool_names(self) -> dict[str, str]:
        """Composed tool renames, canonical name -> variant name."""
        return self._names(False)

    def skill_names(self) -> dict[str, str]:
        """Composed skill renames, canonical name -> variant name."""
        return self._names(True)

    def names(self) -> set[str]:
        """Every tool, skill and parameter name a step of this mapping names, before or after it: the names the
        source (and each intermediate harness) had, which a transform that adds a tool or a parameter must avoid."""
        out: set[str] = set()
        for step in self.typed():
            out |= step.names()
        return out

    @property
    def task_preserving(self) -> bool:
        """False when a step changed the task (for example ``tool.irrelevance``)."""
        return all(cls.task_preserving for cls in self._step_classes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and _json.canonical(self.steps) == _json.canonical(other.steps)

    def __repr__(self) -> str:
        return f"Mapping(tools={self.tool_names()!r}, skills={self.skill_names()!r}, steps={len(self.steps)})"
