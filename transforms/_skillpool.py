"""Which distractor skills may join a harness's catalogue, and in what form.

A distractor skill must look like it belongs (issue 33: "pdf-form-filling beside pdf is wrong", a one-line
description among 300-character ones stands out, `git_commit_message` has no place in a live-shopping
catalogue) and must not compete with a real skill, since the trajectory never loads it:

* **domain**: a bank skill states its domain (a domain of :mod:`transforms._domains`, or ``general``); a
  harness draws the skills of its own domain or of the one it specialises (live commerce also draws retail
  skills), a harness of no known domain the ``general`` ones; a skill without a domain (a user's bank file)
  may join any harness;
* **never near a real skill**: a word of the candidate's name in a real skill's name or description, or an
  overlap coefficient of their content words of :data:`RELEVANCE_THRESHOLD` or more, rules it out
  (``pdf_form_filling`` shares ``pdf`` with the pdf skill);
* **form**: the name in the real skills' naming style (or the catalogue dialect's), and the long
  (Agent-Skills style) description or the one-line ``summary``, whichever is nearer in length to the real
  skills' median description.

Pure functions; the caller draws.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from hsa.names import STYLES, split_words
from hsa.skills_dir import is_legal_skill_name
from transforms._domains import RELEVANCE_THRESHOLD, content_words, domain_applies
from transforms._toolshape import common_style

__all__ = ["skill_applies", "near_skill", "skill_candidates", "as_distractor"]

#: The bank domain for harnesses of no known domain.
GENERAL = "general"


def skill_applies(skill_domain: Any, harness_domain: str | None) -> bool:
    """True when a bank skill of ``skill_domain`` may join a harness of ``harness_domain``."""
    if skill_domain is None:
        return True  # a user's skill without a domain: anywhere, as before domains
    if skill_domain == GENERAL:
        return harness_domain is None
    return harness_domain is not None and domain_applies(skill_domain, harness_domain)


def _words(name: str, *texts: str) -> tuple[frozenset[str], frozenset[str]]:
    name_words = content_words(" ".join(split_words(name)))
    return name_words, name_words.union(*(content_words(t) for t in texts if isinstance(t, str)))


def near_skill(candidate: dict, skills: Sequence[dict], threshold: float = RELEVANCE_THRESHOLD) -> str | None:
    """The name of the first real skill ``candidate`` is near (see the module docstring), or None."""
    cn, cw = _words(candidate["name"], candidate.get("description", ""), candidate.get("summary", ""))
    for s in skills:
        _, sw = _words(str(s.get("name", "")), str(s.get("description") or ""))
        if cn & sw or (cw and sw and len(cw & sw) / min(len(cw), len(sw)) >= threshold):
            return str(s.get("name"))
    return None


def skill_candidates(record: dict, pool: Sequence[dict], domain: str | None) -> list[dict]:
    """The pool skills that may join ``record``'s catalogue: of its domain (:func:`skill_applies`) and near no
    real skill."""
    real = record.get("skills") or []
    return [d for d in pool if skill_applies(d.get("domain"), domain) and near_skill(d, real) is None]


def as_distractor(d: dict, record: dict, dialect: str) -> dict | None:
    """Bank skill ``d`` as a skill of ``record``: ``{name, description, content}``, its name in the real skills'
    style (or the dialect's: kebab case for Agent Skills names), its description the long or the short form,
    whichever is nearer (in ratio) to the real skills' median description length; None when the name is not
    legal in ``dialect``."""
    real = record.get("skills") or []
    style = common_style([str(s.get("name", "")) for s in real]) or ("snake" if dialect == "hat" else "kebab")
    name = STYLES[style](split_words(d["name"]))
    if not is_legal_skill_name(name, dialect):
        return None
    forms = [f for f in (d.get("description"), d.get("summary")) if isinstance(f, str) and f]
    lengths = [len(s.get("description") or "") for s in real if s.get("description")]
    if lengths and len(forms) > 1:
        median = statistics.median(lengths)
        forms.sort(key=lambda f: abs(math.log(max(len(f), 1) / max(median, 1))))
    return {"name": name, "description": forms[0], "content": d["content"]}
