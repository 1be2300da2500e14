"""Exact streaming: chunk after chunk through one DecoderState equals decoding the whole sequence."""

from __future__ import annotations

import pytest
import torch

from engine.synthetic.speech_tokenizer import random_decoder

SAMPLES_PER_FRAME = 1920
TOLERANCE = 1e-5


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny decoder's tensors are too small to gain from threads, and on a shared two-core
    machine several threads per process slow chunk-by-chunk calls down by orders of magnitude."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def decoder():
    return random_decoder("tiny", seed=0)


def _codes(batch: int, frames: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 2048, (batch, frames, 16), generator=torch.Generator().manual_seed(seed))


def _stream(decoder, codes: torch.Tensor, chunk_lengths: list[int], state=None) -> torch.Tensor:
    state = state if state is not None else decoder.new_state(codes.shape[0])
    pieces, start = [], 0
    for length in chunk_lengths:
        piece = decoder.decode_chunk(codes[:, start : start + length], state)
        assert piece.shape == (codes.shape[0], length * SAMPLES_PER_FRAME)
        pieces.append(piece)
        start += length
    assert start == codes.shape[1]
    return torch.cat(pieces, dim=-1)


def _even_chunks(frames: int, length: int) -> list[int]:
    return [min(length, frames - start) for start in range(0, frames, length)]


@pytest.fixture(scope="module")
def codes_100():
    return _codes(2, 100, seed=0)


@pytest.fixture(scope="module")
def whole_100(decoder, codes_100):
    return decoder.decode(codes_100)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 25, 80])
def test_chunks_equal_the_whole_decode(decoder, codes_100, whole_100, chunk):
    streamed = _stream(decoder, codes_100, _even_chunks(100, chunk))
    torch.testing.assert_close(streamed, whole_100, rtol=0, atol=TOLERANCE)


def test_640_frames_in_uneven_chunks_equal_the_whole_decode(decoder):
    """Well past the decoder's ~580-frame receptive field, where the official chunked decode drifts."""
    codes = _codes(1, 640, seed=1)
    lengths = [1, 5, 80, 3, 72, 71, 73] * 2  # 610 frames
    lengths.append(640 - sum(lengths))
    torch.testing.assert_close(_stream(decoder, codes, lengths), decoder.decode(codes), rtol=0, atol=TOLERANCE)


def test_reset_starts_a_new_utterance_in_the_same_tensors(decoder, codes_100, whole_100):
    state = decoder.new_state(2)
    _stream(decoder, _codes(2, 30, seed=2), [7] * 4 + [2], state)
    addresses = {name: t.data_ptr() for name, t in state.tails.items()}
    decoder.reset(state)
    streamed = _stream(decoder, codes_100, _even_chunks(100, 25), state)
    torch.testing.assert_close(streamed, whole_100, rtol=0, atol=TOLERANCE)
    assert {name: t.data_ptr() for name, t in state.tails.items()} == addresses


def test_state_is_updated_in_place_with_fixed_shapes(decoder):
    """What a CUDA graph of decode_chunk needs: same tensors, same shapes, call after call."""
    state = decoder.new_state(1)
    tensors = [*state.tails.values(), state.attention.keys, state.attention.values,
               state.attention.key_positions, state.attention.position]
    before = [(t.data_ptr(), t.shape) for t in tensors]
    codes = _codes(1, 12, seed=3)
    for start in range(0, 12, 3):
        decoder.decode_chunk(codes[:, start : start + 3], state, validate=False)
    assert [(t.data_ptr(), t.shape) for t in tensors] == before
    assert state.attention.position.tolist() == [12]
    assert state.attention.key_positions[0, -12:].tolist() == list(range(12))


def test_streams_in_one_batch_are_independent(decoder, codes_100, whole_100):
    state = decoder.new_state(1)
    alone = _stream(decoder, codes_100[1:], _even_chunks(100, 25), state)
    torch.testing.assert_close(alone, whole_100[1:], rtol=0, atol=TOLERANCE)


def test_rows_of_a_batched_state_stream_on_their_own(decoder):
    """A view over rows shares the state's memory; each row keeps its own positions, so a row that was
    reset, or primed with context decoded on a 1-row state, streams exactly like a plain 1-row decode
    while its neighbours go on with theirs, and rows outside the view stay as they were."""
    state = decoder.new_state(4)
    before = _codes(4, 11, seed=5)
    decoder.decode_chunk(before, state)  # every row is 11 frames into a stream of its own
    untouched = [t[3].clone() for t in (*state.tails.values(), state.attention.keys.transpose(0, 1))]
    context, fresh, more = _codes(1, 9, seed=6), _codes(1, 20, seed=7), _codes(1, 20, seed=8)
    state.rows(1, 2).reset()
    primed = decoder.new_state(1)
    decoder.decode_chunk(context, primed)
    state.rows(2, 3).copy_(primed)
    view = state.rows(0, 3)
    streamed = _stream(decoder, torch.cat([more, fresh, fresh]), [1, 4, 4, 7, 4], view)
    spf = SAMPLES_PER_FRAME
    torch.testing.assert_close(streamed[0], decoder.decode(torch.cat([before[:1], more], 1))[0, 11 * spf:],
                               rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(streamed[1], decoder.decode(fresh)[0], rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(streamed[2], decoder.decode(torch.cat([context, fresh], 1))[0, 9 * spf:],
                               rtol=0, atol=TOLERANCE)
    assert state.attention.position.tolist() == [31, 20, 29, 11]
    after = [t[3] for t in (*state.tails.values(), state.attention.keys.transpose(0, 1))]
    assert all(torch.equal(a, b) for a, b in zip(untouched, after, strict=True))
    with pytest.raises(ValueError, match="batch"):
        state.rows(0, 2).copy_(primed)


def test_put_rows_primes_several_rows_at_once(decoder):
    """``put_rows`` writes 1-row states into chosen rows of a batch, in any order, as ``rows(i, i + 1).copy_``
    would: each primed row streams on from its own context and the rows left out keep theirs."""
    state = decoder.new_state(4)
    decoder.decode_chunk(_codes(4, 5, seed=9), state)
    kept = [t[1].clone() for t in (*state.tails.values(), state.attention.keys.transpose(0, 1))]
    contexts = [_codes(1, 6, seed=10), _codes(1, 3, seed=11)]
    primed = [decoder.new_state(1) for _ in contexts]
    for context, holder in zip(contexts, primed, strict=True):
        decoder.decode_chunk(context, holder)
    state.put_rows(torch.tensor([3, 0]), primed)
    assert state.attention.position.tolist() == [3, 5, 5, 6]
    after = [t[1] for t in (*state.tails.values(), state.attention.keys.transpose(0, 1))]
    assert all(torch.equal(a, b) for a, b in zip(kept, after, strict=True))
    more = _codes(4, 4, seed=12)
    audio = decoder.decode_chunk(more, state)
    for row, context in ((3, contexts[0]), (0, contexts[1])):
        whole = decoder.decode(torch.cat([context, more[row : row + 1]], 1))[0, context.shape[1] * SAMPLES_PER_FRAME :]
        torch.testing.assert_close(audio[row], whole, rtol=0, atol=TOLERANCE)
    with pytest.raises(ValueError, match="one 1-row state per row"):
        state.put_rows(torch.tensor([0, 1]), primed[:1])


def test_clear_rows_starts_chosen_rows_from_silence_and_leaves_the_others(decoder):
    """``clear_rows``: the chosen rows decode as a fresh state would, the other rows stream on from their own
    context."""
    state = decoder.new_state(3)
    decoder.decode_chunk(_codes(3, 5, seed=20), state)
    kept = decoder.new_state(3)
    kept.copy_(state)
    state.clear_rows(torch.tensor([2, 0]))
    assert state.attention.position.tolist() == [0, 5, 0]
    more = _codes(3, 4, seed=21)
    audio = decoder.decode_chunk(more, state)
    for row in (0, 2):
        torch.testing.assert_close(audio[row], decoder.decode(more[row : row + 1])[0], rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(audio[1], decoder.decode_chunk(more[1:2], kept.rows(1, 2))[0], rtol=0, atol=TOLERANCE)


def test_chunk_batch_must_match_the_state(decoder):
    with pytest.raises(ValueError, match="batch"):
        decoder.decode_chunk(_codes(2, 3, seed=4), decoder.new_state(1))
