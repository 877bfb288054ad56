"""The pool's sha256 and counts as Markdown, written into a document between markers (``hsa bench build --docs``),
so the numbers in docs/benchmark.md come out of a command and are regenerated, never typed."""

from __future__ import annotations

from pathlib import Path

__all__ = ["START", "END", "markers", "pool_markdown", "write_block", "write_pool_docs"]


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of the block ``name``."""
    return f"<!-- hsa-bench:{name}:start -->", f"<!-- hsa-bench:{name}:end -->"


START, END = markers("pool")


def pool_markdown(card: dict) -> str:
    """The pool card as Markdown: what it pins, its sha256, counts per suite and category, and per family."""
    c = card["counts"]
    suites = ", ".join(f"{s['package']}=={s['version']} ({s['licence'].split(' ')[0]})"
                       for s in card["suites"].values())
    lines = [f"Written by `hsa bench build` (do not edit by hand). **{card['name']}**: hsa {card['hsa_version']}, "
             f"{suites}; K = {card['k']} variants per item and family, seed {card['seed']}"
             + (f", the first {card['limit']} items of each category" if card.get("limit") else "") + ".", "",
             f"- pool sha256: `{card['sha256']}`",
             f"- {c['items']} items, {c['rows']} rows (canonical + variants), prompts: "
             + ", ".join(f"{n:,} {k.replace('_', '-')}" for k, n in sorted(c["prompts"].items()))
             + f"; {card['files']['rejects.jsonl']['rows']} rejected (rejects.jsonl, with reasons)", "",
             "| suite | category | items | call turns | no-call turns | variant rows |", "|---|---|---:|---:|---:|---:|"]
    for suite, cats in c["by_suite"].items():
        for cat, n in cats.items():
            lines.append(f"| {suite} | {cat} | {n['items']} | {n['call_turns']} | {n['no_call_turns']} | "
                         f"{n['variant_rows']} |")
    lines += ["", "| family | held out | variants | not applicable | failed verification |", "|---|---|---:|---:|---:|"]
    for fam, n in c["by_family"].items():
        lines.append(f"| {fam} | {'yes' if n['held_out'] else 'no'} | {n.get('variants', 0)} | "
                     f"{n.get('not_applicable', 0)} | {n.get('failed_verification', 0)} |")
    return "\n".join(lines) + "\n"


def write_block(path: str | Path, name: str, text: str) -> None:
    """Replace what stands between the markers of block ``name`` in the file ``path`` with ``text``."""
    path = Path(path)
    start, end = markers(name)
    doc = path.read_text(encoding="utf-8")
    if doc.count(start) != 1 or doc.count(end) != 1:
        raise ValueError(f"{path}: expected one {start} ... {end} pair of markers to write between")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(head + start + "\n" + text + end + tail, encoding="utf-8")


def write_pool_docs(card: dict, path: str | Path) -> None:
    """Write :func:`pool_markdown` into the ``pool`` block of ``path`` (``hsa bench build --docs``)."""
    try:
        write_block(path, "pool", pool_markdown(card))
    except OSError as exc:
        raise ValueError(f"--docs {path}: cannot write it ({exc.strerror})") from None
