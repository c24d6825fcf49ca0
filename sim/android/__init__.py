"""Android backends through android-env: our synthetic phone as an android-env simulator,
a seeded fake, the emulator config passthrough, and gesture -> TOUCH / LIFT sequences.

This ``__init__`` imports nothing; android-env is imported by the submodules
(:mod:`sim.android.simulator`, :mod:`sim.android.loader`, :mod:`sim.android.touch`).
:mod:`sim.android.adb_text` (pure Python) decides which text may be typed through
``adb shell input text`` and escapes it for the device shell.
"""
