package toolret

import (
	"io"
	"log/slog"
	"testing"

	"github.com/toolret/toolret/backend"
)

// TestIndexBackendONNX: by default serve builds a library's zero-shot index on ONNX Runtime
// when the binary has it and the library is installed (the faster one on a quiet machine:
// docs/results/2026-11-29-gateway-live.md), else on the serving backend; "" keeps the serving
// backend, and a bf16 index is never built on ONNX Runtime. Run with -tags onnx (make test's
// ONNX phase) it checks the ONNX case, without it the fallback.
func TestIndexBackendONNX(t *testing.T) {
	cfg := DefaultServeConfig()
	if cfg.IndexBackend != "auto" {
		t.Fatalf("DefaultServeConfig().IndexBackend = %q, want auto", cfg.IndexBackend)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	got, err := indexBackend(cfg, be, log)
	if err != nil {
		t.Fatal(err)
	}
	if want := backend.Auto(); backend.RunsONNX(got) != (want == "onnx") {
		t.Errorf("default: index built on %s, want %s (backend.Auto)", got.Name(), want)
	}
	t.Logf("default index backend here: %s (backend.Auto %s)", got.Name(), backend.Auto())
	for _, c := range []struct{ name, indexBackend, precision string }{
		{"empty keeps the serving backend", "", ""},
		{"bf16 stays off ONNX Runtime", "auto", "bf16"},
	} {
		cfg := DefaultServeConfig()
		cfg.IndexBackend, cfg.Precision = c.indexBackend, c.precision
		got, err := indexBackend(cfg, be, log)
		if err != nil || got != be {
			t.Errorf("%s: index built on %v (%v), want the serving backend", c.name, got, err)
		}
	}
}
