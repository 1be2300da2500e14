"""The CUDA-graph path on a GPU: identical greedy codes to the eager reference in every mode for
300+ frames (float64); seeded sampling reproducible run to run and streamed audio equal to whole
audio (bf16, the production precision).

Tiny checkpoints cover every mode; full-size synthetic checkpoints (0.6B; 1.7B when
``ORATOR_GPU_SIZES`` includes it) cover the real shapes. Checkpoints are built under
``ORATOR_MODELS`` (shared with bench/run_all.py) when set. Skipped where CUDA is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.core.frames.eager import EagerStreamer
from engine.core.frames.graphs.runner import GraphStreamer
from engine.synthetic.checkpoint import build_checkpoint

pytestmark = pytest.mark.gpu

FRAMES = 320
TEXT = "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest."
SIZES = os.environ.get("ORATOR_GPU_SIZES", "0.6b").split(",")


@pytest.fixture(scope="module")
def gpu_engines(tmp_path_factory):
    cache = {}

    def get(size: str, model_type: str, dtype=torch.bfloat16):
        key = (size, model_type, dtype)
        if key not in cache:
            root = os.environ.get("ORATOR_MODELS") or tmp_path_factory.getbasetemp()
            directory = Path(root) / f"{size}-{model_type}"
            if not (directory / "model.safetensors").exists():
                build_checkpoint(directory, size, model_type, seed=0)
            cache[key] = Engine.from_pretrained(directory, device="cuda", dtype=dtype)
        return cache[key]

    return get


def _voice(eng: Engine, mode: str) -> Voice:
    if mode == "preset":
        return Voice.preset("vivian", "english")
    if mode == "design":
        return Voice.design("a calm, low male voice", "english")
    rng = np.random.default_rng(5)
    emb = rng.standard_normal(eng.config.talker_config.hidden_size).astype(np.float32)
    if mode == "xvector":
        return Voice("clone", language="english", speaker_embedding=emb)
    return Voice("clone", language="english", speaker_embedding=emb, ref_text="Reference words here.",
                 ref_codes=rng.integers(0, 2048, size=(20, 16)))


MODES = {"preset": "custom_voice", "design": "voice_design", "xvector": "base", "icl": "base"}
FORCE = Sampling(greedy=True, min_frames=FRAMES)


def _codes(eng: Engine, streamer, voice: Voice, sampling=FORCE) -> np.ndarray:
    eng._single = streamer
    try:
        return eng.generate_codes(TEXT, voice, sampling, max_frames=FRAMES)
    finally:
        eng._single = None


@pytest.mark.parametrize("mode", list(MODES))
def test_graph_codes_equal_reference_tiny(gpu_engines, mode):
    """The production path (compiled kernels replayed from graphs) against the plain eager frame loop,
    both in float64 so that no near-tie can flip a greedy choice: identical codes for 320 frames."""
    eng = gpu_engines("tiny", MODES[mode], torch.float64)
    voice = _voice(eng, mode)
    graphed = _codes(eng, GraphStreamer(eng.model.talker, eng.decoder, (1, 4)), voice)
    reference = _codes(eng, EagerStreamer(eng.model.talker, eng.decoder), voice)
    assert graphed.shape == (FRAMES, 16)
    np.testing.assert_array_equal(graphed, reference)


@pytest.mark.parametrize("size", SIZES)
def test_graph_codes_equal_reference_full_size(gpu_engines, size):
    eng = gpu_engines(size, "custom_voice", torch.float64)
    voice = _voice(eng, "preset")
    graphed = _codes(eng, GraphStreamer(eng.model.talker, eng.decoder, (1, 4)), voice)
    reference = _codes(eng, EagerStreamer(eng.model.talker, eng.decoder), voice)
    np.testing.assert_array_equal(graphed, reference)


@pytest.mark.parametrize("size", SIZES)
def test_seeded_sampling_reproducible_and_stream_equals_whole(gpu_engines, size):
    torch.backends.cudnn.allow_tf32 = False  # decoder convolutions in full float32 for a tight comparison
    eng = gpu_engines(size, "custom_voice")
    voice = _voice(eng, "preset")
    sampling = Sampling(seed=99, min_frames=120)
    a = eng.synthesize(TEXT, voice, sampling, max_frames=120)
    b = eng.synthesize(TEXT, voice, sampling, max_frames=120)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert len(a.codes) == 120
    chunks = list(eng.stream(TEXT, voice, chunk_frames=4, first_chunk_frames=1, sampling=sampling, max_frames=120))
    joined = np.concatenate([c.samples for c in chunks])
    # cuDNN may pick other float32 convolution algorithms for other chunk lengths: allow their rounding
    np.testing.assert_allclose(joined, a.samples, atol=1e-3, err_msg="streamed audio differs from whole audio")
    assert chunks[0].n_frames == 1 and chunks[-1].final


def test_batched_graphs_give_each_stream_its_solo_codes(gpu_engines):
    """Streams joining and leaving a graph-captured batch (buckets 1, 2, 4) get their solo codes."""
    from engine.core.prompts import build_prompt
    from tests.engine.frames.batched.loop_helpers import generate_batch

    eng = gpu_engines("tiny", "custom_voice", torch.float64)
    requests = [(f"Request number {i} speaks.", Voice.preset(s, "english"), Sampling(seed=i, min_frames=40), 40 + 7 * i)
                for i, s in enumerate(["vivian", "ryan", "aiden", "serena", "dylan", "sohee"])]
    prompts = [(build_prompt(eng.model.talker, eng.config, eng.tokenizer, v, t), s, s.seed, n)
               for t, v, s, n in requests]
    batched = generate_batch(eng.model.talker, prompts, slots=4, chunk=5)
    eng._single = EagerStreamer(eng.model.talker, eng.decoder)
    try:
        for (text, voice, sampling, frames), got in zip(requests, batched, strict=True):
            np.testing.assert_array_equal(got, eng.generate_codes(text, voice, sampling, max_frames=frames))
    finally:
        eng._single = None


def test_batched_streams_decode_in_graphs_and_give_each_caller_its_solo_audio(gpu_engines):
    """``BatchedStreams`` on a GPU: the frame step and the batched decode replayed from graphs over
    buckets of rows; in-context and x-vector clones, several segments each, more callers than slots.
    Each caller's chunks and audio equal its solo eager stream (float64)."""
    from tests.engine.concurrent_streams import assert_same_chunks, stream_concurrently

    eng = gpu_engines("tiny", "base", torch.float64)
    text = "First part of the call. Then a second part! And a third."
    requests = [(_voice(eng, "icl" if i % 2 else "xvector"), Sampling(seed=i, min_frames=9 + 5 * i), 9 + 5 * i)
                for i in range(6)]
    streams = eng.batched(4)
    results = stream_concurrently(streams, [(text, *r) for r in requests], chunk_frames=4)
    assert streams.decoding.graphs and all(d.graph.graph is not None for d in streams.decoding.graphs.values())
    eng._single = EagerStreamer(eng.model.talker, eng.decoder)
    try:
        for i, (voice, sampling, frames) in enumerate(requests):
            alone = list(eng.stream(text, voice, chunk_frames=4, first_chunk_frames=1, sampling=sampling,
                                    max_frames=frames))
            assert_same_chunks(results[i], alone, atol=1e-6)
    finally:
        eng._single = None


@pytest.mark.parametrize("size", SIZES)
def test_triton_kernels_agree_with_pytorch_in_a_full_size_talker(gpu_engines, size, monkeypatch, engine_options):
    """bf16, real shapes: the talker's hidden states over a prefill and 8 one-position steps with the Triton
    kernels (the fused matrix-vector kernels, RMSNorm, SiLU*up and the residual folded in; each step's
    attention, from the q/k/v projection to the output projection, in the filled-slots attention block) and
    with plain PyTorch agree to bf16 precision."""
    import torch.nn.functional as F

    from engine.core.gpu_kernels.attention import filled_slots_attention_block
    from engine.core.model import layers
    from engine.core.prompts import build_prompt

    eng = gpu_engines(size, "custom_voice")
    talker = eng.model.talker
    prompt = build_prompt(talker, eng.config, eng.tokenizer, _voice(eng, "preset"), TEXT)
    length = prompt.length

    def hidden_states() -> torch.Tensor:
        cache = talker.model.new_cache(1, length + 8, eng.dtype, eng.device)
        h = talker.model(prompt.embeds, torch.arange(length, device=eng.device)[None], cache, kv_len=length)[:, -1]
        states = [h]
        for i in range(8):
            pos = torch.full((1, 1), length + i, device=eng.device)
            states.append(talker.model(states[-1][:, None], pos, cache, kv_len=length + i + 1)[:, -1])
        return torch.cat(states).float()  # [9, H]

    chosen, choose = [], layers.attention_block
    with torch.inference_mode():
        monkeypatch.setattr(layers, "attention_block", lambda *a: chosen.append(choose(*a)) or chosen[-1])
        fused = hidden_states()
        engine_options(triton=False)
        plain = hidden_states()
    n_layers = len(talker.model.layers)
    assert chosen[:9 * n_layers].count(filled_slots_attention_block) == 8 * n_layers  # the one-position steps
    assert chosen[9 * n_layers:] == [None] * 9 * n_layers
    assert F.cosine_similarity(fused, plain, dim=-1).min() > 0.999


def test_batched_decodes_overlapping_steps_give_the_audio_they_give_alone(gpu_engines):
    """``BatchedStreams`` decodes an iteration on its own CUDA stream while the next frame step runs (bf16
    model, float32 decoder, every piece replayed from graphs). Decodes launched with eight streams' steps
    queued right behind them give, bit for bit, the audio of the same decodes run with nothing beside them:
    no decode reads rows, buffers or a cuBLAS workspace that a step is writing."""
    from engine.core.prompts import build_prompt

    eng = gpu_engines("tiny", "custom_voice")
    streams = eng.batched(8)
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, _voice(eng, "preset"), TEXT)
    streams.frames.add_many([(prompt, Sampling(seed=i), i, 200) for i in range(8)])
    rng = np.random.default_rng(3)
    chunks = [rng.integers(0, 2048, size=(8, 4, 16)) for _ in range(8)]
    start = eng.decoder.new_state(8)
    start.copy_(streams.decoder_state)

    def decode_all(overlap: bool) -> list[np.ndarray]:
        streams.decoder_state.copy_(start)
        audio = []
        for codes in chunks:
            streams.decoding.note_rows_written()  # the copy of the start rows above
            decoded = streams.decoding.launch(codes, {})
            if overlap:
                streams.frames.step(4)  # queued behind the decode on the default stream: they run together
                streams.frames.collect()
            decoded.done.synchronize()
            audio.append(np.concatenate([piece.numpy() for piece in decoded.pieces], axis=1))
        return audio

    with torch.inference_mode():
        alone = decode_all(overlap=False)
        beside_steps = decode_all(overlap=True)
    for a, b in zip(alone, beside_steps, strict=True):
        np.testing.assert_array_equal(a, b)

