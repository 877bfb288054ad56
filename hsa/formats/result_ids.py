"""What agent frameworks' logs write around the chat messages: tool results that say which call they answer under
another key than ``tool_call_id`` (:func:`result_ids`: SWE-agent's ``tool_call_ids``, tau2-bench's ``id``), and the
end-of-run message mini-swe-agent appends (:func:`exit_message`)."""

from __future__ import annotations

from typing import Any

from hsa.formats.common import parse_literal, plural, with_notes

__all__ = ["result_ids", "exit_message"]


def _one_id(value: Any) -> str | None:
    """The one call id a ``tool_call_ids`` value holds (a list, or its JSON / Python text), else None."""
    if isinstance(value, str):
        try:
            value = parse_literal(value)
        except ValueError:
            return None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str) and value[0]:
        return value[0]
    return None


def result_ids(raw: dict) -> dict | None:
    """Tool messages without ``tool_call_id`` get the id of the call they answer from SWE-agent's
    ``tool_call_ids`` (one id) or from tau2-bench's ``id`` when that is the id of a call made before them; the other
    key is kept as it is. None when no message has either (results are then paired with their calls in order)."""
    msgs = raw["messages"]
    if not any(isinstance(m, dict) and m.get("role") == "tool" and "tool_call_id" not in m
               and ("tool_call_ids" in m or "id" in m) for m in msgs):
        return None
    called: set[str] = set()
    out, n = [], {"tool_call_ids": 0, "id": 0}
    for m in msgs:
        if isinstance(m, dict):
            calls = m.get("tool_calls")
            for c in calls if isinstance(calls, list) else ():
                if isinstance(c, dict) and isinstance(c.get("id"), str):
                    called.add(c["id"])
            if m.get("role") == "tool" and "tool_call_id" not in m:
                found = _one_id(m.get("tool_call_ids"))
                key = "tool_call_ids"
                if found is None and isinstance(m.get("id"), str) and m["id"] in called:
                    found, key = m["id"], "id"
                if found is not None:
                    m = {**m, "tool_call_id": found}
                    n[key] += 1
        out.append(m)
    if not any(n.values()):
        return None
    said = " and ".join(f"'{k}' ({plural(v, 'message')})" for k, v in n.items() if v)
    return with_notes({**raw, "messages": out},
                      [f"tool results' call ids read from {said} as 'tool_call_id'"])


def exit_message(raw: dict) -> dict | None:
    """A last message of role ``exit`` (mini-swe-agent's end of run: its content the submitted patch, its ``extra``
    the exit status) is no turn of the conversation: moved out of the messages to the ``exit_message`` key, noted.
    None when the last message is another."""
    msgs = raw["messages"]
    last = msgs[-1] if msgs else None
    if not (isinstance(last, dict) and last.get("role") == "exit") or "exit_message" in raw:
        return None
    return with_notes({**raw, "messages": msgs[:-1], "exit_message": last},
                      ["the last message, of role 'exit' (the end of an agent's run: mini-swe-agent's submission), "
                       "moved to the 'exit_message' key"])
