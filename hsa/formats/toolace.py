"""ToolACE (Team-ACE/ToolACE): a JSON tool list in the system text, ``[Name(args)]`` call lists.

``{"system": "... invoke:\\n[{tool json}, ...]. \\nShould you decide ...", "conversations": [{"from":
"user"|"assistant"|"tool", "value"}]}``; calls are whole assistant turns ``[Get Manager Placeholder
Image(sport="football"), GetCompetitions()]`` (names with spaces, keyword arguments with JSON / Python
literal values, read by :class:`ToolaceCalls`), results ``[{"name": ..., "results": {...}}, ...]``.
"""

from __future__ import annotations

import re
from typing import Any

from hsa.formats.common import (
    check_tools,
    cut_spans,
    json_spans,
    json_text,
    merge_tools,
    parse_literal,
    plural,
    read_turn,
    take_call,
    tool_call,
    tool_name,
    with_notes,
)
from hsa.record_model import RecordError

__all__ = ["ToolaceCalls", "convert_toolace", "toolace_turns"]


#: Speakers of a ToolACE row; a row with other turns (LLaMA-Factory's function_call/observation) is not ToolACE.
_TOOLACE_ROLES = {"system", "user", "human", "assistant", "gpt", "tool"}
#: The call-format instruction of ToolACE system texts: "[func1(params_name=params_value, ...), func2(params)]".
_TOOLACE_FORMAT_RE = re.compile(r"\[func\w*\(params?_name")
#: An assistant turn that is a call list: "[" + a name (any characters but brackets, quotes, "=" and ",") + "(".
_TOOLACE_CALL_HEAD = re.compile(r"\[\s*[^\s\[\](){}=,\"'][^\[\](){}=,\"'\n]*\(")
_TOOLACE_NAME_STOP = frozenset("()[]{}=,\"'\n")
_TOOLACE_SHAPE = '[Name(param="text", n=3), Other(flag=True, items=[1, 2])]'


_LIST_OF_OBJECTS = re.compile(r"\[\s*\{")


def _toolace_tool_lists(text: str) -> list[tuple[int, int, list]]:
    """(start, end, tools) of each JSON list of named tool objects in ``text``."""
    return json_spans(text, _LIST_OF_OBJECTS, lambda v: v if isinstance(v, list) and v and all(
        tool_name(t) is not None for t in v) else None)


def _is_toolace_calls(text: Any) -> bool:
    """True for an assistant text that is a whole ``[Name(...), ...]`` call list."""
    if not isinstance(text, str):
        return False
    s = text.strip()
    return s.endswith("]") and _TOOLACE_CALL_HEAD.match(s) is not None


def toolace_turns(raw: dict) -> list | None:
    """The turns when ``raw`` is a ToolACE row, else None.

    A ToolACE row: ``conversations`` of ``{from, value}`` turns by system/user/assistant/tool only (no "messages"),
    a system text (top-level ``system`` or a system turn) holding a JSON list of tool objects, and either an
    assistant turn that is a ``[Name(...)]`` call list or the ``[func1(params_name=...)]`` instruction in the
    system text (rows where the assistant answers or asks without calling).
    """
    turns = raw.get("conversations")
    if "messages" in raw or not isinstance(turns, list) or not turns:
        return None
    if not all(isinstance(t, dict) and "from" in t and "value" in t and str(t["from"]).lower() in _TOOLACE_ROLES
               for t in turns):
        return None
    roles = [str(t["from"]).lower() for t in turns]
    systems = [raw["system"]] if isinstance(raw.get("system"), str) else []
    systems += [t["value"] for t, r in zip(turns, roles) if r == "system" and isinstance(t["value"], str)]
    with_tools = [s for s in systems if _toolace_tool_lists(s)]
    if not with_tools:
        return None
    if any(r in ("assistant", "gpt") and _is_toolace_calls(t["value"]) for t, r in zip(turns, roles)):
        return turns
    if any(_TOOLACE_FORMAT_RE.search(s) for s in with_tools):
        return turns
    return None


def _toolace_system(text: str, where: str) -> tuple[str, list]:
    """The system text without its JSON tool lists (a "." right after a list goes with it), and their tools."""
    spans = _toolace_tool_lists(text)
    tools = [t for _, _, found in spans for t in check_tools(found, f"{where} tool list")]
    return cut_spans(text, spans), tools


class ToolaceCalls:
    """A tokenizer for ToolACE call lists: ``[Name(key=literal, ...), ...]``.

    Names may hold spaces, dots, slashes and dashes (``Get Manager Placeholder Image``, ``/madlibs-diceware``),
    so the list is not Python: a name is read up to its ``(`` (a defined tool name is preferred, so a name
    holding ``(`` works too); each value is scanned to its ``,`` or ``)`` outside brackets and strings and read
    as a JSON or Python literal. Nothing is evaluated.
    """

    def __init__(self, text: str, where: str, names: list[str]):
        self.s, self.i, self.where, self.names = text.strip(), 0, where, names

    def fail(self, what: str) -> Exception:
        near = self.s[max(0, self.i - 30):self.i + 30]
        return RecordError("bad tool call", f"{self.where}: the call list is broken at character {self.i + 1} ({what}; "
                           f"near {near!r}); expected [Name(param=value, ...), ...] with JSON or Python literal "
                           f"values, e.g. {_TOOLACE_SHAPE}")

    def peek(self) -> str:
        return self.s[self.i:self.i + 1]

    def space(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def more(self, closer: str, after: str) -> bool:
        """After an item of a list: True past a ',' with another item to come, False past ``closer`` (a trailing
        ',' before it is allowed); anything else is an error."""
        self.space()
        if self.peek() == ",":
            self.i += 1
            self.space()
            if self.peek() != closer:
                return True
        if self.peek() != closer:
            raise self.fail(f"expected ',' or {closer!r} after {after}")
        self.i += 1
        return False

    def parse(self) -> list[tuple[str, dict]]:
        self.i = 1  # past the "[" (the caller checked the shape)
        calls = []
        while True:
            self.space()
            calls.append(self.call())
            if not self.more("]", "a call"):
                break
        self.space()
        if self.i < len(self.s):
            raise self.fail("text after the closing ']'")
        return calls

    def name(self) -> str:
        for known in self.names:
            if self.s.startswith(known, self.i) and self.s[self.i + len(known):].lstrip()[:1] == "(":
                self.i += len(known)
                return known
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in _TOOLACE_NAME_STOP:
            self.i += 1
        name = self.s[start:self.i].strip()
        if not name:
            raise self.fail("a call without a name")
        return name

    def call(self) -> tuple[str, dict]:
        name = self.name()
        self.space()
        if self.peek() != "(":
            raise self.fail(f"expected '(' after the name {name!r}")
        self.i += 1
        args: dict[str, Any] = {}
        self.space()
        if self.peek() == ")":
            self.i += 1
            return name, args
        while True:
            self.space()
            start = self.i
            while self.i < len(self.s) and not self.s[self.i].isspace() and self.s[self.i] not in "=()[]{},\"'":
                self.i += 1
            key = self.s[start:self.i]
            self.space()
            if not key or self.peek() != "=":
                self.i = start
                raise self.fail(f"argument {len(args) + 1} of {name!r} has no name; write every argument as "
                                "param=value")
            self.i += 1
            self.space()
            start = self.i
            self.value()
            text = self.s[start:self.i].strip()
            if not text:
                raise self.fail(f"{key}= has no value")
            try:
                value = parse_literal(text)
            except ValueError as exc:
                self.i = start
                raise self.fail(f"the value of {key!r} is not a JSON or Python literal ({exc}); quote text "
                                "values") from None
            if key in args:
                raise self.fail(f"{key!r} is given twice")
            args[key] = value
            if not self.more(")", f"the value of {key!r}"):
                return name, args

    def value(self) -> None:
        """Move past one value: up to a ',' or ')' outside brackets and strings."""
        closers: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in "\"'":
                self.string()
                continue
            if c in "([{":
                closers.append(")]}"["([{".index(c)])
            elif c in ")]}":
                if not closers:
                    if c == ")":
                        return
                    raise self.fail(f"an unmatched {c!r} (is a ')' missing?)")
                if c != closers[-1]:
                    raise self.fail(f"{c!r} where {closers[-1]!r} was expected")
                closers.pop()
            elif c == "," and not closers:
                return
            self.i += 1
        raise self.fail("the call is not closed with ')'")

    def string(self) -> None:
        quote = self.s[self.i] * 3 if self.s.startswith(self.s[self.i] * 3, self.i) else self.s[self.i]
        start = self.i
        self.i += len(quote)
        while self.i < len(self.s):
            if self.s[self.i] == "\\":
                self.i += 2
            elif self.s.startswith(quote, self.i):
                self.i += len(quote)
                return
            else:
                self.i += 1
        self.i = start
        raise self.fail("a string is not closed")


def _toolace_results(text: str, pending: list, where: str, extra: dict, notes: list[str]) -> list[dict]:
    """Tool messages for a tool turn ``[{"name", "results"}, ...]``, paired with the calls by name, else in order.

    Content: the JSON text of each ``results`` (the item without its "name" when it holds other keys too; the
    whole item when its name answers no open call). A turn that is not such a list is one result, kept whole.
    """
    try:
        value = parse_literal(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        value = [value]
    if not (isinstance(value, list) and value and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                                      for v in value)):
        call = take_call(pending, where)
        if pending:
            notes.append(f"{where}: not a list of {{\"name\", \"results\"}}; kept whole as the result of "
                         f"{call['id']} ({call['function']['name']})")
        return [{**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                 "content": text}]
    out = []
    for k, item in enumerate(value, 1):
        at = f"{where} result {k}"
        if any(c["function"]["name"] == item["name"] for c in pending):
            call = take_call(pending, at, name=item["name"])
            rest = {key: v for key, v in item.items() if key != "name"}
            content = json_text(rest["results"] if list(rest) == ["results"] else rest)
        else:
            call = take_call(pending, at)
            notes.append(f"{at} names {item['name']!r}, which no open call has; paired in order with "
                         f"{call['id']} ({call['function']['name']}) and kept whole")
            content = json_text(item)
        out.append({**extra, "role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                    "content": content})
    return out


def convert_toolace(raw: dict, turns: list) -> dict:
    """A ToolACE row (:func:`toolace_turns`) as messages and the tools of its system text."""
    notes: list[str] = []
    messages: list[dict] = []
    tools: list = []
    system = raw.get("system")
    if isinstance(system, str):
        prose, found = _toolace_system(system, "system")
        tools.extend(found)
        if prose.strip():
            messages.append({"role": "system", "content": prose})
        elif found:
            notes.append("system: held only the tool list; dropped")
    for i, t in enumerate(turns):
        if read_turn(t, f"conversations[{i}]")[0] == "system" and isinstance(t["value"], str):
            tools.extend(_toolace_system(t["value"], f"conversations[{i}]")[1])
    names = sorted({n for n in (tool_name(t) for t in tools) if n}, key=len, reverse=True)
    pending: list[dict] = []
    n_calls = n_results = 0
    for i, t in enumerate(turns):
        where = f"conversations[{i}]"
        role, text, extra = read_turn(t, where)
        if not isinstance(text, str):
            messages.append({**extra, "role": role, "content": text})
        elif role == "system":
            prose, found = _toolace_system(text, where)
            if found and not prose.strip():
                notes.append(f"{where}: the system turn held only the tool list; dropped")
                continue
            messages.append({**extra, "role": "system", "content": prose})
        elif role == "assistant" and _is_toolace_calls(text):
            calls = []
            for name, args in ToolaceCalls(text, f"{where} (assistant)", names).parse():
                n_calls += 1
                calls.append(tool_call(f"call_{n_calls}", name, args))
            messages.append({**extra, "role": "assistant", "content": "", "tool_calls": calls})
            pending = list(calls)
        elif role == "tool":
            results = _toolace_results(text, pending, f"{where} (tool)", extra, notes)
            n_results += len(results)
            messages.extend(results)
        else:
            if role == "assistant" and _TOOLACE_CALL_HEAD.match(text.strip()):
                notes.append(f"{where}: starts like a call list but does not end with ']'; kept as text")
            messages.append({**extra, "role": role, "content": text})
            pending = []
    out = {k: v for k, v in raw.items() if k != "conversations" and not (k == "system" and isinstance(v, str))}
    out["messages"] = messages
    out["tools"] = merge_tools(raw, tools, "the system text", notes)
    summary = (f"converted from the ToolACE layout (system with a JSON tool list, [Name(args)] calls): "
               f"{plural(len(tools), 'tool')}, {plural(n_calls, 'call')}, {plural(n_results, 'result')}")
    return with_notes(out, [summary] + notes)
