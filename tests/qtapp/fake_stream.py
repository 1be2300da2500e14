"""A stand-in for a ``sounddevice`` stream (input or output): it keeps its constructor's arguments and
its ``callback``, and records start, stop and close; the test drives the callback itself."""

from __future__ import annotations


class FakeStream:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.callback = kwargs["callback"]
        self.started = self.closed = False

    def start(self):
        self.started = True

    def stop(self):
        self.started = False

    def close(self):
        self.closed = True
