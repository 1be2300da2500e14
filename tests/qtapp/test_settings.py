"""Settings: one data dir (redirected per test), JSON round trip, bad files fall back to defaults."""

import json
from dataclasses import asdict

import pytest

from qtapp.settings import DEFAULT_CHECKPOINTS, MAX_RECENT_FILES, ModelSpec, Settings, data_dir


def test_data_dir_follows_the_environment(isolated_data_dir):
    assert data_dir() == isolated_data_dir
    settings = Settings()
    for path in (settings.path, settings.library_dir, settings.autosave_path):
        assert path.parent == isolated_data_dir or path == isolated_data_dir / "voices"


def test_round_trip(isolated_data_dir):
    settings = Settings()
    settings.device, settings.precision, settings.speed = "cpu", "float32", 1.5
    settings.checkpoints["clone"] = "/models/base-1.7b"
    settings.default_voice = "Alice"
    settings.save()
    loaded = Settings.load()
    assert (loaded.device, loaded.precision, loaded.speed, loaded.default_voice) == ("cpu", "float32", 1.5, "Alice")
    assert loaded.checkpoints["clone"] == "/models/base-1.7b"
    assert loaded.checkpoints["preset"] == DEFAULT_CHECKPOINTS["preset"]
    assert [p.name for p in isolated_data_dir.iterdir()] == ["settings.json"]  # no temp file left


def test_corrupt_or_foreign_values_fall_back_to_defaults(isolated_data_dir):
    isolated_data_dir.mkdir(parents=True)
    (isolated_data_dir / "settings.json").write_text("{not json")
    assert Settings.load() == Settings()
    (isolated_data_dir / "settings.json").write_text(json.dumps(
        {"device": "tpu", "precision": "int3", "font_size": "big", "speed": 2, "checkpoints": {"preset": ""}}))
    loaded = Settings.load()
    assert (loaded.device, loaded.precision, loaded.font_size) == ("auto", "bfloat16", Settings().font_size)
    assert loaded.speed == 2.0
    assert loaded.checkpoints == DEFAULT_CHECKPOINTS


@pytest.mark.parametrize(("content", "reason"), [
    ("[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
    ('"a string"', "it holds no JSON object"),
    ("{not json", "Expecting property name"),
    (" " * (5 << 20), "more than 4194304"),
])
def test_a_settings_file_that_cannot_be_read_gives_the_defaults_and_says_why(isolated_data_dir, content, reason):
    isolated_data_dir.mkdir(parents=True)
    (isolated_data_dir / "settings.json").write_text(content)
    loaded = Settings.load()
    assert loaded == Settings() and reason in loaded.load_problem and "default settings" in loaded.load_problem
    assert "load_problem" not in asdict(loaded)  # never saved
    (isolated_data_dir / "settings.json").unlink()
    assert Settings.load().load_problem is None  # no file: the defaults, nothing to say


def test_model_spec_per_kind():
    settings = Settings(device="cpu", precision="float32")
    spec = settings.model_spec("design")
    assert spec == ModelSpec("design", DEFAULT_CHECKPOINTS["design"], "cpu", "float32")
    assert spec.resolved_device() == "cpu"
    import torch

    assert spec.torch_dtype() is torch.float32


def test_recent_files_are_unique_newest_first_and_bounded(tmp_path):
    settings = Settings()
    for i in range(MAX_RECENT_FILES + 3):
        settings.add_recent_file(tmp_path / f"{i}.txt")
    settings.add_recent_file(tmp_path / "5.txt")
    assert len(settings.recent_files) == MAX_RECENT_FILES
    assert settings.recent_files[0].endswith("5.txt")
    assert len(set(settings.recent_files)) == MAX_RECENT_FILES


def test_resume_positions_are_kept_bounded_and_checked(isolated_data_dir, tmp_path):
    from qtapp.settings import MAX_RESUME_POSITIONS

    settings = Settings()
    for i in range(MAX_RESUME_POSITIONS + 5):
        settings.remember_position(tmp_path / f"{i}.txt", i)
    settings.remember_position(tmp_path / "0.txt", 7)  # forgotten as the oldest, then read again
    settings.save()
    loaded = Settings.load()
    assert len(loaded.resume_positions) == MAX_RESUME_POSITIONS
    assert loaded.resume_position(tmp_path / "0.txt") == 7 and loaded.resume_position(tmp_path / "1.txt") is None
    assert loaded.resume_position(tmp_path / f"{MAX_RESUME_POSITIONS + 4}.txt") == MAX_RESUME_POSITIONS + 4
    settings.path.write_text('{"resume_positions": {"/a": -1, "/b": true, "/c": "3", "/d": 4.0, "/e": 5}}')
    assert Settings.load().resume_positions == {"/e": 5}


def test_settings_dialog_applies_choices(qtbot):
    from qtapp.dialogs.settings_dialog import SettingsDialog

    settings = Settings()
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    assert not dialog.apply()  # nothing changed
    dialog.checkpoint_fields["clone"].setCurrentText("/models/my-base")
    dialog.device.setCurrentText("cpu")
    dialog.precision.setCurrentText("float32")
    dialog.chunk_frames.setValue(8)
    assert dialog.apply()
    assert (settings.checkpoints["clone"], settings.device, settings.precision, settings.chunk_frames) == (
        "/models/my-base", "cpu", "float32", 8)


@pytest.mark.parametrize(("shown", "kept"), [(0, 0), (7, 20), (120, 120), (300, 300)])
def test_the_segment_target_is_a_setting_the_engine_takes(qtbot, shown, kept):
    from engine.core.text.segments import check_target_chars
    from qtapp.dialogs.settings_dialog import SettingsDialog

    settings = Settings()
    assert settings.segment_chars == 200
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.segment_chars.setValue(shown)
    assert not dialog.apply()  # no model reloads for it
    assert settings.segment_chars == kept == check_target_chars(kept)


def test_the_reading_policy_is_a_setting_kept_across_runs(qtbot, isolated_data_dir):
    from engine.core.text.reading_policy import ReadingPolicy
    from qtapp.dialogs.settings_dialog import SettingsDialog

    settings = Settings()
    assert settings.reading_policy() == ReadingPolicy()  # URLs as their site, code announced
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.read_urls.setChecked(True)
    dialog.read_code.setChecked(True)
    assert dialog.read_footnotes.isChecked()  # footnotes are read after their paragraph by default
    dialog.read_footnotes.setChecked(False)
    assert not dialog.apply()  # no model reloads for it
    settings.save()
    assert Settings.load().reading_policy() == ReadingPolicy(read_urls=True, read_code=True, footnotes="skip")


@pytest.mark.parametrize("stored", ["never", 1, None, ["skip"]])
def test_a_stored_footnote_choice_that_is_none_falls_back_to_the_default(isolated_data_dir, stored):
    isolated_data_dir.mkdir(parents=True)
    (isolated_data_dir / "settings.json").write_text(json.dumps({"footnotes": stored}))
    assert Settings.load().reading_policy().footnotes == "paragraph-end"


@pytest.mark.parametrize("stored", [5, -1, 301, 10**9, 2.5, "200", True, None])
def test_a_stored_segment_target_that_is_none_falls_back_to_the_default(isolated_data_dir, stored):
    isolated_data_dir.mkdir(parents=True)
    (isolated_data_dir / "settings.json").write_text(json.dumps({"segment_chars": stored}))
    assert Settings.load().segment_chars == 200


def test_main_dispatch_defaults_to_the_gui(monkeypatch):
    import main

    calls = []
    monkeypatch.setitem(main.COMMANDS, "gui", (main.COMMANDS["gui"][0], main.add_gui_arguments,
                                               lambda args: calls.append(args.file) or 0))
    assert main.main([]) == 0
    assert main.main(["book.epub"]) == 0
    assert main.main(["gui", "notes.txt"]) == 0
    assert calls == [None, "book.epub", "notes.txt"]


@pytest.mark.parametrize(("stored", "expected"), [
    ({"cpu_path": "exact", "threads": 3}, ("exact", 3)),
    ({"cpu_path": "small", "threads": 0}, ("fast", 0)),  # int4, a deleted path: the fast one
    ({"cpu_path": "turbo", "threads": -2}, ("fast", 0)),
    ({"cpu_path": 7, "threads": 10**6}, ("fast", 0)),
    ({"threads": True}, ("fast", 0)),
    ({"threads": 2.5}, ("fast", 0)),
])
def test_processor_settings_are_checked_on_load(isolated_data_dir, stored, expected):
    isolated_data_dir.mkdir(parents=True)
    (isolated_data_dir / "settings.json").write_text(json.dumps(stored))
    loaded = Settings.load()
    assert (loaded.cpu_path, loaded.threads) == expected


@pytest.mark.parametrize(("cpu_path", "override", "threads", "precision", "option"),
                         [("fast", None, 0, "fast", None), ("exact", None, 2, "exact", 2),
                          ("fast", "exact", 0, "exact", None), ("exact", "fast", 0, "fast", None)])
def test_a_processor_model_loads_at_the_chosen_precision(monkeypatch, isolated_data_dir, cpu_path, override, threads,
                                                          precision, option):
    """On the processor the GPU's dtype does not apply: the engine loads at the precision chosen in the Settings,
    or for this run by ``main.py gui --precision`` (never saved), and the thread count goes to its options."""
    from engine import Engine
    from engine.core import options

    calls = []
    monkeypatch.setattr(Engine, "from_pretrained", classmethod(lambda cls, *a, **kw: calls.append((a, kw))))
    monkeypatch.setattr(Settings, "precision_override", override)
    before = options.current()
    try:
        isolated_data_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings(device="cpu", precision="bfloat16", cpu_path=cpu_path, threads=threads)
        settings.model_spec("preset").load_engine()
        assert options.current().threads == option
        settings.save()
        assert json.loads(settings.path.read_text())["cpu_path"] == cpu_path  # the override is never saved
    finally:
        options.configure(before)
    (checkpoint,), kwargs = calls[0]
    assert kwargs == {"device": "cpu", "precision": precision}
