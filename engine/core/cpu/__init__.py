"""The CPU fast path: int8 weights through one Numba layer body (the one-position step, the predictor's frame and the
prompt's rows), the PyTorch int8 step that needs no compiling, the thread count, the compiled code's cache and the
first-run speed probe."""
