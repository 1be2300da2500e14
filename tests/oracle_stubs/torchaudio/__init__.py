"""Test-only stand-in for `torchaudio`, which has no release installable beside torch 2.13.

The official `qwen_tts` package imports `torchaudio.compliance.kaldi` at import time, but only its
25 Hz tokenizer calls it; the 12 Hz models the oracle runs never do. tests/oracle.py puts this
folder on `sys.path` only when no real torchaudio is installed.
"""

from torchaudio import compliance

__version__ = "0.0.0+orator.stub"
__all__ = ["compliance"]
