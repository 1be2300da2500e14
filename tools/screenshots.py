"""Render the studio offscreen and save screenshots to docs/screenshots/ (no model, no sound card).

    QT_QPA_PLATFORM=offscreen python tools/screenshots.py [output_dir]

The window is filled with a sample text, a few library voices, a reading highlight and gauge
values, the way it looks while reading aloud; the settings and voice dialogs are captured too.
Everything is written to a temporary data dir, never the user's own.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SAMPLE = """Chapter One: The Lighthouse

The storm arrived an hour before midnight. Waves climbed the black rocks and the old lighthouse \
shook with every gust, but its lamp kept turning, patient as a heartbeat.
[voice: Keeper] Hold the door, Mara! The wind will have it off its hinges.
[voice: Mara] I have it. Go and see to the lamp; I will bring the lantern.
Neither of them noticed the small boat that had slipped into the cove below, its sail torn and \
its single passenger clinging to the mast.

By morning the sea was calm again, and the stranger was asleep by the stove."""


class _DisplayOnlyEngine:
    """Enough of an engine for the worker to report a loaded model; it never speaks."""

    model_type, model_size, device, dtype, sample_rate = "custom_voice", "1b7", "cuda", "bfloat16", 24000
    use_graphs = False  # nothing to capture
    speakers = ["aiden", "sohee", "ono_anna", "eric", "dylan", "uncle_fu", "ryan", "vivian", "serena"]


class _SilentSoundDevice:
    class _Stream:
        def __init__(self, **kwargs):
            pass

        def start(self):
            pass

        def stop(self):
            pass

        def close(self):
            pass

    OutputStream = _Stream


def main(out_dir: Path) -> list[Path]:
    os.environ["ORATOR_DATA_DIR"] = tempfile.mkdtemp(prefix="orator-shots-")
    from PySide6.QtTest import QTest

    from engine import Voice
    from qtapp.app import create_application
    from qtapp.dialogs.settings_dialog import SettingsDialog
    from qtapp.dialogs.voice_dialogs import PresetVoiceDialog
    from qtapp.main_window import MainWindow
    from qtapp.settings import Settings

    app = create_application()
    window = MainWindow(Settings.load(), engine_factory=_DisplayOnlyEngine, sd_module=_SilentSoundDevice())
    for voice, name in ((Voice.preset("ryan", "english"), "Narrator"),
                        (Voice.preset("uncle_fu", "english", "gravelly, slow"), "Keeper"),
                        (Voice.design("a young woman, bright and quick, slightly breathless"), "Mara"),
                        (Voice.preset("vivian", "english", "warm and calm"), "Vivian")):
        window.library_panel.add_voice(voice, name)
    window.library_panel.select("Mara")
    window.resize(1280, 800)
    window.show()
    window.editor.load_text(SAMPLE)
    QTest.qWait(600)
    start = SAMPLE.index("Hold the door")
    window.editor.highlight_span(start, start + len("Hold the door, Mara!"))
    window.gauges.set_rtf(11.8)
    window.gauges.set_first_audio(0.142)
    window.gauges.set_buffer(6.4)
    window.gauges.set_underruns(0)
    window.window_actions.play.setEnabled(False)
    for act in (window.window_actions.pause, window.window_actions.stop, window.window_actions.next,
                window.window_actions.previous):
        act.setEnabled(True)
    window.statusBar().showMessage("Reading with Keeper…")
    QTest.qWait(300)

    out_dir.mkdir(parents=True, exist_ok=True)
    shots = [out_dir / "main_window.png", out_dir / "settings_dialog.png", out_dir / "preset_voice_dialog.png"]
    window.grab().save(str(shots[0]))
    dialogs = (SettingsDialog(window.settings, window), PresetVoiceDialog(window.preset_speakers(), window))
    for dialog, path in zip(dialogs, shots[1:], strict=True):
        dialog.show()
        QTest.qWait(200)
        dialog.grab().save(str(path))
        dialog.close()
    window.close()
    app.processEvents()
    return shots


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs/screenshots"
    for shot in main(target):
        print(shot)
