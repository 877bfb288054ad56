"""Hook replay in confined worker processes, and the equivalence check of docs/design.md invariant 7.

Hook code comes from records, so it is untrusted input: it never runs in hsa's own process. The package is split
by concept:

- :mod:`hsa.sandbox.layers`: the walls (Landlock, seccomp, an unprivileged identity, hard limits, bubblewrap's
  namespaces), which of them this machine gives for the ``--hook-sandbox`` policy, and what stays open;
- :mod:`hsa.sandbox.process`: one worker (:class:`Sandbox`): started inside the layers, calls pipelined over a
  pipe, the time limit kept from outside by killing its process group;
- :mod:`hsa.sandbox.pool`: one worker per hook set (a record's hooks), results cached by (set, hook, payload);
- :mod:`hsa.sandbox.invariant`: invariant 7 (:func:`check_hooks`) and the hooks that cannot be replayed;
- :mod:`hsa.sandbox.attacks`: the hostile hooks of ``hsa sandbox check``.
"""

from hsa.hooks_model import safe_relative_path
from hsa.sandbox.invariant import NOT_REPLAYED_NOTE, check_hooks, not_replayed
from hsa.sandbox.layers import POLICIES, SandboxError, Status, probe_ahead, set_policy, status
from hsa.sandbox.process import LIMIT_ERRORS, Sandbox
from hsa.sandbox.pool import (close_all, configure, execution_enabled, replay, replay_many, reset_stats,
                                set_execution, stats)

__all__ = ["Sandbox", "configure", "replay", "replay_many", "check_hooks", "not_replayed", "set_execution",
           "execution_enabled", "stats", "reset_stats", "close_all", "LIMIT_ERRORS", "NOT_REPLAYED_NOTE",
           "safe_relative_path", "POLICIES", "SandboxError", "Status", "set_policy", "status", "probe_ahead"]
