"""The non-editable install carries every package and the packaged recipes: `pip install .`
(here without dependencies, into a folder) then `vlagent train --config grpo` from elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_then_packaged_recipe_from_another_directory(tmp_path):
    # Build from a copy of the checkout's files, so no build/ folder is left in the repository
    # (and no stale one there can leak removed modules into the wheel).
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    src = tmp_path / "src"
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--target",
            str(target),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    assert (target / "vlagent" / "configs" / "grpo.yaml").is_file()
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlagent.cli",
            "train",
            "--config",
            "grpo",
            "grpo.steps=1",
            "grpo.prompts_per_step=1",
            "grpo.group_size=2",
            "grpo.max_new_tokens=4",
            "eval.every=0",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.threads=1",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"steps": 1' in out.stdout
    import_path = subprocess.run(
        [sys.executable, "-c", "import vlagent; print(vlagent.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert import_path.startswith(str(target))  # the installed copy ran, not the checkout
    assert (work / "runs" / "grpo" / "final").is_dir()
