"""Other spellings of the chat layout: the turn list under another key (``conversation``, ``dialogue``, ``traj``,
...) and roles under other names (``human``, ``gpt``, ``model``, ``USER``, ...)."""

from __future__ import annotations

from hsa.formats.common import noted

__all__ = ["TURN_KEYS", "ROLES", "ROLE_ALIASES", "turn_list_alias", "standard_roles"]


#: Other names datasets give the turn list; read as ``messages`` (role/content turns) or ``conversations``
#: (ShareGPT from/value turns) when neither of those is present.
TURN_KEYS = ("conversation", "dialogue", "dialog", "turns", "chat", "history", "traj", "trajectory")


def turn_list_alias(raw: dict) -> dict:
    """``raw`` with a turn list under another key (:data:`TURN_KEYS`) as ``messages`` or ``conversations``, noted."""
    if "messages" in raw or "conversations" in raw:
        return raw
    for key in TURN_KEYS:
        turns = raw.get(key)
        if not (isinstance(turns, list) and turns and all(isinstance(t, dict) for t in turns)):
            continue
        if all("role" in t for t in turns):
            target = "messages"
        elif all("from" in t and "value" in t for t in turns):
            target = "conversations"
        else:
            continue
        out = {k: v for k, v in raw.items() if k != key}
        out[target] = turns
        return noted(out, f"'{key}' read as {target}")
    return raw


#: The roles a record's messages have once read: chat templates and the transforms know these alone.
ROLES = frozenset({"system", "user", "assistant", "tool"})

#: Roles that datasets write for the standard ones (compared without case).
ROLE_ALIASES = {"human": "user", "gpt": "assistant", "model": "assistant", "bot": "assistant", "ai": "assistant",
                 "chatbot": "assistant", "observation": "tool", "ipython": "tool", "function_response": "tool",
                 "developer": "system", "user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def standard_roles(raw: dict) -> dict:
    """``raw`` with message roles in another spelling (``human``, ``gpt``, ``model``, ``USER``, ...) written as
    the standard ones, noted; chat templates and the transforms know only system / user / assistant / tool."""
    msgs = raw.get("messages")
    if not isinstance(msgs, list):
        return raw
    renamed: dict[str, int] = {}
    out_msgs = []
    for m in msgs:
        role = m.get("role") if isinstance(m, dict) else None
        std = ROLE_ALIASES.get(role.lower()) if isinstance(role, str) else None
        if std is not None and std != role:
            renamed[f"{role} -> {std}"] = renamed.get(f"{role} -> {std}", 0) + 1
            m = {**m, "role": std}
        out_msgs.append(m)
    if not renamed:
        return raw
    return noted({**raw, "messages": out_msgs},
                 "roles renamed: " + ", ".join(f"{k} (x{n})" for k, n in renamed.items()))
