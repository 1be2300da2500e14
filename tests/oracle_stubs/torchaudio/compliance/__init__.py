"""Stand-in for `torchaudio.compliance`: only the `kaldi` module name exists."""

from torchaudio.compliance import kaldi

__all__ = ["kaldi"]
