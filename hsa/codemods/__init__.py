"""LibCST codemods over hook source: name sync, local renames, restyles, message rewording.

Each rewrite module (sync, locals, restyle, messages) holds one family of rewrites; every rewrite either proves that it keeps
behaviour (by the scope and data-flow facts it computes) or refuses with a reason.
Outcomes are values, never exceptions: see :class:`Refusal` (:class:`Refused` carries one out of
the inner steps of a rewrite, and the public functions return it).

- :mod:`hsa.codemods.analysis`: which string literal of a hook names a tool, a
  parameter, a skill or an enum value, found by abstract interpretation of the entry.
- :mod:`hsa.codemods.interpreter`: the abstract interpreter behind it, one module per thing it interprets.
- :mod:`hsa.codemods.results`: what the analysis finds (literal sites and their roles, problems).
- :mod:`hsa.codemods.spans`: the literals and comments of a source in order, and their byte spans.
- :mod:`hsa.codemods.sync`: carries hook source through one mapping step.
- :mod:`hsa.codemods.splice`: new literal values rendered and spliced into a source.
- :mod:`hsa.codemods.quoting`: a value written as a string literal's body (the one escaper).
- :mod:`hsa.codemods.locals`: scope-aware, capture-free renames of locals.
- :mod:`hsa.codemods.restyle`: provably equivalent surface rewrites.
- :mod:`hsa.codemods.messages`: the literals a hook tells the model, and rewording them.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Refusal", "Refused", "rewrite_module"]


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A rewrite that is not provably safe, so it was not made: a short stable reason and a detail."""

    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


class Refused(Exception):
    """Raised inside a codemod at the first edit that is not provably safe; ``refusal`` says why.

    Public functions catch it and return the :class:`Refusal` (outcomes are values).
    """

    def __init__(self, reason: str, detail: str):
        super().__init__(reason)
        self.refusal = Refusal(reason, detail)


def rewrite_module(source: str, *, seed: int = 0, locals_: bool = True, restyles: bool = True,
                   module_helpers: bool = False) -> tuple[str, dict[str, int]]:
    """Every behaviour-preserving rewrite of the hook family applied to a Python module (``hsa rewrite-hook``).

    Locals are renamed (fresh names drawn with ``seed``), then every restyle site is
    rewritten. The public interface is kept: module-level names (private ones too,
    unless ``module_helpers``), parameters of module-level functions and methods,
    attributes. Returns the new source and counts by rewrite (``locals.local``,
    ``locals.param``, ``locals.helper``, ``restyle.<kind>``) and by refusal reason
    (``refused.locals: <reason>``, ``refused.restyle: <kind>: <reason>``).
    """
    import random

    from hsa.codemods.locals import fresh_name, identifiers_of, local_units, rename_locals
    from hsa.codemods.restyle import restyle, restyle_sites

    stats: dict[str, int] = {}
    out = source
    if locals_:
        rng = random.Random(seed)
        units, refused = local_units(out, module_helpers=module_helpers)
        taken = identifiers_of(out)
        renames: dict[str, str] = {}
        for u in units:
            renames[u.key] = fresh_name(u.name, rng, taken | set(renames.values()))
            stats[f"locals.{u.kind}"] = stats.get(f"locals.{u.kind}", 0) + 1
        for reason in refused.values():
            stats[f"refused.locals: {reason}"] = stats.get(f"refused.locals: {reason}", 0) + 1
        out = rename_locals(out, renames, module_helpers=module_helpers)
    if restyles:
        _, refused_r = restyle_sites(out)
        out, applied = restyle(out, None)
        for kind, n in applied.items():
            stats[f"restyle.{kind}"] = n
        for reason, n in refused_r.items():
            stats[f"refused.restyle: {reason}"] = n
    return out, dict(sorted(stats.items()))
