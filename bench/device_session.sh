#!/usr/bin/env bash
# One call on the lent GPU machine: correctness, the side-by-side benchmark of one size, the many-streams
# benchmark and the profiles, each step bounded so the next still runs. With two GPUs the checks (GPU
# tests, then the decoder alone) and the speed runs (side by side, many streams, the many-streams loop's
# profile, the frame's profile) go in parallel, one GPU each, with their own checkpoints. Everything lands
# in $OUT as 8 files at most (all the device returns): seven logs (the many-streams runs' JSON lines are in
# batch.log) and the side-by-side JSON lines. Run from the repository root there, with .whl carried
# (bench/README.md); the device's .git is stale, so name the commit:
#   ORATOR_COMMIT=<hash> bash bench/device_session.sh 0.6b [seconds, default 570]
set -uo pipefail
SIZE="${1:-0.6b}"
BUDGET="${2:-570}"
START=$(date +%s)
OUT="${OUT:-/tmp/orator-out}"
mkdir -p "$OUT"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export ORATOR_GPU_SIZES="$SIZE"
GPUS=$(python3 -c 'import torch; print(torch.cuda.device_count())')

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

# checks TESTS_SHARE DECODER_SHARE (percent of the time left at each step). The tests: with 0.6b the
# kernels and every GPU test; with another size its full-size and the batched tests. Then the decoder alone
checks() {
    export ORATOR_MODELS=/tmp/orator-test-models
    if [ "$SIZE" = 0.6b ]; then tests=(tests/engine/kernels tests/engine/graphs/test_graphs_gpu.py); else
        tests=(tests/engine/graphs/test_graphs_gpu.py -k "$SIZE or batched"); fi
    step tests "$1" python3 -m pytest "${tests[@]}" -v -p no:cacheprovider -p no:logging --tb=short \
        --durations=15 -o faulthandler_timeout=150
    local model="$ORATOR_MODELS/$SIZE-custom_voice"
    [ -f "$model/model.safetensors" ] || python3 -m engine.synthetic "$model" --size "$SIZE" --type custom_voice
    step decoder "$2" python3 -m bench.decoder_speed --model "$model" --rows 1 8 64 128 --frames 1 4 --dtypes float32
}

# speed BENCH_SHARE BATCH_SHARE BATCH_PROFILE_SHARE PROFILE_SHARE
speed() {
    export ORATOR_MODELS=/tmp/orator-bench-models
    local model="$ORATOR_MODELS/$SIZE-custom_voice"
    step bench "$1" python3 -m bench.run_all --sizes "$SIZE" --systems orator faster official --frames 150 --runs 3 \
        --models "$ORATOR_MODELS" --out "/tmp/bench-$SIZE"
    cp "/tmp/bench-$SIZE/results.jsonl" "$OUT/bench-$SIZE.jsonl"
    [ -f "$model/model.safetensors" ] || python3 -m engine.synthetic "$model" --size "$SIZE" --type custom_voice
    step batch "$2" python3 -m bench.run_batch --model "$model" --streams 1 8 32 64 128 --frames 150 --http
    step profile-batch "$3" python3 -m bench.profile_batch --model "$model" --streams 64 --ops 25
    step profile "$4" python3 -m bench.profile_orator --model "$model"
}

if [ "$GPUS" -ge 2 ]; then
    (CUDA_VISIBLE_DEVICES=0 checks 80 95) &
    (CUDA_VISIBLE_DEVICES=1 speed 55 50 60 95) &  # the official package needs ~250 s of it
    wait
else
    checks 35 15
    speed 45 40 50 95
fi
