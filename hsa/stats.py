"""``hsa stats``: what an output folder holds, read one record batch at a time (polars for the quantiles)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.io import JSON_COLUMNS

__all__ = ["compute_stats", "render_text", "rename_kind"]


def _split(messages: list[dict]) -> tuple[str, str]:
    """(prompt, completion) text of a trajectory: everything before the first assistant turn, and the rest."""
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))

    def text(ms):
        parts = []
        for m in ms:
            c = m.get("content")
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, list):
                parts.extend(p.get("text", "") for p in c if isinstance(p, dict))
            for call in m.get("tool_calls") or ():
                parts.append(_json.dumps(call.get("function", call)))
        return "\n".join(parts)

    return text(messages[:first]), text(messages[first:])


def rename_kind(old: str, new: str) -> str:
    """What a rename did to a name, read from the two names: ``prefixed`` (a namespace prefix added or changed),
    ``restyled <style>`` (the same words in another style: snake, camel, pascal, kebab, screaming), ``reworded``
    (some words kept, others replaced: a synonym) or ``opaque`` (no word kept: a mask or a scramble)."""
    from hsa.names import STYLES, namespace_of, split_words

    p_old, p_new = namespace_of(old), namespace_of(new)
    if p_new != p_old:
        return "prefixed"
    w_old, w_new = split_words(old[len(p_old):]), split_words(new[len(p_new):])
    if w_old == w_new:
        style = next((s for s, join in STYLES.items() if join(list(w_new)) == new[len(p_new):]), "other")
        return f"restyled {style}"
    if set(w_old) & set(w_new):
        return "reworded"
    return "opaque"


def _quantiles(series) -> dict:
    if series.len() == 0:
        return {"min": 0, "p50": 0, "p90": 0, "p99": 0, "max": 0, "mean": 0.0}
    return {"min": int(series.min()), "p50": int(series.quantile(0.5, "nearest")),
            "p90": int(series.quantile(0.9, "nearest")), "p99": int(series.quantile(0.99, "nearest")),
            "max": int(series.max()), "mean": round(float(series.mean()), 1)}


def _batches(dataset: Path, columns: tuple[str, ...]):
    """The shards' record batches, one at a time: ``{column: Python list}`` for ``columns`` (JSON columns as
    their text), so memory holds one batch whatever the size of the dataset."""
    import pyarrow as pa

    state = json.loads((dataset / "state.json").read_text(encoding="utf-8"))
    for f in state["_data_files"]:
        with pa.memory_map(str(dataset / f["filename"])) as src:
            for batch in pa.ipc.open_stream(src):
                out = {}
                for name in columns:
                    if name not in batch.schema.names:
                        out[name] = [None] * batch.num_rows
                        continue
                    col = batch.column(batch.schema.get_field_index(name))
                    if name in JSON_COLUMNS and isinstance(col, pa.ExtensionArray):
                        col = col.storage
                    out[name] = col.to_pylist()
                yield out


def _renderer(tok):
    """``(messages, tools) -> token count`` of the whole conversation rendered by the tokenizer's chat template with
    the row's tools (what a trainer's ``max_length`` has to hold), or None without a tokenizer or template."""
    if tok is None or not getattr(tok, "chat_template", None):
        return None
    from hsa.chat import to_chat

    def count(messages: list, tools: Any) -> int:
        chat = to_chat({"messages": messages, "tools": tools})

        def render(msgs: list) -> str:
            return tok.apply_chat_template(msgs, tools=chat["tools"], tokenize=False)

        try:
            text = render(chat["messages"])
        except Exception as first:  # templates such as DeepSeek-V3's concatenate the arguments as text
            as_text = [{**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": _json.dumps(
                c["function"]["arguments"])}} for c in m["tool_calls"]]} if m.get("tool_calls") else m
                for m in chat["messages"]]
            if as_text == chat["messages"]:
                raise
            try:
                text = render(as_text)
            except Exception:
                raise first from None
        return len(tok(text, add_special_tokens=False)["input_ids"])

    return count


def compute_stats(dataset: str | Path, *, tokenizer: str | None = None) -> dict[str, Any]:
    """Counts per transform and family, reject reasons, lengths and name diversity.

    Streams over the shards one record batch at a time and keeps only per-row numbers and
    name sets, so a dataset of millions of rows needs no more memory than its lengths.
    """
    from array import array
    from collections import Counter

    import polars as pl

    dataset = Path(dataset)
    tok = None
    if tokenizer:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
    rows = unchanged = 0
    sources: Counter = Counter()  # rows per source record
    per_t: Counter = Counter()
    per_row: Counter = Counter()  # rows by the number of transforms applied to them
    kinds: dict[str, Counter] = {"tools": Counter(), "skills": Counter()}  # renames by what they did to the name
    lengths = {key: array("q") for key in ("prompt_chars", "completion_chars")}
    if tok is not None:
        lengths.update({key: array("q") for key in ("prompt_tokens", "completion_tokens")})
    rendered = _renderer(tok)
    unrendered: list = [0, None]  # rows the chat template could not render, and the first error
    if rendered is not None:
        lengths["rendered_tokens"] = array("q")
    names: dict[str, dict[str, set]] = {"tools": {}, "skills": {}}
    slots: Counter = Counter()  # rows per harness-pool slot (runs with --harness-pool K > 0)
    for batch in _batches(dataset, ("source_id", "slot", "transforms", "messages", "tools", "mapping")):
        rows += len(batch["source_id"])
        sources.update(batch["source_id"])
        slots.update(s for s in batch["slot"] if s is not None)
        prompts, completions = [], []
        for tr_s, msgs_s, tools_s, mapping_s in zip(batch["transforms"], batch["messages"], batch["tools"],
                                                    batch["mapping"]):
            applied = [t["name"] for t in _json.loads(tr_s)] if tr_s else []
            per_t.update(applied)
            per_row[len(applied)] += 1
            unchanged += not applied
            messages = _json.loads(msgs_s) if msgs_s else []
            p, c = _split(messages)
            prompts.append(p)
            completions.append(c)
            if rendered is not None:
                try:
                    lengths["rendered_tokens"].append(rendered(messages, _json.loads(tools_s) if tools_s else None))
                except Exception as exc:  # a template that cannot render this row: counted, the stats go on
                    unrendered[0] += 1
                    unrendered[1] = unrendered[1] or f"{type(exc).__name__}: {str(exc)[:200]}"
            # distinct names each canonical tool and skill received across its variants
            mapping = _json.loads(mapping_s) if mapping_s else {}
            inverse = {v: k for k, v in mapping.get("tools", {}).items()}
            tools = _json.loads(tools_s) if tools_s else []
            if isinstance(tools, str):
                tools = _json.loads(tools)
            for t in tools:
                name = (t.get("function") or t).get("name")
                names["tools"].setdefault(inverse.get(name, name), set()).add(name)
                kinds["tools"][rename_kind(inverse[name], name) if name in inverse else "kept"] += 1
            for canon, var in mapping.get("skills", {}).items():
                names["skills"].setdefault(canon, set()).add(var)
                kinds["skills"][rename_kind(canon, var)] += 1
        lengths["prompt_chars"].extend(map(len, prompts))
        lengths["completion_chars"].extend(map(len, completions))
        if tok is not None:
            for key, texts in (("prompt_tokens", prompts), ("completion_tokens", completions)):
                lengths[key].extend(len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"])
    out: dict[str, Any] = {"rows": rows}
    if rows == 0:
        out.update({"sources": 0, "transforms": {}, "families": {}, "rejects": {}, "lengths": {}, "names": {}})
        return out
    out["sources"] = len(sources)
    out["variants_per_source"] = round(rows / max(out["sources"], 1), 2)
    out["rows_per_source"] = {str(k): n for k, n in sorted(Counter(sources.values()).items())}
    out["transforms_per_row"] = {str(k): n for k, n in sorted(per_row.items())}
    out["renames"] = {key: dict(sorted(c.items())) for key, c in kinds.items() if c}
    out["transforms"] = dict(sorted(per_t.items()))
    families: Counter = Counter()
    for name, n in per_t.items():
        families[name.split(".")[0]] += n
    out["families"] = dict(sorted(families.items()))
    out["unchanged_rows"] = unchanged
    if slots:
        out["slots"] = {str(k): n for k, n in sorted(slots.items())}

    rejects = dataset / "rejects.jsonl"
    out["rejects"] = {}
    if rejects.exists() and rejects.stat().st_size:
        rj = pl.scan_ndjson(rejects, infer_schema_length=None).select("reason")
        by = rj.group_by("reason").len().sort(["len", "reason"], descending=[True, False]).collect()
        out["rejects"] = dict(zip(by["reason"].to_list(), by["len"].to_list()))

    if "rendered_tokens" in lengths and not lengths["rendered_tokens"]:
        del lengths["rendered_tokens"]  # the template rendered no row: unrendered_rows says why
    out["lengths"] = {key: _quantiles(pl.Series(key, values, dtype=pl.Int64)) for key, values in lengths.items()}
    if unrendered[0]:
        out["unrendered_rows"] = {"rows": unrendered[0], "first_error": unrendered[1]}
    out["_hist"] = lengths  # for the HTML report; not part of the JSON
    out["names"] = {key: {canon: len(v) for canon, v in sorted(table.items())}
                    for key, table in names.items() if table}
    manifest = dataset / "manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text(encoding="utf-8"))
        out["manifest_counts"] = m.get("counts", {})
        out["harness_pool"] = m.get("harness_pool", 0)
        out["keep_original"] = bool(m.get("keep_original"))
        out["skipped"] = {n: t["skipped"] for n, t in m.get("transforms", {}).items() if t.get("skipped")}
        # coverage: how many sources each transform varied, and how many variants left the prompt as it was
        out["transform_sources"] = {n: t["sources"] for n, t in sorted(m.get("transforms", {}).items())
                                    if "sources" in t}
        if "prompt_unchanged_variants" in out["manifest_counts"]:
            out["prompt_unchanged_variants"] = out["manifest_counts"]["prompt_unchanged_variants"]
    return out


def render_text(stats: dict) -> str:
    lines = [f"{stats['rows']} rows from {stats.get('sources', 0)} sources "
             f"({stats.get('variants_per_source', 0)} per source, {stats.get('unchanged_rows', 0)} unchanged)"]
    if stats.get("slots"):
        lines.append(f"rows per harness-pool slot (K = {stats.get('harness_pool', len(stats['slots']))}): "
                     + ", ".join(f"{k}: {n}" for k, n in stats["slots"].items()))
    if stats.get("families"):
        lines.append("family       applications")
        lines += [f"  {f:10s} {n:8d}" for f, n in stats["families"].items()]
    if "prompt_unchanged_variants" in stats and stats.get("manifest_counts"):
        written = stats["manifest_counts"].get("rows_written", 0) - (
            stats.get("sources", 0) if stats.get("keep_original") else 0)
        same = stats["prompt_unchanged_variants"]
        lines.append(f"prompt as in the source: {same} of {written} variants "
                     f"({100 * same / max(written, 1):.1f}%; every message before the first answer, word for word)")
    if stats.get("transforms"):
        sources = stats.get("transform_sources") or {}
        lines.append("transform                    applications" + ("  sources" if sources else ""))
        lines += [f"  {t:26s} {n:8d}" + (f"  {sources[t]:7d}" if t in sources else "")
                  for t, n in stats["transforms"].items()]
    for name, reasons in (stats.get("skipped") or {}).items():
        for reason, n in reasons.items():
            lines.append(f"  skipped {name}: {n} ({reason})")
    if stats.get("rejects"):
        lines.append("rejects")
        lines += [f"  {n:8d}  {r}" for r, n in stats["rejects"].items()]
    for key, q in (stats.get("lengths") or {}).items():
        lines.append(f"{key:18s} p50 {q['p50']:7d}  p90 {q['p90']:7d}  p99 {q['p99']:7d}  max {q['max']:7d}"
                     + ("  (whole rows through the chat template, tools included)" if key == "rendered_tokens" else ""))
    if stats.get("unrendered_rows"):
        u = stats["unrendered_rows"]
        lines.append(f"{u['rows']} rows the chat template could not render (first: {u['first_error']})")
    for key, kinds in (stats.get("renames") or {}).items():
        lines.append(f"{key[:-1]} names by what the rename did: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    for key, table in (stats.get("names") or {}).items():
        if table:
            vals = sorted(table.values())
            lines.append(f"distinct {key[:-1]} names per {key[:-1]}: min {vals[0]}, median {vals[len(vals) // 2]}, "
                         f"max {vals[-1]} over {len(vals)} {key}")
    return "\n".join(lines)
