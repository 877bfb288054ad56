"""``hsa audit``: what each variant changed, as old -> new pairs a person can read and count.

Invariant 9 (meaning) cannot be fully checked by rules: a synonym in the wrong sense, a paraphrase
that weakens a prohibition, a masked value nothing explains. The audit prints every change of a
deterministic sample of variants, grouped by kind, so that a reader can label each one (``--format
jsonl`` writes one change a line with an empty ``meaning_changed`` field to fill in).

Kinds (:data:`KINDS`): tool, parameter and skill names; enum and default values; tool and parameter
descriptions; the fields a tool carries (its dialect and keys); added and removed tools, parameters and
skills; skill descriptions and texts; prompt sections; messages, tool results and hooks.

Sources: a variant is compared with its source row (variant 0, written by ``--keep-original``) when the
data holds it, else with what :func:`hsa.renames.canonicalize` gives back from the variant itself (the
source, exactly, for a task-preserving variant: invariant 8), else (a task-changing variant) with the
record of the inputs recorded in the folder's manifest.

Works on an ``hsa augment`` output folder and on any JSONL of rows (``hsa export``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.mapping import ARRAY, Mapping, argument_leaves
from hsa.steps import ValuesStep
from hsa.step_schemas import node_at

__all__ = ["KINDS", "Change", "changes", "audit", "format_text", "format_jsonl", "sample_ids"]

#: Every kind of change, in the order the report lists them.
KINDS = (
    "tool name", "parameter name", "skill name",
    "enum value", "default value",
    "description",
    "tool fields",
    "added tool", "removed tool", "added parameter", "removed parameter", "added skill", "removed skill",
    "skill description", "skill text",
    "prompt section", "prompt layout",
    "message", "tool result", "hook",
)


@dataclasses.dataclass(frozen=True)
class Change:
    """One change of one variant: ``kind`` (one of :data:`KINDS`), where (a tool, ``tool.path``, a skill, a section,
    ``messages[3]``, ...), the source text and the variant's ("" where there is none)."""

    id: str
    kind: str
    where: str
    old: str
    new: str

    def to_json(self, source_id: str, transforms: list[str]) -> dict:
        return {"id": self.id, "source_id": source_id, "kind": self.kind, "where": self.where, "old": self.old,
                "new": self.new, "transforms": transforms, "meaning_changed": None, "note": ""}


# --------------------------------------------------------------------------- what changed


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json.dumps(value)


_SENTENCE = re.compile(r"(?<=[.!?:;])\s+(?=\S)|\n+")


def _units(text: str) -> list[str]:
    """``text`` in sentences and lines: the units a text change is reported in."""
    return [u for u in _SENTENCE.split(text) if u.strip()]


def text_pairs(old: str, new: str) -> list[tuple[str, str]]:
    """The changed stretches of two texts as (old, new) pairs, sentence by sentence (a short text whole)."""
    if old == new:
        return []
    if len(old) <= 200 and len(new) <= 200 and "\n" not in old + new:
        return [(old, new)]
    a, b = _units(old), _units(new)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            out.append((" ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return out or [(old, new)]


def _dotted(path: Iterable) -> str:
    """``("fields", "[]", "type")`` as ``fields[].type``."""
    return ".".join(str(k) for k in path).replace(".[]", "[]")


_MARK = "\x00hsa-audit-leaf-"


def _param_moves(steps: list[dict], tool: str, schema: Any) -> tuple[dict[tuple, tuple], list[tuple]]:
    """Where each declared parameter path of ``tool`` (source name, source ``schema``) lands in the variant, found by
    carrying a call that passes a marked value at every leaf through the mapping ``steps`` (so every step kind —
    renames, nesting, flattening, swaps — is read the way calls are carried); and the paths a step fills in."""
    from hsa.renames import param_paths

    paths = param_paths(schema) if isinstance(schema, dict) else []
    declared = set(paths)
    leaves = [p for p in paths if not any(q[:len(p)] == p and len(q) > len(p) for q in declared)]
    args: dict = {}
    for i, p in enumerate(leaves):
        node: Any = args
        keys = [0 if k == ARRAY else k for k in p]
        for k, nxt in zip(keys, keys[1:] + [None]):
            if nxt is None:
                if isinstance(node, dict):
                    node[k] = f"{_MARK}{i}"
                elif isinstance(node, list) and not node:
                    node.append(f"{_MARK}{i}")
                break
            child = [] if nxt == 0 and isinstance(nxt, int) else {}
            if isinstance(node, dict):
                node = node.setdefault(k, child)
            elif isinstance(node, list):
                if not node:
                    node.append(child)
                node = node[0]
    call = Mapping(steps).to_variant({"name": tool, "arguments": args})
    moved: dict[tuple, tuple] = {}
    filled = []
    for where, value in argument_leaves(call["arguments"]).items():
        new = tuple(ARRAY if kind == "i" else key for kind, key in where)
        if isinstance(value, str) and value.startswith(_MARK):
            moved[leaves[int(value[len(_MARK):])]] = new
        else:
            filled.append(new)
    for p in sorted((p for p in paths if p not in moved), key=len, reverse=True):  # objects: from their leaves
        heads = {to[:len(to) - (len(q) - len(p))] for q, to in moved.items()
                 if len(q) > len(p) and q[:len(p)] == p and len(to) >= len(q) - len(p)}
        if len(heads) != 1:  # an object nested inside it (relations[].from -> relations[].Settings.From): same head
            heads = {to[:len(p)] for q, to in moved.items() if len(q) > len(p) and q[:len(p)] == p}
        if len(heads) == 1:
            moved[p] = heads.pop()
    return moved, filled


def _tool_fields(tool: dict) -> str:
    from hsa.tool_dialects import denormalize_tool

    raw = denormalize_tool(tool)
    fn = raw.get("function", raw) if tool.get("dialect") == "openai" else raw
    keys = [k for k in fn if k not in ("name", "description")]
    outer = [f"(outer) {k}" for k in raw if tool.get("dialect") == "openai" and k not in ("type", "function")]
    return f"{tool.get('dialect')}: {', '.join(keys + outer) or '(none)'}"


def _describe_tool(tool: dict) -> str:
    desc = tool.get("description")
    return f"{tool['name']}: {desc}" if isinstance(desc, str) and desc else tool["name"]


def _changes_of_tools(rid: str, source: dict, variant: dict, steps: list[dict], out: list[Change]) -> None:
    m = Mapping(steps)
    vtools = {t["name"]: t for t in variant["tools"]}
    mapped = set()
    for t in source["tools"]:
        name = t["name"]
        new = m.tool_to_variant(name)
        if new != name:
            out.append(Change(rid, "tool name", name, name, new))
        v = vtools.get(new)
        if v is None:
            out.append(Change(rid, "removed tool", name, _describe_tool(t), ""))
            continue
        mapped.add(new)
        for a, b in text_pairs(_text(t.get("description")), _text(v.get("description"))):
            out.append(Change(rid, "description", name, a, b))
        if _tool_fields(t) != _tool_fields(v):
            out.append(Change(rid, "tool fields", name, _tool_fields(t), _tool_fields(v)))
        for key in [*t["extra"], *(k for k in v["extra"] if k not in t["extra"])]:  # same keys, other values
            if key in t["extra"] and key in v["extra"] and not _json.strict_equal(t["extra"][key], v["extra"][key]):
                out.append(Change(rid, "tool fields", f"{name}.{key}", _text(t["extra"][key]), _text(v["extra"][key])))
        _changes_of_params(rid, name, t, v, steps, out)
    for v in variant["tools"]:
        if v["name"] not in mapped:
            out.append(Change(rid, "added tool", v["name"], "", f"{_describe_tool(v)}  [{_tool_fields(v)}]"))
    for i, (step, typed) in enumerate(zip(steps, m.typed())):
        if not isinstance(typed, ValuesStep):
            continue
        tool = Mapping(steps[:i]).tool_to_canonical(step["tool"])
        where = f"{tool}.{_dotted(step['path'])}"
        if not step.get("texts", True):  # a re-drawn default: the pair and its swap back, reported once
            a, b = step["map"][0]
            out.append(Change(rid, "default value", where, _json.dumps(a), _json.dumps(b)))
            continue
        for a, b in step["map"]:
            out.append(Change(rid, "enum value", where, _json.dumps(a), _json.dumps(b)))


def _changes_of_params(rid: str, name: str, t: dict, v: dict, steps: list[dict], out: list[Change]) -> None:
    """Parameter renames and moves, parameter descriptions, added and removed parameters of source tool ``t``
    (``name``) and its variant ``v``."""
    from hsa.renames import param_paths

    moves, filled = _param_moves(steps, name, t["parameters"])
    declared = [p for p in param_paths(t["parameters"]) if p in moves] if isinstance(t["parameters"], dict) else []
    def parent(path: tuple) -> tuple:
        """Where ``path``'s parent object lands (fields[].type: fields, carried with the [])."""
        head = path[:-1]
        while head and head[-1] == ARRAY:
            head = head[:-1]
        return moves.get(head, head) + path[len(head):-1] if len(path) > 1 else ()

    flattened = set()
    for path in declared:
        to = moves[path]
        if to == parent(path):  # an object dissolved into its parent (body.height_cm -> body_height_cm)
            flattened.add(path)
            out.append(Change(rid, "parameter name", name, _dotted(path), "(flattened into its parent)"))
        elif path[-1] != to[-1] or to[:-1] != parent(path):  # its own name changed, or it moved
            out.append(Change(rid, "parameter name", name, _dotted(path), _dotted(to)))
    for path in declared:
        a = node_at(t["parameters"], path) or {}
        b = {} if path in flattened else node_at(v["parameters"], moves[path]) or {}
        for x, y in text_pairs(_text(a.get("description")), _text(b.get("description"))):
            out.append(Change(rid, "description", f"{name}.{_dotted(path)}", x, y))
    image = set(moves.values()) | {to[:i] for to in moves.values() for i in range(1, len(to))}
    for path in param_paths(v["parameters"]) if isinstance(v["parameters"], dict) else ():
        if path not in image:
            node = node_at(v["parameters"], path) or {}
            filled_note = " (every call passes it)" if path in filled else ""
            out.append(Change(rid, "added parameter", v["name"], "", f"{_dotted(path)}: {_json.dumps(node)}{filled_note}"))
    for path in param_paths(t["parameters"]) if isinstance(t["parameters"], dict) else ():
        if path not in moves:
            out.append(Change(rid, "removed parameter", name, _dotted(path), ""))


def _changes_of_skills(rid: str, source: dict, variant: dict, steps: list[dict], out: list[Change]) -> None:
    m = Mapping(steps)
    vskills = {s.get("name"): s for s in variant.get("skills") or () if isinstance(s, dict)}
    mapped = set()
    for s in source.get("skills") or ():
        if not isinstance(s, dict):
            continue
        name = s.get("name")
        new = m.skill_to_variant(name)
        if new != name:
            out.append(Change(rid, "skill name", name, name, new))
        v = vskills.get(new)
        if v is None:
            out.append(Change(rid, "removed skill", name, f"{name}: {s.get('description', '')}", ""))
            continue
        mapped.add(new)
        for a, b in text_pairs(_text(s.get("description")), _text(v.get("description"))):
            out.append(Change(rid, "skill description", name, a, b))
        for a, b in text_pairs(_text(s.get("content")), _text(v.get("content"))):
            out.append(Change(rid, "skill text", name, a, b))
    for name, v in vskills.items():
        if name not in mapped:
            out.append(Change(rid, "added skill", str(name), "", f"{name}: {v.get('description', '')}"))


def _changes_of_prompt(rid: str, source: dict, variant: dict, out: list[Change]) -> bool:
    """Prompt-section changes; False when the records carry no sectioned prompt (their system messages are compared)."""
    a, b = source.get("prompt"), variant.get("prompt")
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    old = {s.get("id"): s for s in a.get("sections") or ()}
    new = {s.get("id"): s for s in b.get("sections") or ()}
    for sid, s in old.items():
        t = new.get(sid)
        if t is None:
            out.append(Change(rid, "prompt section", str(sid), f"{s.get('title')}: {s.get('body')}", ""))
            continue
        if s.get("title") != t.get("title"):
            out.append(Change(rid, "prompt section", f"{sid} (title)", _text(s.get("title")), _text(t.get("title"))))
        for x, y in text_pairs(_text(s.get("body")), _text(t.get("body"))):
            out.append(Change(rid, "prompt section", str(sid), x, y))
    for sid, t in new.items():
        if sid not in old:
            out.append(Change(rid, "prompt section", str(sid), "", f"{t.get('title')}: {t.get('body')}"))
    order_a = [s.get("id") for s in a.get("sections") or ()]
    order_b = [s.get("id") for s in b.get("sections") or ()]
    if order_a != order_b:
        out.append(Change(rid, "prompt layout", "section order", ", ".join(map(str, order_a)),
                          ", ".join(map(str, order_b))))
    if a.get("template") != b.get("template"):
        out.append(Change(rid, "prompt layout", "template", _text(a.get("template")), _text(b.get("template"))))
    return True


def _changes_of_messages(rid: str, source: dict, variant: dict, prompt: bool, out: list[Change]) -> None:
    ma, mb = source["messages"], variant["messages"]
    for i in range(max(len(ma), len(mb))):
        x = ma[i] if i < len(ma) else {}
        y = mb[i] if i < len(mb) else {}
        role = x.get("role") or y.get("role")
        if role == "system" and prompt:
            continue  # rendered from the prompt: its sections are compared
        kind = "prompt section" if role == "system" else "tool result" if role == "tool" else "message"
        for a, b in text_pairs(_text(x.get("content")), _text(y.get("content"))):
            out.append(Change(rid, kind, f"messages[{i}] ({role})", a, b))


def _changes_of_hooks(rid: str, source: dict, variant: dict, out: list[Change]) -> None:
    ha = {h.get("name", i): h for i, h in enumerate(source.get("hooks") or ()) if isinstance(h, dict)}
    hb = {h.get("name", i): h for i, h in enumerate(variant.get("hooks") or ()) if isinstance(h, dict)}
    for key in [*ha, *(k for k in hb if k not in ha)]:
        a, b = _text((ha.get(key) or {}).get("source")), _text((hb.get(key) or {}).get("source"))
        for x, y in difflib_lines(a, b):
            out.append(Change(rid, "hook", str(key), x, y))


def difflib_lines(old: str, new: str) -> list[tuple[str, str]]:
    """Changed line blocks of two code texts as (old, new) pairs."""
    a, b = old.splitlines(), new.splitlines()
    return [("\n".join(a[i1:i2]), "\n".join(b[j1:j2]))
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"]


def changes(source: dict, variant: dict) -> list[Change]:
    """Every change from ``source`` to ``variant`` (both in the internal form of :func:`hsa.records.normalize`),
    in the order of :data:`KINDS`."""
    rid = str(variant.get("id"))
    steps = variant["mapping"][len(source["mapping"]):]
    out: list[Change] = []
    _changes_of_tools(rid, source, variant, steps, out)
    _changes_of_skills(rid, source, variant, steps, out)
    prompt = _changes_of_prompt(rid, source, variant, out)
    _changes_of_messages(rid, source, variant, prompt, out)
    _changes_of_hooks(rid, source, variant, out)
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(out, key=lambda c: order[c.kind])


# --------------------------------------------------------------------------- reading and sampling


def _variant_key(row: dict) -> tuple:
    v = row.get("variant")
    return (str(row.get("source_id")), v if isinstance(v, int) else -1, str(row.get("id")))


def sample_ids(keys: list[tuple], seed: int) -> list[tuple]:
    """``keys`` (source id, variant, id) in one order fixed by ``seed`` alone: sorted, then shuffled by
    ``random.Random(seed)``; the audit walks it until it has its sample."""
    order = sorted(keys)
    random.Random(seed).shuffle(order)
    return order


def _rows(path: Path) -> Iterator[dict]:
    from hsa.io import iter_rows, row_to_record

    for row in iter_rows(path):
        yield row_to_record(row) if path.is_dir() else row


@dataclasses.dataclass
class AuditResult:
    """What :func:`audit` found: the variants read (ids, in sample order) and their changes."""

    path: str
    seed: int
    total: int  # variants in the data
    read: list[str]
    changes: list[Change]
    sources: dict[str, str]  # variant id -> source id
    transforms: dict[str, list[str]]  # variant id -> the transforms that applied
    unreadable: list[str]  # variant id: why it could not be compared


def audit(path: str | Path, *, sample: int = 20, seed: int = 0, kinds: Iterable[str] = ()) -> AuditResult:
    """Read ``sample`` variants of the data at ``path`` (0: all), in the order :func:`sample_ids` fixes, and list
    their changes. ``kinds``: keep only those kinds, and sample among the variants that have one."""
    from hsa.records import RecordError, normalize
    from hsa.renames import canonicalize

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; give an 'hsa augment' output folder or a JSONL of its rows")
    if path.is_dir() and not (path / "state.json").exists():
        raise FileNotFoundError(f"{path} is not an hsa output folder (no state.json)")
    want = set(kinds)
    bad = sorted(want - set(KINDS))
    if bad:
        raise ValueError(f"unknown kind(s) {bad}; expected some of {list(KINDS)}")
    keys, originals = [], set()
    for row in _rows(path):
        k = _variant_key(row)
        if row.get("variant") == 0:
            originals.add(k[0])
        elif row.get("source_id") is not None:
            keys.append(k)
    order = sample_ids(keys, seed)
    limit = len(order) if sample <= 0 else sample
    # rows are read again in batches along the sample order, so the sample never holds the whole data
    result = AuditResult(str(path), seed, len(keys), [], [], {}, {}, [])
    batch = max(limit, 64)
    at = 0
    while len(result.read) < limit and at < len(order):
        chunk = order[at:at + batch]
        at += batch
        batch *= 2  # a rare --kind: read the data fewer times
        ids = {k[2] for k in chunk}
        need = {k[0] for k in chunk} & originals
        rows, sources = {}, {}
        for row in _rows(path):
            if row.get("variant") == 0 and row.get("source_id") in need:
                sources[row["source_id"]] = row
            elif str(row.get("id")) in ids:
                rows[str(row["id"])] = row
        for sid, _, rid in chunk:
            if len(result.read) >= limit:
                break
            row = rows[rid]
            try:
                variant = normalize(row)
                src = sources.get(sid)
                if src is not None:
                    source = normalize(src)
                elif Mapping(variant["mapping"]).task_preserving:
                    source = canonicalize(variant)
                else:
                    source = _input_source(path, row)
                    if source is None:
                        result.unreadable.append(f"{rid}: task-changing variant and its source is not in the data "
                                                 "(write it with --keep-original)")
                        continue
            except (RecordError, ValueError) as exc:
                result.unreadable.append(f"{rid}: {exc}")
                continue
            found = [c for c in changes(source, variant) if not want or c.kind in want]
            if want and not found:
                continue
            result.read.append(rid)
            result.sources[rid] = sid
            result.transforms[rid] = [t.get("name", "?") for t in row.get("transforms") or () if isinstance(t, dict)]
            result.changes.extend(found)
    return result


def _input_source(path: Path, row: dict) -> dict | None:
    from hsa.records import normalize
    from hsa.show import find_source

    if not path.is_dir():
        return None
    raw = find_source(path, row)
    return None if raw is None else normalize(raw)


# --------------------------------------------------------------------------- output


def _one_line(text: str, width: int = 100) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= width else flat[:width - 3] + "..."


def format_text(result: AuditResult, *, width: int = 160) -> str:
    """The report: a head line, the count per kind, then each kind's pairs (``[variant] where: old -> new``)."""
    by_kind: dict[str, list[Change]] = {}
    for c in result.changes:
        by_kind.setdefault(c.kind, []).append(c)
    lines = [f"hsa audit {result.path}: {len(result.read)} of {result.total} variants (seed {result.seed}), "
             f"{len(result.changes)} changes"]
    lines += [f"  {k}: {len(by_kind[k])}" for k in KINDS if k in by_kind]
    for why in result.unreadable:
        lines.append(f"  not compared: {why}")
    for kind in KINDS:
        if kind not in by_kind:
            continue
        lines.append("")
        lines.append(f"## {kind} ({len(by_kind[kind])})")
        for c in by_kind[kind]:
            head = f"[{c.id}]" if c.where == c.old else f"[{c.id}] {c.where}"
            if len(c.old) + len(c.new) + len(head) <= width - 8 and "\n" not in c.old + c.new:
                lines.append(f"  {head}: {c.old or '(none)'} -> {c.new or '(none)'}")
            else:
                lines.append(f"  {head}")
                lines.append(f"      - {_one_line(c.old, width) or '(none)'}")
                lines.append(f"      + {_one_line(c.new, width) or '(none)'}")
    return "\n".join(lines)


def format_jsonl(result: AuditResult) -> str:
    """One JSON object a change (``meaning_changed`` null, ``note`` empty: for a hand label), sample order."""
    return "".join(json.dumps(c.to_json(result.sources[c.id], result.transforms[c.id]), ensure_ascii=False) + "\n"
                   for c in result.changes)
