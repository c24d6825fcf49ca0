"""The exported ``final/`` folder is a plain transformers checkpoint: a fresh interpreter that
imports only transformers loads it and its processor, renders the bundled chat template and
greedy-decodes the tokens vlagent's own rollout engine produced; the folder has the release
layout vLLM expects (checked statically: no vLLM is installed here, none is run); it carries a
model card; a failed hub upload is a warning and the run's result comes back.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors import safe_open

from vlagent.batching import forbidden_token_ids
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment
from vlagent.train.checkpoint import latest_checkpoint
from vlagent.train.common import export_final
from vlagent.train.outputs import read_metrics
from vlagent.train.sft import run_sft
from vlagent.worlds import make_world

# The architecture class vLLM registers for each family, and the weight-name prefixes of the
# family's Hugging Face releases (Qwen2/2.5-VL: model.* + visual.*; Qwen3-VL: model.language_model.*
# + model.visual.*).
ARCH = {
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
}
PREFIXES = {
    "qwen2_vl": ("model.", "visual.", "lm_head."),
    "qwen2_5_vl": ("model.", "visual.", "lm_head."),
    "qwen3_vl": ("model.language_model.", "model.visual.", "lm_head."),
}
NEW_TOKENS = 12

PLAIN_TRANSFORMERS = textwrap.dedent(
    """
    import json, sys
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    final, job = sys.argv[1], json.load(open(sys.argv[2]))
    model, info = AutoModelForImageTextToText.from_pretrained(
        final, local_files_only=True, output_loading_info=True
    )
    processor = AutoProcessor.from_pretrained(final, local_files_only=True)
    messages = [
        {"role": "user", "content": [
            {"type": "image", "image": job["image"]},
            {"type": "text", "text": job["instruction"]},
        ]},
    ]
    if job["system"] is not None:
        system = {"role": "system", "content": [{"type": "text", "text": job["system"]}]}
        messages.insert(0, system)
    inputs = processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        out = model.generate(
            **inputs, max_new_tokens=job["max_new"], do_sample=False,
            output_scores=True, return_dict_in_generate=True,
        )
    prompt = inputs["input_ids"][0].tolist()
    new = out.sequences[0, len(prompt):]
    scores = torch.stack(out.scores)[:, 0].float()  # [T, V] raw logits (greedy, no processors)
    scores[:, job["forbidden"]] = float("-inf")  # the vision ids vlagent's sampler never emits
    logp = torch.log_softmax(scores, dim=-1)[torch.arange(len(new)), new]
    print(json.dumps({
        "prompt": prompt,
        "new": new.tolist(),
        "logp": logp.tolist(),
        "loading_info": {k: sorted(map(str, v)) for k, v in info.items()},
        "eos": model.generation_config.eos_token_id,
        "vlagent_imported": any(m == "vlagent" or m.startswith("vlagent.") for m in sys.modules),
    }))
    """
)


def _cfg(out, model_dir, extra=()):
    return load_config(
        None,
        [
            f"model.path={model_dir}",
            "model.build_tiny=false",
            f"run.out_dir={out}",
            "recipe=sft",
            "sft.steps=3",
            "sft.num_demos=2",
            "sft.batch_size=2",
            "sft.lr=1e-5",
            "eval.every=3",
            "eval.monitor_screens=2",
            "eval.max_new_tokens=8",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
            *extra,
        ],
    )


def test_final_folder_loads_and_generates_without_vlagent(tmp_path, tiny_dir):
    cfg = _cfg(tmp_path / "run", tiny_dir)
    final = run_sft(cfg).final_dir

    # vlagent's side: the world's prompt for a val screen, encoded as training encoded it (the
    # starting checkpoint's processor), and the exported policy's greedy turn by the rollout engine
    base = load_policy(tiny_dir)
    world = make_world(cfg, base)
    screen = world.sample(world.task_ids("val", 0, 1)[0])
    system = world.adapter().system
    prompt = encode_prompt(base.processor, [screen.image], screen.instruction, system)
    policy = load_policy(final)
    ((ids, logps, _),) = sample_turns(policy, [Segment(prompt)], [NEW_TOKENS], greedy=True)
    assert len(ids) >= 2

    image = tmp_path / "screen.png"  # lossless: the same pixels on both sides
    Image.fromarray(np.asarray(screen.image, dtype=np.uint8)).save(image)
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "system": system,
                "instruction": screen.instruction,
                "image": str(image),
                "max_new": NEW_TOKENS,
                "forbidden": forbidden_token_ids(policy.tokenizer),
            }
        )
    )
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN_TRANSFORMERS, final, str(job)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["vlagent_imported"] is False
    assert all(not v for v in got["loading_info"].values()), got["loading_info"]
    assert got["prompt"] == prompt.input_ids.tolist()  # the bundled chat template = training's
    assert got["new"] == ids, (got["new"], ids)
    assert got["logp"] == pytest.approx(logps, abs=1e-4)

    # the exported weights are the trained policy's (Run.finish checkpoints it just before)
    ckpt = latest_checkpoint(tmp_path / "run", "sft")
    trained = load_policy(ckpt).model.state_dict()
    for name, tensor in policy.model.state_dict().items():
        assert torch.equal(tensor, trained[name]), name

    # the model card sits in the same folder, with this run's facts and last validation numbers
    card = (tmp_path / "run" / "final" / "README.md").read_text()
    (last,) = [r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if r["step"] == 3]
    for text in (
        "library_name: transformers",
        "| family | qwen3_vl |",
        "| recipe | sft, phase `sft` |",
        "| steps | 3 (stopped by: steps) |",
        "| world | grounding",
        "Greedy validation at step 3",
        f"| success_rate | {last['val/success_rate']:.4g} |",
        f"| format_rate | {last['val/format_rate']:.4g} |",
    ):
        assert text in card, text
    assert "base_model:" not in card  # a local folder is no hub id


def _weights(folder) -> list[str]:
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        return sorted(f.keys())


@pytest.mark.parametrize("family", list(ARCH))
def test_final_folder_has_the_release_layout(tmp_path, tiny_dirs, family):
    """Static vLLM check: architecture class, dtype, HF weight names, generation ids."""
    policy = load_policy(tiny_dirs[family])
    gen = policy.model.generation_config
    gen.pad_token_id, gen.eos_token_id = None, None  # a checkpoint that lacks them
    policy.model = torch.compile(policy.model)  # lazy: wraps, compiles nothing
    final = export_final(policy, tmp_path)
    config = json.loads((final / "config.json").read_text())
    assert config["architectures"] == [ARCH[family]] and config["model_type"] == family
    assert config.get("dtype", config.get("torch_dtype")) == "float32"
    names = _weights(final)
    assert names == _weights(tiny_dirs[family])
    assert all(n.startswith(PREFIXES[family]) for n in names), names[:5]
    assert not [n for n in names if "_orig_mod" in n or n.startswith("module.") or "lora" in n]
    gen = json.loads((final / "generation_config.json").read_text())
    tok = policy.tokenizer
    assert gen["eos_token_id"] == tok.eos_token_id and gen["pad_token_id"] == tok.pad_token_id
    for name in ("tokenizer.json", "tokenizer_config.json", "processor_config.json"):
        assert (final / name).is_file(), name
    assert "<|im_start|>" in (final / "chat_template.jinja").read_text()


def test_lora_policy_exports_merged_release_names(tmp_path, tiny_dir):
    pytest.importorskip("peft")
    from vlagent.algo_config import LoRAConfig
    from vlagent.models.lora import wrap_lora

    policy = load_policy(tiny_dir)
    policy.model = wrap_lora(policy.model, LoRAConfig(enabled=True, r=4))
    final = export_final(policy, tmp_path)
    assert _weights(final) == _weights(tiny_dir)


def test_failed_push_to_hub_is_a_warning_and_the_run_returns(
    tmp_path, tiny_dir, monkeypatch, caplog
):
    """No mock: the real ``HfApi`` talks to a hub endpoint where nothing listens (127.0.0.1:9),
    so the upload fails the way an offline machine does (and can never reach the real hub).
    The success path (a real upload) needs network and a token and is not tested here."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    cfg = _cfg(
        tmp_path / "run", tiny_dir, ["sft.steps=1", "eval.every=0", "run.push_to_hub=me/tiny"]
    )
    with caplog.at_level(logging.WARNING, logger="vlagent.train.export"):
        result = run_sft(cfg)
    assert result.steps == 1 and (tmp_path / "run" / "final" / "model.safetensors").is_file()
    (warning,) = [r.getMessage() for r in caplog.records if "push_to_hub" in r.getMessage()]
    assert "'me/tiny'" in warning and result.final_dir in warning
    assert "No validation ran" in (tmp_path / "run" / "final" / "README.md").read_text()


def test_push_to_hub_must_be_a_repo_id():
    from vlagent.errors import ConfigError

    with pytest.raises(ConfigError, match=r"run\.push_to_hub: 'my model' is not a hub repo id"):
        load_config(None, ["run.push_to_hub=my model"])
