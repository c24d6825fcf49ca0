"""Commands that produce the measured results in docs/ (each writes its JSON under docs/results/)."""
