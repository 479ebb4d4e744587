//go:build xla

package train

import "testing"

// TestCachedXLA: GradCache's step equals the whole batch's, and its dropout replay holds, on
// XLA's CPU plugin.
func TestCachedXLA(t *testing.T) {
	t.Run("equals whole", func(t *testing.T) { cachedEqualsWhole(t, "xla:cpu") })
	t.Run("replays dropout", func(t *testing.T) { cachedReplaysDropout(t, "xla:cpu") })
}
