"""The README's "Your own data" example runs as written (fewer SFT steps): it writes a user's
JSONL of 20 screenshots with pixel boxes and `vlagent train` trains on it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- own-data-example:start -->\n```bash\n(.*?)```\n<!-- own-data-example:end -->",
        text,
        re.DOTALL,
    )
    assert block, "README lost its own-data example markers"
    return block.group(1)


def test_readme_own_data_example_trains(tmp_path, tiny_dir):
    script = _example()
    assert "vlagent train --config my_data/sft.yaml" in script
    # same commands, a short run on the session's tiny model, this interpreter's vlagent
    script = script.replace("sft: {steps: 100}", "sft: {steps: 3, batch_size: 4}")
    script = script.replace(
        "vlagent train --config my_data/sft.yaml",
        f"{sys.executable} -m vlagent.cli train --config my_data/sft.yaml "
        f"model.path={tiny_dir} model.build_tiny=false eval.every=0 eval.num_screens=4 "
        "run.progress=false run.samples_every=0",
    )
    script = script.replace("python - <<", f"{sys.executable} - <<")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(x) for x in (tmp_path / "my_data" / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 20
    run = tmp_path / "runs" / "my_data_sft"
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(m.get("phase") == "sft" for m in metrics)
    assert (run / "final" / "config.json").is_file()
