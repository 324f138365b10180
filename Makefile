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
# the training-loop tests with the real PyTorch trainer) and Python (trainer,
# dev server, parquet interop).
test: build venv tiny-model
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 60m ./...
	$(PY) -m pytest -q scripts/tests

test-go:
	$(GO) test -count=1 ./...

test-py: venv
	$(PY) -m pytest -q scripts/tests

# Benchmarks: speed and memory are measured here, never asserted in tests.
bench: build venv
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./... 2>&1 | tee bench.txt

tiny-model: venv
	@if [ -f $(TINY)/model.safetensors ]; then echo "tiny model: $(TINY) exists"; \
	else $(PY) scripts/make_tiny_model.py --out $(TINY) --seed 0; fi

# The main job: a short real training run on CPU, everything local.
quickstart: build venv tiny-model
	./bin/parley train --config configs/quickstart.yaml

clean:
	rm -rf bin runs models
