"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``) as hsa records.

A session log is not one record per line: each line is one *event* of one conversation (a user turn, one
content block of an assistant message, a tool result, a summary, a system notice), linked to the event before it
by ``parentUuid``. :func:`read_session` turns a log into records in the Anthropic Messages layout, which
:func:`hsa.records.normalize` reads (``tool_use`` / ``tool_result`` blocks become calls and tool messages):

* the conversation is the chain of events that ends at the log's last user or assistant event, walked back by
  ``parentUuid``; events on branches the session left (an edited or retried turn) are not in it;
* assistant events of one API message (the same ``message.id``, one content block each) are joined into one
  message; user events keep their content (text, or ``tool_result`` blocks as the model saw them);
* a compaction starts a new conversation (its first event has no ``parentUuid`` and a ``logicalParentUuid``):
  each part is a record of its own (``<session>#1``, ``#2``, ...), since the model saw the summary, not the
  history before it;
* left out, and counted: subagent events (``isSidechain``) in a session's log, events of other types (summaries,
  system notices such as hook output, file snapshots), messages Claude Code wrote itself (``isApiErrorMessage``,
  model ``<synthetic>``), and events on abandoned branches;
* a subagent's own log (newer versions write each subagent's run to an ``agent-*.jsonl`` of the project, every
  event a sidechain) is that subagent's conversation, a record like a session's.

The log holds neither the tool definitions nor the system prompt: give them to ``hsa augment --tools FILE``
(or ``hsa validate --tools FILE``), which supplies the harness of rows without one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hsa.formats.agent_logs import json_lines, log_files

__all__ = ["SessionError", "read_session", "session_files", "check_session_event"]

#: Event types that carry the conversation.
_TURNS = ("user", "assistant")


class SessionError(ValueError):
    """A session log that cannot be read: the message names the file and line."""


def session_files(paths: Iterable[str | Path]) -> list[Path]:
    """The session logs of ``paths``: a ``.jsonl`` file as it is, a folder's ``*.jsonl`` files (a Claude Code
    project folder), in name order."""
    return log_files(paths, SessionError, what="session log", home="Claude Code keeps them in "
                                                                   "~/.claude/projects/<project>/")


def _events(path: Path) -> list[dict]:
    return [e for _, e in json_lines(path, SessionError, unit="event")]


def _is_turn(e: dict) -> bool:
    return e.get("type") in _TURNS and isinstance(e.get("message"), dict)


def _written_by_claude_code(e: dict) -> bool:
    """An assistant message that Claude Code wrote, not the model: an API error, or a ``<synthetic>`` reply."""
    return bool(e.get("isApiErrorMessage")) or (e.get("type") == "assistant"
                                                and e["message"].get("model") == "<synthetic>")


def _chains(events: list[dict]) -> list[list[dict]]:
    """The conversation ending at the last main-thread turn, as parts split at compactions (earliest first)."""
    by_uuid = {e["uuid"]: e for e in events if isinstance(e.get("uuid"), str)}
    last = next((e for e in reversed(events) if _is_turn(e) and not e.get("isSidechain")), None)
    if last is None:  # a subagent's own log (agent-*.jsonl: every event a sidechain): its conversation
        last = next((e for e in reversed(events) if _is_turn(e)), None)
    if last is None:
        return []
    parts: list[list[dict]] = [[]]
    seen: set[str] = set()
    e: dict | None = last
    while e is not None:
        if e.get("uuid") in seen:  # a loop in the links: stop where it closes
            break
        seen.add(e.get("uuid"))
        parts[-1].append(e)
        parent = e.get("parentUuid")
        if parent is None and isinstance(e.get("logicalParentUuid"), str):
            parent = e["logicalParentUuid"]  # a compaction: what comes before is another conversation
            parts.append([])
        e = by_uuid.get(parent) if isinstance(parent, str) else None
    return [list(reversed(p)) for p in reversed(parts) if any(_is_turn(x) for x in p)]


def _messages(chain: list[dict], left: Counter) -> tuple[list[dict], dict[str, Any]]:
    messages: list[dict] = []
    last_id = None
    models: list[str] = []
    for e in chain:
        if not _is_turn(e):
            left[f"{e.get('type', 'untyped')} events"] += 1
            continue
        if _written_by_claude_code(e):
            left["messages Claude Code wrote itself (API errors, <synthetic>)"] += 1
            continue
        msg = e["message"]
        content = msg.get("content")
        if isinstance(content, list):
            content = [b for b in content if isinstance(b, dict)]
        elif not isinstance(content, str):
            content = ""
        if e["type"] == "assistant":
            model = msg.get("model")
            if isinstance(model, str) and model not in models:
                models.append(model)
            mid = msg.get("id")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            if messages and messages[-1]["role"] == "assistant" and mid is not None and mid == last_id:
                messages[-1]["content"] += blocks
                continue
            messages.append({"role": "assistant", "content": list(blocks)})
            last_id = mid
        else:
            messages.append({"role": "user", "content": content})
            last_id = None
    first = next((e for e in chain if _is_turn(e)), {})
    meta = {"source": "claude-code", "session": first.get("sessionId"), "cwd": first.get("cwd"),
            "git_branch": first.get("gitBranch"), "version": first.get("version"), "models": models}
    return messages, {k: v for k, v in meta.items() if v not in (None, "", [])}


def read_session(path: str | Path) -> tuple[list[dict], list[dict], Counter]:
    """``(records, rejects, left_out)`` of one session log: a record per conversation part (see the module),
    a reject ``{"file", "reason"}`` when the log holds no conversation, and the counts of events left out."""
    path = Path(path)
    events = _events(path)
    left: Counter = Counter()
    chains = _chains(events)
    on_chain = {id(e) for c in chains for e in c}
    for e in events:
        if id(e) in on_chain:
            continue
        if e.get("isSidechain") and any(not x.get("isSidechain") for c in chains for x in c):
            left["subagent (sidechain) events"] += 1
        elif _is_turn(e):
            left["turns on branches the session left"] += 1
        else:
            left[f"{e.get('type', 'untyped')} events"] += 1
    records, rejects = [], []
    for k, chain in enumerate(chains, 1):
        messages, meta = _messages(chain, left)
        if not any(m["role"] == "assistant" for m in messages):
            rejects.append({"file": str(path), "reason": f"conversation part {k} has no assistant message"})
            continue
        session = meta.get("session") or path.stem
        records.append({"id": session if len(chains) == 1 else f"{session}#{k}", "messages": messages,
                        "meta": {**meta, "file": path.name}})
    if not chains:
        rejects.append({"file": str(path), "reason": "no user or assistant event (not a Claude Code session log, "
                                                     "or a log of summaries only)"})
    return records, rejects, left


def check_session_event(raw: dict) -> None:
    """Refuse, with what to do, one line of a Claude Code session log read as a record (a user, assistant, summary
    or system event: ``sessionId`` or ``leafUuid`` with a ``type``), instead of the generic missing-messages reject.
    Only rows with no ``messages`` reach here."""
    from hsa.record_model import RecordError

    if not isinstance(raw.get("type"), str) or not ("sessionId" in raw or "leafUuid" in raw or "parentUuid" in raw):
        return
    raise RecordError(
        "claude code session event",
        f"a line of a Claude Code session log (a {raw['type']!r} event): a session log holds one conversation "
        "across its lines, not a record per line; convert the logs first with 'hsa import claude-code LOG... --out "
        "FILE.jsonl' (one record per conversation) and augment that file")
