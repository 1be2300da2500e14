"""The 12 Hz speech tokenizer: ``config`` (its configuration), ``decoder`` (codes -> 24 kHz audio, streamed
exactly; ``SpeechDecoder``, ``DecoderState``), ``encoder`` (reference audio -> codes), ``mel`` (the speaker
encoder's front end), and the decoder's pieces (``conv``, ``quantizer``, ``transformer``, ``layout``)."""
