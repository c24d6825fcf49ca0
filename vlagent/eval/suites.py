"""Named evaluation suites: a packaged recipe config plus overrides, one per benchmark.

``vlagent eval --suite quickstart,phone_apps --model CKPT --out runs/suites`` evaluates the model
on each suite into ``OUT/<name>/`` and writes ``OUT/suites.json`` + ``OUT/suites.md``
(``vlagent/eval/suite_run.py``); ``--suite list`` prints this registry.

Overrides on the command line apply to every selected suite, after the suite's own ones (the
user's win); ``NAME:key=value`` applies only to suite ``NAME``. A suite's ``requires`` are the
override keys only the user can give (paths to data that is not shipped): a run that lacks one
stops before anything is evaluated, with a message naming the keys and an example.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from vlagent.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class EvalSuite:
    """One named evaluation.

    Attributes:
        name: what ``--suite`` takes.
        config: a packaged recipe name (``vlagent/configs/<config>.yaml``) or a YAML path.
        overrides: dotted ``key=value`` overrides applied on top of ``config``.
        description: what the suite measures (shown by ``--suite list``).
        requires: override keys the user must give (e.g. ``task.annotation_file``).
        world: the world the config runs in (checked against the config by the tests).
    """

    name: str
    config: str
    overrides: tuple[str, ...]
    description: str
    requires: tuple[str, ...] = ()
    world: str = "grounding"


_ALL = "eval.num_screens=100000"  # every task of a finite held-out suite (capped at its size)
_SCREENSPOT = ("task.annotation_file", "task.image_dir")

SUITES: dict[str, EvalSuite] = {
    s.name: s
    for s in (
        EvalSuite("quickstart", "quickstart", (),
                  "grounding: 500 held-out synthetic screens of the quickstart (task.level=basic)"),
        EvalSuite("screenspot_v2", "screenspot_eval", ("task.screenspot_version=v2",),
                  "grounding: ScreenSpot v2 from its annotation JSON and image folder (not "
                  "shipped; or --standin-images DIR instead of task.image_dir)", _SCREENSPOT),
        EvalSuite("screenspot_pro", "screenspot_eval", ("task.screenspot_version=pro",),
                  "grounding: ScreenSpot-Pro from its annotation JSON and image folder (not "
                  "shipped; or --standin-images DIR instead of task.image_dir)", _SCREENSPOT),
        EvalSuite("zoom_hires", "zoom_sft", ("eval.num_screens=200",),
                  "zoom: 200 high-resolution screens with tiny targets, zoom_in tool "
                  "(tools.enabled=false for a no-tools model)", world="zoom"),
        EvalSuite("phone_apps", "apps_sft", ("apps.eval_suite=phone_heldout", _ALL),
                  "apps: the shipped held-out phone suite (phone_heldout: toggles, brightness, "
                  "contacts, ...)", world="apps"),
        EvalSuite("phone_toggles", "apps_sft", ("apps.eval_suite=toggles", _ALL),
                  "apps: the held-out half of the generated Settings-toggle tasks (apps_sft's "
                  "own held-out suite)", world="apps"),
        EvalSuite("robot_reach", "robot_sft", ("robot.task=reach", "eval.num_screens=50"),
                  "robot: 50 held-out reach layouts (own MuJoCo scene)", world="robot"),
        EvalSuite("robot_push", "robot_sft", ("robot.task=push", "eval.num_screens=50"),
                  "robot: 50 held-out push layouts (own MuJoCo scene)", world="robot"),
        EvalSuite("desktop_local", "desktop_eval", ("desktop.eval_suite=local", _ALL),
                  "desktop: vlagent's offline OSWorld-format tasks (Xvfb, xdotool, bubblewrap)",
                  world="desktop"),
        EvalSuite("desktop_os", "desktop_eval", ("desktop.eval_suite=os", _ALL),
                  "desktop: OSWorld's os-domain task files; tasks that cannot run here are "
                  "left out and counted (tasks_unavailable)", world="desktop"),
        EvalSuite("miniwob", "web_sft", ("eval.num_screens=100",),
                  "web: 100 held-out MiniWoB++ pages of web_sft's 5 tasks (headless Chromium)",
                  world="web"),
    )
}  # fmt: skip
"""Every named suite, by name."""


def select(spec: str) -> list[EvalSuite]:
    """The suites a ``--suite a,b`` value names, in order, each once.

    Raises:
        ConfigError: an empty list or an unknown name (the message lists the known ones).
    """
    names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise ConfigError(f"--suite {spec!r}: no suite named; known: {', '.join(SUITES)}")
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise ConfigError(
            f"--suite: unknown suite {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(SUITES)} (vlagent eval --suite list describes them)"
        )
    return [SUITES[n] for n in names]


def override_key(item: str) -> str:
    """The dotted key of a ``key=value`` override (the text before the first ``=``)."""
    return item.split("=", 1)[0].strip()


def overrides_for(suites: Sequence[EvalSuite], overrides: Iterable[str]) -> dict[str, list[str]]:
    """The user's overrides of each suite: unscoped ones for all, ``NAME:key=value`` for one.

    Raises:
        ConfigError: a scope that names no selected suite.
    """
    out: dict[str, list[str]] = {s.name: [] for s in suites}
    for item in overrides:
        key = override_key(item)
        if ":" in key:
            scope, rest = item.split(":", 1)
            if scope not in out:
                raise ConfigError(
                    f"override {item!r}: {scope!r} is not one of the selected suites "
                    f"({', '.join(out)})"
                )
            out[scope].append(rest)
        else:
            for name in out:
                out[name].append(item)
    return out


def missing(suite: EvalSuite, overrides: Iterable[str], provided: Iterable[str] = ()) -> list[str]:
    """The ``requires`` keys that neither ``overrides`` nor ``provided`` give."""
    given = {override_key(o) for o in overrides} | set(provided)
    return [k for k in suite.requires if k not in given]


def check_requirements(
    suites: Sequence[EvalSuite], overrides: dict[str, list[str]], provided: Iterable[str] = ()
) -> None:
    """Stop before any evaluation when a suite lacks a required override.

    Raises:
        ConfigError: names each suite, its missing keys and an example command line.
    """
    provided = tuple(provided)
    problems = []
    for s in suites:
        lack = missing(s, overrides[s.name], provided)
        if lack:
            example = " ".join(f"{k}=..." for k in lack)
            problems.append(
                f"suite {s.name} needs {', '.join(lack)} ({s.description}); give "
                f"{'them' if len(lack) > 1 else 'it'} as overrides, e.g. vlagent eval --suite "
                f"{s.name} --model CKPT {example}"
            )
    if problems:
        raise ConfigError("; ".join(problems))


def suite_overrides(suite: EvalSuite, user: Sequence[str]) -> list[str]:
    """The suite's overrides, then the user's (the user's win)."""
    return [*suite.overrides, *user]


def load_suite_config(
    suite: EvalSuite, user: Sequence[str] = (), provided: Iterable[str] = ()
) -> Any:
    """The resolved ``TrainConfig`` of ``suite`` with the user's overrides.

    Raises:
        ConfigError: a required override is missing, or the config does not load.
    """
    from vlagent.config import load_config

    check_requirements([suite], {suite.name: list(user)}, provided)
    return load_config(suite.config, suite_overrides(suite, user))


def registry_text() -> str:
    """``--suite list``: one block per suite (name, world, config + overrides, requires)."""
    lines = []
    for s in SUITES.values():
        lines.append(f"{s.name:15s} {s.world:9s} {s.description}")
        lines.append(f"{'':25s} --config {s.config} {' '.join(s.overrides)}".rstrip())
        if s.requires:
            lines.append(f"{'':25s} requires: {' '.join(f'{k}=...' for k in s.requires)}")
    return "\n".join(lines) + "\n"
