"""``hsa show``: a variant beside its source, differences highlighted.

Both sides are brought to one representation before they are compared (the messages layout, tool-call
arguments as objects, the tool list as a list), so that only what a transform changed shows, whether the
source is variant 0 or a line of the input file in its own layout. Texts that hold several lines (system
prompts, skill content, hook source) are shown line by line; a changed line is shown once, with the words
that changed marked (``[-old-]{+new+}``, or red and green on a terminal); every line is wrapped to the width.
The diff is Python's :mod:`difflib` on those lines, then on the words of each changed line.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.io import InputSource, find_row, row_to_record

__all__ = ["show", "find_source", "display_lines", "DEFAULT_WIDTH"]

_RED, _GREEN, _CYAN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[0m"

#: Columns of the output when neither ``width`` nor a terminal says otherwise.
DEFAULT_WIDTH = 100

_TEXT_BLOCK = 80  # a string longer than this (or holding a newline) is shown as a block of its lines
_SIMILAR = 0.4  # a removed and an added line at least this similar are shown as one line with word changes
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def _find_row(dataset: Path, row_id: str) -> dict:
    row = find_row(dataset, row_id)
    if row is None:
        raise KeyError(f"no row with id {row_id!r} in {dataset} (ids look like <source_id>/<variant>)")
    return row


def find_source(dataset: Path, row: dict) -> dict | None:
    """The source record of ``row``: variant 0 in the dataset, else the line in the recorded input files."""
    source_id = row["source_id"]
    try:
        return row_to_record(_find_row(dataset, f"{source_id}/0"))
    except KeyError:
        pass
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    for inp in manifest.get("inputs", []):
        kind = inp.get("kind", "jsonl")
        if kind == "hub" or not Path(inp["path"]).exists():
            continue
        derived = source_id.startswith("sha-")  # an id made from the content: no line holds it
        for item in InputSource(inp["path"], kind).items():
            obj = item.data
            if isinstance(obj, (bytes, bytearray)):  # a JSONL line: parsed only when it can hold the id
                if not derived and source_id.encode() not in obj:
                    continue
                try:
                    obj = _json.loads(obj)
                except ValueError:
                    continue
            if not isinstance(obj, dict):
                continue
            if obj.get("id") is not None:
                if str(obj["id"]) == source_id:
                    return obj
            elif derived and _derived_id(obj) == source_id:
                return obj
    return None


def _derived_id(raw: dict) -> str | None:
    """The id :func:`hsa.records.normalize` gives a record without one (from its content)."""
    from hsa.records import RecordError, normalize

    try:
        return normalize(raw)["id"]
    except RecordError:
        return None


def _comparable(record: dict) -> dict:
    """``record`` in the one representation both sides are compared in: read into hsa's record and written
    back in the messages layout, tool-call arguments as objects, the tool list as a list (what
    ``--call-arguments`` or an input layout chose is not a change a transform made)."""
    from hsa.records import denormalize, normalize

    rec = denormalize(normalize(record), call_arguments="object")
    if isinstance(rec.get("tools"), str):
        rec["tools"] = json.loads(rec["tools"])
    return rec


def display_lines(value: Any, indent: int = 0, key: str | None = None) -> list[str]:
    """``value`` as indented JSON lines, except that a string holding a newline or longer than a line is shown
    as a block: ``"key": |`` and then its lines, each indented (JSON escapes would put it on one line)."""
    pad = " " * indent
    head = f"{pad}{json.dumps(key, ensure_ascii=False)}: " if key is not None else pad
    if isinstance(value, str) and ("\n" in value or len(value) > _TEXT_BLOCK):
        return [f"{head}|"] + [f"{pad}  {line}" for line in value.split("\n")]
    if isinstance(value, dict) and value:
        lines = [f"{head}{{"]
        for n, (k, v) in enumerate(value.items()):
            sub = display_lines(v, indent + 2, k)
            lines += sub[:-1] + [sub[-1] + ("," if n < len(value) - 1 else "")]
        return lines + [f"{pad}}}"]
    if isinstance(value, list) and value:
        lines = [f"{head}["]
        for n, v in enumerate(value):
            sub = display_lines(v, indent + 2)
            lines += sub[:-1] + [sub[-1] + ("," if n < len(value) - 1 else "")]
        return lines + [f"{pad}]"]
    return [head + json.dumps(value, ensure_ascii=False)]


# --------------------------------------------------------------------------- output lines

Segment = tuple[str, str]  # (text, kind): kind " " unchanged, "-" removed, "+" added


def _paint(text: str, kind: str, color: bool, word: bool) -> str:
    if kind == " " or not text:
        return text
    if color:
        return (_RED if kind == "-" else _GREEN) + text + _RESET
    if not word:
        return text
    return f"[-{text}-]" if kind == "-" else f"{{+{text}+}}"


def _wrap(prefix: str, segments: list[Segment], width: int, color: bool, word: bool) -> Iterator[str]:
    """One diff line (``prefix`` and its segments) wrapped to ``width`` columns, after a space where the line
    has one; continuation lines are indented under the text. ``word``: mark changed segments (a word diff)."""
    text = "".join(t for t, _ in segments)
    indent = " " * min(len(text) - len(text.lstrip(" ")), width // 2) + "  "
    room = max(20, width - len(prefix))
    limit = max(1, room - len(indent) - (4 if word and not color else 0))
    pieces: list[Segment] = []  # tokens with their kind; a token alone too long for a line is cut
    for t, kind in segments:
        for tok in _TOKENS.findall(t):
            while len(tok) > limit:
                pieces.append((tok[:limit], kind))
                tok = tok[limit:]
            pieces.append((tok, kind))

    def size(line: list[Segment]) -> int:
        return sum(len(t) + (4 if word and kind != " " and not color else 0) for t, kind in line)

    lines: list[list[Segment]] = [[]]
    for piece in pieces:
        line = lines[-1]
        start = 1 if len(lines) > 1 else 0  # a continuation line starts with its indent
        if len(line) > start and size(line) + size([piece]) > room:
            spaces = [k for k, (t, _) in enumerate(line) if t.isspace() and k > start]
            carry = line[spaces[-1] + 1:] if spaces else []
            if carry and len(indent) + size(carry) + size([piece]) > room:
                carry = []  # the words after the last space do not fit on a line either: break here
            del line[len(line) - len(carry):]
            lines.append([(indent, " ")] + carry)
            if piece[0].isspace() and not carry:
                continue
        lines[-1].append(piece)
    for n, line in enumerate(lines):
        merged: list[Segment] = []
        for t, kind in line:  # adjacent pieces of one kind are painted (and marked) together
            if merged and merged[-1][1] == kind:
                merged[-1] = (merged[-1][0] + t, kind)
            else:
                merged.append((t, kind))
        lead = prefix if n == 0 else " " * len(prefix)
        yield (lead + "".join(_paint(t, k, color, word) for t, k in merged)).rstrip()


def _word_diff(old: str, new: str) -> list[Segment]:
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("".join(a[i1:i2]), " "))
            continue
        if i2 > i1:
            out.append(("".join(a[i1:i2]), "-"))
        if j2 > j1:
            out.append(("".join(b[j1:j2]), "+"))
    return out


def _similar(old: str, new: str) -> bool:
    return difflib.SequenceMatcher(None, _TOKENS.findall(old), _TOKENS.findall(new), autojunk=False).ratio() \
        >= _SIMILAR


def diff_lines(a: list[str], b: list[str], *, context: int, width: int, color: bool) -> Iterator[str]:
    """A unified diff of ``a`` and ``b`` (display lines): ``-`` and ``+`` lines, and ``~`` lines that show the
    word changes of a line changed in place; every line wrapped to ``width``."""
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        head = f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@"
        yield _CYAN + head + _RESET if color else head
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                for line in a[i1:i2]:
                    yield from _wrap(" ", [(line, " ")], width, color, False)
                continue
            old, new = a[i1:i2], b[j1:j2]
            paired = min(len(old), len(new)) if op == "replace" else 0
            for k in range(paired):
                if _similar(old[k], new[k]):
                    yield from _wrap("~", _word_diff(old[k], new[k]), width, color, True)
                else:
                    yield from _wrap("-", [(old[k], "-")], width, color, False)
                    yield from _wrap("+", [(new[k], "+")], width, color, False)
            for line in old[paired:]:
                yield from _wrap("-", [(line, "-")], width, color, False)
            for line in new[paired:]:
                yield from _wrap("+", [(line, "+")], width, color, False)


def show(dataset: str | Path, row_id: str, *, color: bool = False, context: int = 2,
         width: int = DEFAULT_WIDTH) -> str:
    """A diff of the source record and variant ``row_id`` (see the module docstring), with the transforms and
    mapping on top."""
    dataset = Path(dataset)
    if not (dataset / "state.json").exists():
        raise FileNotFoundError(f"{dataset} is not an hsa output folder")
    row = _find_row(dataset, row_id)
    variant = row_to_record(row)
    source = find_source(dataset, row)
    head = [f"{row_id}  (source {row['source_id']}, variant {row['variant']})"]
    for t in row.get("transforms") or []:
        head.append(f"  {t['name']}: {json.dumps(t['params'], ensure_ascii=False)[:200]}")
    mapping = row.get("mapping") or {}
    if mapping.get("tools"):
        head.append(f"  tools renamed: {mapping['tools']}")
    if mapping.get("skills"):
        head.append(f"  skills renamed: {mapping['skills']}")
    if source is None:
        head.append("  (source not found: no recorded input file holds it any more and --keep-original was off; "
                    "showing the variant)")
    head = [w for line in head for w in _wrap("", [(line, " ")], width, False, False)]
    strip = ("source_id", "variant", "transforms", "mapping", "notes")
    b = display_lines({**{k: v for k, v in _comparable(variant).items() if k not in strip}, "id": row["source_id"]})
    if source is None:
        return "\n".join(head + [w for line in b for w in _wrap("", [(line, " ")], width, False, False)])
    a = display_lines({**{k: v for k, v in _comparable(source).items() if k not in strip}, "id": row["source_id"]})
    marks = ["--- source", f"+++ {row_id}"]
    body = list(diff_lines(a, b, context=context, width=width, color=color))
    return "\n".join(head + (marks + body if body else ["(no differences)"]))
