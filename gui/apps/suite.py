"""Task suites: JSON files of concrete tasks, validated by pydantic with error paths.

File format (``gui/apps/suites/phone_basic.json`` is an example)::

    {"name": "phone_basic", "version": 1,
     "tasks": [{"id": "wifi-bt-on-0", "template": "set_toggles",
                "params": {"toggles": {"wifi": true, "bluetooth": true}},
                "seed": 0, "max_steps": 10, "split": "train"}, ...]}

``template`` is a key of :data:`gui.apps.tasks.TEMPLATES`; ``params`` are checked against the
template's parameter model; ``max_steps`` (optional) is the step budget; ``seed`` seeds the
initial phone state. Errors read ``<file>: tasks[<i>].<field>: <problem>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gui.apps.errors import TaskSuiteError
from gui.apps.tasks import TEMPLATES, PhoneTask, make_task

SUITES_DIR = Path(__file__).parent / "suites"
BUILTIN_SUITES: tuple[str, ...] = ("phone_basic", "phone_heldout")
"""Suites shipped in ``gui/apps/suites/`` (train parameters, held-out parameters)."""


class TaskSpec(BaseModel):
    """One task entry of a suite file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")]
    template: str
    params: dict[str, Any] = Field(default_factory=dict)
    seed: Annotated[int, Field(strict=True, ge=0, lt=2**31)]
    max_steps: Annotated[int, Field(strict=True, ge=1, le=500)] | None = None
    split: Literal["train", "test"] = "train"

    @field_validator("template")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in TEMPLATES:
            raise ValueError(f"unknown template {value!r}; known: {', '.join(TEMPLATES)}")
        return value


class SuiteFile(BaseModel):
    """A whole suite file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(min_length=1, max_length=80)]
    version: Literal[1]
    tasks: Annotated[list[TaskSpec], Field(min_length=1)]


def _loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass(frozen=True)
class TaskSuite:
    """A validated suite: its name, where it came from and its tasks in file order."""

    name: str
    source: str
    tasks: tuple[PhoneTask, ...]
    _by_id: dict[str, PhoneTask] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {t.task_id: t for t in self.tasks})

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[PhoneTask]:
        return iter(self.tasks)

    @property
    def ids(self) -> tuple[str, ...]:
        """Task ids in file order."""
        return tuple(t.task_id for t in self.tasks)

    def get(self, task_id: str) -> PhoneTask:
        """The task with id ``task_id``.

        Raises:
            TaskSuiteError: naming the suite and a few known ids.
        """
        try:
            return self._by_id[task_id]
        except (KeyError, TypeError):
            known = ", ".join(self.ids[:5])
            raise TaskSuiteError(
                f"suite {self.name!r} has no task {task_id!r}; ids look like: {known}, ..."
            ) from None

    def split(self, split: str) -> tuple[PhoneTask, ...]:
        """Tasks of one split (``"train"`` / ``"test"``)."""
        return tuple(t for t in self.tasks if t.split == split)

    @classmethod
    def merge(cls, suites: Iterable[TaskSuite]) -> TaskSuite:
        """One suite holding the tasks of several (ids must stay unique)."""
        suites = list(suites)
        tasks = tuple(t for s in suites for t in s.tasks)
        _check_unique([t.task_id for t in tasks], "+".join(s.name for s in suites))
        return cls("+".join(s.name for s in suites), "+".join(s.source for s in suites), tasks)


def _check_unique(ids: list[str], where: str) -> None:
    seen: set[str] = set()
    for i, task_id in enumerate(ids):
        if task_id in seen:
            raise TaskSuiteError(f"{where}: tasks[{i}].id: duplicate task id {task_id!r}")
        seen.add(task_id)


def parse_suite(data: Any, source: str = "<suite>") -> TaskSuite:
    """Validate a suite mapping (a parsed JSON file) and build its tasks.

    Raises:
        TaskSuiteError: ``<source>: tasks[<i>].<field>: <problem>``.
    """
    try:
        suite = SuiteFile.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        raise TaskSuiteError(f"{source}: {_loc(e['loc']) or '<root>'}: {e['msg']}") from err
    _check_unique([t.id for t in suite.tasks], source)
    tasks = []
    for i, spec in enumerate(suite.tasks):
        try:
            tasks.append(
                make_task(
                    spec.id, spec.template, spec.params, spec.seed, spec.max_steps, spec.split
                )
            )
        except TaskSuiteError as err:
            raise TaskSuiteError(f"{source}: tasks[{i}].{err}") from err
    return TaskSuite(suite.name, source, tuple(tasks))


def load_suite(suite: str | Path) -> TaskSuite:
    """Load a builtin suite by name (:data:`BUILTIN_SUITES`) or a suite JSON file by path.

    Raises:
        TaskSuiteError: the file is missing, not JSON, or not a valid suite.
    """
    path = SUITES_DIR / f"{suite}.json" if str(suite) in BUILTIN_SUITES else Path(suite)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise TaskSuiteError(
            f"task suite {str(suite)!r} is neither a builtin ({', '.join(BUILTIN_SUITES)}) "
            f"nor a readable file: {err}"
        ) from err
    except ValueError as err:
        raise TaskSuiteError(f"{path.name}: not valid JSON: {err}") from err
    return parse_suite(data, path.name)


def load_suites(suites: str | Path | TaskSuite | Iterable[str | Path | TaskSuite]) -> TaskSuite:
    """One suite from a name, a path, a :class:`TaskSuite` or several of them (merged)."""
    if isinstance(suites, (str, Path, TaskSuite)):
        suites = [suites]
    loaded = [s if isinstance(s, TaskSuite) else load_suite(s) for s in suites]
    if not loaded:
        raise TaskSuiteError("no task suite given")
    return loaded[0] if len(loaded) == 1 else TaskSuite.merge(loaded)
