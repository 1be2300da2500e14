"""How much one stream of the frame loop holds, whichever path runs it (eager, single-stream graphs, batched).

A prompt that does not fit is refused before anything is allocated for it (``engine.core.prompts``), so an
overlong instruction or transcript is a clear error for its own request rather than a huge allocation.
"""

MAX_SEQ = 2048  # talker positions per segment: prompt + frames
MAX_TRAILING = 1024  # text tokens fed during decoding (streaming-text prompts)
HISTORY = 64  # frames kept on the device between read-backs; >= the largest chunk
MIN_ROOM_FRAMES = 16  # a prompt must leave the cache room for at least this many frames of speech


def fitted_budget(budget: int, prompt_length: int) -> int:
    """A segment's frame budget within what its stream holds after its prompt (every path cuts it there)."""
    return max(1, min(budget, MAX_SEQ - prompt_length))
