"""Synthetic Qwen3-TTS checkpoints: random weights in exactly the official layout (see checkpoint.py)."""

from engine.synthetic.checkpoint import build_checkpoint, config_dict

__all__ = ["build_checkpoint", "config_dict"]
