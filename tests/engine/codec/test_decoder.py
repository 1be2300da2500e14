"""Codec decoder: output shape and range, input checks, and equality with the official decoder."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from engine.core.codec.config import SpeechTokenizerConfig
from engine.core.codec.conv import CausalConv1d
from engine.core.codec.decoder import SpeechDecoder
from engine.synthetic.speech_tokenizer import random_decoder, speech_tokenizer_config, write_speech_tokenizer
from tests.oracle import official_available

SAMPLES_PER_FRAME = 1920


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech_tokenizer_tiny")
    write_speech_tokenizer(path, "tiny", seed=0)
    return path


@pytest.fixture(scope="module")
def decoder(tokenizer_dir):
    return SpeechDecoder.from_dir(tokenizer_dir)


def _codes(batch: int, frames: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 2048, (batch, frames, 16), generator=torch.Generator().manual_seed(seed))


def _official_decoder(decoder_config: dict, decoder_tensors: dict[str, torch.Tensor]):
    """The official ``Qwen3TTSTokenizerV2Decoder`` with ``decoder_tensors`` loaded strictly."""
    from qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2 import Qwen3TTSTokenizerV2DecoderConfig
    from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import Qwen3TTSTokenizerV2Decoder

    official = Qwen3TTSTokenizerV2Decoder(Qwen3TTSTokenizerV2DecoderConfig(**decoder_config))
    official.load_state_dict(decoder_tensors, strict=True)
    return official.eval()


def test_decode_gives_1920_float32_samples_per_frame_within_unit_range(decoder):
    audio = decoder.decode(_codes(2, 9, seed=0))
    assert audio.dtype == torch.float32
    assert audio.shape == (2, 9 * SAMPLES_PER_FRAME)
    assert audio.abs().max() <= 1.0
    assert audio.std() > 0.01
    assert not torch.equal(audio[0], audio[1])


def test_every_convolution_runs_channels_last(decoder, monkeypatch):
    """The layers hand each other [B, T, C] memory and the loaded weights are laid out to match, so cuDNN gets
    what its bf16 kernels work in and converts nothing (engine/core/codec/conv.py); the streaming tails too."""
    seen = []

    def spying(real):
        def spy(x, w, *args, **kwargs):
            seen.append((x.is_contiguous(memory_format=torch.channels_last),
                         w.is_contiguous(memory_format=torch.channels_last)))
            return real(x, w, *args, **kwargs)
        return spy

    for name in ("conv2d", "conv_transpose2d"):
        monkeypatch.setattr(F, name, spying(getattr(F, name)))
    products = []
    as_product = CausalConv1d._as_product
    monkeypatch.setattr(CausalConv1d, "_as_product", lambda self, *a: products.append(self) or as_product(self, *a))
    decoder.decode(_codes(2, 3, seed=5))
    # on a CPU the transposed convolutions run as products (CausalConvTranspose1d._overlap_added), and so do the
    # pointwise and weight-bound plain ones (CausalConv1d._as_product), whose outputs are channels-last too
    on_cpu = decoder.pre_conv.conv.weight.device.type == "cpu"
    kinds = torch.nn.Conv1d if on_cpu else torch.nn.Conv1d | torch.nn.ConvTranspose1d
    convolutions = [m for name, m in decoder.named_modules()
                    if isinstance(m, kinds) and not name.startswith("quantizer")]
    assert len(seen) + len(products) == len(convolutions) and all(x and w for x, w in seen)
    assert bool(products) == (on_cpu and decoder.pre_conv.conv.weight.dtype != torch.float64)
    assert all(tail.stride(1) == 1 for tail in decoder.new_state(2).tails.values())


def test_decode_of_a_prefix_is_the_prefix_of_the_decode(decoder):
    """Causality: later frames never change earlier samples."""
    codes = _codes(1, 30, seed=1)
    whole = decoder.decode(codes)
    prefix = decoder.decode(codes[:, :11])
    torch.testing.assert_close(prefix, whole[:, : 11 * SAMPLES_PER_FRAME], rtol=0, atol=1e-5)
    changed = codes.clone()
    changed[:, 20:] = (changed[:, 20:] + 1) % 2048
    assert not torch.allclose(decoder.decode(changed)[:, 20 * SAMPLES_PER_FRAME :], whole[:, 20 * SAMPLES_PER_FRAME :])


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        (torch.full((1, 4, 16), 2048), r"\[0, 2048\)"),
        (torch.full((1, 4, 16), -1), r"\[0, 2048\)"),
        (torch.zeros(1, 4, 15, dtype=torch.int64), "shape"),
        (torch.zeros(4, 16, dtype=torch.int64), "shape"),
        (torch.zeros(1, 0, 16, dtype=torch.int64), "shape"),
        (torch.zeros(1, 4, 16), "integer"),
    ],
)
def test_bad_codes_raise_a_clear_error(decoder, codes, message):
    with pytest.raises(ValueError, match=message):
        decoder.decode(codes)
    with pytest.raises(ValueError, match=message):
        decoder.decode_chunk(codes, decoder.new_state(codes.shape[0] if codes.dim() == 3 else 1))


def snr_db(got: torch.Tensor, reference: torch.Tensor) -> float:
    got, reference = got.double(), reference.double()
    return float(10 * torch.log10(reference.pow(2).sum() / (got - reference).pow(2).sum()))


@pytest.mark.parametrize("size", ["tiny", pytest.param("full", marks=pytest.mark.slow)])
def test_a_bfloat16_decoder_stays_30_db_above_its_rounding(size, tokenizer_dir, decoder):
    """The fast CPU path decodes in bfloat16 where the CPU has AMX (engine.core.runtime.fast_cpu_decoder_dtype), as the
    official package does with a bf16 model. bf16 keeps 8 significant bits (a relative rounding of 2^-9, -54 dB
    an operation); through the decoder's ~40 convolutions and attention layers the errors add to ~34 dB below
    the signal on random weights, tiny and full size alike. Held to 30 dB: a noise floor that far below speech
    is masked by it; a wrong layer in bf16 (a lost scale, an overflow) falls far below."""
    if size == "tiny":
        full, half = decoder, SpeechDecoder.from_dir(tokenizer_dir, dtype=torch.bfloat16)
    else:
        full = random_decoder("full", seed=0)
        half = random_decoder("full", seed=0).to(torch.bfloat16)
    assert half.pre_conv.conv.weight.dtype == torch.bfloat16
    codes = _codes(1, 12, seed=2)
    reference = torch.cat([full.decode_chunk(codes[:, i:i + 4], state) for state in [full.new_state(1)]
                           for i in range(0, 12, 4)], -1)
    state = half.new_state(1)
    audio = torch.cat([half.decode_chunk(codes[:, i:i + 4], state) for i in range(0, 12, 4)], -1)
    assert audio.dtype == torch.float32
    assert snr_db(audio, reference) > 30


@pytest.mark.oracle
@pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")
@pytest.mark.parametrize(("batch", "frames"), [(2, 40), (1, 110)])
def test_tiny_decode_equals_the_official_decoder(tokenizer_dir, decoder, batch, frames):
    """Same file, same codes: our decode equals the official forward on the whole sequence
    (110 frames run past the 72-frame attention window)."""
    config = SpeechTokenizerConfig.from_dir(tokenizer_dir)
    assert config.decoder.sliding_window < 110
    decoder_config = json.loads((tokenizer_dir / "config.json").read_text())["decoder_config"]
    tensors = {k.removeprefix("decoder."): v for k, v in load_file(tokenizer_dir / "model.safetensors").items()
               if k.startswith("decoder.")}
    official = _official_decoder(decoder_config, tensors)
    codes = _codes(batch, frames, seed=3)
    with torch.no_grad():
        expected = official(codes.transpose(1, 2))[:, 0]  # [B, T * 1920]
    torch.testing.assert_close(decoder.decode(codes), expected, rtol=0, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")
def test_full_size_decode_equals_the_official_decoder():
    ours = random_decoder("full", seed=0)
    official = _official_decoder(speech_tokenizer_config("full")["decoder_config"], ours.state_dict())
    codes = _codes(1, 4, seed=4)
    with torch.no_grad():
        expected = official(codes.transpose(1, 2))[:, 0]
    torch.testing.assert_close(ours.decode(codes), expected, rtol=0, atol=1e-5)
