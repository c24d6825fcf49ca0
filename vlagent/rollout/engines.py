"""The rollout-engine seam: what samples the policy's turns during rollouts.

Two engines pass one contract (``tests/vlagent/rollout/test_engine_contract.py``):
    hf    today's transformers sampler (``rollout/engine.py``), in the trainer's process, on the
          trainer's own model object (prefix sharing for fresh prompts); nothing to push
    vllm  vLLM (``rollout/vllm_engine.py``): colocated in this process on a GPU, or a worker
          process in its own venv on CPU (``scripts/setup_vllm.sh``); weights pushed after each
          optimizer update
Both sample from softmax(logits / temperature) with the same forbidden ids (vision placeholders,
ids past the tokenizer) and nothing else, stop on the same eos ids, and return the log-probs of
the sampled tokens under that distribution (the behaviour log-probs GRPO keeps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from vlagent.batching import output_vocab_size
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.engine_request import EngineError, Turn, check_request
from vlagent.rollout.trajectory import Segment

ENGINES = ("hf", "vllm")


@runtime_checkable
class RolloutEngine(Protocol):
    """Samples assistant turns for the episode runner (``run_episodes(..., engine=)``)."""

    name: str

    def sample_turns(
        self,
        segments: Sequence[Segment],
        max_new: Sequence[int],
        *,
        temperature: float = 1.0,
        greedy: bool = False,
        seed: int | None = None,
    ) -> list[Turn]:
        """Per segment: new ids (up to and including the first eos, at most ``max_new[i]``),
        their behaviour log-probs, and whether the turn ended with eos."""
        ...

    def push_weights(self, policy: Any, version: int) -> None:
        """Make the engine sample from ``policy``'s current weights (policy version = step)."""
        ...

    def sleep(self) -> None:
        """Free accelerator memory between rollout phases (no-op where meaningless)."""
        ...

    def wake_up(self) -> None:
        """Undo :meth:`sleep` before the next rollout phase (no-op where meaningless)."""
        ...

    def close(self) -> None:
        """Release the engine's resources (worker processes, temp folders); idempotent."""
        ...


class HFEngine:
    """The transformers sampler on the trainer's own model (``rollout/engine.py``).

    Args:
        policy: the loaded ``Policy`` being trained; the engine always samples from its current
            weights, so :meth:`push_weights` only records the version.
        shared_prefix: one prefill per distinct fresh prompt, KV cache expanded to its rows.
    """

    name = "hf"

    def __init__(self, policy: Any, *, shared_prefix: bool = True) -> None:
        self.policy = policy
        self.shared_prefix = shared_prefix
        self.version = 0
        self.vocab_size = output_vocab_size(policy.model)

    def sample_turns(
        self,
        segments: Sequence[Segment],
        max_new: Sequence[int],
        *,
        temperature: float = 1.0,
        greedy: bool = False,
        seed: int | None = None,
    ) -> list[Turn]:
        check_request(segments, max_new, temperature, greedy, self.vocab_size)
        return sample_turns(
            self.policy,
            segments,
            max_new,
            temperature=temperature,
            greedy=greedy,
            seed=seed,
            shared_prefix=self.shared_prefix,
        )

    def push_weights(self, policy: Any, version: int) -> None:
        self.policy = policy
        self.vocab_size = output_vocab_size(policy.model)
        self.version = int(version)

    def sleep(self) -> None:
        return None

    def wake_up(self) -> None:
        return None

    def close(self) -> None:
        return None


def make_engine(name: str, policy: Any, **opts: Any) -> RolloutEngine:
    """Build the rollout engine ``name`` ("hf" | "vllm") for ``policy``.

    ``opts`` go to the engine: ``shared_prefix`` (hf); ``python``, ``mode``, ``kv_cache_gb``,
    ``gpu_memory_utilization``, ``max_model_len``, ``startup_timeout`` (vllm, see
    :class:`vlagent.rollout.vllm_engine.VLLMEngine`).
    """
    if name == "hf":  # the vllm options mean nothing to it
        return HFEngine(policy, shared_prefix=opts.get("shared_prefix", True))
    if name == "vllm":
        from vlagent.rollout.vllm_engine import VLLMEngine

        opts.pop("shared_prefix", None)  # vLLM's prefix cache shares prompts by itself
        return VLLMEngine(policy, **opts)
    raise EngineError(f"rollout engine {name!r} is unknown; use one of {', '.join(ENGINES)}")
