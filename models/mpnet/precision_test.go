package mpnet

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/paritytest"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

// meanAt returns the fixture's mean-pooled embeddings on the backend name with the
// products in compute (hflayers.ComputeParam).
func meanAt(t *testing.T, name string, compute dtypes.DType) []float32 {
	t.Helper()
	be := paritytest.Backend(t, name)
	e := paritytest.Expected[expected](t)
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), "testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) *Node {
		root.SetGraphParam(ids.Graph(), hflayers.ComputeParam, compute)
		return Pool(root, cfg, Encode(root, cfg, ids, mask), mask, pooling.Mean)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(paritytest.Flat(e.IDs), paritytest.Flat(e.Mask))
	if err != nil {
		t.Fatalf("%s, compute %s: %v", name, compute, err)
	}
	return tensors.MustCopyFlatData[float32](out[0])
}

// checkBF16: MPNet's bf16 embeddings (Linear and attention products in bfloat16) agree
// with the fp32 ones within bf16's precision, and differ from them.
func checkBF16(t *testing.T, name string) {
	p32, p16 := meanAt(t, name, dtypes.Float32), meanAt(t, name, dtypes.BFloat16)
	h := len(p32) / len(paritytest.Expected[expected](t).IDs)
	same := true
	for i := 0; i+h <= len(p32); i += h {
		cos := paritytest.Cosine(p32[i:i+h], p16[i:i+h])
		diff, scale, eq := paritytest.Spread(p32[i:i+h], p16[i:i+h])
		same = same && eq
		t.Logf("%s: text %d: cosine %.6f, max diff %.2e of %.3f", name, i/h, cos, diff, scale)
		if !(cos > 0.999) || diff >= 2e-2*scale {
			t.Errorf("%s: text %d: bf16 vs fp32 cosine %.6f (want > 0.999), max diff %.2e (want < 2e-2 × %.3f)", name, i/h, cos, diff, scale)
		}
	}
	if same {
		t.Errorf("%s: bf16 embeddings are bit-identical to fp32 ones", name)
	}
}

func TestBF16(t *testing.T) { checkBF16(t, "go") }
