package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainMineRetrain trains a tiny bi-encoder on the embedded dataset, mines hard
// negatives with it, trains again with them, and checks the run artifacts.
func TestTrainMineRetrain(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	common := []string{"-layers", "1", "-hidden", "32", "-heads", "2", "-batch", "32", "-epochs", "1", "-vocab-size", "1500", "-quiet"}
	if err := biencoderCmd(append([]string{"-run", run}, common...)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"biencoder.json", "tokenizer.json", "vocab.txt", "metrics.jsonl", "plot.html", "summary.json", "test_metrics.json"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("run lacks %s", f)
		}
	}
	var tm map[string]map[string]any
	b, _ := os.ReadFile(filepath.Join(run, "test_metrics.json"))
	if err := json.Unmarshal(b, &tm); err != nil || tm["text"]["recall@5"] == nil {
		t.Fatalf("test metrics %s: %v", b, err)
	}
	// BM25 gets ~68 R@5 on this split; even a 1-epoch tiny model must beat chance by far.
	if r5 := tm["text"]["recall@5"].(float64); r5 < 30 {
		t.Errorf("R@5 = %.1f after training: the model did not learn", r5)
	}
	if err := biencoderCmd(append([]string{"-run", run}, common...)); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("training into an existing run: %v", err)
	}
	negs := filepath.Join(dir, "negs.jsonl")
	if err := mineCmd([]string{"-run", run, "-per-query", "5", "-out", negs}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(negs)
	if lines := strings.Count(string(b), "\n"); lines < 1000 {
		t.Fatalf("mined negatives for %d queries", lines)
	}
	run2 := filepath.Join(dir, "run2")
	if err := biencoderCmd(append([]string{"-run", run2, "-negatives", negs, "-hard-negatives", "2", "-test", ""}, common...)); err != nil {
		t.Fatal(err)
	}
	if err := biencoderCmd([]string{"-run", filepath.Join(dir, "x"), "-hard-negatives", "2"}); err == nil || !strings.Contains(err.Error(), "-hard-negatives 2 needs -negatives") {
		t.Errorf("hard negatives without a file: %v", err)
	}
	// COLT's graph stage through the command line: TestColt (colt_test.go).
}
