"""The decode side of a ``BatchedStreams`` loop thread: ``LoopDecoder`` holds one ``DecoderState`` row per slot and
decodes an iteration's new frames over a bucket of rows in one ``decode_chunk`` (a CUDA graph per (bucket, frames)
on a GPU), on a GPU on a CUDA stream of its own beside the next iteration's step; ``Decoded`` is one such decode,
launched and not yet handed out."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.core.chunks import SAMPLES_PER_FRAME
from engine.core.codec.decoder import DecoderState, SpeechDecoder
from engine.core.frames.batched.callers import Request
from engine.core.frames.graphs.capture import separate_capture_stream
from engine.core.frames.graphs.decode import DecodeGraph
from engine.core.runtime import on_device


@dataclass(slots=True)
class Decoded:
    """One iteration's decode, launched (on a GPU, on the decode stream) and not yet handed out."""

    pieces: list[torch.Tensor]  # audio float32 [bucket, k * 1920] per cut, in host memory once ``done`` is
    done: torch.cuda.Event | None  # recorded after the copies to the host (None: already there, on a CPU)
    # (slot, request, new codes [k, 16], ended, why the segment was cut or None)
    handouts: list[tuple[int, Request, np.ndarray, bool, str | None]]


class LoopDecoder:
    """The loop thread's decoder: ``state`` has a row per slot (row = slot); ``launch`` decodes new frames through
    rows [0, bucket), ``graph(bucket, n)`` is the decode of n frames over those rows, captured on first use (one
    memory pool for all). Rows of free slots and frames after a stream's end decode zeros, which reach no caller
    and no other row. On a GPU the decodes run on ``stream``, beside the steps queued on the loop's stream (the
    decode's convolutions fill the GPU where the step's many small kernels leave it idle)."""

    def __init__(self, decoder: SpeechDecoder, slots: int, device: torch.device, use_graphs: bool):
        self.decoder, self.device, self.use_graphs = decoder, device, use_graphs
        self.state = decoder.new_state(slots, device)
        self.graphs: dict[tuple[int, int], DecodeGraph] = {}
        self._pool = None  # one memory pool for every decoder graph
        cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device) if cuda else None
        self._rows_written: torch.cuda.Event | None = None  # see note_rows_written
        # the decode graphs replay while a step's graph runs: captured apart, so their cuBLAS workspace is their own
        self._capture_stream = separate_capture_stream(device) if cuda and use_graphs else None

    def warmup_tasks(self, buckets: Sequence[int], max_frames: int) -> list[tuple[str, Callable[[], object]]]:
        """(what, capture) for every decode the loop can ask of each bucket: 1..``max_frames`` frames (an end cuts
        an iteration's decode)."""
        return [(f"the {bucket}-stream decodes", lambda bucket=bucket: [self.graph(bucket, n)
                                                                         for n in range(1, max_frames + 1)])
                for bucket in buckets]

    def start_rows(self, slots: list[int], states: list[DecoderState | None]) -> None:
        """Set the rows of newly admitted ``slots``: a caller's 1-row state copied in, or silence for None; after
        any decode still reading or writing them, and before the next decodes."""
        if self.stream is not None:  # a decode may still read and write these rows
            torch.cuda.current_stream(self.device).wait_stream(self.stream)
        silent = [slot for slot, state in zip(slots, states, strict=True) if state is None]
        held = [(slot, state) for slot, state in zip(slots, states, strict=True) if state is not None]
        if silent:
            self.state.clear_rows(on_device(silent, self.device))
        if held:
            self.state.put_rows(on_device([slot for slot, _ in held], self.device), [state for _, state in held])
        self.note_rows_written()

    def note_rows_written(self) -> None:
        """Make the next decodes wait for the writes to the decoder state's rows queued on the loop's stream so
        far (admissions), and for nothing queued after (the steps, which decodes run beside)."""
        if self.stream is not None:
            self._rows_written = torch.cuda.current_stream(self.device).record_event()

    def synchronize(self) -> None:
        """Wait for every decode queued so far (a failing loop: saves into callers' holders may still be queued)."""
        if self.stream is not None:
            with contextlib.suppress(Exception):
                self.stream.synchronize()

    def launch(self, codes: np.ndarray, saves: dict[int, tuple[int, DecoderState]]) -> Decoded:
        """Launch the decode of ``codes`` int64 [bucket, n, 16] through the decoder state's rows [0, bucket),
        on the decode stream after the admissions' writes to these rows (``note_rows_written``; not after the
        steps queued since); the audio (float32 [bucket, n * 1920], in
        pieces) lands in host memory when the returned record's event completes. ``saves[row] = (k,
        holder)``: the stream of that row ended after k of these frames and continues later, so its row goes
        into ``holder`` right after frame k; the decode is cut there, so no frame past its end reaches the
        saved state."""
        bucket, n = codes.shape[:2]
        stream, cuda = self.stream, self.stream is not None
        if self._rows_written is not None:
            stream.wait_event(self._rows_written)
        cuts = sorted({0, n, *(k for k, _ in saves.values())})
        pieces = []
        with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            codes = on_device(codes, self.device)
            for start, stop in zip(cuts, cuts[1:] + [n], strict=True):
                for row, (k, holder) in saves.items():
                    if k == start:
                        holder.copy_(self.state.rows(row, row + 1))
                if stop > start:
                    audio = self.graph(bucket, stop - start)(codes[:, start:stop])  # rewritten by its next replay
                    host = torch.empty(audio.shape, dtype=audio.dtype, pin_memory=cuda)
                    pieces.append(host.copy_(audio, non_blocking=cuda))  # queued before any next replay
            done = stream.record_event() if cuda else None
        return Decoded(pieces, done, [])

    @staticmethod
    def hand_out(decoded: Decoded) -> None:
        """Each stream's frames and audio of a finished decode to its caller's outbox."""
        if decoded.done is not None:
            decoded.done.synchronize()
        audio = np.concatenate([piece.numpy() for piece in decoded.pieces], axis=1)
        for slot, request, new, ended, warning in decoded.handouts:
            request.outbox.put((new, audio[slot, :len(new) * SAMPLES_PER_FRAME], ended, warning))

    def graph(self, bucket: int, n: int) -> DecodeGraph:
        """The decode of n frames over rows [0, bucket), captured on first use."""
        if (bucket, n) not in self.graphs:
            decoder, device = self.decoder, self.device
            rows = self.state.rows(0, bucket)
            held = decoder.new_state(bucket, device)
            held.copy_(rows)  # capturing decodes on these rows: keep what their streams hold
            graph = DecodeGraph(decoder, rows, n, device, self.use_graphs, self._pool, self._capture_stream)
            rows.copy_(held)
            self._pool = self._pool or graph.graph.pool
            self.graphs[bucket, n] = graph
        return self.graphs[bucket, n]
