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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hsa.mapping import Mapping
from hsa.records import openai_tools

__all__ = ["TURNS", "Item", "Source", "EvalInputError", "make_prompts", "collect", "iter_items", "iter_source",
           "sources_from_manifest", "row_families", "paused_gc"]

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


def _items_of(where: str, raw: dict, turns: str, cache: _Harness, keep: bool = True) -> Iterator[Item]:
    from hsa.records import RecordError, normalize, parse_skill_tool

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
    else:
        tools, schemas = harness
        row_id, st = str(raw["id"]), parse_skill_tool(raw.get("skill_tool"))
    mapping = Mapping.from_dict(raw.get("mapping"))
    chat = _chat(messages) if keep else messages
    families, transforms = cache.families_of(raw.get("transforms"))
    variant = int(raw.get("variant") or 0)
    source_id = str(raw.get("source_id") if raw.get("source_id") is not None else row_id)
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("train", True) is not False]
    assistant = [i for i in assistant if any(m["role"] == "user" for m in messages[:i])
                 and messages[i - 1]["role"] != "assistant"]
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
                   (st["name"], st["argument"]))


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
            messages: bool = True) -> tuple[list[Item], Source]:
    """The evaluation items of ``data`` (a path, or rows as dicts) and what reading it found.

    ``messages=False`` leaves ``messages`` and ``tools`` out of the prompts (scoring does not need them, and a
    large dataset then is not held in memory)."""
    with paused_gc():
        return _collect(data, turns, max_prompts, messages)


def iter_items(data: str | Path | Iterable[dict], source: Source, *, turns: str = "all",
               max_prompts: int | None = None, messages: bool = True) -> Iterator[Item]:
    """The items of :func:`collect`, streamed (what reading found goes to ``source``)."""
    if turns not in TURNS:
        raise EvalInputError(f"--turns must be one of {', '.join(TURNS)} (got {turns!r})")
    seen: set[str] = set()
    cache = _Harness()
    rows = iter_source(data, source)
    for where, raw in rows:
        for item in _items_of(where, raw, turns, cache, messages):
            if item.prompt["id"] in seen:
                raise EvalInputError(f"{where}: prompt id {item.prompt['id']!r} occurs twice; row ids must be unique")
            seen.add(item.prompt["id"])
            yield item
            if max_prompts is not None and len(seen) >= max_prompts:
                rows.close()
                return


def _collect(data, turns: str, max_prompts: int | None, messages: bool = True) -> tuple[list[Item], Source]:
    source = Source()
    items = list(iter_items(data, source, turns=turns, max_prompts=max_prompts, messages=messages))
    return items, source


def make_prompts(data: str | Path | Iterable[dict], *, turns: str = "all", max_prompts: int | None = None
                 ) -> list[dict]:
    """The prompt rows of ``data`` (see the module docstring), in dataset order."""
    return [item.prompt for item in collect(data, turns=turns, max_prompts=max_prompts)[0]]
