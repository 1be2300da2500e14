#!/usr/bin/env bash
# one-off device call (session 5, call 2); deleted after
set -uo pipefail
OUT="${OUT:-/tmp/orator-out}"; mkdir -p "$OUT"; START=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
run() { local name=$1 limit=$2; shift 2; echo "== $name at $(( $(date +%s) - START ))s (limit $limit)";
  timeout -s INT -k 15 "$limit" "$@" >>"$OUT/$name.log" 2>&1; echo "== $name: exit $? at $(( $(date +%s) - START ))s";
  grep -v -i warn "$OUT/$name.log" | tail -12; }
checks() {
  export ORATOR_MODELS=/tmp/orator-test-models ORATOR_GPU_SIZES=0.6b,1.7b
  run tests 330 python3 -m pytest tests/engine/graphs/test_graphs_gpu.py -k "batched or 1.7b" -v -p no:cacheprovider -p no:logging --tb=short --durations=10 -o faulthandler_timeout=200
  m=/tmp/orator-bench-models0/0.6b-custom_voice; python3 -m engine.synthetic $m --size 0.6b --type custom_voice >/dev/null 2>&1
  run decoder 80 python3 -m bench.decoder_speed --model $m --rows 1 64 128 --frames 1 4 --dtypes float32
  run decoder 80 python3 -c "import sys,runpy,torch; torch.backends.cudnn.benchmark=True; sys.argv=['x','--model','$m','--rows','64','128','--frames','4','--dtypes','float32']; print('cudnn.benchmark on'); runpy.run_module('bench.decoder_speed',run_name='__main__'); print('peak GB', torch.cuda.max_memory_allocated()/1e9)"
}
speed() {
  export ORATOR_MODELS=/tmp/orator-bench-models
  for s in 0.6b 1.7b; do python3 -m engine.synthetic $ORATOR_MODELS/$s-custom_voice --size $s --type custom_voice >/dev/null 2>&1; done
  run batch 200 python3 -m bench.run_batch --model $ORATOR_MODELS/0.6b-custom_voice --streams 1 8 32 64 128 --frames 150 --http
  run profile-batch 120 python3 -m bench.profile_batch --model $ORATOR_MODELS/0.6b-custom_voice --streams 64 --ops 25
  run batch17 $(( 545 - ($(date +%s) - START) )) python3 -m bench.run_batch --model $ORATOR_MODELS/1.7b-custom_voice --streams 64 128 --frames 150 --http
}
(CUDA_VISIBLE_DEVICES=0 checks) & (CUDA_VISIBLE_DEVICES=1 speed) & wait
