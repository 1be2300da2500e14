"""Stand-in for `torchaudio.compliance.kaldi`: every feature function refuses to run."""


def fbank(*args, **kwargs):
    """Kaldi filter banks are used only by the 25 Hz tokenizer, which the oracle never loads."""
    raise NotImplementedError("torchaudio stand-in: kaldi.fbank is only needed by the 25 Hz tokenizer")
