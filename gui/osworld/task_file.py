"""Load and validate OSWorld task files (``evaluation_examples/examples/<domain>/<id>.json``).

Behaviour follows OSWorld (github.com/xlang-ai/OSWorld) at commit
``89426951c97d750c388ebbafcc923cfce5577616`` (2025-01-14): ``DesktopEnv._set_task_info`` and
``evaluate`` in ``desktop_env/desktop_env.py``, ``SetupController`` in
``desktop_env/controllers/setup.py`` (a step ``{"type": T, "parameters": P}`` runs
``_T_setup(**P)``) and the getter / metric names exported by ``desktop_env/evaluators``. The
``execute_with_verification`` step comes from later OSWorld versions.

Evaluator rules (as in ``_set_task_info``): ``func`` is one metric name or a list of them;
``result`` / ``expected`` / ``options`` are then a dict (broadcast here to every func) or a list
aligned with ``func``; ``expected`` entries may be null or ``{}`` (the metric is then called
without an expected value); ``options`` entries null / ``{}`` mean no options; ``conj``
(default ``"and"``) combines several metrics. ``func: "infeasible"`` scores 1 exactly when the
agent's last action is FAIL; ``func: ""`` means the file has no evaluator (``Evaluator.empty``).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gui.osworld.errors import TaskFileError
from gui.osworld.metrics import OSWORLD_METRICS

OSWORLD_COMMIT = "89426951c97d750c388ebbafcc923cfce5577616"
"""The OSWorld commit whose schema, getters and metrics this package follows."""

_names = str.split
GETTER_TYPES: frozenset[str] = frozenset(
    _names(
        "accessibility_tree active_tab_html_parse active_tab_info active_tab_url_parse "
        "active_url_from_accessTree audio_in_slide background_image_in_slide bookmarks cache_file "
        "chrome_font_size chrome_language cloud_file conference_city_in_order content_from_vm_file "
        "cookie_data data_delete_automacally default_search_engine default_video_player "
        "enable_do_not_track enable_enhanced_safety_browsing enabled_experiments "
        "find_installed_extension_name find_unpacked_extension_path gimp_config_file "
        "googledrive_file gotoRecreationPage_and_get_html_content history info_from_website "
        "list_directory new_startup_page number_of_search_results open_tabs_info page_info "
        "pdf_from_url profile_name replay rule rule_relativeTime shortcuts_on_desktop "
        "time_diff_range url_dashPart vlc_config vlc_playing_info vm_command_error vm_command_line "
        "vm_file vm_screen_size vm_terminal_output vm_wallpaper vm_window_size vscode_config"
    )
)
"""Result / expected ``type`` values: OSWorld's ``get_<type>`` functions."""

UNAVAILABLE_GETTERS: dict[str, str] = {
    "calc_insensitive_md5": "OSWorld has no getter get_calc_insensitive_md5 (OSWorld itself "
    "cannot evaluate this task; it is not in its test_all.json)",
}
"""Getter types that shipped task files name but OSWorld never defined: they load, and
:attr:`Evaluator.unavailable` says why the task cannot be scored."""

_Check = Callable[[Any], str | None]


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "must be a non-empty string"


def _command(v: Any) -> str | None:
    ok = isinstance(v, str) and v.strip() or (isinstance(v, list) and v and not _str_list(v))
    return None if ok else "must be a non-empty string or a non-empty list of strings"


def _number(v: Any) -> str | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    return None if ok else "must be a non-negative number"


def _str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and all(isinstance(a, str) for a in v)
    return None if ok else "must be a list of strings"


def _list(v: Any) -> str | None:
    return None if isinstance(v, list) else "must be a list"


def _files(*keys: str) -> _Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list) or not v:
            return "must be a non-empty list of {" + ", ".join(keys) + "}"
        for i, f in enumerate(v):
            if not isinstance(f, Mapping):
                return f"[{i}]: must be an object with {', '.join(keys)}"
            for k in keys:
                if _str(f.get(k)):
                    return f"[{i}].{k}: required (a non-empty string)"
        return None

    return check


_EXEC = {"command": _command}
_EXEC_OPT = {"stdout", "stderr", "shell", "until"}
_WINDOW_OPT = {"strict", "by_class"}
SETUP_STEPS: dict[str, tuple[dict[str, _Check], frozenset[str] | None]] = {
    "execute": (_EXEC, frozenset(_EXEC_OPT)),
    "command": (_EXEC, frozenset(_EXEC_OPT)),
    "execute_with_verification": (
        _EXEC,
        frozenset({"verification", "max_wait_time", "check_interval", "shell"}),
    ),
    "launch": (_EXEC, frozenset({"shell"})),
    "open": ({"path": _str}, frozenset()),
    "sleep": ({"seconds": _number}, frozenset()),
    "activate_window": ({"window_name": _str}, frozenset(_WINDOW_OPT)),
    "close_window": ({"window_name": _str}, frozenset(_WINDOW_OPT)),
    "download": ({"files": _files("url", "path")}, frozenset()),
    "upload_file": ({"files": _files("local_path", "path")}, frozenset()),
    "change_wallpaper": ({"path": _str}, frozenset()),
    "tidy_desktop": ({}, None),
    "chrome_open_tabs": ({"urls_to_open": _str_list}, frozenset()),
    "chrome_close_tabs": ({"urls_to_close": _str_list}, frozenset()),
    "googledrive": ({"operation": _str_list}, None),
    "login": ({"platform": _str}, None),
    "update_browse_history": ({"history": _list}, None),
}
"""Setup step type -> (required parameter checks, allowed optional names or None for any),
from the ``_<type>_setup`` signatures (``act`` / ``replay`` are left out: upstream never
implemented them)."""

_GETTER_PARAMS: dict[str, tuple[str, ...]] = {
    "vm_command_line": ("command",),
    "vm_command_error": ("command",),
    "rule": ("rules",),
    "list_directory": ("path",),
    "vm_file": ("path", "dest"),
    "cloud_file": ("path", "dest"),
    "cache_file": ("path",),
}
"""Getter type -> the keys its OSWorld getter reads without a default."""


@dataclass(frozen=True)
class SetupStep:
    """One ``config`` / ``postconfig`` entry: ``_<type>_setup(**parameters)`` in OSWorld."""

    type: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Getter:
    """A ``result`` / ``expected`` entry: getter ``type`` and the rest of its dict."""

    type: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Evaluator:
    """A task's evaluator, every list aligned with ``funcs`` (``len`` equal).

    ``results[i]`` / ``expected[i]`` are None where the file gives none (the metric is then
    called without that value); ``infeasible`` tasks have ``funcs == ("infeasible",)``;
    ``empty`` ones (``func: ""``) have no funcs at all and are never scored.
    """

    funcs: tuple[str, ...]
    conj: Literal["and", "or"]
    results: tuple[Getter | None, ...]
    expected: tuple[Getter | None, ...]
    options: tuple[dict[str, Any], ...]
    postconfig: tuple[SetupStep, ...]
    infeasible: bool
    empty: bool

    @property
    def unavailable(self) -> str | None:
        """Why this evaluator cannot run (a getter OSWorld never defined), else None."""
        for g in (*self.results, *self.expected):
            if g is not None and g.type in UNAVAILABLE_GETTERS:
                return f"getter {g.type!r}: {UNAVAILABLE_GETTERS[g.type]}"
        return None


@dataclass(frozen=True)
class OSWorldTask:
    """One OSWorld task; ``path`` is the file it came from (or the ``where`` label)."""

    id: str
    instruction: str
    snapshot: str
    source: str
    config: tuple[SetupStep, ...]
    related_apps: tuple[str, ...]
    evaluator: Evaluator
    path: str


def _known(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


def _step(obj: Any, where: str, field: str) -> SetupStep:
    if not isinstance(obj, Mapping):
        raise TaskFileError(where, field, "must be an object with type and parameters")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in SETUP_STEPS:
        raise TaskFileError(
            where, f"{field}.type", f"unknown setup step {kind!r}; known: {_known(SETUP_STEPS)}"
        )
    params = obj.get("parameters")
    if not isinstance(params, Mapping):
        raise TaskFileError(where, f"{field}.parameters", "required (an object)")
    required, optional = SETUP_STEPS[kind]
    for name, check in required.items():
        if name not in params:
            raise TaskFileError(where, f"{field}.parameters.{name}", "required")
        problem = check(params[name])
        if problem:
            sub = ""
            if problem.startswith("["):  # an entry of a list: "[i].key: problem"
                sub, _, problem = problem.partition(": ")
            raise TaskFileError(where, f"{field}.parameters.{name}{sub}", problem)
    for name in params if optional is not None else ():
        if name not in required and name not in optional:
            allowed = f"unexpected; {kind} takes {_known([*required, *optional])}"
            raise TaskFileError(where, f"{field}.parameters.{name}", allowed)
    return SetupStep(kind, copy.deepcopy(dict(params)))


def _steps(obj: Any, where: str, field: str) -> tuple[SetupStep, ...]:
    if obj is None:
        return ()
    if not isinstance(obj, list):
        raise TaskFileError(where, field, "must be a list of setup steps")
    return tuple(_step(s, where, f"{field}[{i}]") for i, s in enumerate(obj))


def _getter(obj: Any, where: str, field: str, optional: bool) -> Getter | None:
    if not obj:  # None, {} (OSWorld: ``getter if exp else None``)
        if optional:
            return None
        raise TaskFileError(where, field, "required (an object with a getter type)")
    if not isinstance(obj, Mapping):
        raise TaskFileError(where, field, "must be an object with a getter type")
    kind = obj.get("type")
    if not isinstance(kind, str) or (kind not in GETTER_TYPES and kind not in UNAVAILABLE_GETTERS):
        raise TaskFileError(
            where, f"{field}.type", f"unknown getter {kind!r}; known: {_known(GETTER_TYPES)}"
        )
    for name in _GETTER_PARAMS.get(kind, ()):
        if name not in obj:
            raise TaskFileError(where, f"{field}.{name}", f"required by getter {kind}")
    params = {k: copy.deepcopy(v) for k, v in obj.items() if k != "type"}
    return Getter(kind, params)


def _aligned(obj: Any, n: int, listed: bool, where: str, field: str) -> list[Any]:
    """``obj`` as a list of ``n`` entries: a list must match ``func``'s; else broadcast."""
    if isinstance(obj, list):
        if not listed:
            raise TaskFileError(where, field, "must be an object when func is a single name")
        if len(obj) != n:
            raise TaskFileError(where, field, f"has {len(obj)} entries but func has {n}")
        return obj
    return [obj] * n


def _evaluator(obj: Any, where: str) -> Evaluator:
    if not isinstance(obj, Mapping):
        raise TaskFileError(where, "evaluator", "required (an object)")
    conj = obj.get("conj", "and")
    if conj not in ("and", "or"):
        raise TaskFileError(where, "evaluator.conj", f"must be 'and' or 'or', got {conj!r}")
    post = _steps(obj.get("postconfig"), where, "evaluator.postconfig")
    func = obj.get("func")
    if func == "":
        return Evaluator((), conj, (), (), (), post, infeasible=False, empty=True)
    listed = isinstance(func, list)
    funcs = func if listed else [func]
    if not funcs:
        raise TaskFileError(where, "evaluator.func", "must not be an empty list")
    for i, f in enumerate(funcs):
        name = f"evaluator.func[{i}]" if listed else "evaluator.func"
        if not isinstance(f, str) or f not in OSWORLD_METRICS:
            known = _known(OSWORLD_METRICS)
            raise TaskFileError(where, name, f"unknown metric {f!r}; known: {known}")
        if listed and f == "infeasible":
            raise TaskFileError(where, name, "'infeasible' must be the only func")
    infeasible = func == "infeasible"
    n = len(funcs)
    res = _aligned(obj.get("result"), n, listed, where, "evaluator.result")
    exp = _aligned(obj.get("expected"), n, listed, where, "evaluator.expected")
    opt = _aligned(obj.get("options"), n, listed, where, "evaluator.options")

    def sub(key: str, i: int) -> str:
        return f"evaluator.{key}[{i}]" if isinstance(obj.get(key), list) else f"evaluator.{key}"

    results = tuple(_getter(r, where, sub("result", i), infeasible) for i, r in enumerate(res))
    expected = tuple(_getter(e, where, sub("expected", i), True) for i, e in enumerate(exp))
    options = []
    for i, o in enumerate(opt):
        if o is not None and not isinstance(o, Mapping):
            raise TaskFileError(where, sub("options", i), "must be an object")
        options.append(copy.deepcopy(dict(o or {})))
    return Evaluator(
        tuple(funcs), conj, results, expected, tuple(options), post, infeasible, empty=False
    )


def _text(obj: Mapping[str, Any], key: str, where: str, required: bool) -> str:
    value = obj.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise TaskFileError(where, key, "required (a non-empty string)")
    return value


def _source(value: Any, where: str) -> str:
    """``source``: a string, or (as in a few OSWorld files) a list of URLs, joined by spaces."""
    if isinstance(value, list) and not _str_list(value):
        return " ".join(value)
    if not isinstance(value, str):
        raise TaskFileError(where, "source", "must be a string or a list of strings")
    return value


def parse_task(obj: dict[str, Any], where: str) -> OSWorldTask:
    """Validate one task mapping; ``where`` names its origin in error messages.

    Raises:
        TaskFileError: naming ``where`` and the dotted field path of the first problem.
    """
    if not isinstance(obj, Mapping):
        raise TaskFileError(where, "", f"a task must be a JSON object, got {type(obj).__name__}")
    apps = obj.get("related_apps", [])
    if _str_list(apps):
        raise TaskFileError(where, "related_apps", "must be a list of strings")
    return OSWorldTask(
        id=_text(obj, "id", where, required=True),
        instruction=_text(obj, "instruction", where, required=True),
        snapshot=_text(obj, "snapshot", where, required=False),
        source=_source(obj.get("source", ""), where),
        config=_steps(obj.get("config"), where, "config"),
        related_apps=tuple(apps),
        evaluator=_evaluator(obj.get("evaluator"), where),
        path=where,
    )


def load_task(path: str | os.PathLike[str]) -> OSWorldTask:
    """Read and validate one task file (UTF-8 JSON).

    Raises:
        TaskFileError: the file is missing, not UTF-8 JSON, or breaks the schema.
    """
    where = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as err:
        raise TaskFileError(where, "", f"cannot read: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise TaskFileError(where, "", f"not UTF-8: byte {err.start}") from err
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        msg = f"not valid JSON: line {err.lineno} column {err.colno}: {err.msg}"
        raise TaskFileError(where, "", msg) from err
    return parse_task(obj, where)


def load_tasks(
    folder_or_files: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> list[OSWorldTask]:
    """Load a folder's ``*.json`` task files, one file, or an iterable of files; sorted by id.

    Raises:
        TaskFileError: a file is invalid, a folder holds no task file, or two files share an id.
    """
    if isinstance(folder_or_files, str | os.PathLike):
        root = Path(folder_or_files)
        if root.is_dir():
            paths = sorted(root.glob("*.json"))
            if not paths:
                raise TaskFileError(str(root), "", "folder holds no *.json task files")
        else:
            paths = [root]
    else:
        paths = [Path(p) for p in folder_or_files]
    seen: dict[str, str] = {}
    tasks = []
    for p in paths:
        task = load_task(p)
        if task.id in seen:
            raise TaskFileError(str(p), "id", f"duplicate id {task.id!r} (also in {seen[task.id]})")
        seen[task.id] = str(p)
        tasks.append(task)
    return sorted(tasks, key=lambda t: t.id)
