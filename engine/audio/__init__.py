"""Audio in and out of the engine: ``chunks`` (what a generation hands back), ``files`` (reference audio read,
rendered audio written), ``tempo`` (speed change without pitch change) and ``encode`` (WAV, FLAC, MP3, Opus and
AAC/M4B files and streams, with tags, chapters and a cover)."""
