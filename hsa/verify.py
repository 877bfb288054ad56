"""Deprecated alias of :mod:`hsa.invariants` (the invariant checks of records and variants).

Kept so that code written against the old name still imports; it goes in a later release.
"""

from __future__ import annotations

import warnings

from hsa.invariants import *  # noqa: F401,F403
from hsa.invariants import __all__  # noqa: F401

warnings.warn("hsa.verify was renamed hsa.invariants; import from hsa.invariants", DeprecationWarning, stacklevel=2)
