#!/usr/bin/env bash
# One call on the lent GPU machine. `tests`: every GPU test (kernels, graphs at 0.6B and 1.7B, the
# many-streams tests); a size: the side-by-side benchmark of that size, the many-streams benchmark and the
# profiles, each step bounded so the next still runs. With two GPUs the work goes in two halves, one GPU
# each, in parallel, with their own checkpoints (tests: the many-streams tests, whose warm-ups compile
# every bucket, and the full-size kernel agreement on the second GPU; a size: the decoder alone and the
# profiles on the first, the benchmarks on the second). Everything lands in $OUT as 8 files at most (all the device returns). Run
# from the repository root there, with .whl carried (bench/README.md); the device's .git is stale, so
# name the commit:
#   ORATOR_COMMIT=<hash> bash scripts/device_session.sh tests|0.6b|1.7b [seconds, default 570]
# `ab` measures a branch against this tree side by side, at the same moment (main on the first GPU, the
# branch on the second; on a one-GPU machine one after the other), the many-streams benchmark at 64 and 128
# streams through the engine and HTTP, then (two GPUs only) the loop's GPU timeline at 64 and 128
# (bench.tuning.gpu_timeline: its busy, idle and overlap).
# DIR is the branch's whole tree, unpacked here beforehand (`mkdir _branch && git archive BRANCH | tar -x -C
# _branch`: untracked, it travels with the call):
#   ORATOR_COMMIT=<hash> bash scripts/device_session.sh ab [seconds] DIR [0.6b|1.7b]
# `sweep` is the many-streams benchmark of record: 1, 8, 32, 64 and 128 streams (128 first and last), through
# the engine and through HTTP with four client processes and with one; with two GPUs the 0.6B on the first and
# the 1.7B on the second at the same moment, with one GPU the 0.6B only (~400 s with a cold compile each):
#   ORATOR_COMMIT=<hash> bash scripts/device_session.sh sweep [seconds]
set -uo pipefail
SIZE="${1:-0.6b}"
BUDGET="${2:-570}"
BRANCH_TREE="${3:-}"
AB_SIZE="${4:-0.6b}"
START=$(date +%s)
OUT="${OUT:-/tmp/orator-out}"
mkdir -p "$OUT"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
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

# tests SHARE SELECTION... : the GPU tests picked by the pytest arguments, in one log named by $LOG
tests() {
    local share=$1; shift
    export ORATOR_MODELS="/tmp/orator-models-$LOG" ORATOR_GPU_SIZES=0.6b,1.7b  # each half its own checkpoints
    step "$LOG" "$share" python3 -m pytest "$@" -v -p no:cacheprovider -p no:logging --tb=short \
        --durations=15 -o faulthandler_timeout=200
}

# profiles DECODER_SHARE BATCH_PROFILE_SHARE PROFILE_SHARE: the decoder alone, then the profiles
profiles() {
    export ORATOR_MODELS=/tmp/orator-profile-models
    local model="$ORATOR_MODELS/$SIZE-custom_voice"
    python3 -m engine.synthetic "$model" --size "$SIZE" --type custom_voice >/dev/null
    step decoder "$1" python3 -m bench.tuning.decoder_speed --model "$model" --rows 1 8 64 128 --frames 1 4 --dtypes float32 bfloat16
    step decoder-layers 10 python3 -m bench.tuning.decoder_layers --model "$model" --rows 64 --frames 4 --dtype bfloat16
    step profile-batch "$2" python3 -m bench.tuning.profile_batch --model "$model" --streams 64 --kernels 25 --syncs 25 \
        --decoder-dtype bfloat16
    step profile "$3" python3 -m bench.tuning.profile_orator --model "$model"
}

# speed BENCH_SHARE BATCH_SHARE
speed() {
    export ORATOR_MODELS=/tmp/orator-bench-models
    local model="$ORATOR_MODELS/$SIZE-custom_voice"
    step bench "$1" python3 -m bench.run_all --sizes "$SIZE" --systems orator faster official --frames 150 --runs 3 \
        --models "$ORATOR_MODELS" --out "/tmp/bench-$SIZE"
    cp "/tmp/bench-$SIZE/results.jsonl" "$OUT/bench-$SIZE.jsonl"
    step batch "$2" python3 -m bench.run_batch --model "$model" --streams 1 8 32 64 128 --frames 150 --http \
        --decoder-dtype bfloat16  # the faster decoder under many streams (docs/benchmarks.md#decoder-dtype)
}

# ab_half NAME TREE: one side of `ab`, in its own tree (its engine, bench and tests), on the GPU it was given
ab_half() {
    local name=$1 tree=$2 model=/tmp/orator-ab-models/$AB_SIZE-custom_voice
    cd "$tree" && export PYTHONPATH="/tmp/site:$tree"
    step "ab-$name" "$( [ "$GPUS" -ge 2 ] && echo 65 || echo 100 )" python3 -m bench.run_batch --model "$model" \
        --streams 64 128 --frames 150 --http --decoder-dtype bfloat16 --out "$OUT/ab-$name.jsonl"
    if [ "$GPUS" -ge 2 ]; then  # (one GPU: no time for it; a cold warm-up there takes 250-306 s at 0.6B)
        step "ab-$name-timeline" 95 python3 -m bench.tuning.gpu_timeline --model "$model" --streams 64 128 \
            --decoder-dtype bfloat16
    fi
}

# sweep_size SIZE: the many-streams benchmark of record at SIZE, on the GPU it was given
sweep_size() {
    local size=$1 model=/tmp/orator-sweep-models/$1-custom_voice
    python3 -m engine.synthetic "$model" --size "$size" --type custom_voice >/dev/null
    step "sweep-$size" 100 python3 -m bench.run_batch --model "$model" --streams 128 64 32 8 1 128 --frames 150 \
        --http --client-processes 4 1 --decoder-dtype bfloat16 --out "$OUT/sweep-$size.jsonl"
}

GRAPHS=tests/engine/frames/graphs/test_graphs_gpu.py
FIRST="not batched and not triton_kernels"  # ~8 minutes on an H200 by this session's durations; the rest ~7
if [ "$SIZE" = ab ]; then
    if [ ! -d "$BRANCH_TREE/engine" ]; then
        echo "ab needs the branch's tree (a folder with engine/): got '$BRANCH_TREE'"; exit 2
    fi
    python3 -m engine.synthetic "/tmp/orator-ab-models/$AB_SIZE-custom_voice" --size "$AB_SIZE" --type custom_voice >/dev/null
    if [ "$GPUS" -ge 2 ]; then
        (CUDA_VISIBLE_DEVICES=0 ab_half main "$PWD") &
        (CUDA_VISIBLE_DEVICES=1 ab_half branch "$(cd "$BRANCH_TREE" && pwd)") &
        wait
    else  # one GPU: main, then the branch (whose warm-up reads main's compile cache: 60% of the time for main)
        (BUDGET=$(( $(date +%s) - START + $(left) * 60 / 100 )); ab_half main "$PWD")
        (ab_half branch "$(cd "$BRANCH_TREE" && pwd)")
    fi
elif [ "$SIZE" = sweep ]; then
    if [ "$GPUS" -ge 2 ]; then
        (CUDA_VISIBLE_DEVICES=0 sweep_size 0.6b) &
        (CUDA_VISIBLE_DEVICES=1 sweep_size 1.7b) &
        wait
    else
        sweep_size 0.6b
    fi
elif [ "$SIZE" = tests ]; then
    if [ "$GPUS" -ge 2 ]; then
        (CUDA_VISIBLE_DEVICES=0 LOG=tests tests 100 tests/engine/kernels tests/engine/test_runtime.py "$GRAPHS" -k "$FIRST") &
        (CUDA_VISIBLE_DEVICES=1 LOG=tests-batched tests 100 "$GRAPHS" -k "not ($FIRST)") &
        wait
    else
        LOG=tests tests 60 tests/engine/kernels tests/engine/test_runtime.py "$GRAPHS" -k "$FIRST"
        LOG=tests-batched tests 100 "$GRAPHS" -k "not ($FIRST)"
    fi
elif [ "$GPUS" -ge 2 ]; then
    (CUDA_VISIBLE_DEVICES=0 profiles 20 50 95) &
    (CUDA_VISIBLE_DEVICES=1 speed 55 95) &  # the official package needs ~250 s of it
    wait
else
    speed 50 40
    profiles 20 50 95
fi
