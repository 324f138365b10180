#!/usr/bin/env bash
# Create or update the Python environment of parley's scripts/ (trainer, dev
# server, tests) from scripts/requirements.txt.
#
#   bash scripts/setup_venv.sh [VENV_DIR]      (default: .venv at the repo root)
#
# Idempotent: a stamp file in the venv holds a hash of the requirements, the
# Python version and the installer; when it matches, nothing is done.
# Installs with uv (fast, parallel downloads; ~2 min on a cold cache, seconds
# on a warm one) and falls back to pip when PARLEY_NO_UV=1 or uv is
# unavailable. PYTHON picks the interpreter (default: python3.11, python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
REQ="$ROOT/scripts/requirements.txt"
UV_VERSION="0.13.8"
STAMP="$VENV/.parley-requirements.sha256"

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "setup_venv: $PY is $("$PY" --version 2>&1); Python >= 3.10 is required (3.11 preferred)" >&2
  exit 1
fi

want="$( { cat "$REQ"; "$PY" -c 'import sys; print(sys.version)'; echo "uv=$UV_VERSION no_uv=${PARLEY_NO_UV:-}"; } | sha256sum | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "setup_venv: $VENV is up to date"
  exit 0
fi

start=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
rm -f "$STAMP"
installed=0
if [ "${PARLEY_NO_UV:-}" != "1" ]; then
  if "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"; then
    "$VENV/bin/uv" pip install --python "$VENV/bin/python" -r "$REQ"
    installed=1
  else
    echo "setup_venv: could not install uv; falling back to pip" >&2
  fi
fi
if [ "$installed" != "1" ]; then
  "$VENV/bin/python" -m pip install --disable-pip-version-check -r "$REQ"
fi
"$VENV/bin/python" -c 'import torch, pyarrow, tokenizers'
echo "$want" > "$STAMP"
echo "setup_venv: $VENV ready in $(( $(date +%s) - start ))s"
