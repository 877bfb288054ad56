"""Test parameters of every registered transform: the table that enrols transforms in the suites.

A transform registered without an entry here makes tests/test_transform.py fail.
Each entry builds an instance that applies often on the fixtures.
"""

from __future__ import annotations

from hsa.transform import OneOf, Sequence, SomeOf, Sometimes
from transforms import hook, tool

TABLE = {
    "meta.sequence": lambda: Sequence((tool.ToolRename(),)),
    "meta.one_of": lambda: OneOf((tool.ToolRename(), tool.ParamRename()), weights=(1.0, 2.0)),
    "meta.some_of": lambda: SomeOf((tool.ToolRename(), tool.ParamRename()), n=(1, 2)),
    "meta.sometimes": lambda: Sometimes(tool.ToolRename(), p=0.5),
    "tool.rename": lambda: tool.ToolRename(styles=("snake", "camel", "pascal", "kebab", "mask")),
    "tool.param_rename": lambda: tool.ParamRename(p=0.8),
    # hook family (and trajectory.strip_retries)
    "hook.sync": lambda: hook.HookSync(),
    "hook.rename_locals": lambda: hook.HookRenameLocals(p=0.7, p_hook=0.9),
    "hook.restyle": lambda: hook.HookRestyle(p=0.7),
    "hook.message_format": lambda: hook.HookMessageFormat(p=0.8),
    "trajectory.strip_retries": lambda: hook.StripRetries(p=0.5),
}
