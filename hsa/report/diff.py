"""What changed between a source record and one of its variants, with the representation left out.

A variant differs from its source in two ways: what a transform did (a tool renamed, a
description paraphrased, a hook restyled) and how the record happens to be written (tool-call
``arguments`` as a JSON string or an object, the order of keys in a schema, the tool dialect,
text content as a string or as a list of text blocks). Only the first is a change. This module
removes the second before comparing:

- :func:`normal_form` reads a record into hsa's internal form (:func:`hsa.records.normalize`:
  one tool dialect, arguments as objects) and drops the keys that only say how it was written;
- :func:`section_diffs` pairs the parts of a source and a variant (tools and skills through the
  variant's mapping, messages by position, hooks by name) and diffs each pair's text, keys sorted;
- :func:`diff_ops` is the diff of two texts: lines first, then the words inside the lines that
  changed (:mod:`difflib` on tokens), encoded against the old text so that a page can rebuild
  both sides without holding the new text twice (:func:`apply_ops` is that rebuild);
- :func:`mapping_rows` is a mapping as a table of ``old -> new``.

``hsa show`` prints :func:`normal_form`; ``hsa report`` renders :func:`section_diffs`.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

__all__ = ["normal_form", "diff_ops", "apply_ops", "utf16_len", "section_diffs", "mapping_rows", "dumps_sorted"]

#: Keys of the internal form that say how a record was written, not what it holds.
_REPRESENTATION = ("_fmt", "extra")
_TOKEN = re.compile(r"\w+\s*|[^\w\s]\s*|\s+")  # a word or a sign with the spaces after it


def normal_form(record: dict) -> dict:
    """``record`` (any input layout or an output row) in hsa's internal form, without the keys that only say how it
    was written: one tool dialect, call arguments as objects, ``content`` text blocks joined. Raises
    :class:`hsa.records.RecordError` for a record hsa cannot read."""
    from hsa.records import normalize

    rec = normalize(dict(record))
    out = {k: v for k, v in rec.items() if k not in _REPRESENTATION}
    out["messages"] = [_plain_message(m) for m in rec["messages"]]
    return out


def _plain_message(m: dict) -> dict:
    content = m.get("content")
    if isinstance(content, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str) for b in content):
        m = {**m, "content": "".join(b["text"] for b in content)}
    return m


def dumps_sorted(value: Any) -> str:
    """``value`` as indented JSON with sorted keys: the text two values are compared by (key order is
    representation)."""
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an int past 64 bits, or a key that is not a string
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- the diff of two texts


def utf16_len(text: str) -> int:
    """The length of ``text`` in UTF-16 code units, the unit of JavaScript's ``String.slice``."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def diff_ops(old: str, new: str) -> list:
    """The diff of ``new`` against ``old`` as a list of operations: an int ``k > 0`` keeps the next ``k`` units of
    ``old``, ``-k`` deletes them, a string inserts itself (units: UTF-16 code units, so that JavaScript can slice).
    Lines are compared first and the words of each changed block of lines next, so that a renamed word in a long
    text is one small change. ``apply_ops(old, ops) == new``."""
    ops: list = []
    a_lines, b_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        a, b = "".join(a_lines[i1:i2]), "".join(b_lines[j1:j2])
        if tag == "equal":
            _push(ops, utf16_len(a))
        elif tag == "delete":
            _push(ops, -utf16_len(a))
        elif tag == "insert":
            _push(ops, b)
        else:
            _words(a, b, ops)
    return ops


def _words(a: str, b: str, ops: list) -> None:
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    words = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for tag, i1, i2, j1, j2 in words.get_opcodes():
        x, y = "".join(ta[i1:i2]), "".join(tb[j1:j2])
        if tag == "equal":
            _push(ops, utf16_len(x))
            continue
        if x:
            _push(ops, -utf16_len(x))
        if y:
            _push(ops, y)


def _push(ops: list, op: int | str) -> None:
    """Append ``op``, merging it into the last one of the same kind."""
    if op == 0 or op == "":
        return
    if ops:
        last = ops[-1]
        if isinstance(op, str) and isinstance(last, str):
            ops[-1] = last + op
            return
        if isinstance(op, int) and isinstance(last, int) and (op > 0) == (last > 0):
            ops[-1] = last + op
            return
    ops.append(op)


def apply_ops(old: str, ops: list) -> str:
    """The new text that :func:`diff_ops` encoded against ``old``."""
    units = old.encode("utf-16-le")
    out, i = [], 0
    for op in ops:
        if isinstance(op, str):
            out.append(op)
        elif op > 0:
            out.append(units[2 * i:2 * (i + op)].decode("utf-16-le"))
            i += op
        else:
            i -= op
    if i != len(units) // 2:
        raise ValueError(f"the operations cover {i} units of a text of {len(units) // 2}")
    return "".join(out)


# --------------------------------------------------------------------------- the parts of a record as text


def _tool_text(tool: dict) -> str:
    lines = [f"name: {tool['name']}"]
    if tool.get("description") is not None:
        lines.append(f"description: {tool['description']}")
    lines.append("parameters: " + dumps_sorted(tool.get("parameters") or {}))
    return "\n".join(lines) + "\n"


def _skill_text(skill: dict) -> str:
    head = [f"name: {skill.get('name')}"]
    if skill.get("description") is not None:
        head.append(f"description: {skill['description']}")
    rest = {k: v for k, v in skill.items() if k not in ("name", "description", "content")}
    if rest:
        head.append("other: " + dumps_sorted(rest))
    return "\n".join(head) + "\n\n" + str(skill.get("content") or "")


def _message_text(m: dict) -> str:
    role = m.get("role", "?")
    head = role + (f" ({m['name']})" if role == "tool" and m.get("name") else "")
    content = m.get("content")
    text = content if isinstance(content, str) else ("" if content is None else dumps_sorted(content))
    parts = [f"[{head}]", text] if text else [f"[{head}]"]
    for c in m.get("tool_calls") or ():
        fn = c.get("function") or {}
        parts.append(f"call {fn.get('name')}(" + json.dumps(fn.get("arguments"), sort_keys=True, ensure_ascii=False)
                     + ")")
    return "\n".join(parts) + "\n"


def _hook_text(hook: dict) -> str:
    head = " ".join(f"{k}: {hook[k]}" for k in ("name", "event", "entry") if hook.get(k) is not None)
    return f"# {head}\n{hook.get('source') or ''}"


def _item(section: str, key: str, old_label: str | None, new_label: str | None, old: str | None, new: str | None,
          *, code: bool = False, order_only: bool = False) -> dict:
    """One paired part: its labels on each side, and ``status`` with the ops (``changed``), ``same`` (the
    source's text shows on both sides), ``added`` (the variant's text whole) or ``removed``."""
    item: dict[str, Any] = {"section": section, "key": key, "old": old_label, "new": new_label, "code": code}
    if old is None:
        item.update(status="added", text=new)
    elif new is None:
        item.update(status="removed")
    elif old == new:
        item.update(status="order" if order_only else "same")
    else:
        item.update(status="changed", ops=diff_ops(old, new))
    return item


def _pair_named(section: str, old: list[dict], new: list[dict], rename, text, *, code: bool = False
                ) -> tuple[dict[str, str], list[dict]]:
    """Pair two lists of named parts through ``rename`` (source name -> variant name)."""
    fields: dict[str, str] = {}
    items: list[dict] = []
    by_name = {p.get("name"): p for p in new}
    used: set = set()
    for p in old:
        name = p.get("name")
        key = f"{section}/{name}"
        fields[key] = text(p)
        target = rename(name)
        q = by_name.get(target)
        if q is None or target in used:
            items.append(_item(section, key, name, None, fields[key], None, code=code))
            continue
        used.add(target)
        items.append(_item(section, key, name, target, fields[key], text(q), code=code))
    for q in new:
        if q.get("name") not in used:
            items.append(_item(section, f"{section}+/{q.get('name')}", None, q.get("name"), None, text(q), code=code))
    return fields, items


def _pair_messages(old: list[dict], new: list[dict]) -> list[tuple[int | None, int | None]]:
    """Message pairs by position; when a transform added or removed messages, by the sequence of roles."""
    if len(old) == len(new):
        return [(i, i) for i in range(len(old))]
    pairs: list[tuple[int | None, int | None]] = []
    roles = difflib.SequenceMatcher(None, [m.get("role") for m in old], [m.get("role") for m in new], autojunk=False)
    for tag, i1, i2, j1, j2 in roles.get_opcodes():
        if tag in ("equal", "replace"):
            pairs += [(i1 + k, j1 + k) for k in range(min(i2 - i1, j2 - j1))]
            pairs += [(i1 + k, None) for k in range(j2 - j1, i2 - i1)]
            pairs += [(None, j1 + k) for k in range(i2 - i1, j2 - j1)]
        elif tag == "delete":
            pairs += [(i, None) for i in range(i1, i2)]
        else:
            pairs += [(None, j) for j in range(j1, j2)]
    return pairs


def section_diffs(source: dict, variant: dict) -> tuple[dict[str, str], list[dict]]:
    """``(fields, items)``: the texts of the source's parts by key, and one item per paired part of the two
    records, in the order tools, skills, system prompt, messages, hooks (see :func:`_item` for an item's keys).

    Both records are read with :func:`normal_form`; tools and skills are paired through the variant's
    ``mapping`` (a renamed tool is one item with its old and new name), hooks by name, messages by position."""
    from hsa.mapping import Mapping

    src, var = normal_form(source), normal_form(variant)
    mapping = Mapping.from_dict(variant.get("mapping"))
    fields: dict[str, str] = {}
    items: list[dict] = []
    f, its = _pair_named("tools", src.get("tools") or [], var.get("tools") or [], mapping.tool_to_variant,
                         _tool_text)
    fields.update(f)
    items += _mark_key_order(its, src.get("tools") or [], var.get("tools") or [], mapping)
    f, its = _pair_named("skills", src.get("skills") or [], var.get("skills") or [], mapping.skill_to_variant,
                         _skill_text)
    fields.update(f)
    items += its
    a_msgs, b_msgs = src["messages"], var["messages"]
    a_sys = a_msgs[0] if a_msgs and a_msgs[0].get("role") == "system" else None
    b_sys = b_msgs[0] if b_msgs and b_msgs[0].get("role") == "system" else None
    if a_sys is not None or b_sys is not None:
        a_text = None if a_sys is None else str(a_sys.get("content") or "")
        b_text = None if b_sys is None else str(b_sys.get("content") or "")
        if a_text is not None:
            fields["system"] = a_text
        items.append(_item("system", "system", "system" if a_sys else None, "system" if b_sys else None,
                           a_text, b_text))
    a_rest = a_msgs[1:] if a_sys is not None else a_msgs
    b_rest = b_msgs[1:] if b_sys is not None else b_msgs
    a_off, b_off = int(a_sys is not None), int(b_sys is not None)
    for i, j in _pair_messages(a_rest, b_rest):
        old = None if i is None else _message_text(a_rest[i])
        new = None if j is None else _message_text(b_rest[j])
        key = f"messages/{i + a_off}" if i is not None else f"messages+/{j + b_off}"
        if old is not None:
            fields[key] = old
        items.append(_item("messages", key, None if i is None else f"#{i + a_off} {a_rest[i].get('role')}",
                           None if j is None else f"#{j + b_off} {b_rest[j].get('role')}", old, new))
    old_hooks, new_hooks = src.get("hooks") or [], var.get("hooks") or []
    if [h.get("name") for h in old_hooks] == [h.get("name") for h in new_hooks] or len(old_hooks) != len(new_hooks):
        f, its = _pair_named("hooks", old_hooks, new_hooks, lambda n: n, _hook_text, code=True)
    else:  # the same number of hooks, renamed: by position
        f, its = {}, []
        for k, (p, q) in enumerate(zip(old_hooks, new_hooks)):
            key = f"hooks/{k}"
            f[key] = _hook_text(p)
            its.append(_item("hooks", key, p.get("name"), q.get("name"), f[key], _hook_text(q), code=True))
    fields.update(f)
    items += its
    return fields, items


def _mark_key_order(items: list[dict], old: list[dict], new: list[dict], mapping) -> list[dict]:
    """``same`` tool items whose schemas differ only in key order become ``order`` (shown as unchanged, and said)."""
    unsorted_old = {t.get("name"): json.dumps(t, ensure_ascii=False) for t in old}
    unsorted_new = {t.get("name"): json.dumps(t, ensure_ascii=False) for t in new}
    for it in items:
        if it["status"] == "same" and it["old"] == it["new"] \
                and unsorted_old.get(it["old"]) != unsorted_new.get(it["new"]):
            it["status"] = "order"
    return items


# --------------------------------------------------------------------------- the mapping as a table


def _path(path: Any) -> str:
    return ".".join(str(k) for k in path) if isinstance(path, list) else str(path)


def mapping_rows(mapping: Any) -> list[dict]:
    """A row's mapping (its ``mapping`` column) as table rows ``{"kind", "where", "old", "new"}``: tools and skills
    renamed (composed over every step, canonical -> variant), then each parameter, value and fixed-argument step
    in order (``where`` names the tool as of that step). The ``restore`` step (content given back on the way
    home, not a rename) is counted, not listed."""
    from hsa.mapping import Mapping
    from hsa.steps import OpaqueStep, ParamsStep, ValuesStep

    m = Mapping.from_dict(mapping)
    rows = [{"kind": "tool", "where": "", "old": a, "new": b} for a, b in m.tool_names().items()]
    rows += [{"kind": "skill", "where": "", "old": a, "new": b} for a, b in m.skill_names().items()]
    for step, typed in zip(m.steps, m.typed()):
        if isinstance(typed, ParamsStep):
            rows += [{"kind": "parameter", "where": str(step.get("tool")), "old": _path(a), "new": _path(b)}
                     for a, b in step.get("paths", ())]
            rows += [{"kind": "fixed argument", "where": str(step.get("tool")), "old": "(absent)",
                      "new": f"{_path(p)} = {json.dumps(v, ensure_ascii=False)}"} for p, v in step.get("fill") or ()]
            rows += [{"kind": "dropped argument", "where": str(step.get("tool")),
                      "old": f"{_path(p)} = {json.dumps(v, ensure_ascii=False)}", "new": "(absent)"}
                     for p, v in step.get("drop") or ()]
        elif isinstance(typed, ValuesStep):
            where = f"{step.get('tool')}: {_path(step.get('path'))}"
            rows += [{"kind": "value", "where": where, "old": json.dumps(a, ensure_ascii=False),
                      "new": json.dumps(b, ensure_ascii=False)} for a, b in step.get("map", ())]
        elif isinstance(typed, OpaqueStep):
            rows.append({"kind": "task-changing", "where": str(step.get("transform") or ""), "old": "",
                         "new": "nothing maps back: this variant poses another task"})
    return rows
