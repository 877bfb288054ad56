"""Invariant 7 of docs/design.md: a rewritten hook, run on the mapped input, returns the mapped output of the original.

Each hook of a variant runs on the mapped payloads (the recorded hook events and payloads generated from the source
record) in the worker of the *source record's* hook set (:mod:`hsa.sandbox.pool`), beside the source hook on the
unmapped payload. Pairs checked equivalent on a payload are kept by (hook set, pair, steps, payload); within one
check, each distinct payload and each distinct output is carried through the variant's mapping once
(:class:`_Carrier`), and the payloads generated from a source are made once for all its variants.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from hsa import _json
from hsa import cache as _cache
from hsa.cache import exact_key
from hsa.sandbox.pool import COUNTERS, execution_enabled, hook_set_key, payload_key, replay_items
from hsa.steps import ParamsStep, RestoreStep, ValuesStep, steps_of

__all__ = ["check_hooks", "not_replayed", "NOT_REPLAYED_NOTE"]

#: (hook set, source hook, variant hook, mapping steps, masked?) -> the digests of the payloads the pair was checked
#: equivalent on. Records that share a harness and a pool slot share most of their generated payloads (from the tool
#: schemas and skills), so each of those is mapped and compared once per harness variant, not once per record; a
#: variant looks its pair up once and each payload in the set.
_EQUIVALENT = _cache.lru("hook.equivalent", 16 << 20)


def _checked_equivalent(pair: bytes, digest: bytes) -> None:
    """Note that the hook pair ``pair`` (its key in :data:`_EQUIVALENT`) was checked equivalent on the payload whose
    digest is ``digest``."""
    known = _EQUIVALENT.get(pair)
    if known is None:
        known = set()
    elif digest in known:
        return
    known.add(digest)
    _EQUIVALENT.put(pair, known, 120 + 48 * len(known))

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_REWORDED = "hook messages reworded by hook.message_format: "  # transforms.hook.REWORDED_NOTE


def _mask_messages(value: Any) -> Any:
    from hsa.codemods.analysis import MESSAGE_KEYS

    if isinstance(value, dict):
        return {k: ("<message>" if k in MESSAGE_KEYS or k == "stderr" else _mask_messages(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_messages(v) for v in value]
    return value


@lru_cache(maxsize=1)
def _updated_marks() -> tuple[bytes, ...]:
    from hsa.codemods.analysis import UPDATED_KEYS

    return tuple(_orjson.dumps(k) for k in sorted(UPDATED_KEYS)) if _orjson is not None else ()


class _Carrier:
    """One variant's mapping steps, applied to many payloads and outputs.

    Each step's text table is made once, and each distinct payload (and each distinct
    output along the same tools) is carried through the steps once, however many hooks
    read it: the memo keys are exact (:func:`hsa.cache.exact_key`), so a memo hit is a value that
    the per-pair mapping would have produced too.
    """

    __slots__ = ("steps", "typed", "tables", "payloads", "outputs")

    def __init__(self, steps: list[dict]):
        self.steps = steps
        self.typed = steps_of(steps)
        self.tables = [step.hook_text_map() for step in self.typed]
        self.payloads: dict[bytes | str | tuple, tuple[dict, tuple]] = {}
        self.outputs: dict[tuple, dict] = {}

    def payload(self, payload: dict, digest: bytes | None = None) -> tuple[dict, tuple]:
        """``payload`` after every step, and the tool it names before each step; ``digest``: its :func:`hsa.sandbox.pool.payload_digest`,
        where the caller has it (a key as exact as the payload's own)."""
        from hsa.hooks_model import map_payload

        key = ("d", digest) if digest is not None else exact_key(payload)
        hit = self.payloads.get(key)
        if hit is not None:
            return hit
        p = payload
        tool = p.get("tool_name")
        if not (isinstance(tool, str) and isinstance(p.get("tool_input"), dict)):
            # no tool call to carry: only the text of tool and skill renames changes, never tool_name or tool_input
            for step, typed, table in zip(self.steps, self.typed, self.tables):
                if typed.renames_names:
                    p = map_payload(p, step, table=table)
            tools = (tool if isinstance(tool, str) else None,) * len(self.steps)
        else:
            names = []
            for step, typed, table in zip(self.steps, self.typed, self.tables):
                tool = p.get("tool_name")
                names.append(tool if isinstance(tool, str) else None)
                if not typed.changes_calls or (isinstance(typed, (ParamsStep, ValuesStep)) and not (
                        isinstance(tool, str) and isinstance(p.get("tool_input"), dict) and tool == typed.tool)):
                    continue  # map_payload would return an equal copy: a step for another tool changes no text
                p = map_payload(p, step, table=table)
            tools = tuple(names)
        hit = self.payloads[key] = (p, tools)
        return hit

    def expected(self, outcome: dict, tools: tuple) -> dict:
        """What the variant's hook must return: the source hook's ``outcome`` carried through the steps."""
        from hsa.hooks_model import map_output

        if not outcome.get("ok"):
            return {"ok": False, "error": outcome.get("error")}
        value = outcome.get("value")
        if value is None or type(value) in (bool, int, float):  # map_output leaves these as they are
            return {"ok": True, "value": value}
        vkey = exact_key(value)
        # the tools matter only to a rewritten tool input (map_output's UPDATED_KEYS)
        key = (vkey, tools if not isinstance(vkey, bytes) or any(m in vkey for m in _updated_marks()) else None)
        hit = self.outputs.get(key)
        if hit is None:
            for step, table, tool in zip(self.steps, self.tables, tools):
                value = map_output(value, step, tool, table=table)
            hit = self.outputs[key] = {"ok": True, "value": value}
        return hit


def _observed(outcome: dict) -> dict:
    if not outcome.get("ok"):
        return {"ok": False, "error": outcome.get("error")}
    return {"ok": True, "value": outcome.get("value")}


def _short(value: Any, n: int = 160) -> str:
    text = _json.dumps(value)
    return text if len(text) <= n else text[:n - 3] + "..."


_SOURCE_KEYS = ("tools", "skills", "skill_tool", "messages", "hook_events", "hooks")


def check_hooks(source: dict, variant: dict, *, execute: bool = True, max_payloads: int = 96) -> list:
    """Invariant 7 for ``variant`` made from ``source`` (internal records): a list of :class:`hsa.violations.Violation`.

    Each hook of the variant runs on the mapped payloads — the recorded hook events
    and payloads generated from the source's tool schemas, trajectory and skills —
    and must return the mapped output of the source's hook (messages excepted for
    hooks reworded by ``hook.message_format``). The variant's recorded hook events
    must also be what its hooks return. A hook that times out, exceeds a limit or
    crashes rejects the variant. ``execute=False`` (``--no-exec-hooks``) checks nothing.
    The generated payloads are cached by the source's digest, so the variants of one record make them once.
    """
    from hsa.violations import Violation

    if not execute or not execution_enabled():
        return []
    src_hooks = source.get("hooks") or []
    var_hooks = variant.get("hooks") or []
    if not src_hooks and not var_hooks:
        return []
    if len(src_hooks) != len(var_hooks):
        return [Violation("hooks", "hook count changed", f"source has {len(src_hooks)} hooks, variant {len(var_hooks)}")]
    steps = list(variant["mapping"][len(source["mapping"]):])
    source_part = payload_key([source.get(k) for k in _SOURCE_KEYS])  # a whole JSON value: the concatenation is unambiguous
    return _check_hooks(source, variant, src_hooks, var_hooks, steps, max_payloads,
                        hashlib.sha256(source_part).digest())


#: Errors that say a hook cannot run here (a module, a file or a name its folder would give it is missing),
#: not what it decided: a method hook that raises on every payload is replayed unless it raises one of these
#: (for the Agents SDK an exception is how a hook blocks).
_SETUP_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "NameError", "FileNotFoundError", "OSError",
                           "NotADirectoryError", "IsADirectoryError", "PermissionError"})
#: The note on each output row of a record with a hook that was not replayed (``hook not replayed: 'name': why``).
NOT_REPLAYED_NOTE = "hook not replayed: "


def not_replayed(record: dict, *, max_payloads: int = 96) -> dict[str, str]:
    """The hooks of ``record`` that cannot run on its own payloads (invariant 7 cannot be checked for them):
    hook name -> why. ``{}`` when every hook decides something on some payload, or when execution is off.

    A hook is not replayed when it has no payload (none recorded, none generated for its event), when no payload
    matches its matcher, or when it fails on every payload before deciding anything: a function or script hook
    that raises on each (a missing sibling module or package, ``__file__`` of a folder that is not there), a
    method hook that raises one of the setup errors on each. The calls are the ones :func:`check_hooks` makes
    for the source side, so they are cached for it.
    """
    from hsa.hooks_model import hook_style

    hooks = record.get("hooks") or []
    if not hooks or not execution_enabled():
        return {}
    digest = hashlib.sha256(payload_key([record.get(k) for k in _SOURCE_KEYS])).digest()
    out: dict[str, str] = {}
    items: list[tuple[dict, dict]] = []
    spans: list[tuple[dict, int, int]] = []
    digests: list[bytes] = []
    for h in hooks:
        payloads, keys = _payloads_for(record, h, digest, max_payloads)
        if not payloads:
            out[h.get("name", "?")] = f"no payloads (none recorded, none generated for event {h.get('event', '')!r})"
            continue
        spans.append((h, len(items), len(items) + len(payloads)))
        items.extend((h, p) for p in payloads)
        digests.extend(keys)
    outcomes = replay_items(items, digests, hook_set_key(hooks), stop_at_limit=True) if items else []
    if any(o is None for o in outcomes):  # a limit stopped a hook: the record's check rejects it (check_hooks)
        return {}
    for h, a, b in spans:
        ran = [o for o in outcomes[a:b] if o.get("matched", True)]
        if not ran:
            out[h.get("name", "?")] = f"no payload matches its matcher {h.get('matcher')!r}"
        elif not any(o.get("ok") or o.get("limit") for o in ran):
            if hook_style(h) != "method" or all(o.get("error") in _SETUP_ERRORS for o in ran):
                first = ran[0]
                out[h.get("name", "?")] = f"{first.get('error')}: {first.get('detail', '')}"[:300]
    return out


_PAYLOADS = _cache.lru("hook.payloads", 32 << 20)  # generated payloads, by source digest and hook


def _payloads_for(source: dict, hook: dict, source_digest: bytes, limit: int) -> tuple[list[dict], list[bytes]]:
    """``generated_payloads(source, hook, limit=limit)``, made once per source and hook (a private copy: read only),
    and the :func:`hsa.sandbox.pool.payload_digest` of each: the source's variants and :func:`not_replayed` key their checks with it."""
    from hsa.hooks_model import generated_payloads, hook_style

    # generated_payloads reads the source's hook_events, skills, skill_tool, tools and messages
    # (all in the digest) and the hook's event, name and style
    key = (source_digest, hook.get("event", ""), hook.get("name"), hook_style(hook), limit)
    hit = _PAYLOADS.get(key)
    if hit is None:  # each payload's key is its exact JSON where it can be: parsed, it is the private copy
        made = generated_payloads(source, hook, limit=limit)
        keys = [payload_key(p) for p in made]  # sized by these: a walk of the payloads would cost as much as a miss
        payloads = [_orjson.loads(k) if k[:1] != b"\x00" else _json.copy(p) for k, p in zip(keys, made)]
        hit = _PAYLOADS.put(key, (payloads, [hashlib.blake2b(k, digest_size=16).digest() for k in keys]),
                            300 + sum(3 * len(k) + 120 for k in keys))
    return hit


def _check_hooks(source: dict, variant: dict, src_hooks: list, var_hooks: list, steps: list,
                 max_payloads: int, source_digest: bytes) -> list:
    from hsa.violations import Violation

    reworded = set()
    for note in variant.get("notes", [])[len(source.get("notes", [])):]:
        if note.startswith(_REWORDED):  # left by hook.message_format: messages changed on purpose
            reworded.add(note[len(_REWORDED):].strip("'\""))
    carrier = _Carrier(steps)
    set_key = hook_set_key(src_hooks)  # the source record's hooks: their rewrites run in the same worker
    work: list[tuple[dict, dict]] = []
    checks: list[tuple[str, int, dict, tuple | None, dict | None]] = []  # (kind, hook index, payload, tools, event)
    known: list[tuple[bytes, bytes] | None] = []  # per check: its pair's key in _EQUIVALENT and its payload's digest
    keys: list[bytes | None] = []  # per work item: its payload's digest, where made already
    steps_key = None
    for hi, (a, b) in enumerate(zip(src_hooks, var_hooks)):
        same = a.get("source") == b.get("source") and a.get("entry") == b.get("entry") and \
            a.get("matcher") == b.get("matcher")
        if same and not steps:
            continue
        if steps_key is None:  # a restore step's patch is read by neither the payload nor the output mapping
            steps_key = payload_key([{"op": "restore"} if isinstance(t, RestoreStep) else s
                                     for s, t in zip(steps, steps_of(steps))])
        # everything the comparison of a and b on one payload reads, but the payload
        pair = hashlib.blake2b(set_key + payload_key([a, b, a.get("name") in reworded]) + steps_key,
                               digest_size=16).digest()
        payloads, digests = _payloads_for(source, a, source_digest, max_payloads)
        checked = _EQUIVALENT.get(pair) or ()
        for p, d in zip(payloads, digests):
            if d in checked:
                continue  # checked equivalent on this payload before (another record of the harness variant)
            mapped, tools = carrier.payload(p, d)
            if same and mapped == p:  # the same hook on the same payload: equivalent, and a function of the key
                _checked_equivalent(pair, d)
                continue
            checks.append(("equiv", hi, p, tools, None))
            known.append((pair, d))
            work.append((a, p))
            work.append((b, mapped))
            keys.append(d)
            keys.append(None)
    events = [(i, ev) for i, ev in enumerate(variant.get("hook_events") or ())]
    src_events = source.get("hook_events") or []
    names_v = {h.get("name"): h for h in var_hooks}
    names_s = {h.get("name"): h for h in src_hooks}
    for i, ev in events:
        if i >= len(src_events) or not isinstance(ev.get("payload"), dict) or "decision" not in ev:
            continue
        sev = src_events[i]
        hv, hs = names_v.get(ev.get("hook")), names_s.get(sev.get("hook"))
        if hv is None or hs is None or not isinstance(sev.get("payload"), dict):
            continue
        checks.append(("event", i, sev["payload"], None, ev))
        known.append(None)
        work.append((hs, sev["payload"]))
        work.append((hv, ev["payload"]))
        keys.append(None)
        keys.append(None)
    if not work:
        return []
    # the source side first (cached, most often): a source hook stopped by a limit rejects the variant without
    # running its rewrite, so a hostile record costs its timeout once, not once per variant
    outcomes: list = [None] * len(work)
    outcomes[0::2] = replay_items(work[0::2], keys[0::2], set_key, stop_at_limit=True)
    stopped = next((k for k, o in enumerate(outcomes[0::2]) if o is None or o.get("limit")), None)
    if stopped is not None:
        kind, idx, p, _, ev = checks[stopped]
        name = src_hooks[idx].get("name") if kind == "equiv" else ev.get("hook")
        o = next(o for o in outcomes[0::2] if o is not None and o.get("limit"))
        return [Violation("hooks", f"hook {o['error']}",
                          f"hook {name!r}: {o.get('detail', '')} on payload {_short(p)}")]
    outcomes[1::2] = replay_items(work[1::2], keys[1::2], set_key, stop_at_limit=True)
    out: list = []
    bad_hooks: set = set()
    for k, (kind, idx, p, tools, ev) in enumerate(checks):
        oa, ob = outcomes[2 * k], outcomes[2 * k + 1]
        for o in (oa, ob):
            if (o or {}).get("limit"):  # (None: not run, after a limit earlier in the batch)
                hook = src_hooks[idx] if kind == "equiv" else {"name": ev.get("hook")}
                return [Violation("hooks", f"hook {o['error']}", f"hook {hook.get('name')!r}: {o.get('detail', '')} "
                                                                   f"on payload {_short(p)}")]
        if kind == "equiv":
            if idx in bad_hooks:
                continue
            exp, got = carrier.expected(oa, tools), _observed(ob)
            name = src_hooks[idx].get("name")
            if name in reworded:
                exp, got = _mask_messages(exp), _mask_messages(got)
            if not _json.strict_equal(exp, got):
                bad_hooks.add(idx)
                out.append(Violation("hooks", "rewritten hook behaves differently",
                                     f"hook {name!r} on payload {_short(p)}: expected {_short(exp)}, "
                                     f"got {_short(got)}"))
            else:
                _checked_equivalent(*known[k])
        else:
            sev = src_events[idx]
            hs, hv = names_s.get(sev.get("hook")), names_v.get(ev.get("hook"))
            if not oa.get("ok") or not _json.strict_equal(_event_value(hs, oa), sev.get("decision")):
                continue  # the source's event was not what its hook returns: nothing to keep
            if not ob.get("ok") or not _json.strict_equal(_event_value(hv, ob), ev.get("decision")):
                out.append(Violation("hooks", "hook event does not match its hook",
                                     f"hook_events[{idx}] ({ev.get('hook')!r}): recorded {_short(ev.get('decision'))}, "
                                     f"the variant's hook returns {_short(ob.get('value'))}"))
    return out


def _event_value(hook: dict, outcome: dict) -> Any:
    """What a recorded event's ``decision`` is compared with: the hook's return value, or its decision for scripts."""
    from hsa.hooks_model import decision_of, hook_style

    if hook_style(hook) == "script":
        return decision_of(hook, outcome)
    return outcome.get("value")
