"""Android backends through android-env: our synthetic phone as an android-env simulator,
a seeded fake, the emulator config passthrough, and gesture -> TOUCH / LIFT sequences.

This ``__init__`` imports nothing; android-env is imported by the submodules
(:mod:`sim.android.simulator`, :mod:`sim.android.loader`, :mod:`sim.android.touch`).
"""
