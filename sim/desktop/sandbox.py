"""Run task commands and desktop apps inside a bubblewrap sandbox with a throw-away home.

Inside the sandbox the whole system is read-only (``--ro-bind / /``), ``/home/user`` is a
fresh host temp folder (``HOME=/home/user``, ``USER=user``, with ``Desktop``, ``Documents``
and ``Downloads``), ``/tmp``, ``/run``, ``/root`` and the rest of ``/home`` are empty tmpfs,
the network is off unless asked for, and the X socket folder is bound read-only so apps reach
the :class:`~sim.desktop.display.XDisplay`. Every command gets its own pid namespace
(``--unshare-pid``) and ``--die-with-parent``: killing the sandbox's init kills every process
in it, and the init dies with bwrap or with this Python process, so nothing outlives
:meth:`Sandbox.close`. The sandboxed user is the caller's uid without capabilities (root here,
yet unable to write outside its home). A ``sudo`` stand-in and ``python``/``python3`` sit on
its PATH.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

import psutil

from sim.desktop.display import X11_UNIX, XDisplay, require_binary, stop_group
from sim.desktop.errors import CommandTimeout, DesktopError

SANDBOX_HOME = "/home/user"
SHIM_DIR = "/tmp/.sandbox-bin"
DEFAULT_DIRS = ("Desktop", "Documents", "Downloads")
PATH = f"{SHIM_DIR}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HIDDEN = ("/home", "/root", "/run", "/tmp")  # empty inside the sandbox

# A stand-in for sudo: the sandbox has one user, so run the command as that user. With -S it
# reads (and discards) one password line from stdin first, as ``echo pw | sudo -S cmd`` expects.
SUDO_SHIM = r"""#!/bin/sh
read_password=0
login=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        -u|-g|-p|-C|-D|-r|-t|-T|-U|--user|--group|--prompt|--close-from|--chdir|--role|--type|--command-timeout|--other-user)
            shift; [ "$#" -gt 0 ] && shift ;;
        --stdin) read_password=1; shift ;;
        --login|--shell) login=1; shift ;;
        --*) shift ;;
        -*) case "$1" in *S*) read_password=1 ;; esac
            case "$1" in *[is]*) login=1 ;; esac
            case "$1" in -?*[ugpCDrtTU]) shift ;; esac
            shift ;;
        *) break ;;
    esac
done
if [ "$read_password" = 1 ]; then
    [ -t 0 ] && printf '[sudo] password for user: ' >&2
    IFS= read -r _password || true
fi
if [ "$#" -eq 0 ]; then
    [ "$login" = 1 ] && exec /bin/sh
    echo "usage: sudo [-S] command [args...]" >&2
    exit 1
fi
exec env -- "$@"
"""


def _python_for_sandbox() -> str | None:
    """A Python interpreter visible inside the sandbox (not under a hidden folder)."""
    candidates = ["/usr/bin/python3", "/usr/local/bin/python3", os.path.realpath(sys.executable)]
    for path in candidates:
        hidden = any(path == h or path.startswith(h + "/") for h in HIDDEN)
        if os.access(path, os.X_OK) and not hidden:
            return path
    return None


def kill_sandboxed(proc: subprocess.Popen, grace: float = 1.0) -> None:
    """Kill a bwrap process started by :class:`Sandbox` and everything inside it.

    SIGKILL to the sandbox's init (bwrap's child, pid 1 of the namespace) makes the kernel
    kill every process of the namespace; bwrap then exits and reaps it. Its process group is
    killed last, for anything left."""
    if proc.poll() is None:
        try:
            inits = psutil.Process(proc.pid).children()
        except psutil.Error:
            inits = []
        for init in inits:
            with contextlib.suppress(psutil.Error):
                init.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    stop_group(proc, grace=0.5)


class _State:
    """What :meth:`Sandbox.close` must undo; kept apart so a finalizer can run it at exit."""

    def __init__(self, root: Path) -> None:
        self.root: Path | None = root
        self.procs: list[subprocess.Popen] = []
        self.logs: dict[int, Path] = {}
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            procs, self.procs = self.procs, []
        for proc in procs:
            kill_sandboxed(proc)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


class Sandbox:
    """A bubblewrap sandbox with its own home, for one episode.

    ``home=None`` makes a fresh temp home (deleted by :meth:`close`); a given ``home`` folder is
    used as is and kept. ``display=None`` runs without X. ``network`` keeps the host network
    (off by default: ``--unshare-net``).
    """

    def __init__(
        self, display: XDisplay | None, home: Path | None = None, network: bool = False
    ) -> None:
        self._bwrap = require_binary("bwrap")
        self.display = display
        self.network = network
        root = Path(tempfile.mkdtemp(prefix="vlagent-sandbox-"))
        self._state = _State(root)
        self._finalizer = weakref.finalize(self, self._state.close)
        self._shims = root / "bin"
        self._shims.mkdir()
        (root / "logs").mkdir()
        self._write_shims()
        if home is None:
            self.home = root / "home"
            self.home.mkdir(mode=0o700)
        else:
            self.home = Path(home).resolve()
            if not self.home.is_dir():
                self.close()
                raise ValueError(f"sandbox home {home} is not a folder")
        for name in DEFAULT_DIRS:
            (self.home / name).mkdir(exist_ok=True)

    def _write_shims(self) -> None:
        sudo = self._shims / "sudo"
        sudo.write_text(SUDO_SHIM)
        sudo.chmod(0o755)
        python = _python_for_sandbox()
        if python is not None:
            for name in ("python", "python3"):
                (self._shims / name).symlink_to(python)

    # -- argv -------------------------------------------------------------------------------
    def bwrap_argv(self, argv: Sequence[str]) -> list[str]:
        """The full bwrap command line that runs ``argv`` inside this sandbox."""
        if self._state.root is None:
            raise DesktopError("the sandbox is closed")
        out = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for folder in HIDDEN:
            out += ["--tmpfs", folder]
        out += ["--bind", str(self.home), SANDBOX_HOME, "--ro-bind", str(self._shims), SHIM_DIR]
        env = {
            "HOME": SANDBOX_HOME,
            "USER": "user",
            "LOGNAME": "user",
            "PATH": PATH,
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh",
            "TMPDIR": "/tmp",
            "TERM": "xterm",
        }
        if self.display is not None:
            if X11_UNIX.is_dir():
                out += ["--ro-bind", str(X11_UNIX), str(X11_UNIX)]
            env["DISPLAY"] = self.display.name
        out += ["--unshare-pid", "--die-with-parent", "--new-session"]
        if not self.network:
            out.append("--unshare-net")
        out += ["--chdir", SANDBOX_HOME, "--clearenv"]
        for key, value in env.items():
            out += ["--setenv", key, value]
        return [*out, "--", *argv]

    @staticmethod
    def _argv(command: str | Sequence[str], shell: bool) -> list[str]:
        if shell:
            if not isinstance(command, str):
                raise ValueError("shell=True takes the command as one string")
            return ["/bin/sh", "-c", command]
        if isinstance(command, str):
            raise ValueError(
                f"command {command[:80]!r} is a string: pass an argv list, or shell=True for a "
                "trusted task-file setup line"
            )
        argv = [str(a) for a in command]
        if not argv:
            raise ValueError("empty command")
        return argv

    # -- running ----------------------------------------------------------------------------
    def run(
        self,
        command: str | Sequence[str],
        shell: bool = False,
        timeout: float = 30.0,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command to completion inside the sandbox and capture its text output.

        ``command`` is an argv list; a single string is allowed only with ``shell=True``, run
        by ``/bin/sh -c`` inside the sandbox. ``shell=True`` is for TRUSTED task-file setup
        lines (``echo 'password' | sudo -S mkdir ~/Desktop/d``) only: never pass
        model-produced text with it. ``input`` is fed to stdin (else stdin is empty).
        Returns a CompletedProcess whose ``args`` is the in-sandbox argv; a non-zero exit is
        not an error. Past ``timeout`` seconds every process of the command is killed and
        :class:`CommandTimeout` is raised.
        """
        argv = self._argv(command, shell)
        proc = subprocess.Popen(
            self.bwrap_argv(argv),
            start_new_session=True,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        with self._state.lock:
            self._state.procs.append(proc)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            kill_sandboxed(proc)
            with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
                proc.communicate(timeout=2.0)
            shown = command if isinstance(command, str) else " ".join(argv)
            raise CommandTimeout(
                f"sandbox command {shown[:200]!r} ran past {timeout} s and was killed"
            ) from exc
        finally:
            with self._state.lock, contextlib.suppress(ValueError):
                self._state.procs.remove(proc)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def spawn(self, argv: Sequence[str]) -> subprocess.Popen:
        """Start ``argv`` (an app) inside the sandbox, in its own process group, without
        waiting. Its stdout and stderr go to a log file (see :meth:`log_text`); it is killed
        by :meth:`close`."""
        argv = self._argv(argv, shell=False)
        root = self._state.root
        if root is None:
            raise DesktopError("the sandbox is closed")
        with self._state.lock:
            log_path = root / "logs" / f"{len(self._state.logs):03d}-{Path(argv[0]).name}.log"
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    self.bwrap_argv(argv),
                    start_new_session=True,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            self._state.procs.append(proc)
            self._state.logs[proc.pid] = log_path
        return proc

    def log_text(self, proc: subprocess.Popen, limit: int = 4000) -> str:
        """The last ``limit`` characters a spawned app wrote to stdout / stderr."""
        path = self._state.logs.get(proc.pid)
        if path is None or not path.exists():
            return ""
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]

    @property
    def processes(self) -> list[subprocess.Popen]:
        """The bwrap processes started by :meth:`spawn` or running :meth:`run` right now."""
        with self._state.lock:
            return list(self._state.procs)

    # -- files ------------------------------------------------------------------------------
    def host_path(self, path: str | os.PathLike[str]) -> Path:
        """The host path of a file in the sandbox home.

        Accepts ``~``, ``~/x``, ``/home/user/x`` and relative paths (relative to the home).
        Raises ``ValueError`` for any other absolute path and for paths that leave the home
        once ``..`` and symlinks are resolved on the host (``../../etc``).
        """
        raw = os.fspath(path)
        if not isinstance(raw, str) or not raw:
            raise ValueError(f"path must be a non-empty string, got {path!r}")
        if raw in ("~", SANDBOX_HOME):
            rel = ""
        elif raw.startswith("~/"):
            rel = raw[2:]
        elif raw.startswith(SANDBOX_HOME + "/"):
            rel = raw[len(SANDBOX_HOME) + 1 :]
        elif raw.startswith(("/", "~")):
            raise ValueError(f"path {raw!r} is outside the sandbox home {SANDBOX_HOME}")
        else:
            rel = raw
        home = self.home.resolve()
        target = (home / rel).resolve()
        if target != home and home not in target.parents:
            raise ValueError(f"path {raw!r} escapes the sandbox home {SANDBOX_HOME}")
        return target

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._state.root is None

    def close(self) -> None:
        """Kill every spawned app and running command (their whole pid namespaces), then
        delete the temp folder (the home too, unless it was given). Idempotent."""
        self._state.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox(home={self.home}, display={self.display!r}, closed={self.closed})"
