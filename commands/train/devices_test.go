package traincmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevicesRefused: -devices beyond what the backend has (the go backend has one) or below 0
// is an error naming the flag and the count found, given before any run directory is made.
func TestDevicesRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cmd  func([]string) error
		args []string
		want string
	}{
		{"biencoder", biencoderCmd, []string{"-devices", "2", "-backend", "go"}, "-devices 2: backend go has 1 device(s): several devices need -backend xla:cpu or xla:cuda"},
		{"biencoder negative", biencoderCmd, []string{"-devices", "-1"}, "-devices -1: must be >= 0"},
		{"classifier", classifierCmd, []string{"-devices", "3", "-backend", "go"}, "-devices 3: backend go has 1 device(s)"},
		{"pretrain", pretrainCmd, []string{"-devices", "2", "-backend", "go"}, "-devices 2: backend go has 1 device(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			err := tc.cmd(append([]string{"-run", run, "-quiet"}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(run, "run.json")); err == nil {
				t.Errorf("a refused run left %s behind", filepath.Join(run, "run.json"))
			}
		})
	}
}
