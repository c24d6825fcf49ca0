"""Commands that produce the measured results in docs/ (each writes its JSON under docs/results/).

Not an installed package: run from the repository root, e.g. ``python -m experiments.algos``.
"""
