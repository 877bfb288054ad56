"""YAML read with libyaml's C loader where PyYAML has it (its wheels do), the pure-Python one otherwise.

The two build the same data from the same text under ``safe_load``'s rules; the C one reads the built-in banks
(78 KB) in 16 ms where the Python one takes 210 ms, most of a run's start-up after its imports."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["safe_load"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C loader when there is one; errors are ``yaml.YAMLError`` as there."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)
