"""The records model: the typed internal form of a record (one harness and one trajectory under it).

Every record, whatever layout or dialect it came in (:mod:`hsa.formats`, :mod:`hsa.records`), is read into the
one form described by the ``TypedDict`` classes below, so that transforms are written once. This module holds
that form, :class:`RecordError` (a record that cannot be read), the keys hsa gives a meaning to, and small
helpers over the internal form. It imports nothing else of hsa, so every layer can use it; users import the
same names from :mod:`hsa.records`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from hsa import _json

__all__ = [
    "Record",
    "Tool",
    "Skill",
    "Prompt",
    "PromptSection",
    "Hook",
    "HookEvent",
    "Message",
    "ToolCall",
    "RecordError",
    "DEFAULT_SKILL_TOOL",
    "HSA_KEYS",
    "OUTPUT_KEYS",
    "iter_calls",
    "tool_index",
    "clone",
    "openai_tools",
]

Dialect = Literal["openai", "anthropic", "mcp", "plain", "gemini"]


class ToolCall(TypedDict):
    """An assistant tool call, internal form: arguments are always a JSON object."""

    id: NotRequired[str]
    type: str
    function: dict[str, Any]  # {"name": str, "arguments": dict}


class Message(TypedDict):
    """A chat message in the OpenAI / Hugging Face format."""

    role: str
    content: NotRequired[Any]
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]
    train: NotRequired[bool]


class Tool(TypedDict):
    """A function definition, internal form, whatever dialect it came in."""

    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]  # standard JSON Schema, type object
    dialect: Dialect
    extra: dict[str, Any]  # other keys beside name/description/parameters
    outer: dict[str, Any]  # OpenAI: keys beside "type"/"function" at the outer level


class Skill(TypedDict):
    """A skill: Markdown module loaded through the skill tool."""

    name: str
    description: str
    content: str


class PromptSection(TypedDict):
    """One section of a prompt: its id, title and body; ``movable`` sections may be reordered."""

    id: str
    title: str
    body: str
    movable: NotRequired[bool]


class Prompt(TypedDict):
    """A sectioned system prompt rendered by a jinja2 template."""

    sections: list[PromptSection]
    template: NotRequired[str]


class Hook(TypedDict):
    """Python source of a hook function bound to a harness event."""

    name: str
    event: str
    source: str
    entry: NotRequired[str]


class HookEvent(TypedDict):
    """Links an injected message to the hook (and payload) that produced it."""

    hook: str
    message_index: int
    payload: NotRequired[dict[str, Any]]
    decision: NotRequired[dict[str, Any]]


class Record(TypedDict):
    """One harness and one trajectory, internal form."""

    id: str
    messages: list[Message]
    tools: list[Tool]
    skills: NotRequired[list[Skill]]
    skill_tool: dict[str, str]  # {"name": ..., "argument": ...}
    prompt: NotRequired[Prompt]
    hooks: NotRequired[list[Hook]]
    hook_events: NotRequired[list[HookEvent]]
    meta: NotRequired[dict[str, Any]]
    mapping: list[dict[str, Any]]  # mapping steps from the canonical record (empty for a source)
    transforms: list[dict[str, Any]]  # replay record of what produced this record
    notes: list[str]
    extra: dict[str, Any]  # any other top-level keys of the input, kept as they came
    _fmt: dict[str, Any]


DEFAULT_SKILL_TOOL = {"name": "load_skill", "argument": "skill"}

#: Top-level keys that hsa gives a meaning to.
HSA_KEYS = ("id", "messages", "tools", "skills", "skill_tool", "prompt", "hooks", "hook_events", "meta")
#: Keys hsa adds to every output row.
OUTPUT_KEYS = ("source_id", "variant", "slot", "transforms", "mapping", "notes")


class RecordError(ValueError):
    """A record that cannot be read; ``reason`` is a short stable key, ``detail`` says what to do."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    def __reduce__(self):  # pickled as made (to and from worker processes): ValueError's own would pass one argument
        return type(self), (self.reason, self.detail)


def tool_index(record: Record) -> dict[str, Tool]:
    """Tools of ``record`` by name."""
    return {t["name"]: t for t in record["tools"]}


def iter_calls(record: Record):
    """Yield ``(message_index, call_index, call)`` for every tool call of ``record``."""
    for mi, msg in enumerate(record["messages"]):
        for ci, call in enumerate(msg.get("tool_calls") or ()):
            yield mi, ci, call


def clone(record: Record) -> Record:
    """A deep copy of ``record`` (transforms must not modify their input)."""
    return _json.copy(record)  # type: ignore[return-value]


def openai_tools(tools: list[dict]) -> list[dict]:
    """Internal-form tools (:func:`hsa.records.normalize`) as OpenAI function definitions, what chat templates render:
    name, description (when there is one) and the parameter schema (an empty object schema when none)."""
    out = []
    for t in tools:
        fn: dict[str, Any] = {"name": t["name"]}
        if t.get("description") is not None:
            fn["description"] = t["description"]
        fn["parameters"] = t.get("parameters") or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": fn})
    return out
