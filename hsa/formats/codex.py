"""Codex CLI session logs (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``) as hsa records.

A rollout is not one record per line: each line is ``{"timestamp", "type", "payload"}``, one item of one session.
:func:`read_rollout` turns a rollout into records in the OpenAI Responses layout (``input`` items and
``instructions``), which :func:`hsa.records.normalize` reads (``function_call`` / ``function_call_output`` items
become calls and tool messages, ``developer`` messages system messages):

* ``response_item`` lines are the conversation as the model saw it, in order: ``message`` items (the
  ``<environment_context>`` and ``<user_instructions>`` messages Codex writes included), ``function_call`` and
  ``function_call_output`` items;
* a freeform ``custom_tool_call`` (Codex's ``apply_patch``, whose input is the patch text) becomes a
  ``function_call`` with ``{"input": text}``, the arguments of the JSON form of the same tool, and its
  ``custom_tool_call_output`` the call's output; a ``local_shell_call`` becomes a call of ``local_shell`` with its
  action's fields (``command``, ``working_directory``, ``timeout_ms``, ``env``);
* ``session_meta``'s instructions (``base_instructions``, or ``instructions`` in older logs) are the system
  prompt; ``turn_context`` gives the models in the record's ``meta``;
* a ``compacted`` line starts a new conversation (``<session>#2``, ...), since the model saw the summary, not the
  history before it: from its ``replacement_history`` items where the line has them, else from its summary as a
  user message;
* left out, and counted: ``reasoning`` items (encrypted), built-in tool items with no chat counterpart
  (``web_search_call``...), and ``event_msg`` lines (the UI's copies of the items).

Older logs (before the ``{"type", "payload"}`` wrapper) hold the session's metadata on the first line and bare
items after it; they are read the same way. The logs hold no tool definitions: give them to ``hsa augment --tools
FILE``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hsa.formats.agent_logs import json_lines, log_files

__all__ = ["RolloutError", "read_rollout", "rollout_files", "check_rollout_line"]

#: The wrapper types of a rollout line.
_LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
#: Item types kept as they are.
_ITEMS = frozenset({"message", "function_call", "function_call_output"})


class RolloutError(ValueError):
    """A rollout that cannot be read: the message names the file and line."""


def rollout_files(paths: Iterable[str | Path]) -> list[Path]:
    """The rollouts of ``paths``: a ``.jsonl`` file as it is, a folder's ``.jsonl`` files at any depth (Codex keeps
    them under ``~/.codex/sessions/YYYY/MM/DD/``), in path order."""
    return log_files(paths, RolloutError, what="rollout", home="Codex keeps them in ~/.codex/sessions/YYYY/MM/DD/",
                     recursive=True)


def _lines(path: Path) -> list[tuple[str, dict]]:
    """``(type, payload)`` of each line; bare items of older logs as ``response_item``, their first line (no
    ``type``) as ``session_meta``."""
    out = []
    for n, e in json_lines(path, RolloutError, unit="object"):
        kind = e.get("type")
        if kind in _LINE_TYPES and isinstance(e.get("payload"), dict):
            out.append((kind, e["payload"]))
        elif isinstance(kind, str) and "payload" not in e:
            out.append(("response_item", e))  # an older log's bare item
        elif kind is None and not out and ("id" in e or "instructions" in e):
            out.append(("session_meta", e))  # an older log's first line
        else:
            raise RolloutError(f"{path}:{n}: neither a rollout line ({{\"timestamp\", \"type\", \"payload\"}}) "
                               "nor a response item")
    return out


def _text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value.strip() else None


def _item(item: dict, left: Counter) -> dict | None:
    """A rollout item as an item hsa's Responses reader takes, or None (counted) when it has no chat counterpart."""
    kind = item.get("type", "message")
    if kind in _ITEMS:
        return {k: v for k, v in item.items() if k not in ("id", "status")} if kind != "message" else {
            "type": "message", "role": item.get("role"), "content": item.get("content")}
    if kind == "custom_tool_call":
        return {"type": "function_call", "call_id": item.get("call_id"), "name": item.get("name"),
                "arguments": {"input": item.get("input", "")}}
    if kind in ("custom_tool_call_output", "local_shell_call_output"):
        return {"type": "function_call_output", "call_id": item.get("call_id"), "output": item.get("output")}
    if kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        args = {k: v for k, v in action.items() if k != "type" and v is not None}
        return {"type": "function_call", "call_id": item.get("call_id") or item.get("id"), "name": "local_shell",
                "arguments": args}
    left[f"{kind} items"] += 1
    return None


def read_rollout(path: str | Path) -> tuple[list[dict], list[dict], Counter]:
    """``(records, rejects, left_out)`` of one rollout: a record per conversation part (see the module), a reject
    ``{"file", "reason"}`` when the rollout holds no conversation, and the counts of what was left out."""
    path = Path(path)
    lines = _lines(path)
    left: Counter = Counter()
    meta: dict[str, Any] = {"source": "codex"}
    instructions = None
    models: list[str] = []
    parts: list[list[dict]] = [[]]
    converted: Counter = Counter()
    for kind, payload in lines:
        if kind == "session_meta":
            instructions = _text(payload.get("base_instructions")) or _text(payload.get("instructions")) \
                or instructions
            for key in ("id", "cwd", "cli_version", "originator", "model_provider"):
                if isinstance(payload.get(key), str) and payload[key]:
                    meta["session" if key == "id" else key] = payload[key]
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model not in models:
                models.append(model)
        elif kind == "event_msg":
            left["event_msg lines (the UI's copies of the items)"] += 1
        elif kind == "compacted":
            history = payload.get("replacement_history")
            parts.append([])
            if isinstance(history, list):
                parts[-1] += [i for i in (_item(h, left) for h in history if isinstance(h, dict)) if i is not None]
            elif _text(payload.get("message")):
                parts[-1].append({"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": payload["message"]}]})
        else:
            item = _item(payload, left)
            if item is not None:
                if payload.get("type") in ("custom_tool_call", "local_shell_call"):
                    converted[payload["type"]] += 1
                parts[-1].append(item)
    if models:
        meta["models"] = models
    records, rejects = [], []
    parts = [p for p in parts if p]
    session = meta.get("session") or path.stem
    for k, items in enumerate(parts, 1):
        if not any(i["type"] == "function_call" or i.get("role") == "assistant" for i in items):
            rejects.append({"file": str(path), "reason": f"conversation part {k} has no assistant message or call"})
            continue
        record: dict[str, Any] = {"id": session if len(parts) == 1 else f"{session}#{k}", "input": items,
                                  "meta": {**meta, "file": path.name}}
        if instructions:
            record["instructions"] = instructions
        if converted:
            record["notes"] = [f"codex {kind} items written as function calls: {n}" for kind, n in converted.items()]
        records.append(record)
    if not parts:
        rejects.append({"file": str(path), "reason": "no response item (not a Codex rollout, or a log of metadata "
                                                     "only)"})
    return records, rejects, left


def check_rollout_line(raw: dict) -> None:
    """Refuse, with what to do, one line of a Codex rollout read as a record, instead of the generic
    missing-messages reject. Only rows with no ``messages`` reach here."""
    from hsa.record_model import RecordError

    if raw.get("type") not in _LINE_TYPES or not isinstance(raw.get("payload"), dict):
        return
    raise RecordError(
        "codex rollout line",
        f"a line of a Codex CLI rollout (a {raw['type']!r} line): a rollout holds one conversation across its "
        "lines, not a record per line; convert the rollouts first with 'hsa import codex ROLLOUT... --out "
        "FILE.jsonl' (one record per conversation) and augment that file")
