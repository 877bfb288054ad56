"""The HSA-RL environment: one row's harness, answering a model from the row's recorded trajectory.

An :class:`Environment` is built from one dataset row — an original or any variant, as
``hsa augment`` writes them, or an input record — and one of its user turns. The model
plays that turn: it sees the conversation up to the turn (:meth:`Environment.prompt`)
and the row's tools, and every assistant message it writes goes to
:meth:`Environment.step`, which answers like the deployed harness would:

- a call of a tool the variant does not have, or whose arguments do not validate
  against the variant's own JSON Schema, gets an error tool message (the text a
  harness sends: which tool, what was wrong, where; JSON ``{"error": ...}`` when the
  row's recorded results are JSON objects, else plain text);
- a call of the skill tool gets the named skill's content (an unknown skill is an error);
- any other valid call is carried back to the source harness with the row's mapping
  and compared with the recorded calls (name and arguments, JSON types included): a
  match gets the recorded result — the row's own tool message, which ``hsa augment``
  already carried into the variant with its result rule, so nothing is re-mapped
  here — and anything else gets :attr:`EnvironmentOptions.no_result`;
- the variant's ``pre_tool_use`` hooks run on every valid call and its ``pre_reply``
  hooks on every final reply, in :mod:`hsa.sandbox`; a blocking decision's message
  (``hsa.hooks_model.decision_of``, as hook replay reads it) is injected as its own
  message, in the role the row's recorded hook messages have, and the call is not
  answered or the reply not accepted (the model is asked to retry).

The episode ends at a final reply that every ``pre_reply`` hook allows, or after
:attr:`EnvironmentOptions.max_turns` assistant messages. :meth:`Environment.summary`
is a JSON description of the episode that the rewards of :mod:`trainers.rewards` read.

Nothing here imports torch: any RL framework can drive the environment.

>>> row = {"id": "r", "messages": [
...     {"role": "user", "content": "price of link 3?"},
...     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
...         "name": "get_price", "arguments": {"link": 3}}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "139"},
...     {"role": "assistant", "content": "139 yuan."}],
...     "tools": [{"type": "function", "function": {"name": "get_price", "parameters": {
...         "type": "object", "properties": {"link": {"type": "integer"}}, "required": ["link"]}}}]}
>>> env = Environment.from_row(row)
>>> env.step({"content": "", "tool_calls": [{"name": "get_price", "arguments": {"link": 3}}]}).messages[-1]["content"]
'139'
>>> env.step({"content": "Link 3 is 139 yuan."}).end
'reply'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from hsa import _json

__all__ = [
    "Environment",
    "EnvironmentOptions",
    "Step",
    "episode_starts",
    "read_record",
    "hook_message_indices",
    "content_text",
    "DEFAULT_NO_RESULT",
    "DEFAULT_RETRY",
    "DEFAULT_BLOCKED",
    "DEFAULT_MALFORMED",
]

DEFAULT_NO_RESULT = ("No result for this call: {name} with these arguments returned nothing in this session. "
                     "Check the tool and its arguments, or answer with what you have.")
DEFAULT_RETRY = "The reply was not accepted ({hook}). Revise it and reply again."
DEFAULT_BLOCKED = "The call was not run: the harness blocked it ({hook})."
DEFAULT_MALFORMED = ("The last message could not be read: {error}. Write each call as one tool call with a tool "
                     "name and a JSON object of arguments, or reply in plain text.")

_ERROR_STYLES = ("auto", "json", "text")


@dataclasses.dataclass(frozen=True)
class EnvironmentOptions:
    """How an :class:`Environment` answers. Texts may contain ``{name}``, ``{hook}`` or ``{error}``."""

    max_turns: int = 8  # assistant messages per episode
    no_result: str = DEFAULT_NO_RESULT  # tool message for a valid call that matches no recorded call ({name})
    error_style: str = "auto"  # errors as "json" ({"error": ...}), "text" ("Error: ..."), or "auto" (as results)
    hook_role: str | None = None  # role of injected hook messages; None: as the row's recorded ones, else "user"
    retry_message: str = DEFAULT_RETRY  # injected when a blocking reply hook says nothing ({hook})
    blocked_result: str = DEFAULT_BLOCKED  # tool message of a call a pre_tool_use hook blocked ({hook})
    malformed_message: str = DEFAULT_MALFORMED  # injected after a message that does not parse ({error})
    run_hooks: bool = True  # False: hooks are not run (every call and reply passes); also off with --no-exec-hooks

    def __post_init__(self):
        if not isinstance(self.max_turns, int) or isinstance(self.max_turns, bool) or self.max_turns < 1:
            raise ValueError(f"max_turns must be an integer >= 1 (got {self.max_turns!r})")
        if self.error_style not in _ERROR_STYLES:
            raise ValueError(f"error_style must be one of {_ERROR_STYLES} (got {self.error_style!r})")


@dataclasses.dataclass(frozen=True)
class Step:
    """What the environment answered to one assistant message."""

    messages: list[dict]  # the assistant message as recorded, then tool results and injected hook messages
    done: bool
    end: str | None  # "reply" (a final reply the hooks allow) or "max_turns"; None while the episode runs


# --------------------------------------------------------------------------- reading rows


def read_record(row: dict, *, where: str = "row") -> dict:
    """A dataset row (``hsa augment`` output, or an input record in any layout hsa reads) in hsa's internal form."""
    from hsa.io import row_to_record
    from hsa.records import normalize

    if not isinstance(row, dict):
        raise TypeError(f"{where}: expected a row (a dict), got {type(row).__name__}")
    raw = row_to_record(row) if "source_id" in row or "extra" in row else dict(row)
    if isinstance(raw.get("mapping"), str):
        raw["mapping"] = json.loads(raw["mapping"])
    return normalize(raw, default_id=where)


def hook_message_indices(record: dict) -> set[int]:
    """The indices of the messages a hook injected (``hook_events``): not user turns, though some have the user role."""
    return {ev["message_index"] for ev in record.get("hook_events") or () if isinstance(ev.get("message_index"), int)}


def episode_starts(record: dict) -> list[int]:
    """Message indices where an episode can start: the first assistant message after each user turn.

    A user-role message that a hook injected (``hook_events``) is not a user turn."""
    hooked = hook_message_indices(record)
    out, waiting = [], False
    for i, m in enumerate(record["messages"]):
        if m.get("role") == "user" and i not in hooked:
            waiting = True
        elif m.get("role") == "assistant" and waiting:
            out.append(i)
            waiting = False
    return out


def content_text(content: Any) -> str:
    """Message content as text: text parts joined, other values as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) or isinstance(p, str)
                                         for p in content):
        return "\n".join(p if isinstance(p, str) else p["text"] for p in content)
    return json.dumps(content, ensure_ascii=False)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


# --------------------------------------------------------------------------- the environment


class Environment:
    """One episode under one row's harness (see the module docstring). Build it with :meth:`from_row`."""

    def __init__(self, record: dict, start: int, options: EnvironmentOptions):
        from hsa.mapping import Mapping

        self.record = record
        self.options = options
        self.mapping = Mapping(record.get("mapping") or [])
        messages = record["messages"]
        starts = episode_starts(record)
        if start not in starts:
            raise ValueError(f"record {record['id']!r}: message {start} does not start a user turn's answer; "
                             f"episodes can start at {starts}")
        self.start = start
        hooked = hook_message_indices(record)
        end = next((i for i in range(start, len(messages)) if messages[i].get("role") == "user" and i not in hooked),
                   len(messages))
        self.segment = (start, end)
        self.tools = {t["name"]: t for t in record["tools"]}
        st = dict(record["skill_tool"])
        self.skill_tool = st
        self.skills = {s["name"]: s for s in record.get("skills") or ()}
        if self.skills and st["name"] not in self.tools:  # a harness with skills serves its skill tool
            self.tools[st["name"]] = {"name": st["name"], "description": "Load a skill by name.", "parameters": {
                "type": "object", "properties": {st["argument"]: {"type": "string"}}, "required": [st["argument"]]}}
        self.hooks = [h for h in record.get("hooks") or () if isinstance(h, dict)]
        self._recorded = self._read_recorded(messages)
        self._used: set[int] = set()
        results = [r["content"] for r in self._recorded if r["content"] is not None and r["name"] != st["name"]]
        style = options.error_style
        if style == "auto":
            style = "json" if results and sum(map(_is_json_object, results)) * 2 > len(results) else "text"
        self.error_style = style
        role = options.hook_role
        if role is None:
            roles = [messages[i]["role"] for i in sorted(hooked) if i < len(messages)]
            role = roles[0] if roles else "user"
        self.hook_role = role
        self.messages: list[dict] = []  # the episode so far (after the prompt)
        self.events: list[dict] = []  # hook events, in the record format (message_index into prompt + messages)
        self.calls: list[dict] = []  # every call the model made: turn, name, arguments, status, error
        self.hook_checks: list[dict] = []  # every hook run: turn, hook, event, decision
        self.loaded_skills: list[str] = [c["function"]["arguments"].get(st["argument"])
                                         for m in messages[:start] for c in m.get("tool_calls") or ()
                                         if c["function"]["name"] == st["name"]]
        self.turns = 0
        self.malformed = 0
        self.reply: str | None = None
        self.done = False
        self.end: str | None = None

    @classmethod
    def from_row(cls, row: dict, *, start: int | None = None, options: EnvironmentOptions | None = None,
                 **kwargs) -> Environment:
        """An environment for ``row``; ``start`` is a message index of :func:`episode_starts` (default: the first).

        Keyword arguments are :class:`EnvironmentOptions` fields (or pass ``options``)."""
        if options is not None and kwargs:
            raise TypeError("pass either options or option keywords, not both")
        options = options or EnvironmentOptions(**kwargs)
        record = row if "_fmt" in row else read_record(row, where=str(row.get("id", "row")))
        if start is None:
            starts = episode_starts(record)
            if not starts:
                raise ValueError(f"record {record['id']!r} has no assistant message after a user message: "
                                 "nothing to play")
            start = starts[0]
        return cls(record, start, options)

    # -- what the model sees

    def prompt(self) -> list[dict]:
        """The conversation up to the episode, in the OpenAI chat format (arguments as objects, results as text)."""
        out = []
        for m in self.record["messages"][:self.start]:
            msg = {k: v for k, v in m.items() if k != "train"}
            msg["content"] = content_text(m.get("content"))
            if m.get("tool_calls"):
                msg["tool_calls"] = [{**({"id": c["id"]} if "id" in c else {}), "type": "function",
                                      "function": {"name": c["function"]["name"],
                                                   "arguments": c["function"]["arguments"]}}
                                     for c in m["tool_calls"]]
            out.append(msg)
        return out

    def openai_tools(self) -> list[dict]:
        """The variant's tools as OpenAI function definitions (what chat templates render)."""
        from hsa.records import openai_tools

        return openai_tools(self.record["tools"])

    # -- the recorded trajectory

    def _read_recorded(self, messages: list[dict]) -> list[dict]:
        """Every recorded call with its result (the tool message answering it, or None)."""
        out = []
        for i, m in enumerate(messages):
            calls = m.get("tool_calls") or ()
            if not calls:
                continue
            answers = []
            for j in range(i + 1, len(messages)):
                if messages[j].get("role") != "tool":
                    if messages[j].get("role") == "assistant":
                        break
                    continue
                answers.append(messages[j])
            by_id = {str(a.get("tool_call_id")): a for a in answers if a.get("tool_call_id") is not None}
            free = [a for a in answers if a.get("tool_call_id") is None or str(a.get("tool_call_id")) not in
                    {str(c.get("id")) for c in calls}]
            for c in calls:
                fn = c["function"]
                answer = by_id.get(str(c.get("id"))) if c.get("id") is not None else None
                if answer is None and free:
                    answer = free.pop(0)
                out.append({"message_index": i, "name": fn["name"], "arguments": fn["arguments"],
                            "canonical": self.mapping.to_canonical({"name": fn["name"], "arguments": fn["arguments"]}),
                            "content": None if answer is None else content_text(answer.get("content"))})
        return out

    def recorded_calls(self) -> list[dict]:
        """The calls recorded in the episode's user turn, carried back to the source harness."""
        lo, hi = self.segment
        return [r["canonical"] for r in self._recorded if lo <= r["message_index"] < hi]

    def recorded_turns(self) -> int:
        """How many assistant messages the recorded trajectory spent on this user turn."""
        lo, hi = self.segment
        return sum(1 for m in self.record["messages"][lo:hi] if m.get("role") == "assistant")

    def _match(self, canonical: dict) -> dict | None:
        """The first unused recorded call equal to ``canonical`` (else the last used one): its result is the answer.

        The episode's own user turn is searched first, in order, then the rest of the trajectory."""
        lo, hi = self.segment
        order = sorted(range(len(self._recorded)),
                       key=lambda k: (not lo <= self._recorded[k]["message_index"] < hi, k))
        last = None
        for k in order:
            r = self._recorded[k]
            if r["canonical"]["name"] != canonical["name"] or not _json.strict_equal(r["canonical"]["arguments"],
                                                                                     canonical["arguments"]):
                continue
            if r["content"] is None:
                continue
            if k not in self._used:
                self._used.add(k)
                return r
            last = r
        return last

    # -- answering

    def _error(self, message: str) -> str:
        return json.dumps({"error": message}, ensure_ascii=False) if self.error_style == "json" else f"Error: {message}"

    def _validate(self, name: str, arguments: Any) -> str | None:
        """Why the call is invalid under the variant, or None."""
        from hsa.invariants import validator_for

        tool = self.tools.get(name)
        if tool is None:
            names = ", ".join(sorted(self.tools)) or "none"
            return f"unknown tool {name!r}; the available tools are: {names}"
        if not isinstance(arguments, dict):
            return f"the arguments of {name} must be a JSON object, got {type(arguments).__name__}"
        schema = tool.get("parameters") or {"type": "object"}
        errors = sorted(validator_for(schema).iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return None
        parts = []
        for e in errors[:3]:
            where = "/".join(str(p) for p in e.absolute_path)
            parts.append(e.message + (f" (at {where})" if where else ""))
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return f"invalid arguments for {name}: " + "; ".join(parts) + more

    def _hooks_for(self, event: str) -> list[dict]:
        from hsa.sandbox import execution_enabled

        if not self.options.run_hooks or not execution_enabled():
            return []
        return [h for h in self.hooks if h.get("event") == event]

    def _run_hooks(self, items: list[tuple[dict, dict]]) -> list[dict]:
        from hsa.hooks_model import decision_of
        from hsa.sandbox import replay_many

        outcomes = replay_many(items, hooks=self.hooks) if items else []  # this row's hook set
        out = []
        for (hook, payload), outcome in zip(items, outcomes):
            decision = decision_of(hook, outcome)
            if decision.get("decision") == "error" and outcome.get("detail"):
                decision = {**decision, "detail": str(outcome["detail"])[:300]}
            out.append(decision)
        return out

    def _inject(self, hook: dict, payload: dict, decision: dict, text: str) -> dict:
        index = self.start + len(self.messages)
        self.events.append({"hook": hook.get("name"), "message_index": index, "payload": payload,
                            "decision": decision})
        msg = {"role": self.hook_role, "content": text}
        self.messages.append(msg)
        return msg

    @staticmethod
    def _blocks(decision: dict) -> bool:
        return decision.get("decision") not in ("allow", "error", None)

    def step(self, message: dict) -> Step:
        """Answer one assistant message: ``{"content": str, "tool_calls": [...]}`` (calls as ``{"name",
        "arguments"}`` or in the OpenAI form; arguments as an object or JSON text), or ``{"content": text,
        "error": why}`` for a message the caller could not parse."""
        if self.done:
            raise RuntimeError(f"the episode has ended ({self.end}); build a new environment for another one")
        self.turns += 1
        content = message.get("content") or ""
        content = content if isinstance(content, str) else content_text(content)
        before = len(self.messages)
        if message.get("error"):
            self.malformed += 1
            self.messages.append({"role": "assistant", "content": content})
            self.messages.append({"role": self.hook_role,
                                  "content": self.options.malformed_message.replace("{error}", str(message["error"]))})
        elif message.get("tool_calls"):
            self._calls(content, message["tool_calls"])
        else:
            self._reply(content)
        if not self.done and self.turns >= self.options.max_turns:
            self.done, self.end = True, "max_turns"
        return Step(self.messages[before:], self.done, self.end)

    def _calls(self, content: str, raw_calls: Sequence[Any]) -> None:
        st = self.skill_tool
        calls = []
        for j, c in enumerate(raw_calls):
            fn = c.get("function") if isinstance(c, dict) and isinstance(c.get("function"), dict) else c
            fn = fn if isinstance(fn, dict) else {}
            name = fn.get("name") if isinstance(fn.get("name"), str) else ""
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except ValueError:
                    pass  # stays a string: reported as not an object
            given = c.get("id") if isinstance(c, dict) else None
            cid = given if isinstance(given, str) and given else f"c{self.turns:04d}{j + 1:04d}"  # 9 characters
            calls.append({"id": cid, "name": name, "arguments": args})
        self.messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
        entries = []
        for c in calls:
            entry = {"turn": self.turns, "name": c["name"], "arguments": c["arguments"], "status": None, "error": None}
            entry["error"] = self._validate(c["name"], c["arguments"])
            if entry["error"]:
                entry["status"] = "unknown_tool" if c["name"] not in self.tools else "invalid"
            entries.append(entry)
        hooks = self._hooks_for("pre_tool_use")
        items, owners = [], []
        for k, (c, e) in enumerate(zip(calls, entries)):
            if e["status"] is None:
                for h in hooks:
                    items.append((h, {"tool_name": c["name"], "tool_input": c["arguments"]}))
                    owners.append(k)
        blocked: dict[int, tuple[dict, dict, dict]] = {}
        for (hook, payload), k, decision in zip(items, owners, self._run_hooks(items)):
            self.hook_checks.append({"turn": self.turns, "hook": hook.get("name"), "event": "pre_tool_use",
                                     "decision": decision.get("decision")})
            if self._blocks(decision):
                blocked.setdefault(k, (hook, payload, decision))
            elif isinstance(decision.get("updated_input"), dict) and k not in blocked:
                calls[k]["arguments"] = entries[k]["arguments"] = decision["updated_input"]
        injections = []
        for k, (c, e) in enumerate(zip(calls, entries)):
            if k in blocked:
                hook, payload, decision = blocked[k]
                e["status"] = "blocked"
                e["hook"] = hook.get("name")
                text = self.options.blocked_result.replace("{hook}", str(hook.get("name")))
                injections.append((hook, payload, decision))
            elif e["status"] is not None:
                text = self._error(e["error"])
            elif c["name"] == st["name"] and self.skills:
                text = self._skill(c, e)
            else:
                e["canonical"] = self.mapping.to_canonical({"name": c["name"], "arguments": c["arguments"]})
                match = self._match(e["canonical"])
                if match is None:
                    e["status"] = "no_result"
                    text = self.options.no_result.replace("{name}", c["name"])
                else:
                    e["status"] = "result"
                    e["recorded"] = match["message_index"]
                    text = match["content"]
            self.messages.append({"role": "tool", "tool_call_id": c["id"], "name": c["name"], "content": text})
            self.calls.append(e)
        for hook, payload, decision in injections:
            message = decision.get("message") if isinstance(decision.get("message"), str) and decision["message"] \
                else self.options.blocked_result.replace("{hook}", str(hook.get("name")))
            self._inject(hook, payload, decision, message)

    def _skill(self, call: dict, entry: dict) -> str:
        name = call["arguments"].get(self.skill_tool["argument"])
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            entry["status"] = "invalid"
            known = ", ".join(sorted(self.skills)) or "none"
            entry["error"] = f"unknown skill {name!r}; the available skills are: {known}"
            return self._error(entry["error"])
        entry["status"] = "skill"
        self.loaded_skills.append(name)
        return skill.get("content") or ""

    def _reply(self, content: str) -> None:
        self.messages.append({"role": "assistant", "content": content})
        hooks = self._hooks_for("pre_reply")
        payload = {"reply": content, "loaded_skills": list(self.loaded_skills)}
        first = None
        for hook, decision in zip(hooks, self._run_hooks([(h, payload) for h in hooks])):
            self.hook_checks.append({"turn": self.turns, "hook": hook.get("name"), "event": "pre_reply",
                                     "decision": decision.get("decision")})
            if first is None and self._blocks(decision):
                first = (hook, decision)
        if first is None:
            self.reply, self.done, self.end = content, True, "reply"
            return
        hook, decision = first
        message = decision.get("message") if isinstance(decision.get("message"), str) and decision["message"] \
            else self.options.retry_message.replace("{hook}", str(hook.get("name")))
        self._inject(hook, payload, decision, message)

    # -- the episode as data

    def summary(self) -> dict:
        """The episode as JSON: what the rewards of :mod:`trainers.rewards` read (``episode`` column)."""
        record = self.record
        st = self.skill_tool
        return {
            "row_id": record["id"],
            "start": self.start,
            "messages": self.messages,
            "hook_events": self.events,
            "calls": self.calls,
            "recorded_calls": self.recorded_calls(),
            "recorded_turns": self.recorded_turns(),
            "hook_checks": self.hook_checks,
            "loaded_skills": self.loaded_skills,
            "turns": self.turns,
            "max_turns": self.options.max_turns,
            "malformed": self.malformed,
            "reply": self.reply,
            "end": self.end,
            "mapping": {"steps": self.mapping.steps},
            "tool_names": sorted(self.tools),
            "skill_tool": {"name": st["name"], "argument": st["argument"]},
        }
