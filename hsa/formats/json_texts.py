"""List and object columns stored as JSON text, as tables (Parquet, a ``datasets`` folder, a hub dataset, a
dataframe dumped to JSONL) often hold them: parsed back before any layout is recognised."""

from __future__ import annotations

from hsa import _json
from hsa.formats.common import noted
from hsa.record_model import RecordError

__all__ = ["JSON_TEXT_KEYS", "decode_json_texts"]


#: Keys whose value is a JSON list or object, and which a table (Parquet, a ``datasets`` folder, a hub dataset, a
#: dataframe dumped to JSONL) often stores as the JSON text instead. ``tools`` has its own reader.
JSON_TEXT_KEYS = {"messages": list, "conversations": list, "functions": list, "skills": list, "hooks": list,
                   "hook_events": list, "prompt": dict, "meta": dict, "skill_tool": dict, "contents": list,
                   "chat": list, "traj": list, "trajectory": list}


def decode_json_texts(raw: dict) -> dict:
    """``raw`` with the JSON texts of :data:`JSON_TEXT_KEYS` parsed (each noted); other strings are left for the
    schema check to report."""
    decoded = {}
    for key, kind in JSON_TEXT_KEYS.items():
        value = raw.get(key)
        if not isinstance(value, str) or value.lstrip()[:1] != ("[" if kind is list else "{"):
            continue
        try:
            parsed = _json.loads(value)
        except ValueError:
            raise RecordError(f"bad {key}", f"'{key}' is a string that starts like JSON but does not parse; "
                              f"expected a JSON {'array' if kind is list else 'object'} (or its JSON text)") from None
        if isinstance(parsed, kind):
            decoded[key] = parsed
    if not decoded:
        return raw
    return noted({**raw, **decoded}, *(f"'{key}' was a JSON string; parsed" for key in decoded))
