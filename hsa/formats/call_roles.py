"""Calls and results as messages of their own role: ``{"role": "tool_call", "content": "{'name': ..., 'arguments':
...}"}`` and ``{"role": "tool_response", "content": ...}`` (Toucan-1.5M, written by Qwen-Agent; also spelt
``function_call`` / ``function_response``).

A run of call messages becomes one assistant turn with those calls (the calls of the assistant message just before
it, when that message has none: its text then goes with them); the results after it answer the calls in order
(``tool_call_id`` and ``name`` from the call), as ShareGPT's ``function_call`` / ``observation`` turns do.
"""

from __future__ import annotations

from typing import Any

from hsa.formats.aliases import ROLES
from hsa.formats.common import noted, parse_literal
from hsa.record_model import RecordError

__all__ = ["CALL_ROLES", "RESULT_ROLES", "convert_call_roles"]

#: Roles of a message that is a call, and of one that is a call's result (compared without case).
CALL_ROLES = frozenset({"tool_call", "function_call"})
RESULT_ROLES = frozenset({"tool_response", "function_response", "tool_result", "function_result"})


def _calls_of(content: Any, where: str) -> list[dict]:
    value = content
    if isinstance(content, str):
        try:
            value = parse_literal(content)
        except ValueError as exc:
            raise RecordError("bad tool call", f"{where}: a call message's content is not a call object ({exc}); "
                              "expected {\"name\": ..., \"arguments\": {...}} as JSON or a Python literal") from None
    items = value if isinstance(value, list) else [value]
    calls = []
    for k, c in enumerate(items):
        if isinstance(c, dict) and isinstance(c.get("function"), dict):
            c = c["function"]
        if not (isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"]):
            raise RecordError("bad tool call", f"{where}: call {k} is {str(c)[:80]!r}; expected "
                              "{\"name\": ..., \"arguments\": {...}}")
        calls.append(c)
    return calls


def convert_call_roles(row: dict) -> dict | None:
    """``row`` with call and result messages (:data:`CALL_ROLES`, :data:`RESULT_ROLES`) as assistant calls and
    tool messages, noted; None when it has none."""
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        return None
    try:
        roles = {m.get("role") for m in msgs if isinstance(m, dict)}
    except TypeError:  # a role that is no string: the schema check names it
        return None
    if roles <= ROLES or not any(isinstance(r, str) and r.lower() in CALL_ROLES for r in roles):
        return None
    out: list[dict] = []
    waiting: list[dict] = []  # calls of the last call turn not yet answered
    n = calls_made = results = 0
    last_was_call = False
    for i, m in enumerate(msgs):
        role = m.get("role").lower() if isinstance(m, dict) and isinstance(m.get("role"), str) else None
        if role in CALL_ROLES:
            tcs = []
            for c in _calls_of(m.get("content"), f"messages[{i}] ({m['role']})"):
                n += 1
                args = c.get("arguments", c.get("parameters", {}))
                tcs.append({"id": c.get("id") if isinstance(c.get("id"), str) else f"call_{n}", "type": "function",
                            "function": {"name": c["name"], "arguments": args if args is not None else {}}})
            calls_made += len(tcs)
            prev = out[-1] if out else None
            if prev is not None and prev.get("role") == "assistant" and (last_was_call or not prev.get("tool_calls")):
                prev["tool_calls"] = [*(prev.get("tool_calls") or []), *tcs]  # the same turn
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": tcs})
            waiting += tcs
            last_was_call = True
            continue
        last_was_call = False
        if role in RESULT_ROLES or (role == "tool" and waiting):  # function_response is read as tool before
            msg = {k: v for k, v in m.items() if k != "role"}
            msg["role"] = "tool"
            if waiting:
                call = waiting.pop(0)
                msg.setdefault("tool_call_id", call["id"])
                msg.setdefault("name", call["function"]["name"])
            results += 1
            out.append(msg)
            continue
        if role != "tool":
            waiting = []
        out.append(dict(m) if isinstance(m, dict) else m)
    return noted({**row, "messages": out},
                 f"call and result messages read as assistant calls and tool messages ({calls_made} calls, "
                 f"{results} results)")
