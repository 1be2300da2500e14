#!/usr/bin/env bash
# One call on the lent GPU machine: correctness first, then the side-by-side benchmark of one size,
# then the many-streams benchmark, each step bounded so the next still runs. Everything lands in $OUT.
# Run from the repository root there, with .whl carried (bench/README.md):
#   bash bench/device_session.sh 0.6b [seconds for the whole call, default 570]
set -uo pipefail
SIZE="${1:-0.6b}"
BUDGET="${2:-570}"
START=$(date +%s)
OUT="${OUT:-/tmp/orator-out}"
mkdir -p "$OUT"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export ORATOR_MODELS=/tmp/orator-bench-models ORATOR_GPU_SIZES="$SIZE"

left() { echo $(( BUDGET - ($(date +%s) - START) )); }
step() {  # step NAME SHARE_OF_WHAT_IS_LEFT_IN_PERCENT COMMAND...
    local name=$1 share=$2; shift 2
    local limit=$(( $(left) * share / 100 ))
    if [ "$limit" -lt 20 ]; then echo "== $name: skipped, no time left"; return; fi
    echo "== $name (at most ${limit}s)"
    # SIGINT first: pytest then prints its summary and where it stood
    timeout -s INT -k 20 "$limit" "$@" >"$OUT/$name.log" 2>&1
    echo "== $name: exit $?"
    grep -v -i "warn" "$OUT/$name.log" | tail -15
}

# the kernels and the tiny and batched GPU tests once (with 0.6b); other sizes run their full-size tests only
if [ "$SIZE" = 0.6b ]; then TESTS=(tests/engine/kernels tests/engine/graphs/test_graphs_gpu.py); else
    TESTS=(tests/engine/graphs/test_graphs_gpu.py -k "$SIZE"); fi
step tests 40 python3 -m pytest "${TESTS[@]}" -v -p no:cacheprovider -p no:logging --tb=short --durations=15 \
    -o faulthandler_timeout=150
step bench 70 python3 -m bench.run_all --sizes "$SIZE" --systems orator faster official --frames 150 --runs 3 --out "$OUT/bench-$SIZE"
step batch 95 python3 -m bench.run_batch --model "$ORATOR_MODELS/$SIZE-custom_voice" --streams 1 8 32 64 128 --frames 150 --http --out "$OUT/batch-$SIZE.jsonl"
