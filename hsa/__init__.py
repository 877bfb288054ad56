"""hsa: Harness-State Augmentation.

Turns agent trajectories into task-preserving variants of their harness (tools,
skills, system prompt, hooks), keeps the invertible mapping of every change, and
verifies each variant before it is written.

>>> import hsa
>>> recipe = hsa.load_recipe("default")
>>> sorted(hsa.registry())[:2]
['meta.one_of', 'meta.sequence']
"""

from hsa._version import __version__
from hsa.mapping import Mapping
from hsa.records import Record, RecordError, denormalize, normalize
from hsa.recipes import hold_out, load_recipe, recipe_from_dict, recipe_to_dict, save_recipe
from hsa.transform import (
    Facts,
    HarnessView,
    OneOf,
    Sequence,
    Skip,
    SomeOf,
    Sometimes,
    Transform,
    from_config,
    get_transform,
    register,
    registry,
    replay,
    run,
)

__all__ = [
    "__version__",
    "Mapping",
    "Record",
    "RecordError",
    "normalize",
    "denormalize",
    "Transform",
    "HarnessView",
    "Facts",
    "Skip",
    "register",
    "registry",
    "get_transform",
    "from_config",
    "run",
    "replay",
    "Sequence",
    "OneOf",
    "SomeOf",
    "Sometimes",
    "load_recipe",
    "save_recipe",
    "recipe_from_dict",
    "recipe_to_dict",
    "hold_out",
    "augment",
]


def augment(*args, **kwargs):
    """Run the augmentation pipeline; see :func:`hsa.pipeline.augment`."""
    from hsa.pipeline import augment as _augment

    return _augment(*args, **kwargs)
