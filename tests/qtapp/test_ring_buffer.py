"""The single-producer/single-consumer ring buffer behind the player."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from qtapp.ring_buffer import AudioRingBuffer


def test_reads_back_what_was_written_across_the_wrap():
    ring = AudioRingBuffer(10)
    out = np.zeros(7, dtype=np.float32)
    assert ring.write(np.arange(7, dtype=np.float32)) == 7
    assert ring.read_into(out) == 7
    np.testing.assert_array_equal(out, np.arange(7))
    assert ring.write(np.arange(10, 18, dtype=np.float32)) == 8  # wraps at index 10
    out = np.zeros(8, dtype=np.float32)
    assert ring.read_into(out) == 8
    np.testing.assert_array_equal(out, np.arange(10, 18))
    assert (ring.written, ring.consumed) == (15, 15)


def test_write_takes_only_what_fits_and_read_reports_shortage():
    ring = AudioRingBuffer(5)
    assert ring.write(np.ones(8, dtype=np.float32)) == 5
    assert (ring.available, ring.free) == (5, 0)
    out = np.full(8, -1.0, dtype=np.float32)
    assert ring.read_into(out) == 5
    np.testing.assert_array_equal(out[:5], 1.0)
    np.testing.assert_array_equal(out[5:], -1.0)  # the caller zeroes the rest


def test_flush_drops_everything_unread():
    ring = AudioRingBuffer(16)
    ring.write(np.ones(12, dtype=np.float32))
    ring.flush()
    assert ring.available == 0
    assert ring.read_into(np.zeros(4, dtype=np.float32)) == 0
    assert ring.free == 16


def test_rejects_empty_capacity():
    with pytest.raises(ValueError):
        AudioRingBuffer(0)


def test_concurrent_producer_and_consumer_keep_order():
    ring = AudioRingBuffer(1000)
    total = 50_000
    source = np.arange(total, dtype=np.float32)
    received = np.zeros(total, dtype=np.float32)

    def produce():
        sent = 0
        while sent < total:
            taken = ring.write(source[sent:sent + 333])
            sent += taken
            if taken == 0:
                time.sleep(0)  # let the consumer run

    producer = threading.Thread(target=produce)
    producer.start()
    got, block = 0, np.zeros(256, dtype=np.float32)
    while got < total:
        n = ring.read_into(block[:min(256, total - got)])
        received[got:got + n] = block[:n]
        got += n
        if n == 0:
            time.sleep(0)
    producer.join()
    np.testing.assert_array_equal(received, source)
