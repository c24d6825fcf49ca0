"""Sandbox: read-only system, private home, path mapping, the sudo stand-in, timeouts, and
that close() kills every sandboxed process and deletes the temp home. Needs bwrap only."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import psutil
import pytest

from sim.desktop import CommandTimeout, Sandbox
from sim.desktop.display import _bwrap_problem

BWRAP = shutil.which("bwrap")
PROBLEM = "bwrap not found on PATH: apt-get install -y bubblewrap" if not BWRAP else None
PROBLEM = PROBLEM or _bwrap_problem(BWRAP)
pytestmark = pytest.mark.skipif(bool(PROBLEM), reason=f"no sandbox: {PROBLEM}")


@pytest.fixture(scope="module")
def sb():
    box = Sandbox(None)
    yield box
    box.close()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_system_is_read_only_and_tmp_is_private(sb):
    for target in ("/etc/vlagent_probe", "/usr/vlagent_probe"):
        r = sb.run(["touch", target])
        assert r.returncode != 0 and "Read-only" in r.stderr
        assert not Path(target).exists()
    name = f"/tmp/vlagent_probe_{uuid.uuid4().hex}"
    assert sb.run(["touch", name]).returncode == 0  # the sandbox's own /tmp ...
    assert not Path(name).exists()  # ... is not the host's


def test_home_layout_and_environment(sb):
    r = sb.run(["sh", "-c", 'echo "$HOME $USER $(pwd)"; ls ~'])
    assert r.returncode == 0
    first, *listing = r.stdout.splitlines()
    assert first == "/home/user user /home/user"
    assert {"Desktop", "Documents", "Downloads"} <= set(listing)
    for folder in ("/root", "/run"):  # host secrets and sockets are hidden
        assert sb.run(["ls", "-A", folder]).stdout == ""


def test_host_path_maps_home_and_refuses_escapes(sb):
    assert sb.run(["sh", "-c", "echo hi > ~/x.txt"]).returncode == 0
    host = sb.host_path("~/x.txt")
    assert host.read_text() == "hi\n"
    assert sb.host_path("/home/user/x.txt") == host == sb.host_path("x.txt")
    assert sb.host_path("~") == sb.home.resolve()
    assert sb.run(["ln", "-s", "/etc", "etc_link"]).returncode == 0
    for bad in ("../../etc", "~/../../etc/passwd", "/etc/passwd", "~root/x", "etc_link/passwd"):
        with pytest.raises(ValueError, match="sandbox home"):
            sb.host_path(bad)


def test_osworld_sudo_line_works(sb):
    line = "echo 'password' | sudo -S touch ~/Desktop/todo.txt && sudo mkdir ~/Desktop/done"
    r = sb.run(line, shell=True)
    assert r.returncode == 0, r.stderr
    assert sb.host_path("~/Desktop/todo.txt").is_file()
    assert sb.host_path("~/Desktop/done").is_dir()
    # -S eats exactly the password line; the rest of stdin reaches the command
    r = sb.run(["sudo", "-S", "-E", "cat"], input="password\nrest\n")
    assert r.stdout == "rest\n"
    assert sb.run(["sudo", "-u", "root", "env", "FOO=1", "sh", "-c", "echo $FOO"]).stdout == "1\n"


def test_python_and_no_network(sb):
    for exe in ("python", "python3"):
        assert sb.run([exe, "-c", "print(6 * 7)"]).stdout == "42\n"
    code = "import socket; print(sorted(n for _, n in socket.if_nameindex()))"
    assert sb.run(["python3", "-c", code]).stdout.strip() == "['lo']"


def test_string_commands_need_shell_true(sb):
    with pytest.raises(ValueError, match="shell=True"):
        sb.run("ls; rm -rf ~")
    with pytest.raises(ValueError, match="one string"):
        sb.run(["ls"], shell=True)


def test_timeout_kills_the_command(sb):
    before = _descendants()
    nap = f"100.{uuid.uuid4().int % 10**6}"  # a sleep no one else runs
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match=f"sleep {nap}"):
        sb.run(["sh", "-c", f"setsid sleep {nap} & sleep {nap}"], timeout=1.0)
    assert time.monotonic() - start < 3.0
    assert _descendants() == before
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", nap]]
    assert all(_gone(p.pid) for p in left)


def test_close_kills_spawned_apps_and_removes_home(tmp_path):
    before = _descendants()
    box = Sandbox(None)
    root, home = box._state.root, box.home
    box.spawn(["sleep", "1000"])
    box.spawn(["sh", "-c", "setsid sleep 1000 & sleep 1000"])  # escapes its process group
    time.sleep(0.3)
    started = _descendants() - before
    assert len(started) >= 6  # bwrap, its init and the command, per spawn
    box.close()
    box.close()
    assert _descendants() == before
    assert all(_gone(pid) for pid in started)  # the setsid'd sleep too, wherever it went
    assert not root.exists() and not home.exists()
    with Sandbox(None, home=tmp_path) as kept:  # a given home is used and kept
        kept.run(["touch", "mine"])
    assert (tmp_path / "mine").exists()
