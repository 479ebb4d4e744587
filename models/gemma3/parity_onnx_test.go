//go:build onnx

package gemma3

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/internal/paritytest"
)

// TestParityONNX runs the bidirectional fixture on ONNX Runtime (the onnx backend): the padded
// batch's last hidden states (real positions) against transformers' Gemma3TextModel, its
// embeddings against sentence-transformers, and both against the go backend.
func TestParityONNX(t *testing.T) {
	e := paritytest.Expected[expected](t)
	cfg, onnx := embedExecOn(t, "onnx", fixtureDir, fixtureDense)
	_, gob := embedExecOn(t, "go", fixtureDir, fixtureDense)
	on, err := onnx.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gob.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
	if err != nil {
		t.Fatal(err)
	}
	hidden := tensors.MustCopyFlatData[float32](on[0])
	d := paritytest.MaskedDiff(hidden, e.Hidden, e.BatchMask, cfg.HiddenSize)
	t.Logf("onnx, last_hidden_state (real positions): max |onnx - transformers| = %.2e", d)
	if d > parityTol {
		t.Errorf("onnx: last_hidden_state differs from transformers by %.2e (> %.0e)", d, parityTol)
	}
	want := paritytest.Concat(e.Emb)
	emb := tensors.MustCopyFlatData[float32](on[1])
	d = paritytest.MaxDiff(emb, want)
	t.Logf("onnx, embeddings: max |onnx - sentence-transformers| = %.2e", d)
	if d > parityTol {
		t.Errorf("onnx: embeddings differ from sentence-transformers by %.2e (> %.0e)", d, parityTol)
	}
	goEmb := tensors.MustCopyFlatData[float32](g[1])
	m := 0.0
	for i := range emb {
		m = max(m, float64(emb[i]-goEmb[i]), float64(goEmb[i]-emb[i]))
	}
	t.Logf("embeddings: max |onnx - go| = %.2e", m)
	if m > parityTol {
		t.Errorf("onnx and go embeddings differ by %.2e (> %.0e)", m, parityTol)
	}
}
