"""ShareGPT without tool tags: ``{"conversations": [{"from", "value"}], "tools"?}`` with ``function_call`` turns
holding ``{"name", "arguments"}`` JSON and ``observation`` turns holding results (Hermes tags, Glaive, ToolACE and
ReAct text in ShareGPT turns have their own readers, tried first)."""

from __future__ import annotations

from hsa import _json
from hsa.formats.common import SHAREGPT_ROLES, parse_json_field
from hsa.record_model import RecordError

__all__ = ["sharegpt_turns", "convert_sharegpt"]


def sharegpt_turns(raw: dict) -> list | None:
    """The ``conversations`` of a row whose turns are all ShareGPT ``{from, value}`` turns, else None."""
    conv = raw.get("conversations")
    if isinstance(conv, list) and all(isinstance(t, dict) and "from" in t and "value" in t for t in conv):
        return conv
    return None


def convert_sharegpt(raw: dict, conv: list) -> dict:
    """ShareGPT turns as messages: a ``function_call`` turn becomes an assistant call, results answer the calls in
    order."""
    messages: list[dict] = []
    n = 0
    waiting: list[dict] = []  # calls of the last function_call turn not yet paired with a result
    for ti, t in enumerate(conv):
        role = SHAREGPT_ROLES.get(str(t["from"]).lower())
        if str(t["from"]).lower() == "function_call":
            call = parse_json_field(t["value"], f"conversations[{ti}].value")
            calls = call if isinstance(call, list) else [call]
            tcs = []
            for c in calls:
                if not (isinstance(c, dict) and isinstance(c.get("name"), str)):
                    raise RecordError("bad function_call",
                                      f"conversations[{ti}] (function_call) holds {_json.dumps(c)[:80]}; expected "
                                      f'{{"name": ..., "arguments": {{...}}}} or a list of them')
                n += 1
                tcs.append({"id": f"call_{n}", "type": "function",
                            "function": {"name": c["name"], "arguments": c.get("arguments", c.get("parameters", {}))}})
            messages.append({"role": "assistant", "content": "", "tool_calls": tcs})
            waiting = list(tcs)
            continue
        if role is None:
            raise RecordError("unknown role", f"conversations[{ti}] has from={t['from']!r}; expected one of "
                              f"{sorted(SHAREGPT_ROLES) + ['function_call']}")
        msg = {"role": role, "content": t["value"]}
        if role == "tool" and waiting:  # results answer the calls in order
            call = waiting.pop(0)
            msg["tool_call_id"] = call["id"]
            msg["name"] = call["function"]["name"]
        elif role != "tool":
            waiting = []
        messages.append(msg)
    out = {k: v for k, v in raw.items() if k != "conversations"}
    out["messages"] = messages
    if "tools" in out:
        out["tools"] = parse_json_field(out["tools"], "tools")
    out.setdefault("notes", []).append("converted from the ShareGPT conversations layout")
    return out
