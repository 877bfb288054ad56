"""OpenAI legacy function calling: ``functions`` beside ``messages``, assistant ``function_call`` and
``function`` result messages (:func:`convert_legacy_openai`)."""

from __future__ import annotations

from hsa import _json
from hsa.formats.common import plural, with_notes
from hsa.record_model import RecordError

__all__ = ["convert_legacy_openai"]


def _is_legacy_openai(raw: dict) -> bool:
    return "functions" in raw or any(
        isinstance(m, dict) and (m.get("function_call") is not None or m.get("role") == "function")
        for m in raw["messages"])


def convert_legacy_openai(raw: dict) -> dict | None:
    """OpenAI's legacy function-calling rows (``functions``; assistant ``function_call``; ``function`` result
    messages, still the format of OpenAI's function-calling fine-tuning examples) with tools, ``tool_calls``
    and ``tool`` messages; None when the row has none of them.

    Calls get ids ``call_legacy_<n>``; a ``function`` message answers the earliest unanswered call of its
    name. A top-level ``function_call`` (the request's choice, "auto" or a name) is dropped and noted.
    """
    if not _is_legacy_openai(raw):
        return None
    out = {k: v for k, v in raw.items() if k not in ("functions", "function_call")}
    notes: list[str] = []
    functions = raw.get("functions")
    if functions is not None:
        if isinstance(functions, str):
            try:
                functions = _json.loads(functions)
            except ValueError:
                raise RecordError("bad functions", "'functions' is a string that is not JSON; expected a list of "
                                             "function definitions") from None
        if not isinstance(functions, list):
            raise RecordError("bad functions", f"'functions' is {type(functions).__name__}; expected a list of "
                                         "{name, description, parameters} objects")
        tools = raw.get("tools")
        if tools is None:
            out["tools"] = functions
            notes.append(f"'functions' ({plural(len(functions), 'function')}) read as tools")
        elif isinstance(tools, list):
            known = {(t.get("function") or t).get("name") for t in tools if isinstance(t, dict)}
            extra = [f for f in functions if not (isinstance(f, dict) and f.get("name") in known)]
            out["tools"] = tools + extra
            notes.append(f"'functions' merged into tools ({plural(len(extra), 'new tool')})")
        else:
            raise RecordError("bad functions", "the row has both 'tools' and 'functions'; give the tools in one of "
                                               "them")
    if "function_call" in raw:
        notes.append(f"top-level 'function_call' {_json.dumps(raw['function_call'])[:60]} dropped (a request "
                     "option, not data)")
    used = {c.get("id") for m in raw["messages"] if isinstance(m, dict)
            for c in m.get("tool_calls") or () if isinstance(c, dict)}
    pending: list[tuple[str, str]] = []  # (name, id) of calls not answered yet, in order
    messages: list = []
    n_calls = n_results = 0
    for mi, m in enumerate(raw["messages"]):
        where = f"messages[{mi}]"
        if not isinstance(m, dict):
            messages.append(m)
            continue
        call = m.get("function_call")
        if call is not None:
            if m.get("role") != "assistant" or m.get("tool_calls"):
                raise RecordError("bad function_call", f"{where} has a 'function_call' but is not an assistant message "
                                                 "without tool_calls; give the call in one of the two fields")
            if isinstance(call, str):
                try:
                    call = _json.loads(call)
                except ValueError:
                    call = None
            if not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]):
                raise RecordError("bad function_call", f"{where}.function_call should be {{\"name\", \"arguments\"}} "
                                                 f"with a function name; got {_json.dumps(m['function_call'])[:80]}")
            n_calls += 1
            cid = f"call_legacy_{n_calls}"
            while cid in used:
                cid += "_"
            used.add(cid)
            pending.append((call["name"], cid))
            msg = {k: v for k, v in m.items() if k != "function_call"}
            msg["tool_calls"] = [{"id": cid, "type": "function",
                                  "function": {"name": call["name"], "arguments": call.get("arguments", {})}}]
            messages.append(msg)
        elif m.get("role") == "function":
            name = m.get("name")
            match = next((i for i, (n, _) in enumerate(pending) if n == name), None)
            if match is None and name is None and len(pending) == 1:
                match = 0
            if match is None:
                raise RecordError("unanswered function result",
                                  f"{where} is a 'function' result for {name!r}, but no earlier function_call to "
                                  f"{name!r} is waiting for one; each result must follow its call")
            name, cid = pending.pop(match)
            n_results += 1
            msg = {k: v for k, v in m.items() if k not in ("role", "name")}
            messages.append({"role": "tool", "tool_call_id": cid, "name": name, **msg})
        else:
            messages.append(m)
    out["messages"] = messages
    if n_calls or n_results:
        notes.insert(0, f"converted OpenAI legacy function calling: {plural(n_calls, 'function_call')} -> "
                        f"tool_calls, {plural(n_results, 'function message')} -> tool messages")
    return with_notes(out, notes)
