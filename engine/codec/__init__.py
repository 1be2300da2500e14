"""12 Hz speech tokenizer: configuration and the codec decoder (codes -> 24 kHz audio, streamed exactly)."""

from engine.codec.config import CodecDecoderConfig, SpeechTokenizerConfig
from engine.codec.decoder import DecoderState, SpeechDecoder

__all__ = ["CodecDecoderConfig", "DecoderState", "SpeechDecoder", "SpeechTokenizerConfig"]
