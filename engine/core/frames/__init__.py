"""The frame loop: a prompt in, frames of 16 codes out, for one stream or many.

``capacity`` (what one stream holds on every path) and ``codes`` (how one frame's codes are computed) are shared
by three siblings: ``eager`` (the reference, any device), ``graphs`` (one stream from captured CUDA graphs) and
``batched`` (many streams that join and leave between steps). ``state`` and ``step`` are the static buffers and
the capture-safe frame step that ``graphs`` and ``batched`` both run; ``compile`` optionally compiles that step.
"""
