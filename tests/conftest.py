"""Session-wide fixtures: tiny synthetic checkpoints and the text tokenizer, built once per run.

``tiny_model_dir(model_type)`` returns the path of a complete tiny synthetic model directory of that
type ("base", "custom_voice", "voice_design"), built on first use and reused by every test.
The GPU marker is skipped automatically where CUDA is unavailable.
"""

from __future__ import annotations

import os

import pytest
import torch

pytest_plugins = ["tests.cold_start_bridge"]  # the cold-start bridge's fixtures (engine and studio tests)
# The tests' engines run the plan users get on this machine (engine.core.execution_plan: fast, int8 weights on a CPU);
# a test where exactness is the point asks for precision="exact" itself. Two choices that follow the machine's
# momentary speed are pinned, and each plan says so (``ExecutionPlan.bridge``, ``grow_chunks``):
# an int8 engine compiles its Numba steps in its own process, as where nothing is cached: which segments would step
# through them otherwise follows another process's progress (tests/engine/numba_cache turn the bridge on)
os.environ.setdefault("ORATOR_CPU_WARMUP", "0")
# a stream's chunks keep their requested sizes unless a test asks them to grow: growth follows the machine's speed,
# and chunks of other sizes decode other last bits
os.environ.setdefault("ORATOR_GROW_CHUNKS", "0")
if not torch.cuda.is_available():  # Triton kernels run in its interpreter on CPU (set before engine imports)
    os.environ.setdefault("TRITON_INTERPRET", "1")
    # nor do they compile on a CPU (each engine would spend seconds in the compiler) unless a test asks
    os.environ.setdefault("ORATOR_COMPILE", "0")
else:  # GPU tests that multiply before loading an engine repeat run to run as the engine does
    from engine.core.runtime import deterministic_cublas

    deterministic_cublas()


def pytest_configure(config):
    """One Numba cache for the whole run, every process of it included (``main.py`` commands, warm-up processes):
    the pytest cache's ``numba/<kernel sources' digest>`` (a temporary folder without the cache plugin), set before
    anything imports Numba, so a run compiles the CPU kernels once and a CI cache of ``.pytest_cache`` keeps them.
    The digest in the name keeps a kernel edited since from loading stale code (``engine.core.cpu.numba_cache``). A
    NUMBA_CACHE_DIR set already stands."""
    import tempfile
    from pathlib import Path

    from engine.core.cpu import numba_cache

    if os.environ.get(numba_cache.ENV):
        return
    digest = (numba_cache.sources_digest() or "no-sources")[:16]
    cache = getattr(config, "cache", None)
    base = cache.mkdir("numba") if cache is not None else Path(tempfile.gettempdir()) / "orator-tests-numba"
    os.environ[numba_cache.ENV] = str(base / digest)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def text_tokenizer(tmp_path_factory):
    from engine.core.tokenizer import TextTokenizer
    from engine.synthetic.text_tokenizer import write_text_tokenizer

    path = tmp_path_factory.mktemp("text_tokenizer")
    write_text_tokenizer(path)
    return TextTokenizer(path)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from engine.synthetic.checkpoint import build_checkpoint

    built = {}

    def get(model_type: str = "custom_voice"):
        if model_type not in built:
            out = tmp_path_factory.mktemp(f"tiny_{model_type}")
            built[model_type] = build_checkpoint(out, "tiny", model_type, seed=0)
        return built[model_type]

    return get


@pytest.fixture(scope="session")
def full_size_0_6b(tmp_path_factory):
    """A full-size 0.6B CustomVoice checkpoint (random weights, ~1.8 GB), built once for the slow tests."""
    from engine.synthetic.checkpoint import build_checkpoint

    return build_checkpoint(tmp_path_factory.mktemp("full") / "0.6b", size="0.6b", model_type="custom_voice")


@pytest.fixture(scope="session")
def plan_engine(tiny_model_dir):
    """``get(precision, model_type="custom_voice")``: a CPU engine at that precision (``tests.plans.PRECISIONS``:
    the plans integration tests run over) on the tiny checkpoint of that type, loaded once."""
    from engine import Engine

    loaded = {}

    def get(precision: str, model_type: str = "custom_voice"):
        if (precision, model_type) not in loaded:
            loaded[precision, model_type] = Engine.from_pretrained(tiny_model_dir(model_type), device="cpu",
                                                                   precision=precision)
        return loaded[precision, model_type]

    return get


@pytest.fixture(scope="session")
def tiny_engine(plan_engine):
    """A CPU engine per model type on the tiny checkpoints, loaded once, on this machine's default plan (the
    ``precision`` option's: fast unless ORATOR_PRECISION says otherwise)."""
    from engine.core import options

    return lambda model_type="custom_voice": plan_engine(options.current().precision, model_type)


@pytest.fixture
def engine_options():
    """``set(**changes)``: change the engine's process-wide options (``engine.core.options``) for this test only."""
    from engine.core import options

    before = options.current()
    yield lambda **changes: options.configure(**changes)
    options.configure(before)
