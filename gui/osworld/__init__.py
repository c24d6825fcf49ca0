"""OSWorld-format tasks on our desktop: task files, metrics and action conversion.

The pure parts, usable without a display, follow OSWorld (github.com/xlang-ai/OSWorld) at
commit ``89426951c97d750c388ebbafcc923cfce5577616``:

- :mod:`gui.osworld.task_file` — load and validate task JSON files (``load_task``,
  ``load_tasks``, ``parse_task``) into frozen ``OSWorldTask`` records.
- :mod:`gui.osworld.metrics` — OSWorld's general metrics with the same semantics (``score``,
  ``METRICS``) and ``combine`` for several metrics joined by ``and`` / ``or``.
- :mod:`gui.osworld.actions` — computer_13 dicts and pyautogui code (read as a syntax tree,
  never run) to :mod:`gui.actions` (``from_computer13``, ``from_pyautogui``).
- :mod:`gui.osworld.errors` — ``OSWorldError`` and its subclasses.

Importing the package imports none of them.
"""
