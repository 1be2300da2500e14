"""bench/decoder_layers.py on the tiny checkpoint on CPU: every causal convolution of the decoder is timed with
its shapes, costliest first, and the outermost layers' sum is a good part of a whole decode (the rest:
residual sums, the quantizer)."""

from __future__ import annotations

import json

from bench import decoder_layers
from engine.codec.decoder import SpeechDecoder


def test_names_every_layer_with_its_shapes_and_time(tiny_model_dir, capsys):
    model = tiny_model_dir()
    decoder_layers.main(["--model", str(model), "--rows", "2", "--frames", "3", "--dtype", "float32",
                         "--device", "cpu", "--top", "0"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    layers, summary = lines[:-1], lines[-1]
    decoder = SpeechDecoder.from_dir(model / "speech_tokenizer")
    convolutions = {name for name, m in decoder.named_modules()
                    if type(m).__name__ in ("CausalConv1d", "CausalConvTranspose1d")}
    assert convolutions and {x["layer"] for x in layers} == convolutions | {"pre_transformer"} | {
        name for name, m in decoder.named_modules() if type(m).__name__ == "ConvNeXtBlock"}
    assert [x["ms"] for x in layers] == sorted((x["ms"] for x in layers), reverse=True)
    assert all(x["ms"] >= 0 and x["input"][0] == 2 and x["output"][0] == 2 for x in layers)
    final = [x for x in layers if x["type"] == "CausalConv1d" and x["output"][1] == 1]
    assert len(final) == 1 and final[0]["output"][-1] >= 3 * 1920 // 4  # the waveform's conv, at the audio rate
    assert summary["rows"] == 2 and summary["frames"] == 3 and summary["decode_ms"] > 0
    assert 0.3 * summary["decode_ms"] < summary["layers_ms"] < 1.5 * summary["decode_ms"]
