"""The official Qwen3-TTS implementation (`qwen-tts-hf` 0.1.1.post1) as a test oracle.

`load_official(model_dir)` returns the official `Qwen3TTSModel` on CPU (SDPA attention, float64
by default) for a model directory in the official layout; tests that use it are marked
`@pytest.mark.oracle` and skip when `official_available()` is False.

The package loads its speech tokenizer only with transformers below 5.21, where `MimiModel`
changed its layout (the `oracle` extra in pyproject.toml keeps the test venv there). Two
test-only accommodations let it run beside torch 2.13 and those transformers releases:
- no torchaudio release installs beside torch 2.13, so when none is installed the stand-in in
  tests/oracle_stubs/ is put on `sys.path` (the 12 Hz models never call it);
- the package registers a "default" RoPE initialiser that reads `config.rope_theta`, which
  recent transformers also calls for the Mimi encoder, whose config keeps the value only in
  `rope_parameters`; the registry entry is wrapped to fall back to it.
"""

import functools
import importlib.util
import pathlib
import sys

import torch
import transformers
from packaging.version import Version

OFFICIAL_DISTRIBUTION = "qwen-tts-hf"
FIRST_INCOMPATIBLE_TRANSFORMERS = Version("5.21")
STUBS_DIR = pathlib.Path(__file__).resolve().parent / "oracle_stubs"


def official_available() -> bool:
    """True when the official `qwen_tts` package is installed beside a transformers it loads with."""
    if Version(transformers.__version__) >= FIRST_INCOMPATIBLE_TRANSFORMERS:
        return False
    try:
        import_official()
    except ImportError:
        return False
    return True


def load_official(model_dir, dtype: torch.dtype = torch.float64):
    """The official `Qwen3TTSModel` for `model_dir`, on CPU with SDPA attention."""
    qwen_tts = import_official()
    return qwen_tts.Qwen3TTSModel.from_pretrained(str(model_dir), dtype=dtype, attn_implementation="sdpa")


@functools.cache
def import_official():
    """The `qwen_tts` package, importable beside torch 2.13 and transformers 5.15-5.20 (the accommodations above)."""
    if importlib.util.find_spec("qwen_tts") is None:
        raise ImportError(f"{OFFICIAL_DISTRIBUTION} is not installed (see scripts/test.sh)")
    if importlib.util.find_spec("torchaudio") is None:
        sys.path.insert(0, str(STUBS_DIR))
    import qwen_tts

    _wrap_default_rope_init()
    return qwen_tts


def _wrap_default_rope_init() -> None:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    default_init = ROPE_INIT_FUNCTIONS["default"]

    @functools.wraps(default_init)
    def default_init_with_rope_parameters(config, *args, **kwargs):
        if not hasattr(config, "rope_theta"):
            config.rope_theta = config.rope_parameters["rope_theta"]
        return default_init(config, *args, **kwargs)

    ROPE_INIT_FUNCTIONS["default"] = default_init_with_rope_parameters


def load_official_tokenizer(tokenizer_dir, monkeypatch, dtype: torch.dtype = torch.float32):
    """The official ``Qwen3TTSTokenizer`` for a ``speech_tokenizer/`` directory.

    Recent transformers made ``MimiModel.upsample`` / ``decoder_transformer`` read-only properties,
    which the official encoder class assigns ``None`` to; ``monkeypatch`` hides them during the load
    (the encode path never reads them).
    """
    import_official()
    from transformers.models.mimi.modeling_mimi import MimiModel

    for name in ("upsample", "decoder_transformer"):
        if isinstance(MimiModel.__dict__.get(name), property):
            monkeypatch.delattr(MimiModel, name)
    from qwen_tts import Qwen3TTSTokenizer

    return Qwen3TTSTokenizer.from_pretrained(str(tokenizer_dir), dtype=dtype)
