"""Tools kept in a row's ``chat_template_kwargs`` (SmolLM3's SFT data, smoltalk2: ``{"xml_tools": [...],
"python_tools": [...], "enable_thinking": ..., "custom_instructions": ...}``): the keyword arguments a trainer
passes to the chat template for this row (trl's SFT and DPO trainers do). Tool definitions there are the row's
tools: they move to ``tools``, so that hsa reads and varies them. Left there, a variant's rows would carry the
source's tool list beside the renamed calls, and the template would render the old list."""

from __future__ import annotations

from hsa import _json
from hsa.formats.common import noted, plural
from hsa.record_model import RecordError

__all__ = ["TOOL_KWARGS", "tools_from_template_kwargs"]

#: The keyword arguments that hold a tool list in JSON-schema form: SmolLM3's ``xml_tools`` (a tool per JSON text)
#: and the ``tools`` a template reads when given through the keywords. SmolLM3's ``python_tools`` are Python
#: signatures for code-writing turns, not function definitions: they stay where they are.
TOOL_KWARGS = ("xml_tools", "tools")


def tools_from_template_kwargs(raw: dict) -> dict:
    """``raw`` with the tool lists of its ``chat_template_kwargs`` moved to ``tools``, and SmolLM3's
    ``custom_instructions`` to a system message where the row has none (each noted); ``raw`` itself when it has
    neither. Raises RecordError("conflicting tools") when the row's own ``tools`` list other tools."""
    raw = _instructions_to_system(raw)
    kwargs = raw.get("chat_template_kwargs")
    if type(kwargs) is not dict or not any(kwargs.get(k) for k in TOOL_KWARGS):
        return raw
    found = [(k, kwargs[k]) for k in TOOL_KWARGS if kwargs.get(k)]
    tools = []
    for key, value in found:
        value = _decoded(value, f"chat_template_kwargs.{key}", "a list of tool definitions (objects or their JSON "
                                                               "texts)")
        if not isinstance(value, list):
            raise RecordError("bad tools", f"chat_template_kwargs.{key} is {type(value).__name__}; expected a list "
                              "of tool definitions (objects or their JSON texts)")
        for i, tool in enumerate(value):
            tool = _decoded(tool, f"chat_template_kwargs.{key}[{i}]", "a tool definition (an object or its JSON text)")
            if tool not in tools:
                tools.append(tool)
    own = raw.get("tools")
    if isinstance(own, str):
        try:
            own = _json.loads(own)
        except ValueError:
            own = None  # the tools reader reports it
    if own and own != tools:
        raise RecordError("conflicting tools", "the row lists tools in 'tools' and other tools in "
                          f"chat_template_kwargs.{found[0][0]}; a chat template given both renders one of them: keep "
                          "one list")
    rest = {k: v for k, v in kwargs.items() if k not in TOOL_KWARGS or not v}
    names = " and ".join(f"chat_template_kwargs.{k}" for k, _ in found)
    return noted({**raw, "tools": tools, "chat_template_kwargs": rest},
                 f"converted tools kept in chat_template_kwargs: {names} moved to 'tools' "
                 f"({plural(len(tools), 'tool')}): the variants' tools are written there")


def _decoded(value, where: str, expected: str):
    """``value``, or the JSON its text holds; a text that is not JSON is a RecordError naming ``where``."""
    if not isinstance(value, str):
        return value
    try:
        return _json.loads(value)
    except ValueError:
        raise RecordError("bad tools", f"{where} is a string that is not JSON; expected {expected}") from None


def _instructions_to_system(raw: dict) -> dict:
    """SmolLM3's ``custom_instructions`` is the system prompt: its template renders a system message's text in the
    same place, in its stead. Kept in the keywords, it is harness text that hsa neither reads nor varies (a tool
    renamed in the variant would keep its old name there), so a row without a system message gets it as one."""
    kwargs = raw.get("chat_template_kwargs")
    text = kwargs.get("custom_instructions") if type(kwargs) is dict else None
    msgs = raw.get("messages")
    if not isinstance(text, str) or not text.strip() or not isinstance(msgs, list):
        return raw
    if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system":
        return raw  # the template renders the system message instead
    rest = {k: v for k, v in kwargs.items() if k != "custom_instructions"}
    return noted({**raw, "messages": [{"role": "system", "content": text}, *msgs], "chat_template_kwargs": rest},
                 "converted tools kept in chat_template_kwargs: custom_instructions moved into a system message "
                 "(SmolLM3's template renders either in the same place)")
