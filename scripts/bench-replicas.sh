#!/usr/bin/env bash
# The replica figures of docs/replicas.md: three `serve` replicas (in one test process, each
# with its own PostgreSQL connections) over a throwaway PostgreSQL cluster with fsync on
# (internal/pgtest: Debian's postgresql package), serving an index of MODEL (default
# all-MiniLM-L6-v2, zero-shot over the embedded dataset's 70 tools; built into IDX once).
# Prints the update acknowledgement and propagation latencies over 200 updates and the
# catch-up times after 1000 updates (serve/pg_figures_test.go). Run it alone on the machine
# (here: under flock /work/heavy.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
IDX=${IDX:-exports/replicas-minilm-index}
if [ ! -f "$IDX/manifest.json" ]; then
  go run ./cmd/toolret export -model "$MODEL" -format index -out "$IDX" -backend go >&2
fi
TOOLRET_PG_FIGURES=1 TOOLRET_PG_FIGURES_INDEX="$(realpath "$IDX")" \
  go test ./serve/ -run '^TestPGFigures$' -count=1 -v | grep -v '^=== RUN'
