package traincmd

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/cli"
)

// TestLRWarning: every train command that takes -lr warns about "-lr 5e4" (5e-4 mistyped),
// naming the value. Each case also gives a flag its checks refuse, so nothing trains.
func TestLRWarning(t *testing.T) {
	defer func(w io.Writer) { cli.Stderr = w }(cli.Stderr)
	for _, tc := range []struct {
		name string
		cmd  func([]string) error
		args []string
	}{
		{"biencoder", biencoderCmd, []string{"-batch", "0"}},
		{"crossencoder", crossencoderCmd, []string{"-first-stage", "r", "-batch", "0"}},
		{"classifier", classifierCmd, []string{"-batch", "0"}},
		{"refiner", refinerCmd, []string{"-batch", "0"}},
		{"pretrain", pretrainCmd, []string{"-batch", "0"}},
		{"colt", coltCmd, []string{"-first-stage", "r", "-batch", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			cli.Stderr = &b
			args := append([]string{"-run", filepath.Join(t.TempDir(), "run"), "-lr", "5e4"}, tc.args...)
			err := tc.cmd(args)
			if err == nil || !strings.Contains(err.Error(), "-batch 0") {
				t.Fatalf("%q: %v, want the -batch error", args, err)
			}
			if !strings.Contains(b.String(), "warning: -lr 50000 is far above") || !strings.Contains(b.String(), "did you mean 5e-4?") {
				t.Errorf("%q: warned %q", args, b.String())
			}
		})
	}
}
