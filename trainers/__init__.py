"""hsa trainers: thin trl wrappers for the three stages of Harness-Aware Training.

- ``python -m trainers.sft``: HSA-SFT (trl ``SFTTrainer``) on augmented shards, loss on
  assistant turns only, never on messages marked ``"train": false``.
- ``python -m trainers.distill``: general on-policy distillation (trl
  ``DistillationTrainer``, reverse KL) towards the pre-SFT base model.
- ``python -m trainers.rl``: HSA-RL (trl ``GRPOTrainer``) with rewards that map the
  completion's calls back through each row's mapping (:mod:`trainers.rewards`).
- ``python -m trainers.eval``: ``hsa eval run``: accuracy under the canonical and varied harnesses, with
  intervals, and instruction following (:mod:`hsa.evaluation`, docs/evaluation.md).
- ``python -m trainers.tiny --out DIR``: a tiny local model and tokenizer to try it all.

Nothing heavy is imported here: ``--help`` of every entry point is instant, and
``hsa augment`` works without torch. See docs/training.md.
"""

__all__ = ["common", "sft", "distill", "rl", "eval", "rewards", "ifcheck", "tiny"]
