"""``hsa bench build``: the fixed variant pool of hsa-bench, and reading it back.

A pool is a folder::

    bench.json      what the pool is (hsa-bench v1: suite package versions, hsa version, recipe per family, K,
                    seed), its counts and the sha256 of every file and of the whole pool
    items.jsonl     one line per benchmark item: suite, category, the turns that are prompts, their kind
                    (call / no_call) and BFCL's accepted answers
    rows.jsonl.gz   hsa rows (the format `hsa augment` writes, docs/format.md): per item its canonical row
                    (variant 0) and K variants per family, each with ``bench_family``
    rejects.jsonl   every item or variant that is not in the pool, with its reason

Each variant is made by :func:`hsa.pipeline.augment_record` (rng from the seed, the item id and the variant index
only) and passed the check ``hsa augment`` runs on every variant (:func:`hsa.invariants.check_variant`). A family
whose transforms change nothing on an item (no enum to rename, no nested object to flatten) gives that item no
variant: counted as ``not_applicable``, never written as a copy of the canonical row. The same package versions,
hsa version, K and seed give the same bytes; ``sha256`` in bench.json is the digest of the pinned configuration
and of each file's uncompressed bytes, so two reports are comparable when their pools' sha256 agree.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hsa.bench.suites import (LICENCES, SUITE_PACKAGES, SUITES, BenchItem, SuiteError, installed_version,
                              suite_items)

__all__ = ["BENCH_NAME", "BENCH_FORMAT", "FAMILIES", "DEFAULT_K", "BenchError", "family_recipes", "build_pool",
           "load_pool", "Pool", "pool_digest", "iter_pool_rows"]

BENCH_NAME = "hsa-bench v1"
BENCH_FORMAT = 1
DEFAULT_K = 2

_RENAME_STYLES = ["snake", "camel", "pascal", "kebab", "mask", "verb", "noun", "prefix"]

#: The families of hsa-bench v1: name -> (held out, recipe). "Seen" families are the transforms the default
#: training recipe (hsa/recipes/default.yaml) uses, each alone at full strength, and that recipe itself; "held-out"
#: families use transforms the default recipe never uses, so a model trained with it has not seen them.
FAMILIES: dict[str, tuple[bool, Any]] = {
    "tool_names": (False, {"transform": "tool.rename", "styles": _RENAME_STYLES, "p": 1.0}),
    "param_names": (False, {"transform": "tool.param_rename", "styles": ["snake", "camel", "pascal", "kebab"],
                            "p": 1.0}),
    "descriptions": (False, {"transform": "tool.describe", "p": 1.0}),
    "schema_shape": (False, {"transform": "meta.one_of", "transforms": [{"transform": "tool.nest", "p": 0.5},
                                                                          {"transform": "tool.flatten"}]}),
    "values": (False, {"transform": "tool.values", "modes": ["enum", "default"], "p": 1.0}),
    "distractors": (False, {"transform": "tool.distractors", "n": [1, 3]}),
    "order": (False, {"transform": "tool.reorder"}),
    "default_mix": (False, "default"),
    "swapped_names": (True, {"transform": "tool.swap_names", "tools": True, "p": 1.0, "params_p": 0.5}),
    "no_descriptions": (True, {"transform": "tool.drop_descriptions", "p": 1.0}),
    "added_required": (True, {"transform": "tool.add_required", "p": 1.0}),
}


class BenchError(ValueError):
    """A pool, option or environment that hsa bench cannot use; the message says what to do."""


def family_recipes(families: Iterable[str] | None = None) -> dict[str, dict]:
    """The versioned recipe dict of each family (a built-in recipe name is expanded, so the pool pins its text)."""
    from hsa.recipes import load_recipe, recipe_from_dict, recipe_to_dict

    names = list(FAMILIES) if families is None else list(families)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise BenchError(f"unknown families {unknown}; expected some of {list(FAMILIES)}")
    out = {}
    for name in names:
        spec = FAMILIES[name][1]
        recipe = load_recipe(spec) if isinstance(spec, str) else recipe_from_dict(spec, source=f"family {name}")
        out[name] = recipe_to_dict(recipe)
    return out


# --------------------------------------------------------------------------- building


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _item_line(item: BenchItem, source_id: str) -> dict:
    line = {"source_id": source_id, "suite": item.suite, "category": item.category, "turns": list(item.turns),
            "kinds": list(item.kinds), "answers": list(item.answers)}
    if item.code:
        line["code"] = item.code
    return line


def _augment_item(args: tuple) -> tuple[list[dict], list[dict], dict]:
    """Canonical row and K variants per family of one item: (rows, rejects, per-family counts)."""
    from hsa.io import InputLine
    from hsa.pipeline import augment_record
    from hsa.recipes import recipe_from_dict

    pos, record, recipes, k, seed = args
    data = json.dumps(record, ensure_ascii=False).encode()
    item = InputLine(f"{record['meta']['suite']}", pos + 1, data, pos)
    rows: list[dict] = []
    rejects: list[dict] = []
    counts: dict[str, Counter] = {}
    base = augment_record(item, recipe_from_dict({"__version__": 1, "transform": {"transform": "meta.sequence",
                                                                                  "transforms": []}}),
                          seed=seed, variants=0, keep_original=True)
    if not base.rows:
        return [], [{"id": record["id"], "family": None, **{k2: v for k2, v in r.items() if k2 in ("reason",
                                                                                                   "detail")}}
                    for r in base.rejects], {}
    canonical = base.rows[0]
    rows.append({**canonical, "bench_family": None})
    for f_index, (family, recipe) in enumerate(recipes.items()):
        c = counts.setdefault(family, Counter())
        res = augment_record(item, recipe_from_dict(recipe, source=family), seed=seed, variants=k,
                             keep_original=False)
        for r in res.rejects:
            if r.get("variant") is not None:
                c["failed_verification"] += 1
                rejects.append({"id": record["id"], "family": family, "variant": r["variant"], "reason": r["reason"],
                                "detail": r.get("detail")})
        for row in res.rows:
            if not row["transforms"]:
                c["not_applicable"] += 1
                continue
            v = f_index * k + row["variant"]
            c["variants"] += 1
            rows.append({**row, "id": f"{canonical['source_id']}/{v}", "variant": v, "bench_family": family})
    return rows, rejects, {f: dict(c) for f, c in counts.items()}


def _digest_file(path: Path) -> str:
    h = hashlib.sha256()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pool_digest(config: dict, files: dict[str, dict]) -> str:
    """The pool's sha256: of its pinned configuration and the sha256 of each file's (uncompressed) bytes."""
    text = json.dumps({"config": config, "files": {n: f["sha256"] for n, f in sorted(files.items())}},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class _Progress:
    """Items done, rate and ETA on standard error: one line redrawn each second on a terminal (``bar``), else a line
    every ``every`` seconds and a last one (``lines``: a log, a ``nohup`` run, CI), or nothing (``None``)."""

    def __init__(self, total: int, label: str, mode: str | None, every: float = 30.0):
        self.total, self.label, self.mode, self.every = total, label, mode, every
        self.done, self.start, self.last = 0, time.monotonic(), time.monotonic()

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        end = self.done == self.total
        if self.mode is None or not (end or now - self.last > (1.0 if self.mode == "bar" else self.every)):
            return
        self.last = now
        rate = self.done / max(now - self.start, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 and self.done >= min(20, self.total) else None
        text = (f"{self.label}: {self.done}/{self.total} items, {rate:.1f}/s"
                + (f", ETA {eta:.0f}s" if eta is not None and not end else "")
                + (f", {now - self.start:.0f}s" if end else ""))
        if self.mode == "bar":
            print(f"\r{text}" + " " * 8, end="\n" if end else "", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)


def _check_versions(suites: list[str], allow_other: bool) -> dict[str, dict]:
    out = {}
    for s in suites:
        pkg, pinned = SUITE_PACKAGES[s]
        have = installed_version(s)
        if have is None:
            raise SuiteError(f"the {s} suite needs {pkg}=={pinned}: pip install --no-deps '{pkg}=={pinned}' "
                             "(or make venv-bench)")
        if have != pinned and not allow_other:
            raise BenchError(f"{pkg} {have} is installed; {BENCH_NAME} pins {pkg}=={pinned} (pip install --no-deps "
                             f"'{pkg}=={pinned}'), or pass --allow-other-versions to build a pool that is not "
                             f"{BENCH_NAME}")
        out[s] = {"package": pkg, "version": have, "pinned": pinned, "licence": LICENCES[s]}
    return out


def build_pool(out: str | Path, *, suites: Iterable[str] = SUITES, parts: dict[str, list[str]] | None = None,
               k: int = DEFAULT_K, seed: int = 0, families: Iterable[str] | None = None, limit: int | None = None,
               workers: int = 1, overwrite: bool = False, allow_other_versions: bool = False,
               progress: bool | None = None) -> dict:
    """Build the pool into the folder ``out``; returns bench.json's content.

    ``parts``: per suite, the BFCL categories or AgentDojo suites to read (``None``: all of that suite); given, only
    the suites it names are read, as ``--categories`` does (``{"bfcl": [...]}`` is a BFCL-only pool); ``limit``:
    the first N items of each category (a smaller pool for a quick look; it is not hsa-bench v1 and its card says
    so)."""
    from hsa._version import __version__

    suites = list(suites)
    if parts:
        suites = [s for s in suites if s in parts]
    bad = [s for s in suites if s not in SUITES]
    if bad:
        raise BenchError(f"--suite: unknown {bad}; expected bfcl, agentdojo or all")
    if k < 1:
        raise BenchError(f"--k must be at least 1 (got {k})")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise BenchError(f"--out {out} is not empty; pass --overwrite to replace the pool in it")
    packages = _check_versions(suites, allow_other_versions)
    recipes = family_recipes(families)
    parts = parts or {}
    items: list[BenchItem] = []
    per_category: Counter = Counter()
    for s in suites:
        for item in suite_items(s, parts.get(s)):
            if limit is not None and per_category[(item.suite, item.category)] >= limit:
                continue
            per_category[(item.suite, item.category)] += 1
            items.append(item)
    standard = (not parts and limit is None and families is None and sorted(suites) == sorted(SUITES)
                and all(p["version"] == p["pinned"] for p in packages.values()))
    config = {"name": BENCH_NAME if standard else f"{BENCH_NAME} (subset or other settings: not comparable with "
                                                  f"{BENCH_NAME})",
              "format": BENCH_FORMAT, "hsa_version": __version__, "suites": packages,
              "parts": {s: parts.get(s) for s in suites}, "limit": limit, "k": k, "seed": seed,
              "families": {f: {"held_out": FAMILIES[f][0], "recipe": r} for f, r in recipes.items()}}
    out.mkdir(parents=True, exist_ok=True)
    for name in ("bench.json", "items.jsonl", "rows.jsonl.gz", "rejects.jsonl"):
        (out / name).unlink(missing_ok=True)
    mode = ("bar" if sys.stderr.isatty() else "lines") if progress is None or progress is True else None
    bar = _Progress(len(items), "hsa bench build", mode)
    counts = {"items": 0, "rows": 0, "prompts": Counter(), "by_suite": {}, "by_family": {}}
    family_counts: dict[str, Counter] = {f: Counter() for f in recipes}
    rejects_n = 0
    tasks = ((i, it.record, recipes, k, seed) for i, it in enumerate(items))
    with open(out / "items.jsonl", "wb") as fi, \
            gzip.GzipFile(out / "rows.jsonl.gz", "wb", compresslevel=6, mtime=0) as fr, \
            open(out / "rejects.jsonl", "wb") as fj:
        for item, (rows, rejects, fam) in zip(items, _map(_augment_item, tasks, workers)):
            bar.step()
            for r in rejects:
                fj.write(_dumps(r))
                rejects_n += 1
            if not rows:
                continue
            source_id = rows[0]["source_id"]
            fi.write(_dumps(_item_line(item, source_id)))
            for row in rows:
                fr.write(_dumps(row))
            _count(counts, item, rows, fam, family_counts)
    files = {}
    for name in ("items.jsonl", "rows.jsonl.gz", "rejects.jsonl"):
        files[name] = {"sha256": _digest_file(out / name)}
    files["rows.jsonl.gz"]["rows"] = counts["rows"]
    files["items.jsonl"]["rows"] = counts["items"]
    files["rejects.jsonl"]["rows"] = rejects_n
    counts["prompts"] = dict(counts["prompts"])
    counts["by_family"] = {f: {"held_out": FAMILIES[f][0], **dict(sorted(c.items()))}
                           for f, c in family_counts.items()}
    card = {**config, "counts": counts, "files": files, "sha256": pool_digest(config, files)}
    (out / "bench.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def _count(counts: dict, item: BenchItem, rows: list[dict], fam: dict, family_counts: dict) -> None:
    counts["items"] += 1
    counts["rows"] += len(rows)
    suite = counts["by_suite"].setdefault(item.suite, {})
    cat = suite.setdefault(item.category, {"items": 0, "variant_rows": 0, "call_turns": 0, "no_call_turns": 0})
    cat["items"] += 1
    cat["variant_rows"] += len(rows) - 1
    for kind in item.kinds:
        cat[f"{kind}_turns"] += 1
        counts["prompts"][kind] += len(rows)
    for f, c in fam.items():
        family_counts[f].update(c)


def _map(fn, tasks: Iterator, workers: int) -> Iterator:
    """``fn`` over ``tasks`` in order, in ``workers`` processes (1: in this process)."""
    if workers <= 1:
        yield from map(fn, tasks)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        yield from pool.imap(fn, tasks, chunksize=4)


# --------------------------------------------------------------------------- reading


class Pool:
    """A built pool: its card (bench.json), items by source id, and its folder."""

    def __init__(self, path: Path, card: dict, items: dict[str, dict]):
        self.path, self.card, self.items = path, card, items

    @property
    def sha256(self) -> str:
        return self.card["sha256"]

    def rows(self) -> Iterator[dict]:
        return iter_pool_rows(self.path)


def iter_pool_rows(path: str | Path) -> Iterator[dict]:
    """The rows of a pool's rows.jsonl.gz, in order."""
    with gzip.open(Path(path) / "rows.jsonl.gz", "rb") as f:
        for line in f:
            yield json.loads(line)


def load_pool(path: str | Path, *, allow_other_version: bool = False, verify: bool = True) -> Pool:
    """Read a pool folder, checking its format, the hsa version that built it and (``verify``) its files' sha256."""
    from hsa._version import __version__

    path = Path(path)
    card_path = path / "bench.json"
    if not card_path.is_file():
        raise BenchError(f"{path} is not an hsa-bench pool (no bench.json); build one with `hsa bench build --out "
                         f"{path}`")
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BenchError(f"{card_path}: not JSON ({exc}); rebuild the pool with `hsa bench build`") from None
    if card.get("format") != BENCH_FORMAT:
        raise BenchError(f"{card_path}: pool format {card.get('format')!r}; this hsa reads format {BENCH_FORMAT}. "
                         "Rebuild it with `hsa bench build`.")
    if card.get("hsa_version") != __version__ and not allow_other_version:
        raise BenchError(f"{path} was built by hsa {card.get('hsa_version')}, this is hsa {__version__}: variants "
                         "and scoring may differ between versions. Rebuild the pool with this hsa (`hsa bench build`; "
                         "compare the printed sha256), or pass --allow-other-version to run it anyway (the report "
                         "notes it)")
    if verify:
        for name, f in card.get("files", {}).items():
            if not (path / name).is_file():
                raise BenchError(f"{path / name} is missing; the pool is incomplete: rebuild it")
            got = _digest_file(path / name)
            if got != f["sha256"]:
                raise BenchError(f"{path / name} has sha256 {got[:12]}..., bench.json says {f['sha256'][:12]}...: "
                                 "the pool was changed after it was built; rebuild it")
    items = {}
    with open(path / "items.jsonl", "rb") as f:
        for line in f:
            it = json.loads(line)
            items[it["source_id"]] = it
    return Pool(path, card, items)
