# parley — build, test, benchmark, quickstart.
SHELL := /bin/bash
GO ?= go
VENV ?= .venv
PY := $(VENV)/bin/python
TINY := models/tiny
export PARLEY_PYTHON := $(abspath $(PY))
export PARLEY_TINY_MODEL := $(abspath $(TINY))

.PHONY: build venv test test-go test-py bench bench-view quickstart quickstart-sim quickstart-full tiny-model tiny-model-untied multiparty-model clean

build:
	$(GO) build -buildvcs=auto -o bin/parley ./cmd/parley

venv:
	bash scripts/setup_venv.sh $(VENV)

# The whole test suite: Go (unit, HTTP against serve-sim, parquet round trips,
# the contract suite and the end-to-end training runs against a real vLLM
# with the real PyTorch trainer) and Python (trainer, tiny model, parquet
# interop). One vLLM server (CPU build, the tiny model) is started for all
# the Go tests (scripts/with_vllm.sh); PARLEY_REQUIRE_VLLM=1 makes a test
# that needs it fail, not skip, when it is missing. The Go code is vetted
# and checked by staticcheck (the version go.mod pins, as a tool), the
# Python code linted (ruff) and type-checked (mypy), before any test runs.
test: build venv tiny-model
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(PY) -m ruff check scripts
	$(PY) -m mypy --config-file scripts/pyproject.toml
	PARLEY_REQUIRE_VLLM=1 bash scripts/with_vllm.sh --python $(PY) --model $(TINY) -- \
		$(GO) test -count=1 -timeout 60m ./...
	$(PY) -m pytest -q scripts/tests

# Go tests without vLLM: the ones that need it skip.
test-go:
	$(GO) test -count=1 ./...

test-py: venv
	$(PY) -m ruff check scripts
	$(PY) -m mypy --config-file scripts/pyproject.toml
	$(PY) -m pytest -q scripts/tests

# Benchmarks: speed and memory are measured here, never asserted in tests.
bench: build venv
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./... 2>&1 | tee bench.txt

# parley view's speed on a run of 1,900 steps × 256 rollouts (issue 31's
# targets: the overview under 1 s, a dialogue under 200 ms): the synthetic
# run (view/viewtest.Large, about 2 GB) is written once into
# $PARLEY_VIEW_BENCH_DIR (default $TMPDIR/parley-view-bench) and reused;
# PARLEY_VIEW_BENCH_RUN=100x64 benchmarks a smaller one.
bench-view:
	$(GO) test -run '^$$' -bench 'Overview|Dialogue' -benchmem -benchtime 5x -timeout 60m ./view 2>&1 | tee bench-view.txt

# Remade when its maker or the pinned packages (trl's Qwen3 template) change.
tiny-model: venv $(TINY)/model.safetensors

$(TINY)/model.safetensors: scripts/parley_tools/tiny_model.py scripts/requirements.txt
	$(PY) -m parley_tools.tiny_model --out $(TINY) --seed 0

# The model configs/multiparty-tiny.yaml trains: a tiny random-weight model
# with a tokenizer that knows the scenarios, taught the five-party game's move
# format (votes at even odds, random packages) by a cold-start fine-tune on
# the prompts the game gives it (python -m parley_tools.cold_start). The
# prompts come from series the random model plays against the scripted
# parties (its votes read leniently); its replies are replaced by the
# moves, so four tokens do.
MP := models/tiny-mp
# Its tokenizer corpus, before the five-party scenarios: the bundled
# curricula in file-name order and the persona library (tiny_model.py's
# default corpus).
CORPUS := rollout/deliberation/curricula/sample-dilemmas.jsonl rollout/endowment/curricula/sample-endowment.jsonl \
	rollout/single/curricula/sample-open-ended.jsonl dataset/personas/library.jsonl
MP_PROMPTS := runs/multiparty-prompts/rollouts/step-000000.parquet
multiparty-model: build venv $(MP)-cold/model.safetensors

$(MP)/model.safetensors: scripts/parley_tools/tiny_model.py scripts/requirements.txt
	$(PY) -m parley_tools.tiny_model --out $(MP) --max-position-embeddings 8192 \
		--corpus $(CORPUS) rollout/multiparty/scenario/sets/both.jsonl

$(MP_PROMPTS): $(MP)/model.safetensors
	rm -rf runs/multiparty-prompts
	bash scripts/with_vllm.sh --python $(PY) --model $(MP) --max-model-len 8192 -- sh -c './bin/parley series \
		--config configs/multiparty-tiny.yaml --out runs/multiparty-prompts --game.multiparty.lenient_votes=true --series 40 \
		--policy.endpoints="$$PARLEY_VLLM_URL" --policy.model="$$PARLEY_VLLM_MODEL" --sampling.max_tokens=4'

$(MP)-cold/model.safetensors: $(MP_PROMPTS) scripts/parley_tools/cold_start.py
	$(PY) -m parley_tools.cold_start --model $(MP) --out $(MP)-cold --rollouts $(MP_PROMPTS) --role g1

# The main job: a short real training run on CPU, everything local.
quickstart: build venv tiny-model
	./bin/parley train --config configs/quickstart.yaml

# The quickstart's loop without vLLM: serve-sim speaking the tiny model's
# tokenizer, the real trainer (configs/quickstart-sim.yaml).
quickstart-sim: build venv tiny-model
	./bin/parley train --config configs/quickstart-sim.yaml

# The full-weights quickstart (configs/quickstart-full.yaml) trains the tiny
# model with an output head of its own (vLLM 0.32's CPU build does not
# reload a tied one in place).
tiny-model-untied: venv $(TINY)-untied/model.safetensors

$(TINY)-untied/model.safetensors: scripts/parley_tools/tiny_model.py scripts/requirements.txt
	$(PY) -m parley_tools.tiny_model --out $(TINY)-untied --seed 0 --untied

quickstart-full: build venv tiny-model-untied
	./bin/parley train --config configs/quickstart-full.yaml

clean:
	rm -rf bin runs models
