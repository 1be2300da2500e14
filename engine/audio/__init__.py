"""Audio in and out of the engine: ``chunks`` (what a generation hands back), ``files`` (reference audio read,
rendered audio written) and ``tempo`` (speed change without pitch change)."""
