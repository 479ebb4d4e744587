package traincmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/rundir"
)

// TestMiniBatchFlag: -mini-batch (GradCache) is refused where it does not apply, trains
// and is recorded where it does, and a resumed run keeps it.
func TestMiniBatchFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative", []string{"-mini-batch", "-2"}, "-mini-batch"},
		{"query2query", []string{"-objective", "query2query", "-mini-batch", "4"}, "-mini-batch (GradCache) applies to -objective query2tool"},
	} {
		run := filepath.Join(t.TempDir(), "run")
		err := biencoderCmd(append([]string{"-run", run, "-quiet"}, c.args...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	args := []string{"-run", run, "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "8", "-vocab-size", "500",
		"-epochs", "1", "-max-steps", "2", "-eval-every", "1", "-test", "", "-quiet"}
	if err := biencoderCmd(append(args, "-mini-batch", "3")); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Args["mini-batch"] != "3" {
		t.Errorf("run.json args: mini-batch %q, want 3", meta.Args["mini-batch"])
	}
	if err := biencoderCmd([]string{"-run", run, "-resume", "-mini-batch", "4", "-quiet"}); err == nil || !strings.Contains(err.Error(), "mini-batch 4 != recorded 3") {
		t.Errorf("resume with another -mini-batch: %v", err)
	}
}
