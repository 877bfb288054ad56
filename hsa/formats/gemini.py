"""Gemini: ``{"contents": [{"role", "parts"}], "tools": [{"functionDeclarations"}], "systemInstruction"}``."""

from __future__ import annotations

from typing import Any

from hsa.formats.common import (
    check_tools,
    count_dropped,
    dropped_note,
    json_text,
    plural,
    read_arguments,
    take_call,
    tool_call,
    tool_name,
    with_notes,
)
from hsa.record_model import RecordError

__all__ = ["convert_gemini", "is_gemini"]


_GEMINI_ROLES = {"user": "user", "model": "assistant", "function": "tool", "tool": "tool"}
_GEMINI_DECLS = ("functionDeclarations", "function_declarations")


def is_gemini(raw: dict) -> bool:
    """Whether ``raw`` is a Gemini row: ``contents`` of ``{role, parts}`` and no ``messages``."""
    contents = raw.get("contents")
    return ("messages" not in raw and isinstance(contents, list) and bool(contents)
            and isinstance(contents[0], dict) and isinstance(contents[0].get("parts"), list))


def _gemini_tools(raw: dict, notes: list[str]) -> list:
    tools_in = raw.get("tools")
    if tools_in is None:
        return []
    if not isinstance(tools_in, list):
        raise RecordError("bad tools", f"'tools' is {type(tools_in).__name__}; expected a list of "
                          "{\"functionDeclarations\": [...]}")
    tools = []
    for ti, entry in enumerate(tools_in):
        decls = next((entry[k] for k in _GEMINI_DECLS if isinstance(entry, dict) and k in entry), None)
        if decls is None and tool_name(entry) is not None:
            decls = [entry]  # a declaration given directly
        if decls is None:
            keys = sorted(entry) if isinstance(entry, dict) else [type(entry).__name__]
            notes.append(f"tools[{ti}] {keys} dropped: not function declarations")
            continue
        if not isinstance(decls, list):
            raise RecordError("bad tools", f"tools[{ti}]: functionDeclarations is {type(decls).__name__}, expected a "
                                           "list")
        for d in check_tools(decls, f"tools[{ti}].functionDeclarations"):
            if isinstance(d, dict) and "parameters" not in d and "parametersJsonSchema" in d:
                d = {("parameters" if k == "parametersJsonSchema" else k): v for k, v in d.items()}
                notes.append(f"tool {d['name']!r}: parametersJsonSchema read as parameters")
            tools.append(d)
    return tools


def _gemini_system(raw: dict) -> tuple[str | None, str | None]:
    """(key, text) of the system instruction, if any."""
    for key in ("systemInstruction", "system_instruction"):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, str):
            return key, value
        parts = value.get("parts") if isinstance(value, dict) else None
        if isinstance(parts, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
            return key, "\n".join(p["text"] for p in parts)
        raise RecordError("bad system instruction", f"{key}: expected a string or {{\"parts\": [{{\"text\": ...}}]}}")
    return None, None


def _gemini_content(c: Any, ci: int, pending: list, counter: list[int], dropped: dict[str, int]) -> list[dict]:
    where = f"contents[{ci}]"
    if not (isinstance(c, dict) and isinstance(c.get("parts"), list)):
        raise RecordError("bad contents", f"{where}: expected {{\"role\", \"parts\": [...]}}")
    role = _GEMINI_ROLES.get(c.get("role") or "user")
    if role is None:
        raise RecordError("unknown role", f"{where}: role {c.get('role')!r}; expected 'user', 'model' or 'function'")
    texts, thoughts, calls, results = [], [], [], []
    for pi, p in enumerate(c["parts"]):
        at = f"{where}.parts[{pi}]"
        if not isinstance(p, dict):
            raise RecordError("bad part", f"{at} is {type(p).__name__}; expected an object")
        if "thoughtSignature" in p or "thought_signature" in p:
            count_dropped(dropped, "thoughtSignature")
        if isinstance(p.get("text"), str):
            (thoughts if p.get("thought") is True else texts).append(p["text"])
        elif isinstance(p.get("functionCall", p.get("function_call")), dict):
            if role != "assistant":
                raise RecordError("bad part", f"{at}: a functionCall in a {c.get('role') or 'user'} turn; calls are "
                                  "made by the model")
            fc = p.get("functionCall", p.get("function_call"))
            name = fc.get("name")
            if not isinstance(name, str) or not name:
                raise RecordError("bad tool call", f"{at}: functionCall has no string 'name'")
            counter[0] += 1
            call_id = fc["id"] if isinstance(fc.get("id"), str) and fc["id"] else f"call_{counter[0]}"
            extra = {k: v for k, v in fc.items() if k not in ("name", "args", "id")}
            calls.append(tool_call(call_id, name, read_arguments(fc.get("args"), at, name), extra))
        elif isinstance(p.get("functionResponse", p.get("function_response")), dict):
            if role == "assistant":
                raise RecordError("bad part", f"{at}: a functionResponse in a model turn; results go in the next turn")
            fr = p.get("functionResponse", p.get("function_response"))
            call = take_call(pending, at, name=fr.get("name") if isinstance(fr.get("name"), str) else None,
                             call_id=fr.get("id") if isinstance(fr.get("id"), str) else None)
            for k in fr:
                if k not in ("name", "response", "id"):
                    count_dropped(dropped, f"functionResponse key {k!r}")
            results.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                            "content": json_text(fr.get("response", {}))})
        else:
            kinds = sorted(k for k in p if k not in ("thought", "thoughtSignature", "thought_signature"))
            raise RecordError("unsupported part", f"{at} holds {kinds}; only text, functionCall and functionResponse "
                              "parts are converted (remove or describe the others in text)")
    if role == "assistant":
        msg = {"role": "assistant", "content": "".join(texts)}
        if thoughts:
            msg["reasoning_content"] = "".join(thoughts)
        if calls:
            msg["tool_calls"] = calls
        pending[:] = calls
        return [msg]
    out = results
    if texts or not results:
        out.append({"role": "user", "content": "\n".join(texts)})
    if thoughts:
        count_dropped(dropped, "thought text in a user turn", len(thoughts))
    return out


def convert_gemini(raw: dict) -> dict:
    """A Gemini row as messages: the system instruction, calls, results and the function declarations."""
    notes: list[str] = []
    dropped: dict[str, int] = {}
    tools = _gemini_tools(raw, notes)
    sys_key, system = _gemini_system(raw)
    messages: list[dict] = [{"role": "system", "content": system}] if system is not None else []
    pending: list[dict] = []
    counter = [0]
    for ci, c in enumerate(raw["contents"]):
        messages.extend(_gemini_content(c, ci, pending, counter, dropped))
    n_results = sum(1 for m in messages if m["role"] == "tool" and "tool_call_id" in m)
    out = {k: v for k, v in raw.items() if k not in ("contents", "tools", sys_key)}
    out["messages"] = messages
    out["tools"] = tools
    summary = (f"converted from the Gemini contents layout: {plural(len(tools), 'function declaration')}, "
               f"{plural(counter[0], 'call')}, {plural(n_results, 'result')}"
               + (f", {sys_key} -> system message" if sys_key else ""))
    return with_notes(out, [summary] + notes + dropped_note(dropped))
