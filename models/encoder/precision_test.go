package encoder

import (
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

func TestCheckCompute(t *testing.T) {
	for _, c := range []struct {
		modelType string
		dt        dtypes.DType
		ok        bool
	}{
		{"bert", dtypes.BFloat16, true},
		{"mpnet", dtypes.BFloat16, true},
		{"xlm-roberta", dtypes.BFloat16, true},
		{"deberta-v2", dtypes.BFloat16, true},
		{"modernbert", dtypes.BFloat16, true},
		{"qwen3", dtypes.BFloat16, true},
		{"gemma3_text", dtypes.BFloat16, true},
		{"wordbag", dtypes.BFloat16, false},
		{"deberta-v2", dtypes.Float32, true},
		{"modernbert", dtypes.InvalidDType, true},
	} {
		cfg, err := New(c.modelType, Sizes{Vocab: 1100, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 32})
		if err != nil {
			t.Fatalf("%s: %v", c.modelType, err)
		}
		err = CheckCompute(cfg, c.dt)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.modelType)) {
			t.Errorf("%s, %s: %v; want ok %v (an error naming the model type)", c.modelType, c.dt, err, c.ok)
		}
	}
}
