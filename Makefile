# parley — build, test, benchmark, quickstart.
SHELL := /bin/bash
GO ?= go
VENV ?= .venv
PY := $(VENV)/bin/python
TINY := models/tiny
export PARLEY_PYTHON := $(abspath $(PY))
export PARLEY_TINY_MODEL := $(abspath $(TINY))

.PHONY: build venv test test-go test-py bench quickstart tiny-model clean

build:
	$(GO) build -buildvcs=auto -o bin/parley ./cmd/parley

venv:
	bash scripts/setup_venv.sh $(VENV)

# The whole test suite: Go (unit, HTTP against serve-sim, parquet round trips,
# the contract suite and the end-to-end training runs against a real vLLM
# with the real PyTorch trainer) and Python (trainer, tiny model, parquet
# interop). One vLLM server (CPU build, the tiny model) is started for all
# the Go tests (scripts/with_vllm.sh); PARLEY_REQUIRE_VLLM=1 makes a test
# that needs it fail, not skip, when it is missing.
test: build venv tiny-model
	$(GO) vet ./...
	PARLEY_REQUIRE_VLLM=1 bash scripts/with_vllm.sh --python $(PY) --model $(TINY) -- \
		$(GO) test -count=1 -timeout 60m ./...
	$(PY) -m pytest -q scripts/tests

# Go tests without vLLM: the ones that need it skip.
test-go:
	$(GO) test -count=1 ./...

test-py: venv
	$(PY) -m pytest -q scripts/tests

# Benchmarks: speed and memory are measured here, never asserted in tests.
bench: build venv
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./... 2>&1 | tee bench.txt

# Remade when its maker or the pinned packages (trl's Qwen3 template) change.
tiny-model: venv $(TINY)/model.safetensors

$(TINY)/model.safetensors: scripts/parley_trainer/tiny_model.py scripts/requirements.txt
	$(PY) -m parley_trainer.tiny_model --out $(TINY) --seed 0

# The main job: a short real training run on CPU, everything local.
quickstart: build venv tiny-model
	./bin/parley train --config configs/quickstart.yaml

clean:
	rm -rf bin runs models
