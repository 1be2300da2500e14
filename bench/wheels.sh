#!/usr/bin/env bash
# Downloads into .whl/ the wheels the GPU device needs for the competitor benchmarks and that its
# image lacks (CPython 3.12, manylinux x86_64): the official qwen-tts-hf, faster-qwen3-tts, the
# transformers release both are run on, and what they import at load time. Versions are pinned;
# only one version of each package may be in .whl/. See bench/README.md for the install line.
# Usage: bash bench/wheels.sh     (from anywhere; needs pip and PyPI, not the device)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHEEL_DIR="$ROOT/.whl"
PYTHON="${PYTHON:-python3}"
MAX_TOTAL_MB=60

# Everything here is missing from the device image, or there in another version (transformers:
# the image has 5.17; the official package is run on 5.15.1). The image already has torch,
# torchaudio, accelerate, numpy, scipy, numba, scikit-learn, joblib, lazy-loader, msgpack, einops,
# onnxruntime, safetensors, huggingface-hub, packaging, requests, typing-extensions.
WHEELS=(
    qwen-tts-hf==0.1.1.post1      # the official implementation (transformers-5 build)
    faster-qwen3-tts==0.5.4       # the CUDA-graph competitor, torch backend
    transformers==5.15.1
    tokenizers==0.22.2            # transformers 5.15.1 refuses the image's 0.23.2 at import
    regex==2026.11.19             # transformers 5.15.1 checks regex>=2025.10.22 at import
    librosa==0.11.0               # imported by the official package
    audioread==3.1.0              # librosa
    decorator==5.2.1              # librosa
    pooch==1.8.2                  # librosa
    platformdirs==4.5.1           # pooch
    soxr==1.1.0                   # librosa
    soundfile==0.13.1             # the official package, faster-qwen3-tts (bundles libsndfile)
    cffi==2.0.0                   # soundfile
    pycparser==2.23               # cffi
    sox==1.4.1                    # imported by the official package (Python wrapper only)
    fastapi==0.165.0              # bench.run_batch --http: the server
    starlette==1.10.0             # fastapi
    pydantic==2.14.4              # fastapi
    pydantic_core==2.50.5         # pydantic
    annotated-types==0.8.0        # pydantic
    typing-inspection==0.4.5      # pydantic, fastapi
    opentelemetry-api==1.45.2     # fastapi imports it
    uvicorn==0.54.0               # the server
    httptools==0.9.0              # the server's HTTP parser (uvicorn picks it when installed)
    uvloop==0.23.0                # the server's event loop (uvicorn picks it when installed)
    python-multipart==0.0.34      # the voices API's uploads
)

mkdir -p "$WHEEL_DIR"
exclude="$ROOT/.git/info/exclude"
if [ -d "$ROOT/.git/info" ] && ! grep -qx '/.whl/' "$exclude" 2>/dev/null; then
    echo '/.whl/' >>"$exclude"
fi

"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d "$WHEEL_DIR" "${WHEELS[@]}"

total_mb=$(du -sm "$WHEEL_DIR" | cut -f1)
ls -1 "$WHEEL_DIR"
echo "total: ${total_mb} MB in $WHEEL_DIR"
if [ "$total_mb" -ge "$MAX_TOTAL_MB" ]; then
    echo "ERROR: wheels take ${total_mb} MB, over the ${MAX_TOTAL_MB} MB budget" >&2
    exit 1
fi
