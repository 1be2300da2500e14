"""bench/tuning/decoder_layers.py on the tiny checkpoint on CPU: every causal convolution of the decoder is timed with
its shapes, costliest first, and the summary adds up the outermost layers (a ConvNeXt block's convolution
once, inside its block) beside a whole decode's time. (How the two compare is for a quiet GPU to say: on a
loaded CI machine one decode took 9x the layers' sum.)"""

from __future__ import annotations

import json

from bench.tuning import decoder_layers
from engine.core.codec.decoder import SpeechDecoder


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
    names = {x["layer"] for x in layers}
    outermost = [x["ms"] for x in layers if not any(x["layer"].startswith(f"{name}.") for name in names)]
    assert len(outermost) < len(layers)  # the blocks' own convolutions are left out of the sum
    assert abs(summary["layers_ms"] - sum(outermost)) < 1e-3 + 1e-4 * len(outermost)
