"""Multi-step app tasks for a VLM policy: rollouts, trajectory-level GRPO, SFT, evaluation.

Modules: ``config`` (dataclasses), ``tasks`` (small learnable suites), ``history`` (what the
policy sees each turn), ``rollout`` (G episodes per task in lockstep), ``credit`` (trajectory
rewards and advantages), ``update`` (PPO-clip on turn rows), ``grpo`` / ``sft`` (recipes),
``eval`` (suite evaluation + saved trajectories), ``experiment`` (SFT vs SFT + GRPO).
Importing this package loads nothing heavy.
"""
