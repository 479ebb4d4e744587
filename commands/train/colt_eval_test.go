package traincmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/rundir"
)

// TestColtEvalRun trains a tiny bi-encoder and a COLT run on it, then evaluates the COLT run,
// and one of its checkpoints, with cmd/eval -run (a separately built binary): the metrics must
// be the ones the end-of-training test report recorded for "+ COLT" (test_metrics.json), and
// not the stage-1 bi-encoder's. A COLT run whose stage-1 run is gone is an error naming it.
func TestColtEvalRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models and builds cmd/eval")
	}
	dir := t.TempDir()
	toolret := filepath.Join(dir, "toolret")
	if out, err := exec.Command("go", "build", "-o", toolret, "github.com/toolret/toolret/cmd/toolret").CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/toolret: %v\n%s", err, out)
	}
	be := filepath.Join(dir, "be")
	if err := biencoderCmd([]string{"-run", be, "-layers", "1", "-hidden", "32", "-heads", "2", "-batch", "32", "-epochs", "1",
		"-vocab-size", "1500", "-test", "", "-dev", "0.5", "-seed", "7", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "colt")
	if err := coltCmd([]string{"-first-stage", be, "-run", run, "-epochs", "3", "-batch", "256", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(run, "test_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	report := map[string]map[string]any{}
	for _, k := range []string{"+ COLT", "stage-1 bi-encoder"} {
		var m map[string]any
		if err := json.Unmarshal(raw[k], &m); err != nil {
			t.Fatalf("test_metrics.json %q: %v", k, err)
		}
		report[k] = m
	}
	want, stage1 := report["+ COLT"], report["stage-1 bi-encoder"]
	best, err := rundir.BestCheckpoint(run)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"queries", "recall@1", "recall@3", "recall@5", "recall@10", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "comp@3", "comp@5"}
	for _, c := range []struct{ name, path string }{{"run", run}, {"best checkpoint", best}} {
		out, err := exec.Command(toolret, "eval", "-run", c.path, "-json", "-cutoffs", "1,3,5,10").Output()
		if err != nil {
			t.Fatalf("eval -run %s: %v\n%s", c.name, err, stderr(err))
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("eval -run %s output %q: %v", c.name, out, err)
		}
		differs := false
		for _, k := range keys {
			if got[k] == nil || got[k] != want[k] {
				t.Errorf("eval -run %s: %s = %v, the end-of-training report has %v", c.name, k, got[k], want[k])
			}
			if got[k] != stage1[k] {
				differs = true
			}
		}
		if !differs {
			t.Errorf("eval -run %s gives exactly the stage-1 metrics %v: COLT's stage was not used (or did not change a ranking)", c.name, stage1)
		}
	}
	// The stage-1 run moved away: the error names it.
	if err := os.Rename(be, be+".moved"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(toolret, "eval", "-run", run).CombinedOutput()
	if err == nil || !strings.Contains(string(out), be) || strings.Contains(string(out), "not a bi-encoder checkpoint") {
		t.Errorf("eval -run over a missing stage 1: %v, output %s", err, out)
	}
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
