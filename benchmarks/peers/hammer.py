"""The peer column of the benchmark: Hammer's own function masking, timed on the records hsa is timed on.

    python benchmarks/peers/hammer.py INPUT.jsonl [--records 200] [--variants 4] [--repeats 3]

Hammer (MadeAgents, arXiv:2410.04587) masks function names, parameter names and the defaults calls pass with
random strings, then writes each row as its SFT prompt. Its code (``hammer_masking.py``, as the authors wrote it)
reads xLAM rows: a ``query``, the ``tools`` as a JSON text of ``{name, description, parameters: {name: {type,
description, default}}}``, and the ``answers`` (the calls) as a JSON text. Each benchmark record is read by hsa's
reader (any layout hsa reads) and written that way, outside the clock: the query is the first user message, the
answers every call of the trajectory, the parameters the top-level properties of each tool's schema. Then, on the
clock (``time.process_time``, this process), every record is masked ``--variants`` times, as the script masks a
row (it masks two rows in three; here every one), prompt included; ms per record is the median run's CPU over the
records. Nothing is checked: the masked rows are not verified (a masked name may collide with a word of the query,
a default is replaced by substring in texts, the calls are not validated against the masked schemas), and a
multi-turn record is read as one query and its calls, which is all Hammer's format holds. That is the cost of the
peer's whole job, set beside hsa's verified one; it does not assert anything.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def xlam_row(raw: dict) -> dict:
    """An input record (any layout hsa reads) as the xLAM row Hammer's masking reads."""
    from hsa.record_texts import content_parts
    from hsa.records import normalize

    rec = normalize(raw)
    query = next((" ".join(content_parts(m.get("content"))) for m in rec["messages"] if m["role"] == "user"), "")
    tools = []
    for t in rec["tools"]:
        props = t["parameters"].get("properties") if isinstance(t["parameters"], dict) else None
        params = {}
        for name, schema in (props or {}).items():
            schema = dict(schema) if isinstance(schema, dict) else {}
            schema.setdefault("description", "")  # every xLAM parameter has one; Hammer's default step reads it
            params[name] = schema
        tools.append({"name": t["name"], "description": t.get("description") or "", "parameters": params})
    answers = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
               for m in rec["messages"] for c in m.get("tool_calls") or ()]
    return {"query": query, "tools": json.dumps(tools), "answers": json.dumps(answers)}


def read_rows(path: Path, n: int) -> list[dict]:
    """The first ``n`` records of ``path`` as xLAM rows (:func:`xlam_row`)."""
    out = []
    with open(path, "rb") as fh:
        for _, line in zip(range(n), fh):
            out.append(xlam_row(json.loads(line)))
    return out


def ms_per_record(rows: list[dict], variants: int, repeats: int = 3) -> dict:
    """CPU ms per record of Hammer's masking (``variants`` masked rows each, their prompts included): the median of
    ``repeats`` runs over ``rows``, after one run that warms the interpreter."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hammer_masking

    def one_run() -> float:
        random.seed(12)  # as the script seeds it
        t = time.process_time()
        for _ in range(variants):
            for it in rows:
                hammer_masking.masked(it)
        return time.process_time() - t

    one_run()
    runs = [one_run() for _ in range(repeats)]
    per = 1000 * statistics.median(runs) / max(len(rows), 1)
    return {"ms_per_record": round(per, 4), "records": len(rows), "variants": variants,
            "runs_s": [round(r, 4) for r in runs]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("--records", type=int, default=200)
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    rows = read_rows(Path(a.input), a.records)
    got = ms_per_record(rows, a.variants, a.repeats)
    print(f"Hammer's masking: {got['ms_per_record']:.3f} ms CPU per record ({got['records']} records x "
          f"{got['variants']} variants, prompts included; not verified); runs {got['runs_s']}")


if __name__ == "__main__":
    main()
