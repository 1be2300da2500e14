"""Tuning sweeps and profilers: they pick a kernel's launch settings or show where a frame, a step or a decode
spends its time. Not benchmarks of record (those are ``bench.run_all`` and ``bench.run_batch``)."""
