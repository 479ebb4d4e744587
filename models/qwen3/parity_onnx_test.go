//go:build onnx

package qwen3

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/internal/paritytest"
)

// TestParityONNX runs the left- and right-padded batches on ONNX Runtime (the onnx backend):
// last hidden states (real positions) against transformers' Qwen3Model, embeddings (last
// token, Normalize) against sentence-transformers and against the go backend.
func TestParityONNX(t *testing.T) {
	e := paritytest.Expected[expected](t)
	cfg, onnx := embedExec(t, "onnx")
	_, gob := embedExec(t, "go")
	want := paritytest.Concat(e.Emb)
	for _, tc := range []struct {
		name string
		b    batch
	}{{"left", e.Left}, {"right", e.Right}} {
		on, err := onnx.Exec(paritytest.Flat(tc.b.IDs), paritytest.Flat(tc.b.Mask))
		if err != nil {
			t.Fatal(err)
		}
		g, err := gob.Exec(paritytest.Flat(tc.b.IDs), paritytest.Flat(tc.b.Mask))
		if err != nil {
			t.Fatal(err)
		}
		d := paritytest.MaskedDiff(tensors.MustCopyFlatData[float32](on[0]), tc.b.Hidden, tc.b.Mask, cfg.HiddenSize)
		t.Logf("%s-padded, onnx, last_hidden_state (real positions): max |onnx - transformers| = %.2e", tc.name, d)
		if d > parityTol {
			t.Errorf("%s-padded: onnx last_hidden_state differs from transformers by %.2e (> %.0e)", tc.name, d, parityTol)
		}
		emb := tensors.MustCopyFlatData[float32](on[1])
		d = paritytest.MaxDiff(emb, want)
		t.Logf("%s-padded, onnx, embeddings: max |onnx - sentence-transformers| = %.2e", tc.name, d)
		if d > parityTol {
			t.Errorf("%s-padded: onnx embeddings differ from sentence-transformers by %.2e (> %.0e)", tc.name, d, parityTol)
		}
		goEmb := tensors.MustCopyFlatData[float32](g[1])
		m := 0.0
		for i := range emb {
			m = max(m, float64(emb[i]-goEmb[i]), float64(goEmb[i]-emb[i]))
		}
		t.Logf("%s-padded, embeddings: max |onnx - go| = %.2e", tc.name, m)
		if m > parityTol {
			t.Errorf("%s-padded: onnx and go embeddings differ by %.2e (> %.0e)", tc.name, m, parityTol)
		}
	}
}
