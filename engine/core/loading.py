"""Loading an ``Engine``: the checkpoint read into a model (int8 on the fast CPU plan), the codec decoder, and
the execution plan chosen once from the machine, the options and the model (``engine.core.execution_plan``).

``Engine.from_pretrained`` is the entry point and documents the arguments; ``load_engine`` is its body, kept here so
that the engine's module holds what an engine does once loaded.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import replace
from pathlib import Path

import torch

from engine import json_limits
from engine.core import execution_plan, options
from engine.core.checkpoint import load_weights, mapped_bf16_tensors, materialize_buffers, resolve_model_dir
from engine.core.config import DECODER_DTYPE_NAMES, ModelConfig
from engine.core.cpu.int8 import Int8Weight, keep_narrow, narrow_tables, narrow_text_embedding, quantize_layers
from engine.core.cpu.numba_cache import cold_start
from engine.core.frames.graphs.capture import graphs_enabled
from engine.core.model import Qwen3TTS
from engine.core.model.layers import fuse_projections
from engine.core.runtime import check_device, check_torch, fast_cpu_decoder_dtype, release_free_memory, use_cpu_threads
from engine.core.sampling import Sampling
from engine.core.tokenizer import TextTokenizer
from engine.errors import CheckpointError

DECODER_DTYPES = tuple(getattr(torch, name) for name in DECODER_DTYPE_NAMES)  # from_pretrained's decoder_dtype


def load_engine(cls, model: str, device: str | torch.device, dtype: torch.dtype | None, graphs: bool | None,
                decoder_dtype: torch.dtype | None, cpu_int8: bool | None, precision: str | None):
    """``cls.from_pretrained``'s load (``engine.core.engine.Engine``): an engine of class ``cls`` with its
    ``execution_plan`` set."""
    check_torch()
    device = torch.device(device)
    check_device(device)
    legacy = None if cpu_int8 is None or device.type != "cpu" else "fast" if cpu_int8 else "exact"
    precision, dtype, fallbacks = execution_plan.resolve_precision(device, precision, dtype, legacy)
    before = execution_plan.planned(device, precision, dtype)
    before = replace(before, fallbacks=(*fallbacks, *before.fallbacks))
    int8 = precision == "fast" and device.type == "cpu"
    if decoder_dtype is None:
        decoder_dtype = (fast_cpu_decoder_dtype() if int8 else
                         torch.float64 if dtype == torch.float64 else torch.float32)
    elif decoder_dtype not in DECODER_DTYPES:
        names = ", ".join(DECODER_DTYPE_NAMES)
        raise ValueError(f"decoder_dtype must be one of {names} (or None for the default), not {decoder_dtype!r}")
    model_dir = resolve_model_dir(model)
    config = ModelConfig.from_file(model_dir / "config.json")
    # the tokenizer (transformers' import, mostly Python) is made on a thread while the weights load and quantize
    # (mostly PyTorch's operations, which let go of the interpreter lock); its errors are raised below
    tokenizer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="orator-tokenizer")
    made_tokenizer = tokenizer.submit(TextTokenizer, model_dir)
    tokenizer.shutdown(wait=False)
    with torch.device("meta"):
        net = Qwen3TTS(config)
    # the int8 path reads each bf16 tensor through a memory map of its own (its pages leave memory with it),
    # quantizes the layers from those and widens only what stays float: no float32 or fused copy of what it
    # replaces is made, and the text table stays a map
    weights = model_dir / "model.safetensors"
    load_weights(net, weights, device=device, dtype=None if int8 else dtype,
                 given=mapped_bf16_tensors(weights) if int8 else None)
    materialize_buffers(net, device)
    if int8:
        quantize_layers(net.talker, Int8Weight.stacked)
    fuse_projections(net)
    if int8:
        narrow = narrow_tables(net.talker)
        text_table = net.talker.model.text_embedding.weight.detach()
        net.talker.model.text_embedding.weight = None  # set again below, never widened
        net.to(dtype)
        narrow_text_embedding(net.talker, text_table)
        keep_narrow(narrow)
    if device.type == "cpu":
        use_cpu_threads(options.current().threads)
    net.eval()
    from engine.core.codec.decoder import SpeechDecoder

    decoder = SpeechDecoder.from_dir(model_dir / "speech_tokenizer", device=device, dtype=decoder_dtype)
    if device.type == "cpu":
        release_free_memory()
    use_graphs = graphs_enabled(device) if graphs is None else graphs
    if int8:
        # where the Numba steps are not compiled yet, a process compiles them from here on, not while the model
        # loads: a compiler beside the load's many-threaded operations slows them even as an idle task (the caches
        # they share), where starting after the load delays the compiled steps only by the load's seconds
        cold_start.at_load()
    engine = cls(net, config, made_tokenizer.result(), decoder, model_dir, read_defaults(model_dir), use_graphs,
                 int8)
    engine.precision = precision
    engine.execution_plan = execution_plan.of_engine(engine, before)
    return engine


def read_defaults(model_dir: Path) -> Sampling:
    """Sampling defaults from ``generation_config.json`` (official values when absent)."""
    path = model_dir / "generation_config.json"
    if not path.is_file():
        return Sampling()
    try:
        g = json_limits.load_file(path)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path.name} cannot be read: {e}") from None
    if not isinstance(g, dict):
        raise CheckpointError(f"{path.name} must hold a JSON object")
    return Sampling(
        greedy=not g.get("do_sample", True), temperature=g.get("temperature", 0.9), top_k=g.get("top_k", 50),
        top_p=g.get("top_p", 1.0), repetition_penalty=g.get("repetition_penalty", 1.05),
        sub_greedy=not g.get("subtalker_dosample", True), sub_temperature=g.get("subtalker_temperature", 0.9),
        sub_top_k=g.get("subtalker_top_k", 50), sub_top_p=g.get("subtalker_top_p", 1.0),
    )
