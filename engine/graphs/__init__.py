"""The fast path: the frame loop over static buffers, captured once as CUDA graphs and replayed.

``state`` holds every per-stream buffer (KV caches, positions, trailing text, sampling settings,
code history) allocated once; ``step`` advances all streams by one frame touching only those
buffers, so the same code runs eagerly (CPU, tests) or inside a captured graph (CUDA);
``capture`` wraps ``torch.cuda.CUDAGraph``; ``runner`` drives prefill, replay and lazy read-back.
"""
