"""One stream from captured CUDA graphs: ``capture`` (the ``Graphed`` wrapper: warm up, capture, replay, or run
eagerly), ``prefill`` (prompt prefill graphs bucketed by length), ``decode`` (the codec decoder's chunk graphs) and
``runner`` (``GraphStreamer``: prefill, frame-step replays and lazy read-back, the eager streamer's interface)."""
