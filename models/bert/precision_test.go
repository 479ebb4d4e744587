package bert

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/paritytest"
	"github.com/toolret/toolret/models/hflayers"
)

// encodeAt returns the fixture's mean-pooled embeddings [batch][hidden] and last hidden
// states (flat) computed with the matrix multiplications in compute (hflayers.ComputeParam;
// Float32: no mixed precision), and the dtype of every variable after the run.
func encodeAt(t *testing.T, backendName string, compute dtypes.DType) (pooled [][]float32, hidden []float32, vars map[string]dtypes.DType) {
	t.Helper()
	be, e, store, cfg := loadFixture(t, backendName)
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, types, mask *Node) []*Node {
		if compute != dtypes.Float32 {
			root.SetGraphParam(ids.Graph(), hflayers.ComputeParam, compute)
		}
		h := Encode(root, cfg, ids, types, mask)
		return []*Node{Pool(root, cfg, h, mask, PoolMean), h}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Call(paritytest.Flat(e.RawIDs), paritytest.Flat(e.RawTypes), paritytest.Flat(e.RawMask))
	if err != nil {
		t.Fatalf("%s, compute %s: %v", backendName, compute, err)
	}
	if dt := res[0].DType(); dt != dtypes.Float32 {
		t.Fatalf("%s, compute %s: output dtype %s, want float32", backendName, compute, dt)
	}
	p := tensors.MustCopyFlatData[float32](res[0])
	h := cfg.HiddenSize
	for i := 0; i+h <= len(p); i += h {
		pooled = append(pooled, p[i:i+h])
	}
	vars = map[string]dtypes.DType{}
	for v := range store.IterVariables() {
		vars[v.Path()] = v.Shape().DType
	}
	return pooled, tensors.MustCopyFlatData[float32](res[1]), vars
}

// checkBF16 compares the fixture's bf16 forward pass on backendName with its fp32 one: the
// pooled embeddings agree within bf16's precision (cosine > 0.999 per text, max difference
// < 2e-2 of the largest value), yet differ (the products really ran in bfloat16), and the
// variables stay float32.
func checkBF16(t *testing.T, backendName string) {
	p32, h32, _ := encodeAt(t, backendName, dtypes.Float32)
	p16, h16, vars := encodeAt(t, backendName, dtypes.BFloat16)
	for path, dt := range vars {
		if dt != dtypes.Float32 {
			t.Errorf("variable %s is %s after a bf16 pass, want float32", path, dt)
		}
	}
	if len(p16) != len(p32) || len(h16) != len(h32) {
		t.Fatalf("bf16 %d texts, %d values; fp32 %d, %d", len(p16), len(h16), len(p32), len(h32))
	}
	for i := range p32 {
		cos := paritytest.Cosine(p32[i], p16[i])
		t.Logf("%s: text %d: cosine(bf16, fp32) = %.6f", backendName, i, cos)
		if !(cos > 0.999) {
			t.Errorf("%s: text %d: cosine of the bf16 and fp32 embeddings %.6f, want > 0.999", backendName, i, cos)
		}
	}
	diff, scale, same := paritytest.Spread(h32, h16)
	t.Logf("%s: hidden states: max |bf16 - fp32| = %.3e, %.2e of max |fp32| %.3f", backendName, diff, diff/scale, scale)
	if diff/scale >= 2e-2 {
		t.Errorf("%s: bf16 hidden states differ from fp32 by %.3e, %.2e of the largest value (want < 2e-2)", backendName, diff, diff/scale)
	}
	if same {
		t.Errorf("%s: bf16 hidden states are bit-identical to fp32: the products did not run in bfloat16", backendName)
	}
}

// TestBF16 runs checkBF16 on the go backend.
func TestBF16(t *testing.T) { checkBF16(t, "go") }
