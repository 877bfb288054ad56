"""A record as its two halves: the :class:`Harness` it runs under and the :class:`Trajectory` that happened in it.

A record (:class:`hsa.records.Record`) is one harness and one trajectory under it. Most of what hsa does to a
variant is a function of the harness alone (rename the tools, rewrite the hooks, restructure the prompt), and
records of one deployment share their harness; so the work of a harness can be done once and keyed by
:meth:`Harness.digest`, and each record only carries its own trajectory through it (docs/design-slot-plans.md).

:func:`split` cuts a record into the two halves and :func:`join` puts them back: ``join(*split(record))`` equals
``record``, key order included. Both are views: the parts are the record's own objects, not copies (a prompt
and its sections are the exception: they are rebuilt, because the section bodies belong to the trajectory).
Neither half is to be modified, as a transform never modifies its input.

What is harness-level is what :func:`hsa.pipeline.harness_digest` reads (docs/design.md, "Harness-variant pool"):
the tools, the skills, the skill tool, the hooks, and the prompt's structure (its template and its sections
without their bodies), plus the ``_fmt`` keys that say how those are written (:data:`HARNESS_FMT_KEYS`).
Everything else is the trajectory's: the messages, the hook events, the prompt's section bodies, the id, the
meta, the mapping so far, the notes, the extra keys, how calls are written, and the record's key order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from hsa.record_model import Record

__all__ = ["Harness", "Trajectory", "split", "join", "HARNESS_KEYS", "TRAJECTORY_KEYS", "HARNESS_FMT_KEYS"]

#: A record's harness-level keys, in the order :meth:`Harness.digest` reads them.
HARNESS_KEYS = ("tools", "skills", "skill_tool", "hooks", "prompt")
#: The record keys a :class:`Trajectory` holds by name (any other key but ``_fmt`` goes to its ``other``).
TRAJECTORY_KEYS = ("id", "messages", "hook_events", "meta", "mapping", "transforms", "notes", "extra")
#: The keys of a record's ``_fmt`` that say how its harness is written (:func:`hsa.records.denormalize`): tools
#: that came as ``null`` or were absent, a tool list given as a JSON string, a skill tool given as a string or
#: left to its default. The other ``_fmt`` keys (call style, argument encoding, source id) are the trajectory's.
HARNESS_FMT_KEYS = frozenset({"no_tools", "tools_str", "skill_tool_str", "skill_tool_default"})


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class Harness:
    """The harness half of a record: what a deployment gives the model, shared by every record of it.

    ``prompt`` is the prompt's structure: the prompt with each section's ``body`` taken out (the bodies are the
    trajectory's). ``fmt`` holds the record's ``_fmt`` keys of :data:`HARNESS_FMT_KEYS`. A part the record does
    not have is ``None``. Two harnesses are equal when their :meth:`digest` is, and hash by it.
    """

    tools: Any = None
    skills: Any = None
    skill_tool: Any = None
    hooks: Any = None
    prompt: Any = None
    fmt: dict[str, Any] = dataclasses.field(default_factory=dict)

    def digest(self) -> str:
        """The sha256 (hex) of the harness's exact JSON: its parts in :data:`HARNESS_KEYS` order, then ``fmt``.

        Key order counts: two harnesses that differ only in the order of their keys write different bytes
        (an output keeps its input's key order) and draw their pool slots from different seeds
        (:func:`hsa.pipeline.harness_digest` reads the same order), so they must not share the work keyed by
        this digest. Computed once per object (the parts are not to be modified)."""
        cached = self.__dict__.get("_digest")
        if cached is None:
            parts = [self.tools, self.skills, self.skill_tool, self.hooks, self.prompt, self.fmt]
            text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))  # exact: NaN, big ints, key order
            cached = hashlib.sha256(b"hsa-harness\x00" + text.encode("utf-8", "surrogatepass")).hexdigest()
            object.__setattr__(self, "_digest", cached)
        return cached

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Harness):
            return NotImplemented
        return self is other or self.digest() == other.digest()

    def __hash__(self) -> int:
        return hash(self.digest())


@dataclasses.dataclass(frozen=True, eq=True, kw_only=True)
class Trajectory:
    """The trajectory half of a record: what happened under the harness, and how the record was laid out.

    ``prompt_bodies`` has one entry per section of the prompt: ``(place, body)``, the body and the place of the
    ``body`` key among the section's keys, or ``None`` for a section without one; it is ``None`` when the record
    has no sectioned prompt. ``fmt`` holds the ``_fmt`` keys that are not the harness's; ``other`` the record's
    keys that hsa gives no meaning to (a normalised record has none: they sit in ``extra``). ``keys`` and
    ``fmt_keys`` are the record's key order and its ``_fmt``'s (``None``: the record has no ``_fmt``), which
    :func:`join` writes back. A part the record does not have is ``None``.
    """

    id: Any = None
    messages: Any = None
    hook_events: Any = None
    meta: Any = None
    mapping: Any = None
    transforms: Any = None
    notes: Any = None
    extra: Any = None
    prompt_bodies: tuple | None = None
    fmt: dict[str, Any] = dataclasses.field(default_factory=dict)
    other: dict[str, Any] = dataclasses.field(default_factory=dict)
    keys: tuple[str, ...] = ()
    fmt_keys: tuple[str, ...] | None = None

    __hash__ = None  # type: ignore[assignment]  # its parts are lists and dicts


def split(record: Record | dict) -> tuple[Harness, Trajectory]:
    """``record`` as its harness and its trajectory (views over its parts); :func:`join` puts them back."""
    if not isinstance(record, dict):
        raise TypeError(f"split takes a record, a dict (got {record!r} that is a {type(record)!r})")
    fmt = record.get("_fmt", {})
    if not isinstance(fmt, dict):
        raise TypeError(f"record {record.get('id')!r}: '_fmt' must be a dict, as hsa.records.normalize writes it "
                        f"(got {fmt!r} that is a {type(fmt)!r})")
    prompt, bodies = _prompt_shape(record["prompt"]) if "prompt" in record else (None, None)
    harness = Harness(tools=record.get("tools"), skills=record.get("skills"), skill_tool=record.get("skill_tool"),
                      hooks=record.get("hooks"), prompt=prompt,
                      fmt={k: v for k, v in fmt.items() if k in HARNESS_FMT_KEYS})
    named = set(HARNESS_KEYS) | set(TRAJECTORY_KEYS) | {"_fmt"}
    trajectory = Trajectory(**{k: record.get(k) for k in TRAJECTORY_KEYS}, prompt_bodies=bodies,
                            fmt={k: v for k, v in fmt.items() if k not in HARNESS_FMT_KEYS},
                            other={k: v for k, v in record.items() if k not in named}, keys=tuple(record),
                            fmt_keys=tuple(fmt) if "_fmt" in record else None)
    return harness, trajectory


def join(harness: Harness, trajectory: Trajectory) -> Record:
    """The record of ``trajectory`` under ``harness``: its keys in ``trajectory.keys`` order, then any harness part
    or ``_fmt`` key the trajectory's record did not have (in :data:`HARNESS_KEYS` order).

    Raises ``ValueError`` when the harness's prompt does not have a section for each of the trajectory's
    section bodies."""
    out: dict[str, Any] = {}
    for key in trajectory.keys:
        out[key] = _part(key, harness, trajectory)
    for key in HARNESS_KEYS:
        if key not in out and getattr(harness, key) is not None:
            out[key] = _part(key, harness, trajectory)
    if "_fmt" not in out and (harness.fmt or trajectory.fmt):
        out["_fmt"] = _part("_fmt", harness, trajectory)
    return out  # type: ignore[return-value]


def _part(key: str, harness: Harness, trajectory: Trajectory) -> Any:
    """The value of record key ``key`` from the two halves."""
    if key == "prompt":
        return _prompt_whole(harness.prompt, trajectory.prompt_bodies, trajectory.id)
    if key == "_fmt":
        order = list(trajectory.fmt_keys or ())
        order += [k for k in (*harness.fmt, *trajectory.fmt) if k not in order]
        return {k: harness.fmt[k] if k in harness.fmt else trajectory.fmt[k]
                for k in order if k in harness.fmt or k in trajectory.fmt}
    if key in HARNESS_KEYS:
        return getattr(harness, key)
    if key in TRAJECTORY_KEYS:
        return getattr(trajectory, key)
    return trajectory.other[key]


def _prompt_shape(prompt: Any) -> tuple[Any, tuple | None]:
    """A prompt's structure (each section without its ``body``) and its bodies, each with the place of its key."""
    if not isinstance(prompt, dict) or not isinstance(prompt.get("sections"), list):
        return prompt, None
    sections: list = []
    bodies: list = []
    for section in prompt["sections"]:
        if isinstance(section, dict) and "body" in section:
            sections.append({k: v for k, v in section.items() if k != "body"})
            bodies.append((list(section).index("body"), section["body"]))
        else:
            sections.append(section)
            bodies.append(None)
    return {k: sections if k == "sections" else v for k, v in prompt.items()}, tuple(bodies)


def _prompt_whole(shape: Any, bodies: tuple | None, record_id: Any) -> Any:
    """:func:`_prompt_shape` undone: each body back in its section, at its place."""
    if bodies is None:
        return shape
    sections = shape.get("sections") if isinstance(shape, dict) else None
    if not isinstance(sections, list) or len(sections) != len(bodies) or any(
            b is not None and not isinstance(s, dict) for s, b in zip(sections, bodies)):
        raise ValueError(f"record {record_id!r}: the harness's prompt has no section for each of the trajectory's "
                         f"{len(bodies)} section bodies (got {_count(sections)}); join a trajectory with the "
                         "harness it was split from, or one whose prompt has the same sections")
    whole = []
    for section, body in zip(sections, bodies):
        if body is None:
            whole.append(section)
            continue
        items = list(section.items())
        items.insert(body[0], ("body", body[1]))
        whole.append(dict(items))
    return {k: whole if k == "sections" else v for k, v in shape.items()}


def _count(sections: Any) -> str:
    return f"{len(sections)} sections" if isinstance(sections, list) else f"sections {sections!r}"
