"""vlrl: reproducible R1-style reinforcement learning of vision-language models."""

__version__ = "0.1.0"
