package encoder_test

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// TestBF16Encoders runs checkBF16Encoders on the go backend.
func TestBF16Encoders(t *testing.T) { checkBF16Encoders(t, "go") }

// checkBF16Encoders runs the tiny fixtures of the encoders with their own Linear and attention
// code (deberta, modernbert, qwen3, gemma3) through NewRunnerCompute in fp32 and in bf16 on
// backendName: the pooled vectors agree within bfloat16's precision (cosine > 0.999 per
// text) yet differ (the products ran in bfloat16). It skips when the backend is absent.
func checkBF16Encoders(t *testing.T, backendName string) {
	be, err := backend.Open(backendName)
	if err != nil {
		t.Skipf("backend %s: %v", backendName, err)
	}
	for _, c := range []struct{ modelType, dir string }{
		{"deberta-v2", "../deberta/testdata/v3"},
		{"modernbert", "../modernbert/testdata/tiny"},
		{"qwen3", "../qwen3/testdata/tiny"},
		{"gemma3_text", "../gemma3/testdata/tiny"},
	} {
		t.Run(c.modelType, func(t *testing.T) {
			store := model.NewStore()
			cfg, err := encoder.LoadHF(store.RootScope(), c.dir)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ModelType() != c.modelType {
				t.Fatalf("%s: model_type %s, want %s", c.dir, cfg.ModelType(), c.modelType)
			}
			if err := encoder.CheckCompute(cfg, dtypes.BFloat16); err != nil {
				t.Fatal(err)
			}
			// Two texts of 8 tokens, the second padded after 5.
			const rows, n = 2, 8
			ids, types, mask := make([]int32, rows*n), make([]int32, rows*n), make([]int32, rows*n)
			for i := range ids {
				ids[i] = int32(3 + (i*37)%(cfg.Vocab()-3))
				mask[i] = 1
				if i >= n+5 {
					ids[i], mask[i] = 0, 0
				}
			}
			run := func(dt dtypes.DType) []float32 {
				r, err := encoder.NewRunnerCompute(be, store, "", cfg, encoder.PoolMean, dt)
				if err != nil {
					t.Fatalf("compute %s: %v", dt, err)
				}
				out, err := r.Call(tensors.FromFlatDataAndDimensions(ids, rows, n), tensors.FromFlatDataAndDimensions(types, rows, n),
					tensors.FromFlatDataAndDimensions(mask, rows, n))
				if err != nil {
					t.Fatalf("compute %s: %v", dt, err)
				}
				if out.DType() != dtypes.Float32 {
					t.Fatalf("compute %s: output %s, want float32", dt, out.DType())
				}
				return tensors.MustCopyFlatData[float32](out)
			}
			v32, v16 := run(dtypes.Float32), run(dtypes.BFloat16)
			h := len(v32) / rows
			same := true
			for i := range rows {
				var dot, n32, n16 float64
				for j := i * h; j < (i+1)*h; j++ {
					a, b := float64(v32[j]), float64(v16[j])
					dot, n32, n16 = dot+a*b, n32+a*a, n16+b*b
					same = same && v32[j] == v16[j]
				}
				cos := dot / math.Sqrt(n32*n16)
				t.Logf("text %d: cosine(bf16, fp32) = %.6f", i, cos)
				if !(cos > 0.999) {
					t.Errorf("text %d: cosine of the bf16 and fp32 vectors %.6f, want > 0.999", i, cos)
				}
			}
			if same {
				t.Error("bf16 vectors are bit-identical to fp32: the products did not run in bfloat16")
			}
		})
	}
}
