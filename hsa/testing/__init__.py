"""Hypothesis strategies for harnesses and trajectories, and the invariant checks of docs/design.md.

Everything a user needs to prove that their own transform is task-preserving::

    from hypothesis import given
    from hsa.testing import assert_task_preserving, records

    @given(records())
    def test_mine(record):
        assert_task_preserving(MyTransform(), record)

The strategies (records, harnesses, tools, recipes, ...) live in :mod:`hsa.testing.strategies`, the checks
(:func:`assert_task_preserving`, :func:`check_transform`) in :mod:`hsa.testing.checks`, the pytest fixtures in
:mod:`hsa.testing.plugin`; this module names them all.
"""

from hsa.testing.checks import Report, assert_task_preserving, check_transform
from hsa.testing.strategies import (
    DIALECTS,
    REPLY_LIMITS,
    arguments,
    harnesses,
    hooks,
    prompts,
    recipes,
    records,
    render_prompt,
    run_hook,
    skills,
    tool_schemas,
    tools,
)

__all__ = [
    "DIALECTS",
    "tool_schemas",
    "arguments",
    "tools",
    "skills",
    "prompts",
    "hooks",
    "harnesses",
    "records",
    "recipes",
    "check_transform",
    "assert_task_preserving",
    "Report",
]
