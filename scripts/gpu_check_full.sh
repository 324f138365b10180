#!/usr/bin/env bash
# The GPU check of full-weights training with the NCCL transfer (issue 19,
# item 7). On a machine with one CUDA GPU and the project's environment
# built with vLLM's CUDA build (CI never runs this; vLLM's CPU build has no
# NCCL): it makes a random-weight model of Qwen3-0.6B's shape (nothing is
# downloaded), serves it with vLLM's dev mode and an NCCL weight transfer
# engine, trains a few full-weights steps with parley (the trainer
# broadcasts each step's weights to vLLM's workers), and prints, per step,
# the transfer time, the pause time and the verification (checksums
# compared, probe logprob difference).
#
#   bash scripts/gpu_check_full.sh [--python PY] [--steps N] [--out DIR]
#
# Exit status 0 when every step was transferred and verified.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
STEPS=3
OUT="${TMPDIR:-/tmp}/parley-gpu-check-full"
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "gpu_check_full: unknown argument $1" >&2; exit 2 ;;
  esac
done
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  { echo "gpu_check_full: no CUDA GPU visible to $PY (torch.cuda.is_available() is false)" >&2; exit 2; }
mkdir -p "$OUT"
MODEL="$OUT/qwen3-0.6b-random"
PARLEY="$OUT/parley"
(cd "$ROOT" && go build -o "$PARLEY" ./cmd/parley)

# Qwen3-0.6B's shape (its config.json), random weights, parley's tokenizer.
[ -f "$MODEL/model.safetensors" ] ||
  "$PY" -m parley_tools.tiny_model --out "$MODEL" --seed 0 --vocab-size 151936 --hidden-size 1024 --layers 28 \
    --heads 16 --kv-heads 8 --head-dim 128 --intermediate-size 3072 --max-position-embeddings 4096

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT="$(free_port)"
NCCL_PORT="$(free_port)"

# One GPU: vLLM takes part of it, the trainer the rest. parley starts vLLM
# (train.server_command) with the dev mode (--full-weights) and NCCL.
SERVER="$PY,-m,parley_trainer.serve_vllm,--model,$MODEL,--served-model-name,tiny,--port,$PORT,--full-weights,--dtype,bfloat16,--,--gpu-memory-utilization,0.35,--weight-transfer-config,{\"backend\":\"nccl\"}"
rm -rf "$OUT/runs"
set +e
"$PARLEY" train --config "$ROOT/configs/quickstart-full.yaml" --log-format json \
  --run.dir="$OUT/runs" --run.name=gpu-check --train.steps="$STEPS" \
  --policy.endpoints="http://127.0.0.1:$PORT" --train.server_command="$SERVER" \
  --train.trainer_command="$PY,-m,parley_trainer" --trainer.model="$MODEL" \
  --train.weight_sync.transfer=nccl --train.weight_sync.nccl_addr="127.0.0.1:$NCCL_PORT" \
  --train.weight_sync.probe_tolerance=0.1 \
  --trainer.lr=1e-5 --trainer.extra_args=--dtype,bfloat16 \
  >"$OUT/parley.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "gpu_check_full: parley train failed ($rc); the end of $OUT/parley.log:" >&2
  tail -n 30 "$OUT/parley.log" >&2
  exit 1
fi
"$PY" - "$OUT/runs/gpu-check/metrics.jsonl" "$STEPS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = len(rows) == int(sys.argv[2])
print("step  transfer_s  pause_s  update_s  checksums(compared/not)  probe_mean_abs_dlogprob")
for m in rows:
    good = m.get("update_transferred") == 1 and m.get("update_checksums_compared", 0) > 0 and "update_probe_mean_abs_logprob_diff" in m
    ok = ok and good
    print(f"{m['step']:>4}  {m.get('update_transfer_seconds', float('nan')):10.3f}  {m.get('update_pause_seconds', float('nan')):7.3f}"
          f"  {m.get('update_seconds', float('nan')):8.3f}  {int(m.get('update_checksums_compared', 0)):>8}/{int(m.get('update_checksums_not_comparable', 0)):<8}"
          f"          {m.get('update_probe_mean_abs_logprob_diff', float('nan')):.3g}  {'ok' if good else 'NOT VERIFIED'}")
print("checksum result:", "every step verified" if ok else "FAILED")
sys.exit(0 if ok else 1)
EOF
