"""The pool's sha256 and counts as Markdown, written into a document between markers (``hsa bench build --docs``),
so the numbers in docs/benchmark.md come out of a command and are regenerated, never typed."""

from __future__ import annotations

from pathlib import Path

__all__ = ["START", "END", "pool_markdown", "write_pool_docs"]

START = "<!-- hsa-bench:pool:start -->"
END = "<!-- hsa-bench:pool:end -->"


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


def write_pool_docs(card: dict, path: str | Path) -> None:
    """Replace the text between :data:`START` and :data:`END` in ``path`` with :func:`pool_markdown`."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"--docs {path}: no {START} ... {END} markers to write between")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + START + "\n" + pool_markdown(card) + END + tail, encoding="utf-8")
