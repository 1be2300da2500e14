"""Side-by-side benchmarks of Orator, the official Qwen3-TTS implementation and faster-qwen3-tts."""
