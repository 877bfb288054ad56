"""``hsa bench run``: the pool's prompts through a backend, with a response cache on disk, then the report.

Every prompt's request (the backend's identity and the prompt as the backend sends it) has a sha256 key; answers
are stored under it in ``cache.sqlite`` as they arrive (sqlite: each answer is one committed transaction, so a run
killed at any point keeps every answer it received). A rerun, or a run resumed after a stop, asks only for the
prompts whose keys are not stored; its report counts the cache hits. Failed requests are never stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hsa.bench.pool import BenchError, Pool, load_pool

__all__ = ["ResponseCache", "select_prompts", "request_key", "generate_all", "run_bench", "Selected"]


class ResponseCache:
    """Answers by request key, in an sqlite file (created when missing)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        out = {}
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self._db.execute(f"SELECT key, answer FROM answers WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk)
            out.update({k: json.loads(a) for k, a in rows})
        return out

    def put(self, key: str, answer: dict) -> None:
        self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(answer, ensure_ascii=False)))
        self._db.commit()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self._db.close()


def request_key(identity: dict, payload: Any) -> str:
    """The cache key of one request: sha256 of the backend's identity and what it sends for the prompt."""
    text = json.dumps({"identity": identity, "request": payload}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- which prompts


class Selected:
    """The prompts of a run: evaluation items (hsa.evaluation) with what the bench knows about each."""

    def __init__(self, items: list, info: list[dict], notes: list[str]):
        self.items, self.info, self.notes = items, info, notes


def _rank(seed: int, source_id: str) -> str:
    return hashlib.sha256(f"{seed}:{source_id}".encode()).hexdigest()


def select_prompts(pool: Pool, *, suites: Sequence[str] = (), categories: Sequence[str] = (),
                   families: Sequence[str] = (), per_category: int | None = None, seed: int = 0) -> Selected:
    """The prompts of ``pool``: every turn an item lists, on its canonical row and on the rows of ``families``
    (all when empty); ``per_category`` keeps that many items of each category, drawn by a seeded hash of their ids
    (the same items for the same seed, whatever the order of the pool)."""
    from hsa.evaluation.prompts import collect

    known_f = set(pool.card["families"])
    bad = [f for f in families if f not in known_f]
    if bad:
        raise BenchError(f"--families: {bad} not in this pool; it has {sorted(known_f)}")
    chosen = [it for it in pool.items.values() if (not suites or it["suite"] in suites)
              and (not categories or it["category"] in categories)]
    if categories:
        missing = sorted(set(categories) - {it["category"] for it in pool.items.values()})
        if missing:
            raise BenchError(f"--categories: {missing} not in this pool")
    if per_category is not None:
        by_cat: dict[tuple, list] = {}
        for it in chosen:
            by_cat.setdefault((it["suite"], it["category"]), []).append(it)
        chosen = [it for group in by_cat.values()
                  for it in sorted(group, key=lambda x: _rank(seed, x["source_id"]))[:per_category]]
    wanted = {it["source_id"]: it for it in chosen}
    fams = set(families)
    row_family: dict[str, Any] = {}

    def rows():
        for row in pool.rows():
            if row["source_id"] not in wanted:
                continue
            fam = row.get("bench_family")
            if fam is not None and fams and fam not in fams:
                continue
            row_family[row["id"]] = fam
            yield row

    items, source = collect(rows(), turns="all")
    held = {f for f, spec in pool.card["families"].items() if spec["held_out"]}
    out_items, info = [], []
    for item in items:
        p = item.prompt
        meta = wanted[p["source_id"]]
        if p["turn"] not in meta["turns"]:
            continue
        k = meta["turns"].index(p["turn"])
        fam = row_family.get(p["row_id"])
        out_items.append(item)
        info.append({"suite": meta["suite"], "category": meta["category"], "kind": meta["kinds"][k],
                     "answers": meta["answers"][k], "code": meta.get("code"), "family": fam,
                     "held_out": fam in held if fam else None})
    notes = list(source.notes)
    if source.rejected:
        raise BenchError(f"{len(source.rejected)} pool rows cannot be read ({source.rejected[0]}); rebuild the pool")
    return Selected(out_items, info, notes)


# --------------------------------------------------------------------------- generation


class _Progress:
    """done / total, cache hits, rate, ETA, tokens, retries, failures on standard error: one line redrawn each second
    on a terminal (``bar``), else a line every ``every`` seconds and a last one (``lines``: a log, a ``nohup`` run),
    or nothing (``None``)."""

    def __init__(self, total: int, hits: int, mode: str | None, every: float = 30.0):
        self.total, self.hits, self.mode, self.every = total, hits, mode, every
        self.done = 0
        self.failed = 0
        self.tokens = [0, 0]
        self.start = self.last = time.monotonic()

    def update(self, outcome: dict, retries: int) -> None:
        self.done += 1
        self.failed += not outcome.get("ok")
        usage = outcome.get("usage") or {}
        self.tokens[0] += usage.get("prompt_tokens", 0)
        self.tokens[1] += usage.get("completion_tokens", 0)
        now = time.monotonic()
        wait = 1.0 if self.mode == "bar" else self.every
        if self.mode is not None and (now - self.last >= wait or self.done == self.total):
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            eta = f", ETA {_clock((self.total - self.done) / rate)}" if self.done >= min(8, self.total) else ""
            text = (f"hsa bench run: {self.done}/{self.total} asked ({self.hits} cached), {rate:.2f} prompts/s{eta}, "
                    f"tokens {self.tokens[0]:,} in / {self.tokens[1]:,} out, retries {retries}, failed {self.failed}")
            if self.mode == "bar":
                print(f"\r{text}" + " " * 4, end="", file=sys.stderr, flush=True)
            else:
                print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.mode == "bar" and self.done:
            print(file=sys.stderr)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def generate_all(backend, prompts: Sequence[dict], cache: ResponseCache, *, progress: bool | None = None
                 ) -> tuple[list[dict | None], dict]:
    """Each prompt's answer (an outcome dict, None where the request failed) and the run's counts: ``prompts``,
    ``cache_hits``, ``asked``, ``failed`` (by error kind, with examples), ``retries``, ``tokens``, ``cost``,
    ``seconds``."""
    started = time.monotonic()
    payloads = backend.payloads(prompts) if hasattr(backend, "payloads") else [backend.payload(p) for p in prompts]
    identity = backend.identity()
    keys = [request_key(identity, pl) for pl in payloads]
    stored = cache.get_many(keys)
    answers: list[dict | None] = [stored.get(k) for k in keys]
    todo: dict[str, list[int]] = {}
    for i, (k, a) in enumerate(zip(keys, answers)):
        if a is None:
            todo.setdefault(k, []).append(i)
    hits = len(prompts) - sum(len(v) for v in todo.values())
    mode = ("bar" if sys.stderr.isatty() else "lines") if progress is None or progress is True else None
    bar = _Progress(len(todo), hits, mode)
    failures: dict[str, dict] = {}
    try:
        work = [(idx[0], payloads[idx[0]]) for idx in todo.values()]
        for i, outcome in backend.complete(work):
            bar.update(outcome, getattr(backend, "retries", 0))
            if outcome.get("ok"):
                cache.put(keys[i], outcome)
                for j in todo[keys[i]]:
                    answers[j] = outcome
            else:
                f = failures.setdefault(outcome["error"], {"n": 0, "examples": []})
                f["n"] += len(todo[keys[i]])
                if len(f["examples"]) < 5:
                    f["examples"].append({"id": prompts[i]["id"], "detail": outcome.get("detail")})
    finally:
        bar.close()
    usage = [a.get("usage") or {} for a in answers if a]
    counts = {"prompts": len(prompts), "cache_hits": hits, "asked": len(todo),
              "failed": dict(sorted(failures.items())), "retries": getattr(backend, "retries", 0),
              "tokens": {"prompt": sum(u.get("prompt_tokens", 0) for u in usage),
                         "completion": sum(u.get("completion_tokens", 0) for u in usage)},
              "seconds": round(time.monotonic() - started, 1)}
    costs = [u["cost"] for u in usage if "cost" in u]
    if costs:
        counts["cost"] = round(sum(costs), 6)
    return answers, counts


def run_bench(pool_path: str | Path, backend, *, out: str | Path, suites: Sequence[str] = (),
              categories: Sequence[str] = (), families: Sequence[str] = (), per_category: int | None = None,
              seed: int = 0, cache_path: str | Path | None = None, fmt: str = "auto", string_match: str = "bfcl",
              bootstrap: int = 1000, compare: str | Path | None = None, allow_other_version: bool = False,
              progress: bool | None = None, plot: bool = True) -> dict:
    """Generate on the pool's prompts with ``backend`` and write ``out``/report.json, report.md, report.html,
    report.png and predictions.jsonl; returns the report."""
    from hsa.bench.page import prompt_details
    from hsa.bench.report import build_report, write_bench_report

    pool = load_pool(pool_path, allow_other_version=allow_other_version)
    sel = select_prompts(pool, suites=suites, categories=categories, families=families, per_category=per_category,
                         seed=seed)
    if not sel.items:
        raise BenchError("no prompts selected: check --suites, --categories and --families against the pool")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache = ResponseCache(cache_path or out / "cache.sqlite")
    try:
        answers, counts = generate_all(backend, [it.prompt for it in sel.items], cache, progress=progress)
    finally:
        cache.close()
    with open(out / "predictions.jsonl", "w", encoding="utf-8") as f:
        for it, a in zip(sel.items, answers):
            if a is not None:
                f.write(json.dumps({"id": it.prompt["id"], **a["prediction"], "usage": a.get("usage") or {}},
                                   ensure_ascii=False) + "\n")
    report = build_report(pool, sel, answers, run=counts, backend=backend.describe(), fmt=fmt,
                          string_match=string_match, seed=seed, bootstrap=bootstrap,
                          options={"suites": list(suites), "categories": list(categories),
                                   "families": list(families), "per_category": per_category},
                          compare=compare, notes=sel.notes)
    write_bench_report(report, out, png=plot,
                       prompts=prompt_details(sel, answers, report["results"], fmt=fmt, string_match=string_match))
    return report
