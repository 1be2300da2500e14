"""``Engine.from_pretrained`` refuses broken model directories with a ``CheckpointError`` that says why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from engine import CheckpointError, Engine
from engine.core.checkpoint import REQUIRED_FILES, mapped_bf16_tensors, mapped_tensors


@pytest.fixture
def model_copy(tiny_model_dir, tmp_path):
    """A private copy of the tiny CustomVoice directory that a test may damage."""
    return shutil.copytree(tiny_model_dir("custom_voice"), tmp_path / "model")


def mapped_one(path, name):
    """One tensor of ``mapped_bf16_tensors``, or None where it leaves the name out."""
    return mapped_bf16_tensors(path, (name,)).get(name)


def test_non_existent_path(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(CheckpointError, match="does not exist") as err:
        Engine.from_pretrained(str(missing))
    assert str(missing) in str(err.value)


@pytest.mark.parametrize("name", REQUIRED_FILES)
def test_directory_missing_a_file(model_copy, name):
    (model_copy / name).unlink()
    with pytest.raises(CheckpointError, match="missing") as err:
        Engine.from_pretrained(model_copy)
    assert name in str(err.value)


def test_truncated_weights(model_copy):
    weights = model_copy / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        Engine.from_pretrained(model_copy)


def test_garbage_weights(model_copy):
    (model_copy / "model.safetensors").write_bytes(b"\xff" * 4096)
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        Engine.from_pretrained(model_copy)


def test_tensor_of_the_wrong_shape(model_copy):
    weights = model_copy / "model.safetensors"
    state = load_file(str(weights))
    name = "talker.codec_head.weight"
    state[name] = state[name][:-1].clone()  # one codec id short
    save_file(state, str(weights), metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="has shape") as err:
        Engine.from_pretrained(model_copy)
    assert name in str(err.value)


def test_missing_tensor(model_copy):
    weights = model_copy / "model.safetensors"
    state = load_file(str(weights))
    del state["talker.codec_head.weight"]
    save_file(state, str(weights), metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="talker.codec_head.weight"):
        Engine.from_pretrained(model_copy)


def _edit_config(model_dir, **changes) -> None:
    path = model_dir / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(changes)
    path.write_text(json.dumps(config), encoding="utf-8")


def test_unknown_model_type(model_copy):
    _edit_config(model_copy, tts_model_type="narrator")
    with pytest.raises(CheckpointError, match="unknown tts_model_type 'narrator'"):
        Engine.from_pretrained(model_copy)


def test_model_type_that_does_not_match_the_weights(model_copy):
    _edit_config(model_copy, tts_model_type="base")  # CustomVoice weights have no speaker encoder
    with pytest.raises(CheckpointError, match="tensors do not match") as err:
        Engine.from_pretrained(model_copy)
    assert "speaker_encoder." in str(err.value)


def test_invalid_json(model_copy):
    (model_copy / "config.json").write_text('{"tts_model_type": "custom_voice",', encoding="utf-8")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        Engine.from_pretrained(model_copy)


def test_config_of_another_model(model_copy):
    (model_copy / "config.json").write_text(json.dumps({"model_type": "qwen3", "hidden_size": 1024}),
                                            encoding="utf-8")
    with pytest.raises(CheckpointError, match="not a Qwen3-TTS config"):
        Engine.from_pretrained(model_copy)


def test_hub_id_without_network_fails_without_trying_the_network(monkeypatch):
    import socket

    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once at import
    tried = []
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: tried.append(address))
    with pytest.raises(CheckpointError, match="could not download 'orator-tests/no-such-model'"):
        Engine.from_pretrained("orator-tests/no-such-model")
    assert tried == []  # offline means no connection and no retries: the error comes at once


def test_a_bf16_table_is_read_in_place_from_the_file(tiny_model_dir, tmp_path):
    """The text table the fast CPU path keeps as a memory map equals the tensor safetensors reads; tensors that
    are not bf16, absent names and files that are not safetensors give None (load_weights reports those)."""
    import torch

    path = tiny_model_dir("custom_voice") / "model.safetensors"
    name = "talker.model.text_embedding.weight"
    mapped = mapped_one(path, name)
    assert mapped is not None and mapped.dtype == torch.bfloat16
    assert torch.equal(mapped, load_file(path)[name])
    save_file({"t": torch.ones(4, 3), "b": torch.ones(2, 2, dtype=torch.bfloat16)}, tmp_path / "f.safetensors")
    assert mapped_one(tmp_path / "f.safetensors", "t") is None  # float32
    assert torch.equal(mapped_one(tmp_path / "f.safetensors", "b"), torch.ones(2, 2, dtype=torch.bfloat16))
    assert mapped_one(tmp_path / "f.safetensors", "absent") is None
    junks = (b"", b"\x05", b"\xff" * 8 + b"{}", (10).to_bytes(8, "little") + b"not json!!", b"\x02\0\0\0\0\0\0\0[]")
    for junk in junks:
        (tmp_path / "junk.safetensors").write_bytes(junk)
        assert mapped_one(tmp_path / "junk.safetensors", name) is None
    assert mapped_one(tmp_path / "missing.safetensors", name) is None


def test_every_dtype_maps_to_the_values_safetensors_reads(tmp_path):
    import torch

    tensors = {str(d): (torch.arange(-6, 6).reshape(3, 4) * 3).to(d) for d in
               (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
                torch.int8, torch.uint8, torch.bool)}
    tensors["empty"] = torch.zeros(0, 5)
    save_file(tensors, tmp_path / "all.safetensors")
    mapped = mapped_tensors(tmp_path / "all.safetensors")
    assert mapped.keys() == tensors.keys()
    for name, t in tensors.items():
        assert mapped[name].dtype == t.dtype and torch.equal(mapped[name], t), name
    assert set(mapped_tensors(tmp_path / "all.safetensors", kinds=("I8", "U8"))) == {"torch.int8", "torch.uint8"}


def _in_a_map_of(address: int, path: Path) -> bool:
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *rest = line.split()
        low, high = (int(v, 16) for v in span.split("-"))
        if low <= address < high:
            return bool(rest) and rest[-1] == str(path.resolve())
    return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's map of the process's memory")
def test_a_cast_tensor_is_a_copy_and_the_rest_are_as_safetensors_reads_them(tmp_path):
    """A tensor cast on loading is a copy, its map dropped (its memory lies in no map of the file); one loaded in
    its stored dtype, or an integer one, is what safetensors reads (a view of its one map of the file)."""
    import torch
    from torch import nn

    from engine.core.checkpoint import load_weights

    path = tmp_path / "w.safetensors"
    save_file({"a": torch.full((64, 64), 2.0), "b": torch.full((8,), 3.0, dtype=torch.bfloat16),
               "n": torch.arange(5)}, path)
    for dtype in (torch.float32, torch.bfloat16, None):
        with torch.device("meta"):
            m = nn.Module()
            m.register_parameter("a", nn.Parameter(torch.empty(64, 64)))
            m.register_parameter("b", nn.Parameter(torch.empty(8)))
            m.register_buffer("n", torch.empty(5, dtype=torch.int64))
        load_weights(m, path, dtype=dtype)
        assert float(m.a[3, 3]) == 2.0 and float(m.b[7]) == 3.0 and m.n.tolist() == [0, 1, 2, 3, 4]
        if dtype is not None:
            assert m.a.dtype == m.b.dtype == dtype
        for t, stored in ((m.a, torch.float32), (m.b, torch.bfloat16), (m.n, torch.int64)):
            assert _in_a_map_of(t.data_ptr(), path) == (dtype is None or stored == dtype or stored == torch.int64)


# RSS and its high-water mark of this process, in bytes, from Linux's /proc
_PEAK = """
import sys, torch
from torch import nn
from engine.core.checkpoint import load_weights
def peak():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
with torch.device("meta"):
    m = nn.Module()
    for i in range(20):
        m.register_parameter(f"p{i}", nn.Parameter(torch.empty(1024, 2048)))
before = peak()
load_weights(m, __import__("pathlib").Path(sys.argv[1]), dtype=torch.bfloat16)
assert m.p3.dtype == torch.bfloat16 and float(m.p3[1, 2]) == 3.0
print(peak() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's account of the process's memory")
def test_a_cast_load_keeps_only_one_tensor_of_the_file_resident(tmp_path):
    """Loading 160 MB of float32 tensors as bfloat16 (as the codec decoder is loaded on the fast CPU path) peaks at
    the 80 MB of bfloat16 copies and about a tensor (8 MB) of the file: read through safetensors' one map of
    the whole file, every page read stayed resident until the file closed, a peak of 240 MB."""
    import torch

    path = tmp_path / "f32.safetensors"
    save_file({f"p{i}": torch.full((1024, 2048), float(i)) for i in range(20)}, path)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_PEAK), str(path)], capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    grown = int(out.stdout.split()[-1])
    assert 80e6 <= grown < 130e6


@settings(max_examples=60, deadline=None)
@given(entry=st.dictionaries(st.sampled_from(["dtype", "shape", "data_offsets"]),
                             st.one_of(st.sampled_from(["BF16", "F32", "F64", "I8", "BOOL"]), st.integers(-5, 10**12),
                                       st.text(max_size=3), st.lists(st.integers(-3, 10**9), max_size=3), st.none())))
@example(entry={"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]})  # the whole data: mapped
@example(entry={"dtype": "F32", "shape": [4, 5], "data_offsets": [0, 80]})  # past the file's end
@example(entry={"dtype": "F64", "shape": [1], "data_offsets": [4, 12]})  # not aligned to its width
@example(entry={"dtype": "F32", "shape": [0, 2**63], "data_offsets": [0, 0]})  # no bytes, a shape torch refuses
def test_a_hostile_header_never_maps_outside_the_file(entry, tmp_path_factory):
    path = tmp_path_factory.mktemp("hdr") / "h.safetensors"
    header = json.dumps({"x": entry}).encode()
    header += b" " * (-len(header) % 8)  # data aligned to 8 bytes, as safetensors writes it
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    got = mapped_tensors(path, ("x",)).get("x")
    assert got is None or got.numel() * got.element_size() <= 64
