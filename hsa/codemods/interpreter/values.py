"""The value model of the hook interpreter: atoms, abstract values, the names they may carry, environments.

An abstract value (``AV``) is a frozenset of *atoms*, tuples saying what a value may be:
``("payload",)`` the hook's input, ``("tool",)`` a tool name, ``("ti", path)`` the tool input
at an argument path, ``("pk", path)`` a key of the tool input, ``("skill",)`` /
``("skills",)`` a skill name / a list of them, ``("data",)`` plain data, ``("lit", i)`` the
string literal ``i``, ``("text", kinds, lits)`` a computed string built from names of
``kinds`` and literals ``lits``, ``("coll", id, elements)`` / ``("dict", id, keys, values)``
containers, ``("tuple", parts)``, ``("unknown",)``, and the callables and objects the
interpreter tracks (``("func", i)``, ``("module", dotted)``, ``("bound", atom, method)``, ...).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["AV", "DATA_AV", "UNKNOWN_AV", "EMPTY_AV", "PAYLOAD", "TOOL", "SKILL", "SKILLS", "DATA", "UNKNOWN",
           "STDIN", "CTX", "TOOLOBJ", "ARGSJSON", "PKEYS", "INT", "ti_atom", "pk_atom", "text_atom", "name_kinds",
           "string_kinds", "Env", "MESSAGE_KEYS", "UPDATED_KEYS", "PAYLOAD_KEYS"]

#: Keys of a decision whose value is text meant for the model.
MESSAGE_KEYS = frozenset({"message", "reason", "permissionDecisionReason", "stopReason", "systemMessage",
                          "additionalContext", "feedback"})
#: Keys of a decision whose value is a rewritten tool input.
UPDATED_KEYS = frozenset({"updatedInput", "updated_input"})
#: Payload keys and the kind of value they hold.
PAYLOAD_KEYS = {"tool_name": "tool", "tool_input": "ti", "tool_args": "ti", "arguments": "ti",
                "skill": "skill", "skill_name": "skill", "loaded_skills": "skills", "skills": "skills"}

# ---------------------------------------------------------------------------- atoms

PAYLOAD = ("payload",)
TOOL = ("tool",)
SKILL = ("skill",)
SKILLS = ("skills",)
DATA = ("data",)
UNKNOWN = ("unknown",)
STDIN = ("stdin",)
CTX = ("ctx",)
TOOLOBJ = ("toolobj",)
ARGSJSON = ("argsjson",)
PKEYS = ("pkeys",)
INT = ("data", "int")  # plain data known to be an integer (an index, a length)

AV = frozenset  # of atoms
DATA_AV = frozenset({DATA})
UNKNOWN_AV = frozenset({UNKNOWN})
EMPTY_AV: frozenset = frozenset()


def ti_atom(path: tuple) -> tuple:
    return ("ti", path)


def pk_atom(path: tuple) -> tuple:
    return ("pk", path)


def text_atom(kinds: Iterable[str] = (), lits: Iterable[int] = ()) -> tuple:
    return ("text", frozenset(kinds), frozenset(lits))


def name_kinds(av: AV) -> frozenset[str]:
    """The name kinds a value may carry (what a rename of that kind would change)."""
    out: set[str] = set()
    for a in av:
        tag = a[0]
        if tag in ("tool", "toolobj"):
            out.add("tool")
        elif tag in ("skill", "skills"):
            out.add("skill")
        elif tag == "pk":
            out.add("param")
        elif tag in ("ti", "argsjson"):
            out |= {"param", "value"}
        elif tag == "ctx":
            out |= {"tool", "param", "value"}
        elif tag == "payload":
            out |= {"tool", "param", "value", "skill"}
        elif tag == "text":
            out |= a[1]
        elif tag == "tuple":
            for part in a[1]:
                out |= name_kinds(part)
        elif tag in ("coll",):
            out |= name_kinds(a[2])
        elif tag == "dict":
            out |= name_kinds(a[2]) | name_kinds(a[3])
    return frozenset(out)


_NAME_TAGS = frozenset({"tool", "skill", "pk", "ti", "text"})


def string_kinds(av: AV) -> frozenset[str]:
    """Name kinds a *string* operation on ``av`` depends on: a tool-input leaf is a value, not a key."""
    out: set[str] = set()
    for a in av:
        tag = a[0]
        if tag == "tool":
            out.add("tool")
        elif tag == "skill":
            out.add("skill")
        elif tag == "pk":
            out.add("param")
        elif tag == "ti":
            out.add("value")
        elif tag == "text":
            out |= a[1]
        elif tag == "unknown":
            out |= {"tool", "skill", "param", "value"}
    return frozenset(out)



class Env:
    """Variables in scope and their values; ``parent`` is the enclosing scope."""

    __slots__ = ("vars", "parent")

    def __init__(self, parent: Env | None = None, vars: dict | None = None):
        self.vars: dict[str, AV] = vars if vars is not None else {}
        self.parent = parent

    def get(self, name: str) -> AV | None:
        env: Env | None = self
        while env is not None:
            v = env.vars.get(name)
            if v is not None:
                return v
            env = env.parent
        return None

    def copy(self) -> Env:
        return Env(self.parent, dict(self.vars))

    def join(self, *others: Env) -> None:
        for o in others:
            for k, v in o.vars.items():
                self.vars[k] = self.vars.get(k, EMPTY_AV) | v
