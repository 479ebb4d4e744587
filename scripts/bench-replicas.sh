#!/usr/bin/env bash
# The replica figures of docs/replicas.md: three `serve` replicas (in one test process, each
# with its own PostgreSQL connections) over a throwaway PostgreSQL cluster with fsync on
# (internal/pgtest: Debian's postgresql package), serving the zero-shot index of MODEL
# (default all-MiniLM-L6-v2 from the hub cache, `make models`) over the embedded dataset's
# 70 tools. Prints the update acknowledgement and propagation latencies over 200 updates and
# the catch-up times after 1000 updates (serve/pg_figures_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
TOOLRET_PG_FIGURES=1 TOOLRET_PG_FIGURES_MODEL="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}" \
  go test ./serve/ -run '^TestPGFigures$' -count=1 -v | grep -v '^=== RUN'
