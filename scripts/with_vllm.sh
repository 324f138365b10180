#!/usr/bin/env bash
# Run a command beside one shared vLLM server serving the tiny model: start
# the server (python -m parley_trainer.serve_vllm, parley's flags), wait
# until it is healthy and has answered one completion, run the command with
# PARLEY_VLLM_URL and PARLEY_VLLM_MODEL naming it, stop the server, and exit
# with the command's status. `make test` runs the Go tests this way
# (internal/vllmtest reads the variables).
#
#   scripts/with_vllm.sh [--python PY] [--model DIR] [--max-model-len L] -- CMD ARGS...
#
# The server's log goes to $PARLEY_VLLM_LOG (default: a temp file, printed
# when the server fails). PARLEY_VLLM_START_TIMEOUT bounds the start (s, 600).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
MODEL="$ROOT/models/tiny"
MAX_MODEL_LEN=4096
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --max-model-len) MAX_MODEL_LEN="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "with_vllm: unknown argument $1 (usage: with_vllm.sh [--python PY] [--model DIR] [--max-model-len L] -- CMD...)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "with_vllm: no command given" >&2; exit 2; }
[ -x "$PY" ] || { echo "with_vllm: no Python at $PY: run bash scripts/setup_venv.sh" >&2; exit 2; }
[ -f "$MODEL/config.json" ] || { echo "with_vllm: no model at $MODEL: run make tiny-model" >&2; exit 2; }

LOG="${PARLEY_VLLM_LOG:-$(mktemp -t parley-vllm.XXXXXX.log)}"
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"

start=$(date +%s)
# Its own process group (set -m), so that stopping it stops vLLM's engine processes too.
set -m
"$PY" -m parley_trainer.serve_vllm --model "$MODEL" --served-model-name tiny --port "$PORT" --max-model-len "$MAX_MODEL_LEN" >"$LOG" 2>&1 &
SERVER=$!
set +m
stop() {
  kill -TERM -- "-$SERVER" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$SERVER" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL -- "-$SERVER" 2>/dev/null || true
}
trap stop EXIT

deadline=$(( start + ${PARLEY_VLLM_START_TIMEOUT:-600} ))
until curl -sf "$URL/health" >/dev/null 2>&1; do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "with_vllm: vLLM exited during start-up; the end of its log ($LOG):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "with_vllm: vLLM not healthy after ${PARLEY_VLLM_START_TIMEOUT:-600}s; the end of its log ($LOG):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
  sleep 1
done
healthy=$(date +%s)
# The first completion is slow (warm-up); pay it here, not in a test's timeout.
curl -sf "$URL/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"tiny","prompt":[1,2,3],"max_tokens":2,"seed":1}' >/dev/null
echo "with_vllm: vLLM at $URL (healthy after $(( healthy - start ))s, first completion after $(( $(date +%s) - healthy ))s more; log $LOG)"

set +e
PARLEY_VLLM_URL="$URL" PARLEY_VLLM_MODEL=tiny "$@"
rc=$?
set -e
exit $rc
