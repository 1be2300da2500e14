"""Synthetic Qwen3-TTS checkpoints: random weights in exactly the official layout.

``checkpoint.build_checkpoint`` writes a whole model directory (``python -m engine.synthetic``);
``text_tokenizer`` and ``speech_tokenizer`` write its tokenizer parts; ``init`` draws the weights.
"""
