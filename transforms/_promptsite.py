"""The prompt a sampler on the harness reads, and what it asks of the record to read it.

A record's prompt is part of its harness, but prompt transforms apply only where the record's system message is
the prompt rendered (:func:`hsa.prompt_model.locate`); a record without a prompt has its system message split into
sections instead, which is the trajectory's. A sampler on the harness (:meth:`hsa.transform.Transform.sample_harness`)
therefore asks the record through ``facts`` (:class:`hsa.transform.Facts`): whether the system message renders the
harness's prompt (:func:`site_problem`), or, with no prompt, the sections the system message splits into
(:func:`split_prompt`). Records of a harness answer alike, so a pool slot draws once for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hsa.prompt_model import locate
from hsa.records import Record

if TYPE_CHECKING:
    from hsa.transform import Facts, HarnessView

__all__ = ["site_problem", "split_prompt", "harness_prompt"]


def site_problem(record: Record) -> str | None:
    """Why prompt transforms cannot apply to ``record`` (:func:`hsa.prompt_model.locate`), or None."""
    site = locate(record)
    return site if isinstance(site, str) else None


def split_prompt(record: Record) -> dict | str:
    """The prompt ``record``'s system message splits into (a record without a prompt), or why prompt transforms
    cannot apply."""
    site = locate(record)
    return site if isinstance(site, str) else site.prompt


def harness_prompt(harness: HarnessView, facts: Facts) -> dict | str:
    """The prompt a sampler on the harness draws from: the harness's once the record's system message is known to
    render it, else the system message split; or the reason there is none (:func:`hsa.prompt_model.locate`'s)."""
    if harness.get("prompt"):
        problem = facts.ask(site_problem)
        return problem if problem is not None else harness["prompt"]
    return facts.ask(split_prompt)
