"""JSON schemas of the result files (checked by ``tests/bench``; handy for anyone reading them)."""

from __future__ import annotations

_NUM = {"type": ["number", "null"]}
_STATS = {
    "type": "object",
    "required": ["median", "min", "max"],
    "properties": {"median": _NUM, "min": _NUM, "max": _NUM},
}
_MACHINE = {
    "type": "object",
    "required": ["cpu_model", "logical_cores", "usable_cores", "ram_gb", "versions"],
    "properties": {
        "versions": {
            "type": "object",
            "required": ["torch", "transformers", "trl"],
        }
    },
}
_BUCKETS = {
    "type": "object",
    "required": ["generate", "logprob", "update", "other"],
    "additionalProperties": {"type": "number"},
}
_THROUGHPUT_REPEAT = {
    "type": "object",
    "required": [
        "system",
        "samples_per_s",
        "step_seconds",
        "steps_measured",
        "completions",
        "wall_seconds",
        "buckets",
        "peak_rss_mb",
        "maxrss_mb",
        "torch_threads",
        "process_seconds",
    ],
    "properties": {
        "system": {"enum": ["ours", "trl"]},
        "samples_per_s": {"type": "number", "exclusiveMinimum": 0},
        "buckets": _BUCKETS,
        "peak_rss_mb": {"type": "number", "exclusiveMinimum": 0},
    },
}
_SYSTEM_THROUGHPUT = {
    "type": "object",
    "required": ["repeats", "summary"],
    "properties": {
        "repeats": {"type": "array", "items": _THROUGHPUT_REPEAT, "minItems": 1},
        "summary": {
            "type": "object",
            "required": [
                "samples_per_s",
                "step_seconds",
                "generate_s",
                "logprob_s",
                "update_s",
                "other_s",
                "peak_rss_mb",
            ],
            "additionalProperties": _STATS,
        },
    },
}
_THRESHOLD_RUN = {
    "type": "object",
    "required": ["system", "reached", "seconds", "steps", "best_accuracy", "curve"],
    "properties": {
        "reached": {"type": "boolean"},
        "seconds": _NUM,
        "curve": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["step", "accuracy", "train_seconds"],
            },
        },
    },
}

GRPO_VS_TRL = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "schema_version",
        "kind",
        "label",
        "command",
        "created",
        "complete",
        "machine",
        "config",
        "sft_start",
        "throughput",
        "time_to_threshold",
        "checks",
    ],
    "properties": {
        "kind": {"const": "grpo_vs_trl"},
        "complete": {"type": "boolean"},
        "machine": _MACHINE,
        "config": {
            "type": "object",
            "required": ["model", "job", "sft_start", "threshold", "trl_grpo_config"],
        },
        "sft_start": {
            "type": "object",
            "required": ["path", "steps", "val_accuracy", "val_screens"],
        },
        "throughput": {
            "type": "object",
            "properties": {"ours": _SYSTEM_THROUGHPUT, "trl": _SYSTEM_THROUGHPUT},
        },
        "speedup": {"type": "number", "exclusiveMinimum": 0},
        "speedup_range": {"type": "array", "items": {"type": "number"}, "minItems": 2},
        "time_to_threshold": {
            "type": "object",
            "required": ["threshold"],
            "properties": {
                "threshold": {"type": "number"},
                "ours": {"type": "object", "properties": {"runs": {"items": _THRESHOLD_RUN}}},
                "trl": {"type": "object", "properties": {"runs": {"items": _THRESHOLD_RUN}}},
            },
        },
    },
}

ENV_SPEED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema_version", "kind", "label", "command", "created", "machine", "envs"],
    "properties": {
        "kind": {"const": "env_speed"},
        "machine": _MACHINE,
        "envs": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["env_id", "size", "steps_per_s", "repeats"],
                "properties": {"steps_per_s": _STATS},
            },
        },
    },
}
