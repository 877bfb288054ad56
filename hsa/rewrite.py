"""Deprecated alias of :mod:`hsa.renames` (consistent renames across a whole record).

Kept so that code written against the old name still imports; it goes in a later release.
"""

from __future__ import annotations

import warnings

from hsa.renames import *  # noqa: F401,F403
from hsa.renames import __all__  # noqa: F401

warnings.warn("hsa.rewrite was renamed hsa.renames; import from hsa.renames", DeprecationWarning, stacklevel=2)
