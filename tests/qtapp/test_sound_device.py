"""ALSA's error lines stay off the user's terminal once the studio loads its audio library (qtapp.sound_device).

Each case runs in a fresh interpreter, since ALSA's error printer is process-wide: the same failing device open
prints ALSA's line to stderr without ``quiet_alsa`` and only to the debug log with it.
"""

from __future__ import annotations

import ctypes.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import ctypes, logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(levelname)s %(message)s")
from qtapp.sound_device import quiet_alsa
if sys.argv[1] == "quiet":
    assert quiet_alsa() and quiet_alsa()  # once per process, however often asked
alsa = ctypes.CDLL("libasound.so.2")
pcm = ctypes.c_void_p()
print("open:", alsa.snd_pcm_open(ctypes.byref(pcm), b"orator_no_such_device", 0, 0))
"""

pytestmark = pytest.mark.skipif(not ctypes.util.find_library("asound"), reason="no ALSA library on this machine")


def run(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_alsa_prints_to_stderr_unless_quietened():
    loud = run("loud")
    assert "open: -" in loud.stdout and "orator_no_such_device" in loud.stderr  # what a user would see


def test_quietened_alsa_errors_go_to_the_debug_log():
    quiet = run("quiet")
    assert "open: -" in quiet.stdout, quiet.stderr  # the open still fails, as it should
    assert quiet.stderr == ""
    assert "DEBUG ALSA pcm.c" in quiet.stdout and "Unknown PCM" in quiet.stdout  # ALSA's format, its arguments unread


def test_the_studio_loads_sounddevice_through_the_quiet_path():
    code = ("import qtapp.sound_device as s; m = s.load_sound_module(); "
            "print(m is None or s._installed is not None)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
