package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxTimeFlag: -max-time stops `train biencoder`, a head command (`train classifier`) and
// `train pretrain` at
// the first step past the limit, the summary saying so; a negative limit is refused.
func TestMaxTimeFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	tiny := []string{"-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8", "-epochs", "1", "-test", "", "-quiet"}
	pre := append([]string{"-epochs", "1", "-quiet"}, pretrainTiny...)
	tests := []struct {
		name string
		cmd  func([]string) error
		args []string
	}{
		{"biencoder", biencoderCmd, []string{"-vocab-size", "500"}},
		{"classifier", classifierCmd, []string{"-kind", "mlc"}},
		{"pretrain", pretrainCmd, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			args := append(append([]string{"-run", run}, tiny...), tt.args...)
			if tt.name == "pretrain" {
				args = append([]string{"-run", run}, pre...)
			}
			if err := tt.cmd(append(args, "-max-time", "-1s")); err == nil || !strings.Contains(err.Error(), "-max-time") {
				t.Fatalf("-max-time -1s: %v", err)
			}
			os.RemoveAll(run)
			if err := tt.cmd(append(args, "-max-time", "1ns")); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(run, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Steps   int
				Stopped string
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Steps != 1 || !strings.HasPrefix(sum.Stopped, "time limit") {
				t.Errorf("summary %s: want 1 step stopped by the time limit", b)
			}
		})
	}
}
