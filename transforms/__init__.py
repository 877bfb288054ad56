"""The transform library: one module per family. Importing this package registers them all."""

from transforms import tool  # noqa: F401
from transforms import skill, prompt  # noqa: F401,E401
from transforms import hook  # noqa: F401

__all__ = ["tool", "skill", "prompt", "hook"]
