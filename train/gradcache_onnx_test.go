//go:build onnx

package train

import "testing"

// TestCachedONNX: GradCache's step equals the whole batch's, and its dropout replay holds, on
// ONNX Runtime.
func TestCachedONNX(t *testing.T) {
	t.Run("equals whole", func(t *testing.T) { cachedEqualsWhole(t, "onnx") })
	t.Run("replays dropout", func(t *testing.T) { cachedReplaysDropout(t, "onnx") })
}
