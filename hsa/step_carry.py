"""Carrying a record's messages through mapping steps: the one runner of :meth:`hsa.steps.Step.message_carry`.

Each typed step says what its record-level applier does to messages (calls, tool-result names, texts, parameter
mentions); :func:`carry_messages` runs those entries over a list of messages. The appliers of
:mod:`hsa.renames` carry their messages with it, and so does the messages-only path that the split undo and the
slot plans use (:func:`hsa.renames.carry_messages`): what a step does to messages is written
once. (A module of its own because the text functions it builds import modules that import :mod:`hsa.mapping`.)
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

from hsa.hooks_model import map_content
from hsa.mentions import mention_renamer
from hsa.record_texts import content_parts
from hsa.rename_texts import names_renamer, prose_only, token_renamer
from hsa.steps import Step

__all__ = ["carry_messages", "compile_carry"]


def carry_messages(messages: list[dict], steps: Iterable[dict | Step], *, keep: frozenset[str] = frozenset(),
                   entries: tuple[tuple, ...] | None = None, calls_only: bool = False, sift: bool = False) -> None:
    """``messages`` (the caller's own, down to each call's ``function``, and every message whose content or name a
    step may change) rewritten in place as the steps' record-level appliers rewrite them, in step order
    (:meth:`Step.message_carry`). ``keep``: the harness names inside which a compound tool or skill name is no
    mention of it (:func:`hsa.rename_texts.names_renamer`); a text entry's own (:func:`compile_carry`'s ``keeps``)
    takes its place. ``entries``: the steps' message carry, when the
    caller has it compiled already. ``calls_only``: carry the tool calls and nothing else (names, texts).
    ``sift``: first look for each table's names in the joined message texts, and skip the texts of an entry none
    of whose names occurs there or is written by an earlier entry (the same bytes: a text function leaves a text
    without its names as it is; worth it where several steps are carried over messages that name few of them)."""
    if entries is None:
        entries = compile_carry(steps)
    if calls_only:
        entries = tuple(e for e in entries if e[0] == "call")
    if not entries:
        return
    fns = _text_renamers(entries, keep, messages if sift else None)
    owners_at = any(e[0] == "mentions" for e in entries)
    # what the entries do to a message that is neither a tool result nor has calls: its text, in entry order (a call
    # or name entry leaves it as it is, and so does a text entry without a function)
    plain = [fns[k] if e[0] == "text" else fns[k][1] for k, e in enumerate(entries)
             if (e[0] == "text" and fns[k] is not None) or (e[0] == "mentions" and fns[k][1] is not None)]
    calls_alone = all(e[0] == "call" for e in entries)  # a message without calls is left as it is
    names_by_id: dict[str, list] = {}  # call id -> the call's name before each entry (parameter mentions)
    for m in messages:
        calls = m.get("tool_calls") or ()
        if calls_alone and not calls:
            continue
        if not calls and m.get("role") != "tool":
            if "content" in m:
                for fn in plain:
                    m["content"] = map_content(m["content"], fn)
            continue
        states = [[c["function"]["name"], c["function"]["arguments"], False] for c in calls] if calls else []
        result = m.get("role") == "tool"
        owner = m.get("name") if result and isinstance(m.get("name"), str) else None  # read for tool results only
        if result and owners_at and isinstance(m.get("tool_call_id"), str) and m["tool_call_id"] in names_by_id:
            seq = names_by_id[m["tool_call_id"]]
        else:
            seq = None
        history = [[] for _ in calls] if owners_at and calls else None
        for k, entry in enumerate(entries):
            kind = entry[0]
            if history is not None:
                for h, st in zip(history, states):
                    h.append(st[0])
            if kind == "call":
                _, only, renamed, step = entry
                for st in states:
                    if (only is not None and st[0] != only) or (renamed is not None and st[0] not in renamed):
                        continue
                    new = step.carry_call({"name": st[0], "arguments": st[1]}, True)
                    st[0], st[1], st[2] = new["name"], new["arguments"], True
            elif kind == "name":
                if result and owner is not None:
                    m["name"] = owner = entry[1].get(owner, owner)
            elif kind == "text":
                fn = fns[k]
                if fn is not None and "content" in m and (entry[3] or not result):
                    m["content"] = map_content(m["content"], fn)
            elif kind == "mentions":
                own_fn, all_fn = fns[k]
                if "content" not in m:
                    continue
                at = seq[k] if seq is not None else owner
                fn = prose_only(own_fn if at == entry[1] else all_fn) if result else all_fn
                if fn is not None:
                    m["content"] = map_content(m["content"], fn)
        for c, st in zip(calls, states):
            if st[2]:
                c["function"]["name"], c["function"]["arguments"] = st[0], st[1]
        if history is not None:
            for c, h in zip(calls, history):
                if isinstance(c.get("id"), str):
                    names_by_id[c["id"]] = h


def compile_carry(steps: Iterable[dict | Step], keeps: Iterable[frozenset[str]] | None = None) -> tuple[tuple, ...]:
    """The message carry of ``steps`` in order: their :meth:`Step.message_carry` entries, one after the other.

    ``keeps``: for each step (in the same order) the names it keeps whole, or an empty set. A tool or skill rename's
    applier renames a compound name in texts, but not inside the longer names of the harness it is applied to
    (:func:`hsa.rename_texts.harness_names`, its ``keep``). Where a renamed name is part of a longer one
    (:func:`hsa.rename_texts.nested_names`) the messages' carry depends on those names; the caller, which has the
    harness before each step, gives them here, and each goes with its step's text entry (as a fifth element)."""
    out: list[tuple] = []
    for s, keep in zip(steps, keeps if keeps is not None else repeat(None)):
        entries = Step.from_json(s).message_carry()
        if keep:
            entries = tuple((*e, keep) if e[0] == "text" else e for e in entries)
        out.extend(entries)
    return tuple(out)


def _text_renamers(entries: tuple[tuple, ...], keep: frozenset[str], messages: list[dict] | None) -> dict[int, Any]:
    """The text functions of the text and mention entries (by entry index), as the appliers make them from the
    entries' whole tables (each tests for its names as substrings before it splits a text into tokens). With
    ``messages``: None for a table none of whose names occurs in their joined texts or is written by an earlier
    table (a name that is no substring of any text is no token of one)."""
    if messages is not None:
        joined = "\x00".join(t for m in messages if "content" in m for t in content_parts(m["content"]))
    written = ""

    def present(table: dict[str, str]) -> bool:
        return messages is None or any(k in joined or k in written for k in table)

    out: dict[int, Any] = {}
    for k, entry in enumerate(entries):
        if entry[0] == "text":
            table, kind = entry[1], entry[2]
            if not present(table):
                out[k] = None
                continue
            out[k] = names_renamer(table, kind, entry[4] if len(entry) > 4 else keep) if kind else token_renamer(table)
            if messages is not None:
                written += "\x00" + "\x00".join(table.values())
        elif entry[0] == "mentions":
            own, everywhere = entry[2], entry[3]
            out[k] = (mention_renamer(own, "param_own") if own and present(own) else None,
                      mention_renamer(everywhere, "param") if everywhere and present(everywhere) else None)
            if messages is not None:
                written += "\x00" + "\x00".join([*own.values(), *everywhere.values()])
    return out
