"""Audio in and out of the engine: ``chunks`` (what a generation hands back), ``files`` (reference audio read,
rendered audio written), ``tempo`` (speed change without pitch change), ``encode`` (WAV, FLAC, MP3, Opus and
AAC/M4B files and streams, with tags, chapters and a cover), ``subtitles`` (SRT and WebVTT), and the audiobook
exporter: ``book`` (a document's structure and pauses), ``export`` (a book to files) and ``segment_cache`` (what
makes an export resumable)."""
