"""The plans the integration tests run over (``plan_engine`` in tests/conftest.py), and what differs between them."""

from __future__ import annotations

from engine.core.options import PRECISIONS

# A bfloat16 codec decoder (the fast plan's where the CPU multiplies bfloat16) rounds each chunk's convolutions to 8
# significant bits, so the same codes decoded in other chunks give samples within this of each other, where a
# float32 decoder's agree to float32's rounding.
BF16_DECODED_ATOL = 1 / 16

__all__ = ["BF16_DECODED_ATOL", "PRECISIONS"]
