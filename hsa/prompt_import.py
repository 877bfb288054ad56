"""Deprecated alias of :mod:`hsa.prompt_model` (the sectioned-prompt model).

Kept so that code written against the old name still imports; it goes in a later release.
"""

from __future__ import annotations

import warnings

from hsa.prompt_model import *  # noqa: F401,F403
from hsa.prompt_model import __all__  # noqa: F401

warnings.warn("hsa.prompt_import was renamed hsa.prompt_model; import from hsa.prompt_model", DeprecationWarning, stacklevel=2)
