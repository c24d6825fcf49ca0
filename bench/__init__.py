"""Benchmarks (run from a source checkout): ``python -m bench.grpo_vs_trl``, ``python -m bench.env_speed``.

See docs/BENCHMARKS.md for the commands, what each number covers, and the results.
"""
