//go:build onnx

package traincmd

import (
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/backend"
)

// TestTrainONNX trains a tiny bi-encoder on -backend onnx, whole batches and GradCache's,
// through the backend a training run opens (ONNX Runtime without its memory arena).
func TestTrainONNX(t *testing.T) {
	if _, err := backend.Open(backend.Training("onnx")); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	for _, mini := range []string{"0", "3"} {
		run := filepath.Join(t.TempDir(), "run")
		args := []string{"-run", run, "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8", "-vocab-size", "500",
			"-epochs", "1", "-max-steps", "2", "-eval-every", "2", "-test", "", "-quiet", "-backend", "onnx", "-mini-batch", mini}
		if err := biencoderCmd(args); err != nil {
			t.Fatalf("-mini-batch %s: %v", mini, err)
		}
	}
}
