"""Shards, resume and merge: where the rows of a run go, and how a run is picked up again or joined.

Shard k holds the rows of input items [k * shard_size, (k + 1) * shard_size), so shard contents depend on the
input alone: any worker count, any rank split, any resume point gives the same bytes. Each finished shard leaves
three files, written atomically in this order: shard-K.arrow, .hsa/shard-K.rejects.jsonl, .hsa/shard-K.done.json
(:func:`mark_done`). ``--resume`` (:func:`prepare_out`) keeps the shards marked done; :func:`finalize` joins them
into the dataset, ``rejects.jsonl`` and ``manifest.json``; :func:`merge` does it for the parts of a
``--rank R --world-size W`` run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from hsa import _json
from hsa.pipeline.record import Result, Stats

__all__ = ["AugmentError", "STATE_DIR", "shard_name", "id_digest", "write_atomic", "ShardWriter", "mark_done",
           "ShardOutput", "strict_message", "run_config", "recorded_revision", "prepare_out", "end_run",
           "finalize", "merge"]


class AugmentError(RuntimeError):
    """A run that cannot start or must stop (missing input, non-empty output, --strict reject)."""


STATE_DIR = ".hsa"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def id_digest(record_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(record_id.encode(), digest_size=8).digest(), "big")


def shard_name(k: int) -> str:
    return f"shard-{k:05d}.arrow"


class ShardWriter:
    """The shard being written: rows go to its Arrow file (``out`` None: to memory), rejects and stats are kept
    for its done marker."""

    def __init__(self, out: Path | None, k: int, slot: bool = False):
        from hsa.io import ShardFile

        self.k = k
        self.file = ShardFile(None if out is None else out / shard_name(k), slot=slot)
        self.rejects: list[dict] = []
        self.stats = Stats()
        self.ids: list[str] = []

    def add(self, res: Result, encoded: list[tuple], seen_ids: set[int]) -> Result:
        """Take one input line's result, in input order; a source id seen before becomes a 'duplicate id' reject
        (the result returned is the one kept)."""
        if res.source_id is not None and encoded:
            digest = id_digest(res.source_id)
            if digest in seen_ids:
                res = Result([], [{"input": res.where[0], "line": res.where[1],
                                   "reason": "duplicate id", "id": res.source_id,
                                   "detail": f"record id {res.source_id!r} occurs earlier in the input; ids must be unique"}],
                             Stats(input_records=1, rejected=1, reject_reasons=Counter({"duplicate id": 1})))
                encoded = []
            else:
                seen_ids.add(digest)
                self.ids.append(res.source_id)
        self.rejects.extend(res.rejects)
        for row in encoded:
            self.file.add(row)
        self.stats += res.stats
        return res

    def close(self) -> tuple[dict, str]:
        """Close the Arrow file; return the completion record and the rejects (JSONL text)."""
        rows, digest = self.file.close()
        done = {"shard": shard_name(self.k), "rows": rows, "sha256": digest, "stats": self.stats.to_json(),
                "ids": self.ids}
        return done, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rejects)

    def finish(self, out: Path) -> dict:
        done, rejects = self.close()
        mark_done(out, self.k, done, rejects)
        return done


def mark_done(out: Path, k: int, done: dict, rejects: str) -> None:
    """Write shard ``k``'s rejects, then its completion record (what ``--resume`` and ``finalize`` read)."""
    state = out / STATE_DIR
    write_atomic(state / f"shard-{k:05d}.rejects.jsonl", rejects)
    write_atomic(state / f"shard-{k:05d}.done.json", json.dumps(done, ensure_ascii=False))


@dataclasses.dataclass
class ShardOutput:
    """One shard's work: the Arrow shard's bytes, its rejects (JSONL text) and its completion record."""

    k: int
    data: bytes
    rejects: str
    done: dict


def strict_message(rejects: list[dict]) -> str:
    """``--strict``'s error: the first rejected record (not a failed variant) among ``rejects``."""
    first = next(r for r in rejects if "variant" not in r)
    return f"--strict: {first.get('input')}:{first.get('line')}: {first['reason']}: {first['detail']}"


def run_config(sources, recipe_config, seed, variants, keep_original, shard_size, hold_out, extra) -> dict:
    from hsa._version import __version__

    return {"hsa_version": __version__,
            "inputs": [{"path": s.spec, "kind": s.kind, "sha256": s.fingerprint(),
                        **({"revision": s.revision} if s.kind == "hub" else {})} for s in sources],
            "seed": seed, "variants": variants, "keep_original": keep_original, "shard_size": shard_size,
            "hold_out": sorted(hold_out or []), "recipe": recipe_config, **extra}


def recorded_revision(out: Path, source) -> str | None:
    """The hub revision that the run being resumed in ``out`` read for ``source``, if any."""
    if source.kind != "hub":
        return None
    try:
        before = json.loads((out / STATE_DIR / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return next((i.get("revision") for i in before.get("inputs", ())
                 if i.get("kind") == "hub" and i.get("path") == source.spec), None)


def _nothing_finished(out: Path) -> bool:
    """True when ``out`` holds only the state folder of a run that finished no shard (and no other file)."""
    entries = list(out.iterdir())
    if [e.name for e in entries] != [STATE_DIR]:
        return False
    state = out / STATE_DIR
    return (state / "run.json").exists() and not any(state.glob("shard-*.done.json")) \
        and all(f.name == "run.json" or f.name.endswith(".tmp") for f in state.iterdir())


def prepare_out(out: Path, config: dict, *, resume: bool, overwrite: bool) -> set[int]:
    """Create or check the output folder; return the shards already done (with ``resume``)."""
    state = out / STATE_DIR
    if out.exists() and not out.is_dir():
        raise AugmentError(f"--out {out} is a file; give a folder (the output is a dataset folder of Arrow shards; "
                           "'hsa export DIR --out FILE.jsonl' writes JSONL from it)")
    if out.exists() and _nothing_finished(out):
        import shutil

        shutil.rmtree(out)  # a run stopped before its first shard (--strict, a kill): nothing to keep
    if out.exists() and any(out.iterdir()):
        if overwrite:
            import shutil

            shutil.rmtree(out)
        elif resume:
            run_file = state / "run.json"
            if not run_file.exists():
                raise AugmentError(f"--resume: {out} holds no hsa run to resume ({run_file} is missing)")
            before = json.loads(run_file.read_text(encoding="utf-8"))
            if _json.canonical(before) != _json.canonical(config):
                changed = sorted(k for k in set(before) | set(config) if before.get(k) != config.get(k))
                raise AugmentError(f"--resume: {out} was written by a different run (differs in: {', '.join(changed)}); "
                                   "rerun with the same inputs and options, or use --overwrite")
            done = set()
            for f in state.glob("shard-*.done.json"):
                done.add(int(f.name[6:11]))
            for f in list(out.glob("*.tmp")) + list(state.glob("*.tmp")):
                f.unlink()
            return done
        else:
            raise AugmentError(f"output folder {out} is not empty; pass --resume to finish an interrupted run "
                               "or --overwrite to replace it")
    state.mkdir(parents=True, exist_ok=True)
    write_atomic(state / "run.json", json.dumps(config, indent=2, ensure_ascii=False))
    return set()


def end_run(out: Path, rank: int, world_size: int, n_items: int, shard_size: int, total: Stats,
             command: str | None, engine: str, hook_sandbox: dict | None = None) -> dict:
    """Record this rank's part (its rank file, with the layers its hook sandbox had) and, for a one-rank run, write
    the manifest."""
    n_shards = max(1, -(-n_items // shard_size))
    rank_info = {"rank": rank, "world_size": world_size, "input_items": n_items, "shards": n_shards,
                 "engine": engine, **({"hook_sandbox": hook_sandbox} if hook_sandbox is not None else {})}
    write_atomic(out / STATE_DIR / f"rank-{rank:05d}-of-{world_size:05d}.json", json.dumps(rank_info))
    if world_size > 1:
        return {"rank": rank_info, **total.to_dict()}
    return finalize(out, command=command)


def finalize(out: str | Path, *, command: str | None = None, parts: list[Path] | None = None) -> dict:
    """Join the done shards of ``out`` (and of ``parts``, for ``hsa merge``) into one dataset and manifest."""
    from hsa.io import write_dataset_metadata

    out = Path(out)
    state = out / STATE_DIR
    config = json.loads((state / "run.json").read_text(encoding="utf-8"))
    rank_files = sorted(state.glob("rank-*-of-*.json"))
    info = [json.loads(f.read_text(encoding="utf-8")) for f in rank_files]
    n_items = max((i["input_items"] for i in info), default=0)
    n_shards = max(1, -(-n_items // config["shard_size"]))
    missing = [k for k in range(n_shards) if not (state / f"shard-{k:05d}.done.json").exists()]
    slot = config.get("harness_pool", 0) > 0
    if n_items == 0 and missing == [0]:  # empty input: one empty shard
        ShardWriter(out, 0, slot=slot).finish(out)
        missing = []
    if missing:
        raise AugmentError(f"{out}: shards {missing[:10]}{'...' if len(missing) > 10 else ''} are not done; "
                           "run the missing ranks (or --resume) before merging")
    total = Stats()
    shards, ids_seen, duplicates = [], set(), []
    with open(out / "rejects.jsonl.tmp", "w", encoding="utf-8") as rejects:
        for k in range(n_shards):
            done = json.loads((state / f"shard-{k:05d}.done.json").read_text(encoding="utf-8"))
            total = total + Stats.from_json(done["stats"])
            shards.append({"file": done["shard"], "rows": done["rows"], "sha256": done["sha256"]})
            for i in done["ids"]:
                if i in ids_seen:
                    duplicates.append(i)
                ids_seen.add(i)
            rejects.write((state / f"shard-{k:05d}.rejects.jsonl").read_text(encoding="utf-8"))
    os.replace(out / "rejects.jsonl.tmp", out / "rejects.jsonl")
    if duplicates:
        raise AugmentError(f"record ids occur in several shards: {duplicates[:10]}; ids must be unique "
                           "(rows were written; fix the input and rerun)")
    if total.input_records != n_items or total.input_records != total.sources_written + total.rejected:
        raise AugmentError(f"accounting failed: {n_items} items read, {total.input_records} processed, "
                           f"{total.sources_written} written + {total.rejected} rejected")
    fingerprint = hashlib.sha256("".join(s["sha256"] for s in shards).encode()).hexdigest()
    write_dataset_metadata(out, [s["file"] for s in shards], fingerprint, slot=slot)
    manifest = {
        "hsa_version": config["hsa_version"],
        "command": command,
        "engine": "+".join(sorted({i.get("engine", "local") for i in info})) or "local",
        "inputs": config["inputs"],
        "seed": config["seed"],
        "variants": config["variants"],
        "keep_original": config["keep_original"],
        "shard_size": config["shard_size"],
        "hold_out": config["hold_out"],
        "exec_hooks": config.get("exec_hooks", True),
        "call_arguments": config.get("call_arguments", "keep"),
        **({"tools_file": config["tools_file"]} if config.get("tools_file") else {}),
        "harness_pool": config.get("harness_pool", 0),
        "strict_hooks": config.get("strict_hooks", False),
        "recipe": config["recipe"],
        **total.to_dict(),
        "shards": shards,
        "rejects_file": "rejects.jsonl",
        **_hook_sandbox_entry(info),
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def _hook_sandbox_entry(info: list[dict]) -> dict:
    """The manifest's ``hook_sandbox``: the layers of the ranks' hook workers (one entry when they agree)."""
    seen = [i["hook_sandbox"] for i in info if "hook_sandbox" in i]
    if not seen:
        return {}
    if all(s == seen[0] for s in seen):
        return {"hook_sandbox": seen[0]}
    return {"hook_sandbox": {"ranks": {str(i["rank"]): i.get("hook_sandbox") for i in info}}}


def merge(parts: list[str | Path], out: str | Path, *, command: str | None = None) -> dict:
    """Join the outputs of ``--rank R --world-size W`` runs into one dataset, identical to a single run."""
    import shutil

    parts = [Path(p) for p in parts]
    out = Path(out)
    configs = []
    for p in parts:
        f = p / STATE_DIR / "run.json"
        if not f.exists():
            raise AugmentError(f"{p} is not an hsa augment output (no {f})")
        configs.append(json.loads(f.read_text(encoding="utf-8")))
    if any(_json.canonical(c) != _json.canonical(configs[0]) for c in configs):
        raise AugmentError("the parts were made by different runs (inputs, seed, recipe or options differ); "
                           "merge only the ranks of one run")
    if out.exists() and any(out.iterdir()) and out not in parts:
        raise AugmentError(f"output folder {out} is not empty")
    (out / STATE_DIR).mkdir(parents=True, exist_ok=True)
    for p in parts:
        if p.resolve() == out.resolve():
            continue
        for f in sorted((p / STATE_DIR).iterdir()):
            if f.name == "run.json" or f.name.startswith(("shard-", "rank-")):
                shutil.copy2(f, out / STATE_DIR / f.name)
        for f in sorted(p.glob("shard-*.arrow")):
            shutil.copy2(f, out / f.name)
    (out / STATE_DIR / "run.json").write_text(json.dumps(configs[0], indent=2, ensure_ascii=False), encoding="utf-8")
    ranks = {json.loads(f.read_text())["rank"] for f in (out / STATE_DIR).glob("rank-*-of-*.json")}
    world = configs[0].get("world_size", 1)
    if ranks != set(range(world)):
        raise AugmentError(f"ranks {sorted(set(range(world)) - ranks)} of {world} are missing; run them and merge again")
    rank_info = [json.loads(f.read_text()) for f in sorted((out / STATE_DIR).glob("rank-*-of-*.json"))]
    engines = sorted({i.get("engine", "local") for i in rank_info})
    sandbox = _hook_sandbox_entry(rank_info)  # the ranks' hook sandbox, kept in the merged run's one rank file
    for f in (out / STATE_DIR).glob("rank-*-of-*.json"):  # keep one rank file: the merged run
        f.unlink()
    n = max(json.loads((p / STATE_DIR / f.name).read_text())["input_items"]
            for p in parts for f in (p / STATE_DIR).glob("rank-*-of-*.json"))
    config = dict(configs[0])
    config["world_size"] = 1
    (out / STATE_DIR / "run.json").write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
    write_atomic(out / STATE_DIR / "rank-00000-of-00001.json",
                  json.dumps({"rank": 0, "world_size": 1, "input_items": n, "shards": max(1, -(-n // config["shard_size"])),
                              "engine": "+".join(engines), **sandbox}))
    return finalize(out, command=command)
