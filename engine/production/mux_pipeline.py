"""One PyAV output container fed float32 samples (``MuxPipeline``), on a file, a seekable buffer or a sink that
cannot seek (``StreamSink``); ``remux`` copies a finished file's packets under a new header. Each container keeps
its chapters and cover where its format says (``engine.production.audio_formats``): MP4 chapters through
``set_chapters``, FLAC and Ogg chapters as Vorbis ``CHAPTERnnn`` comments, a cover as an attached-picture stream or,
in Ogg, a ``METADATA_BLOCK_PICTURE`` comment."""

from __future__ import annotations

import base64
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np

from engine.production.audio_formats import COMMENT, NONE, STREAM, AudioFormat
from engine.production.audio_metadata import Cover, Tags
from engine.production.av_library import load_av


class MuxPipeline:
    """One PyAV output container on a file (a path) or a Python file object: float32 samples in, packets out."""

    def __init__(self, fmt: AudioFormat, file, tags: Tags | None, chapters: list[tuple[str, int, int]] | None,
                 cover: Cover | None, bitrate: int | None, sample_rate: int, streaming: bool, template=None):
        """``template``: an input stream whose packets will be copied in (``remux``) instead of encoded."""
        av = load_av()

        self.fmt, self.sample_rate = fmt, sample_rate
        # bitexact: no encoder version in the output, so the same audio gives the same bytes (a resumed export
        # equals an uninterrupted one); id3v2_version 0 for a bare response stream, as browsers expect of mp3
        options = {"fflags": "+bitexact", **fmt.options}
        if streaming:
            options["flush_packets"] = "1"  # each packet leaves at once instead of when a 32 KiB buffer fills
            if fmt.muxer == "ogg":
                options["page_duration"] = "100000"  # µs: a page (the unit sent) every 0.1 s, not every second
        if fmt.muxer == "mp3" and tags is None and not chapters and cover is None:  # nothing for an ID3 tag
            options["id3v2_version"] = "0"
        self.container = av.open(file, "w", format=fmt.muxer, options=options)
        try:
            if template is not None:
                self.stream = self.container.add_stream_from_template(template)
            else:
                codec_options = {"bit_rate": int(bitrate or fmt.bitrate)} if fmt.bitrate else {}
                self.stream = self.container.add_stream(fmt.codec, rate=sample_rate, layout="mono", **codec_options)
                self.stream.codec_context.flags |= av.codec.context.Flags.bitexact
            metadata = tags.metadata() if tags is not None else {}
            if chapters and fmt.muxer in ("flac", "ogg"):
                # Vorbis comments: FFmpeg's FLAC muxer writes no chapters, and its Ogg one rounds their seconds
                # (1.5 s is written 00:00:02.500)
                metadata.update(_chapter_comments(chapters, sample_rate))
            elif chapters and fmt.chapters != NONE:
                self.container.set_chapters(_av_chapters(chapters, sample_rate))
            picture = None
            if cover is not None and fmt.cover == COMMENT:
                metadata["METADATA_BLOCK_PICTURE"] = base64.b64encode(_flac_picture(cover)).decode("ascii")
            elif cover is not None and fmt.cover == STREAM:
                picture = self.container.add_mux_stream("png" if cover.mime == "image/png" else "mjpeg",
                                                        width=cover.width, height=cover.height)
                picture.disposition = av.stream.Disposition.attached_pic
                picture.metadata["comment"] = "Cover (front)"  # the picture type FFmpeg writes (ID3, FLAC)
            # Ogg keeps its comments in the audio stream's header, the others in the container's
            (self.stream if fmt.muxer == "ogg" else self.container).metadata.update(metadata)
            self.container.start_encoding()
            if picture is not None:
                packet = av.Packet(cover.data)
                packet.stream, packet.pts, packet.dts, packet.is_keyframe = picture, 0, 0, True
                self.container.mux(packet)
        except BaseException:
            self.container.close()
            raise
        self.samples = 0

    def write(self, samples: np.ndarray) -> None:
        av = load_av()
        data = as_samples(samples)
        if not data.size:
            return
        frame = av.AudioFrame.from_ndarray(data[None, :], format="flt", layout="mono")
        frame.sample_rate, frame.pts = self.sample_rate, self.samples
        self.samples += data.size
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def set_chapters(self, chapters: list[tuple[str, int, int]]) -> None:
        self.container.set_chapters(_av_chapters(chapters, self.sample_rate))

    def close(self) -> None:
        try:
            for packet in self.stream.encode(None):
                self.container.mux(packet)
        finally:
            self.container.close()

    def discard(self) -> None:
        try:
            self.container.close()
        except Exception:  # noqa: BLE001 - the output is being thrown away; its first error is what matters
            pass



class StreamSink:
    """A write-only file for a stream: no seek, so muxers write nothing they would patch later."""

    def __init__(self):
        self._data = bytearray()

    def write(self, data) -> int:
        self._data += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self._data)
        self._data.clear()
        return out


def as_samples(samples) -> np.ndarray:
    """float32 [N] in [-1, 1]: NaN becomes silence and infinities full scale, so one bad sample cannot stop a
    book's encoder."""
    data = np.asarray(samples, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(data)):
        data = np.nan_to_num(data, nan=0.0, posinf=1.0, neginf=-1.0)
    return np.ascontiguousarray(np.clip(data, -1.0, 1.0))


def file_url(path: Path) -> str:
    """FFmpeg's name for a local file: ``file:`` first, so a folder named like ``a:b`` is no protocol."""
    return f"file:{path}"



def _av_chapters(chapters: list[tuple[str, int, int]], sample_rate: int) -> list[dict]:
    return [{"id": i + 1, "start": start, "end": end, "time_base": Fraction(1, sample_rate),
             "metadata": {"title": title}} for i, (title, start, end) in enumerate(chapters)]


def _chapter_comments(chapters: list[tuple[str, int, int]], sample_rate: int) -> dict[str, str]:
    """The Vorbis comment chapter convention (``CHAPTER001=00:01:02.500``, ``CHAPTER001NAME=Title``)."""
    out = {}
    for i, (title, start, _) in enumerate(chapters[:999]):
        millis = start * 1000 // sample_rate
        hours, rest = divmod(millis, 3_600_000)
        out[f"CHAPTER{i + 1:03d}"] = f"{hours:02d}:{rest // 60000:02d}:{rest % 60000 // 1000:02d}.{rest % 1000:03d}"
        out[f"CHAPTER{i + 1:03d}NAME"] = title
    return out


def _flac_picture(cover: Cover) -> bytes:
    """A FLAC PICTURE block (front cover), the form Ogg Opus keeps a cover in (base64, METADATA_BLOCK_PICTURE)."""
    mime = cover.mime.encode("ascii")
    return (struct.pack(">II", 3, len(mime)) + mime + struct.pack(">I", 0)
            + struct.pack(">IIIII", cover.width, cover.height, 24, 0, len(cover.data)) + cover.data)


def remux(source: Path, target: Path, fmt: AudioFormat, tags: Tags | None, chapters: list[tuple[str, int, int]],
           cover: Cover | None, sample_rate: int) -> None:
    """Copy the audio packets of ``source`` into ``target`` under a new header with these tags, chapters, cover."""
    av = load_av()

    with av.open(file_url(source)) as src:
        audio = src.streams.audio[0]
        pipeline = MuxPipeline(fmt, file_url(target), tags, chapters, cover, None, sample_rate, streaming=False,
                             template=audio)
        try:
            for packet in src.demux(audio):
                if packet.dts is None:  # the demuxer's empty flush packet
                    continue
                packet.stream = pipeline.stream
                pipeline.container.mux(packet)
        except BaseException:
            pipeline.discard()
            raise
        pipeline.container.close()

