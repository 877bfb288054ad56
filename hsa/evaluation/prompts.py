"""Evaluation prompts: one per (dataset row, assistant turn to predict), with the gold turn kept aside.

A prompt row (what ``hsa eval prompts`` writes, what a generator reads)::

    {"id": "<row id>#<turn>", "row_id", "turn", "source_id", "variant", "families", "transforms",
     "messages": [...the trajectory up to the turn...], "tools": [...OpenAI form...]}

``turn`` is the index of the gold assistant message in the row's ``messages``. Messages
are in the OpenAI / Hugging Face chat form that chat templates render (tool-call
``arguments`` as objects, tool results as text, each result named after its call).
Variant 0 rows are the canonical harness; a dataset without them is completed with the
source records that its manifest's inputs hold.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hsa.mapping import Mapping
from hsa.records import openai_tools

__all__ = ["TURNS", "Item", "Source", "EvalInputError", "make_prompts", "collect", "iter_items", "iter_source",
           "sources_from_manifest", "row_families", "paused_gc", "sample_items", "select_turns", "read_prompt_ids",
           "MAX_PROMPTS_HELP"]

TURNS = ("all", "calls", "replies", "first", "last")


class EvalInputError(ValueError):
    """A dataset, prediction file or option that evaluation cannot use; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Item:
    """One prompt and what scoring needs beside it."""

    prompt: dict
    gold: dict  # {"content": str, "calls": [canonical {"name", "arguments"}]}
    mapping: Mapping
    schemas: dict  # variant tool name -> parameters schema
    skill_tool: tuple[str, str]  # variant (name, argument)
    layout: str = "messages"  # the input layout the row was read from (what --max-prompts spreads over)


def row_families(transforms: Any) -> tuple[list[str], list[str]]:
    """The (sorted) families and transform names of a row's ``transforms`` replay record."""
    from hsa.transform import registry

    names, families = set(), set()
    reg = registry()
    for t in transforms or ():
        name = t.get("name") if isinstance(t, dict) else None
        if not isinstance(name, str):
            continue
        names.add(name)
        cls = reg.get(name)
        families.add(cls.family if cls is not None and cls.family else name.split(".", 1)[0])
    return sorted(families), sorted(names)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str) for b in value):
        return "\n".join(b["text"] for b in value)
    return json.dumps(value, ensure_ascii=False)


def _chat(messages: list[dict]) -> list[dict]:
    """Internal-form messages as chat-template messages (see the module docstring)."""
    out, names, waiting = [], {}, []
    for m in messages:
        msg = {k: v for k, v in m.items() if k not in ("train",)}
        if msg.get("role") == "tool":
            msg["content"] = _text(msg.get("content"))
            if not isinstance(msg.get("name"), str):
                name = names.get(str(msg.get("tool_call_id"))) or (waiting[0] if waiting else None)
                if name is not None:
                    msg["name"] = name
            if msg.get("name") in waiting:
                waiting.remove(msg["name"])
        elif not isinstance(msg.get("content"), list):
            msg["content"] = "" if msg.get("content") is None else msg["content"]
        if msg.get("tool_calls"):
            msg["tool_calls"] = [{**({"id": c["id"]} if "id" in c else {}), "type": "function",
                                  "function": {"name": c["function"]["name"],
                                               "arguments": c["function"]["arguments"]}} for c in msg["tool_calls"]]
            names.update({str(c["id"]): c["function"]["name"] for c in msg["tool_calls"] if "id" in c})
            waiting = [c["function"]["name"] for c in msg["tool_calls"]]
        out.append(msg)
    return out


def _select(indices: list[int], messages: list[dict], mode: str) -> list[int]:
    if mode == "first":
        return indices[:1]
    if mode == "last":
        return indices[-1:]
    if mode == "calls":
        return [i for i in indices if messages[i].get("tool_calls")]
    if mode == "replies":
        return [i for i in indices if not messages[i].get("tool_calls")]
    return indices


# --------------------------------------------------------------------------- reading the dataset


@dataclasses.dataclass
class Source:
    """What reading DATA found besides its rows."""

    rejected: list[dict] = dataclasses.field(default_factory=list)  # {"where", "reason"}
    notes: list[str] = dataclasses.field(default_factory=list)
    row_ids: set[str] = dataclasses.field(default_factory=set)  # every row that has a prompt (any --turns)


def _raw_rows(data: str | Path) -> Iterator[tuple[str, Any]]:
    from hsa.io import InputSource, iter_rows, parse_line, row_to_record
    from hsa.records import RecordError

    path = Path(data)
    if path.is_dir():
        if not (path / "state.json").is_file():
            raise EvalInputError(f"{path} is a folder but not an hsa output folder (no state.json); give the --out "
                                 "folder of `hsa augment` or a JSONL file of its rows (`hsa export`)")
        for n, row in enumerate(iter_rows(path), 1):
            yield f"{path} row {n}", row_to_record(row)
        return
    if not path.is_file():
        raise EvalInputError(f"{data} does not exist; give an `hsa augment` output folder or a JSONL file of rows")
    for item in InputSource.resolve(path).items():
        try:
            yield f"{path}:{item.line}", parse_line(item)
        except RecordError as exc:
            yield f"{path}:{item.line}", exc


def _manifest(data: str | Path) -> dict | None:
    p = Path(data)
    p = p / "manifest.json" if p.is_dir() else p.parent / "manifest.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def sources_from_manifest(data: str | Path, wanted: set[str]) -> tuple[list[tuple[str, dict]], str]:
    """``(rows, tried)``: the source records whose ids are in ``wanted``, read from the inputs the dataset's manifest
    names, as canonical rows (variant 0, the identity mapping) ``(where, row)``; and the inputs looked at, in words.
    ``wanted`` loses the ids found."""
    from hsa.io import InputSource, parse_line
    from hsa.records import RecordError, normalize

    manifest = _manifest(data)
    if manifest is None:
        return [], "no manifest.json beside the data"
    found: list[tuple[str, dict]] = []
    tried = []
    for inp in manifest.get("inputs", []):
        path = Path(inp.get("path", ""))
        if inp.get("kind") == "hub" or not path.exists():
            tried.append(f"{path} (gone)")
            continue
        tried.append(str(path))
        for item in InputSource(str(path), inp.get("kind", "jsonl")).items():
            try:
                raw = parse_line(item)
                rid = normalize(raw, default_id=None)["id"] if isinstance(raw, dict) else None
            except RecordError:
                continue
            if rid in wanted:
                found.append((f"{path}:{item.line}", {**raw, "id": rid, "source_id": rid, "variant": 0,
                                                       "transforms": [], "mapping": Mapping().to_dict()}))
                wanted.discard(rid)
    return found, ", ".join(tried) or "the manifest lists no inputs"


def iter_source(data: str | Path | Iterable[dict], source: Source) -> Iterator[tuple[str, dict]]:
    """``(where, row)`` for every row of ``data`` (an hsa output folder, a JSONL of its rows, plain records read
    as the canonical harness, or row dicts), streamed; then the canonical rows from the manifest's inputs for
    source records that have no variant 0. Unreadable lines and notes go to ``source``."""
    from hsa.records import RecordError

    is_path = isinstance(data, (str, Path))
    is_dir = is_path and Path(data).is_dir()
    rows = _raw_rows(data) if is_path else ((f"row {n}", r) for n, r in enumerate(data, 1))
    plain = 0
    canonical: set[str] = set()
    sources: set[str] = set()
    for where, raw in rows:
        if isinstance(raw, RecordError):
            source.rejected.append({"where": where, "reason": f"{raw.reason}: {raw.detail}"})
            continue
        if not isinstance(raw, dict):
            source.rejected.append({"where": where, "reason": f"expected a JSON object, got {type(raw).__name__}"})
            continue
        if raw.get("mapping") is None:
            if is_dir or not is_path or raw.get("variant") not in (None, 0):
                raise EvalInputError(
                    f"{where} ({raw.get('id', 'no id')}) has no 'mapping', so its calls cannot be carried back to the "
                    "canonical harness. Evaluate the output of `hsa augment` (every row has one; originals carry "
                    "the identity), or rows exported from it with `hsa export`.")
            plain += 1  # read as it is (the layout readers skip rows that carry hsa keys): identity, variant 0
        sid = raw.get("source_id")
        if sid is not None:
            sources.add(str(sid))
        if int(raw.get("variant") or 0) == 0:
            canonical.add(str(sid if sid is not None else raw.get("id")))
        yield where, raw
    if plain:
        source.notes.append(f"{plain} rows without a mapping or variant were read as the canonical harness "
                            "(variant 0)")
    missing = sources - canonical
    if missing and is_path:
        found, tried = sources_from_manifest(data, set(missing))
        if found:
            source.notes.append(f"{len(found)} canonical rows (variant 0) read from the manifest's inputs ({tried}): "
                                "the data was augmented without --keep-original")
        left = len(missing) - len(found)
        if left:
            source.notes.append(f"{left} source records have no canonical row (no variant 0 in the data, and not "
                                f"found in {tried}); rerun `hsa augment` with --keep-original to evaluate the "
                                "canonical harness for them")
        yield from found
    elif missing:
        source.notes.append(f"{len(missing)} source records have no canonical row (variant 0) in the rows given")


# --------------------------------------------------------------------------- prompts


_STD_ROLES = frozenset({"system", "user", "assistant", "tool"})


def _fast_messages(raw: dict) -> list[dict] | None:
    """The messages of a row already in the standard layout (what `hsa augment` writes), tool-call arguments
    as objects; None for anything else (the full :func:`hsa.records.normalize` reads it)."""
    from hsa import _json

    msgs = raw.get("messages")
    if not isinstance(msgs, list) or raw.get("id") is None:
        return None
    out = []
    for m in msgs:
        if not isinstance(m, dict) or m.get("role") not in _STD_ROLES:
            return None
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            return None
        calls = m.get("tool_calls")
        if calls:
            if m["role"] != "assistant" or not isinstance(calls, list):
                return None
            new = []
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    return None
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = _json.loads(args) if args.strip() else {}
                    except ValueError:
                        return None
                elif args is None:
                    args = {}
                if not isinstance(args, dict):
                    return None
                new.append({**call, "function": {**fn, "arguments": args}})
            m = {**m, "tool_calls": new}
        out.append(m)
    return out


class _Harness:
    """Per-collect caches: tools read once per distinct tool list, families once per transform list."""

    def __init__(self):
        from hsa.transform import registry

        self.registry = registry()
        self.tools: dict[bytes, tuple[list, dict]] = {}
        self.families: dict[tuple, tuple[list, list]] = {}

    def tools_of(self, raw_tools: Any, where: str) -> tuple[list, dict] | None:
        import orjson

        from hsa.records import RecordError, normalize

        try:
            key = orjson.dumps(raw_tools)
        except TypeError:
            return None
        hit = self.tools.get(key)
        if hit is None:
            try:
                rec = normalize({"id": "tools", "messages": [{"role": "user", "content": ""}], "tools": raw_tools})
            except RecordError as exc:
                raise EvalInputError(f"{where}: {exc.reason}: {exc.detail}") from None
            tools = openai_tools(rec["tools"])
            hit = self.tools[key] = (tools, {t["function"]["name"]: t["function"]["parameters"] for t in tools})
        return hit

    def families_of(self, transforms: Any) -> tuple[list, list]:
        key = tuple(t.get("name") if isinstance(t, dict) else None for t in transforms or ())
        hit = self.families.get(key)
        if hit is None:
            names = sorted({n for n in key if isinstance(n, str)})
            fams = sorted({(self.registry[n].family if n in self.registry and self.registry[n].family
                            else n.split(".", 1)[0]) for n in names})
            hit = self.families[key] = (fams, names)
        return hit


def _items_of(where: str, raw: dict, turns: str, cache: _Harness, keep: bool = True,
              rows: set[str] | None = None) -> Iterator[Item]:
    from hsa.records import RecordError, converted_layouts, normalize, parse_skill_tool

    messages = _fast_messages(raw) if raw.get("mapping") is not None else None
    harness = cache.tools_of(raw.get("tools"), where) if messages is not None else None
    if messages is None or harness is None:
        try:
            record = normalize(dict(raw))
        except RecordError as exc:
            raise EvalInputError(f"{where}: {exc.reason}: {exc.detail}") from None
        messages, row_id, st = record["messages"], str(record["id"]), record["skill_tool"]
        tools = openai_tools(record["tools"])
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        notes = record["notes"]
    else:
        tools, schemas = harness
        row_id, st = str(raw["id"]), parse_skill_tool(raw.get("skill_tool"))
        notes = raw.get("notes") if isinstance(raw.get("notes"), list) else []
    layout = next(iter(converted_layouts([n for n in notes if isinstance(n, str)])), "messages")
    mapping = Mapping.from_dict(raw.get("mapping"))
    chat = _chat(messages) if keep else messages
    families, transforms = cache.families_of(raw.get("transforms"))
    variant = int(raw.get("variant") or 0)
    source_id = str(raw.get("source_id") if raw.get("source_id") is not None else row_id)
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("train", True) is not False]
    assistant = [i for i in assistant if any(m["role"] == "user" for m in messages[:i])
                 and messages[i - 1]["role"] != "assistant"]
    if rows is not None and assistant:
        rows.add(row_id)
    for i in _select(assistant, messages, turns):
        target = messages[i]
        calls = [mapping.to_canonical({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                 for c in target.get("tool_calls") or ()]
        prompt = {"id": f"{row_id}#{i}", "row_id": row_id, "turn": i, "source_id": source_id, "variant": variant,
                  "families": families, "transforms": transforms}
        if raw.get("slot") is not None:  # the harness-variant pool slot the row's harness was drawn from
            prompt["slot"] = raw["slot"]
        if keep:
            prompt["messages"], prompt["tools"] = chat[:i], tools
        yield Item(prompt, {"content": _text(target.get("content")), "calls": calls}, mapping, schemas,
                   (st["name"], st["argument"]), layout)


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector off for a block that builds many long-lived objects and no cycles (it
    otherwise rescans the growing heap again and again: 4x the time of reading 1,000 rows)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def collect(data: str | Path | Iterable[dict], *, turns: str = "all", max_prompts: int | None = None,
            messages: bool = True, ids: Sequence[str] | None = None) -> tuple[list[Item], Source]:
    """The evaluation items of ``data`` (a path, or rows as dicts) and what reading it found.

    ``messages=False`` leaves ``messages`` and ``tools`` out of the prompts (scoring does not need them, and a
    large dataset then is not held in memory); ``max_prompts`` and ``ids`` as in :func:`iter_items`."""
    with paused_gc():
        return _collect(data, turns, max_prompts, messages, ids)


def iter_items(data: str | Path | Iterable[dict], source: Source, *, turns: str = "all",
               max_prompts: int | None = None, messages: bool = True, ids: Sequence[str] | None = None
               ) -> Iterator[Item]:
    """The items of :func:`collect`, streamed (what reading found goes to ``source``).

    ``max_prompts``: a sample of that many (:func:`sample_items`); ``ids``: exactly the prompts with these ids
    (any turn of any row; ``turns`` and ``max_prompts`` are then not used). Both read ``data`` twice: once
    without messages to choose, once to yield the chosen items, in dataset order."""
    if turns not in TURNS:
        raise EvalInputError(f"--turns must be one of {', '.join(TURNS)} (got {turns!r})")
    if max_prompts is None and ids is None:
        yield from _iter_all(data, source, turns, messages)
        return
    if not isinstance(data, (str, Path)):
        data = list(data)  # read twice
    light = list(_iter_all(data, source, "all" if ids is not None else turns, False))
    if ids is not None:
        wanted = set(ids)
        chosen = [it for it in light if it.prompt["id"] in wanted]
    else:
        chosen = sample_items(light, max_prompts)
    if not messages:
        yield from chosen
        return
    keep = {it.prompt["id"] for it in chosen}
    for item in _iter_all(data, Source(), "all" if ids is not None else turns, True):
        if item.prompt["id"] in keep:
            yield item


def _iter_all(data, source: Source, turns: str, messages: bool) -> Iterator[Item]:
    seen: set[str] = set()
    cache = _Harness()
    for where, raw in iter_source(data, source):
        for item in _items_of(where, raw, turns, cache, messages, source.row_ids):
            if item.prompt["id"] in seen:
                raise EvalInputError(f"{where}: prompt id {item.prompt['id']!r} occurs twice; row ids must be unique")
            seen.add(item.prompt["id"])
            yield item


#: How ``--max-prompts`` chooses (the options' help and docs/evaluation.md say the same).
MAX_PROMPTS_HELP = ("a sample of N prompts spread over the source records, input layouts and variants: source "
                    "records in turn (alternating between layouts, in a fixed order given by a hash of their ids), "
                    "each giving one prompt from its canonical row and from every variant row (their turns "
                    "rotated) before any gives a second; the same data always gives the same sample, written in "
                    "dataset order")


def _hash_key(text: str) -> bytes:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).digest()


def sample_items(items: Sequence[Item], n: int) -> list[Item]:
    """``n`` of ``items``, spread as :data:`MAX_PROMPTS_HELP` says, in their own order (all of them when
    ``n`` is not smaller).

    Whole source records first (each with its canonical row and every variant: the gap pairs them by
    source), their order alternating between input layouts; within a source, one prompt per row in turn,
    each row starting at another of its turns, so calls and replies both come early. Nothing depends on
    the order of the input lines: sources and variant rows are ordered by a hash of their ids."""
    if n >= len(items):
        return list(items)
    sources: dict[str, dict[str, list[int]]] = {}  # source -> row -> item indices (turn order)
    layout: dict[str, str] = {}
    for k, it in enumerate(items):
        sid = it.prompt["source_id"]
        sources.setdefault(sid, {}).setdefault(it.prompt["row_id"], []).append(k)
        if it.prompt["variant"] == 0 or sid not in layout:
            layout[sid] = it.layout
    by_layout: dict[str, list[str]] = {}
    for sid in sorted(sources, key=_hash_key):
        by_layout.setdefault(layout[sid], []).append(sid)
    order: list[str] = []  # sources, alternating between layouts
    queues = [by_layout[name] for name in sorted(by_layout)]
    for depth in range(max(len(q) for q in queues)):
        order += [q[depth] for q in queues if depth < len(q)]

    def visits(sid: str) -> Iterator[list[int]]:
        """The source's prompts in rounds: one from each row per round, each row rotating through its turns."""
        rows = sorted(sources[sid].items(), key=lambda kv: (items[kv[1][0]].prompt["variant"] != 0,
                                                            _hash_key(kv[0])))
        turns = [idx[r % len(idx):] + idx[:r % len(idx)] for r, (_, idx) in enumerate(rows)]
        for depth in range(max(len(t) for t in turns)):
            yield [t[depth] for t in turns if depth < len(t)]

    chosen: list[int] = []
    rounds = [visits(sid) for sid in order]
    while len(chosen) < n and rounds:
        alive = []
        for r in rounds:
            block = next(r, None)
            if block is None:
                continue
            alive.append(r)
            chosen += block[:n - len(chosen)]
            if len(chosen) >= n:
                break
        rounds = alive
    return [items[k] for k in sorted(chosen)]


def select_turns(items: Sequence[Item], turns: str) -> list[Item]:
    """The items (of every turn, as ``turns="all"`` gives them) that ``turns`` selects."""
    if turns == "all":
        return list(items)
    out: list[Item] = []
    rows: dict[str, list[Item]] = {}
    for it in items:
        rows.setdefault(it.prompt["row_id"], []).append(it)
    for it in items:
        row = rows[it.prompt["row_id"]]
        if (turns == "calls" and it.gold["calls"]) or (turns == "replies" and not it.gold["calls"]) or \
                (turns == "first" and it is row[0]) or (turns == "last" and it is row[-1]):
            out.append(it)
    return out


def read_prompt_ids(path: str | Path) -> list[str]:
    """The ids of a prompts file (``hsa eval prompts --out``), in its order; a clear error for anything else."""
    p = Path(path)
    if not p.is_file():
        raise EvalInputError(f"--prompts {path}: no such file; give the JSONL file `hsa eval prompts --out` wrote")
    ids: list[str] = []
    seen: set[str] = set()
    with p.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise EvalInputError(f"--prompts {path}:{n}: not JSON; give the JSONL file `hsa eval prompts "
                                     "--out` wrote") from None
            pid = obj.get("id") if isinstance(obj, dict) else None
            if not isinstance(pid, str):
                raise EvalInputError(f"--prompts {path}:{n}: no string 'id'; a prompt row is {{\"id\", \"row_id\", "
                                     "\"turn\", \"messages\", \"tools\", ...}")
            if pid in seen:
                raise EvalInputError(f"--prompts {path}:{n}: prompt id {pid!r} occurs twice")
            seen.add(pid)
            ids.append(pid)
    if not ids:
        raise EvalInputError(f"--prompts {path} holds no prompts")
    return ids


def _collect(data, turns: str, max_prompts: int | None, messages: bool = True, ids=None
             ) -> tuple[list[Item], Source]:
    source = Source()
    items = list(iter_items(data, source, turns=turns, max_prompts=max_prompts, messages=messages, ids=ids))
    return items, source


def make_prompts(data: str | Path | Iterable[dict], *, turns: str = "all", max_prompts: int | None = None
                 ) -> list[dict]:
    """The prompt rows of ``data`` (see the module docstring), in dataset order (``max_prompts``: a sample spread
    over sources, layouts and variants, :func:`sample_items`)."""
    return [item.prompt for item in collect(data, turns=turns, max_prompts=max_prompts)[0]]
