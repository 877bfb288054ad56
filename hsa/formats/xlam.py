"""APIGen / xLAM: ``{"query", "tools", "answers"}`` (tools and answers may be JSON strings)."""

from __future__ import annotations

from hsa import _json
from hsa.formats.common import parse_json_field
from hsa.record_model import RecordError

__all__ = ["is_xlam", "convert_xlam"]


def is_xlam(raw: dict) -> bool:
    """Whether ``raw`` is an xLAM row (``query`` and ``answers``)."""
    return "query" in raw and "answers" in raw


def convert_xlam(raw: dict) -> dict:
    """An xLAM row as a user turn and one assistant turn calling the ``answers`` (none when they are empty)."""
    answers = parse_json_field(raw["answers"], "answers")
    if not isinstance(answers, list):
        raise RecordError("bad answers", "'answers' must be a list of {name, arguments}")
    for i, a in enumerate(answers):
        if not (isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"]):
            raise RecordError("bad answers", f"answers[{i}] is {_json.dumps(a)[:80]}; expected "
                              f'{{"name": "<tool>", "arguments": {{...}}}}')
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": a["name"], "arguments": a.get("arguments", a.get("parameters", {}))}}
             for i, a in enumerate(answers, 1)]
    out = {k: v for k, v in raw.items() if k not in ("query", "answers")}
    out["messages"] = [{"role": "user", "content": raw["query"]}]
    notes = out["notes"] = list(out.get("notes") or [])
    notes.append("converted from the query/tools/answers (xLAM) layout")
    if calls:
        out["messages"].append({"role": "assistant", "content": "", "tool_calls": calls})
    else:
        notes.append("'answers' is empty: the record has the user query only (no assistant turn)")
    out["tools"] = parse_json_field(raw.get("tools"), "tools")
    return out
