"""vlagent: RFT / GRPO trainer for multimodal agents."""

__version__ = "0.1.0"
