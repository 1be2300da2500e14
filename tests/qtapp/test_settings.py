"""Settings: one data dir (redirected per test), JSON round trip, bad files fall back to defaults."""

import json

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
