package toolret

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
)

// TestExportPrecisionErrors: ExportConfig.Precision is checked before the model is read: an
// unknown value, bf16 for a format that writes float32 weights, bf16 with int8 weights.
func TestExportPrecisionErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ExportConfig
		want string
	}{
		{"unknown", ExportConfig{Format: export.FormatIndex, Precision: "fp16"}, "fp16"},
		{"hf", ExportConfig{Format: export.FormatHF, Precision: backend.BF16}, "-format index"},
		{"int8", ExportConfig{Format: export.FormatIndex, Precision: backend.BF16, Quantize: export.QuantInt8}, "one or the other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Model = filepath.Join(t.TempDir(), "no-such-model")
			c.cfg.Out = filepath.Join(t.TempDir(), "out")
			_, err := Export(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error containing %q", err, c.want)
			}
			if _, serr := os.Stat(c.cfg.Out); serr == nil {
				t.Errorf("%s written despite the error", c.cfg.Out)
			}
		})
	}
}
