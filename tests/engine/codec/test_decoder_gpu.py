"""The codec decoder on a GPU, where its own kernels run (SnakeBeta with a folded bias, the one-pass biased
residual sum) and cuDNN convolves (TF32 in float32): streamed in chunks, its audio agrees with the float64
decoder on the CPU, in float32 and in bfloat16. Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from engine.core.codec.decoder import SpeechDecoder
from engine.core.gpu_kernels import residual, snake
from engine.synthetic.checkpoint import build_checkpoint

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("decoder-gpu") / "tiny-custom_voice"
    build_checkpoint(directory, "tiny", "custom_voice", seed=0)
    return directory / "speech_tokenizer"


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 0.05), (torch.bfloat16, 0.15)])
def test_streamed_gpu_audio_agrees_with_float64_on_the_cpu(tokenizer_dir, dtype, tolerance, monkeypatch):
    calls = {"snake": 0, "residual": 0}
    for module, name, key in ((snake, "snake_beta_kernel", "snake"), (residual, "add_biased_kernel", "residual")):
        real = getattr(module, name)

        def counted(*args, _real=real, _key=key, **kwargs):
            calls[_key] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    reference_decoder = SpeechDecoder.from_dir(tokenizer_dir, device="cpu", dtype=torch.float64)
    decoder = SpeechDecoder.from_dir(tokenizer_dir, device="cuda", dtype=dtype)
    g = torch.Generator().manual_seed(3)
    codes = torch.randint(0, reference_decoder.cfg.codebook_size, (3, 12, reference_decoder.cfg.num_quantizers),
                          generator=g)
    with torch.inference_mode():
        reference = reference_decoder.decode_chunk(codes, reference_decoder.new_state(3)).double()
        state = decoder.new_state(3)
        pieces = [decoder.decode_chunk(codes[:, i:i + 4].cuda(), state) for i in range(0, 12, 4)]
    audio = torch.cat(pieces, dim=1).cpu().double()
    assert audio.shape == reference.shape and reference.abs().max() > 0
    assert (reference.abs() < 0.99).double().mean() > 0.5  # mostly not clamped: the comparison says something
    error = (audio - reference).norm() / reference.norm()
    assert error < tolerance, f"relative error {error:.4f}"
    assert calls["snake"] > 0 and calls["residual"] > 0  # the GPU's own kernels ran
