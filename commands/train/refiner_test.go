package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
)

// TestRefinerCommand trains a tiny bi-encoder and a refiner over its candidates: the run
// records its split and parent, caches the candidates with scores, chooses a first-stage
// weight on dev, reports the first stage and the refiner on the same test lists, and a
// resumed (finished) run reuses the cache and reproduces the report.
func TestRefinerCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	tiny := []string{"-layers", "1", "-hidden", "32", "-heads", "2", "-quiet"}
	if err := biencoderCmd(append([]string{"-run", be, "-epochs", "1", "-batch", "16", "-vocab-size", "1200", "-test", "", "-dev", "0.85", "-seed", "7"}, tiny...)); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "ref")
	args := []string{"-first-stage", be, "-run", ref, "-n", "8", "-depth", "12", "-epochs", "1", "-batch", "16", "-warm-start", "-quiet"}
	if err := refinerCmd(args); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(ref)
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := rundir.Read(be)
	if meta.Kind != "refiner" || meta.Parent != be || len(meta.Split.DevIDs) != len(parent.Split.DevIDs) {
		t.Fatalf("run.json: kind %q parent %q, %d dev ids (parent %d)", meta.Kind, meta.Parent, len(meta.Split.DevIDs), len(parent.Split.DevIDs))
	}
	var w refiner.Weight
	b, err := os.ReadFile(filepath.Join(ref, refiner.WeightFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &w); err != nil || len(w.Dev) != len(refiner.Weights) || w.Metric != "ndcg@5" {
		t.Fatalf("%s: %+v, %v", refiner.WeightFile, w, err)
	}
	read := func() map[string]map[string]any {
		var m map[string]map[string]any
		b, err := os.ReadFile(filepath.Join(ref, "test_metrics.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := read()
	if _, ok := first["first stage (bi-encoder)"]; !ok {
		t.Fatalf("test_metrics.json rows: %v", first)
	}
	if _, ok := first["+ refiner"]; !ok {
		t.Fatalf("test_metrics.json rows: %v", first)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	m, err := refiner.LoadRun(ref, bk)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cfg.FirstStageWeight != w.FirstStageWeight {
		t.Errorf("LoadRun weight %v, %s says %v", m.Cfg.FirstStageWeight, refiner.WeightFile, w.FirstStageWeight)
	}
	stat, err := os.Stat(filepath.Join(ref, refiner.CandidatesFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := refinerCmd([]string{"-resume", "-run", ref}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if again := read(); again["+ refiner"]["ndcg@5"] != first["+ refiner"]["ndcg@5"] {
		t.Errorf("resumed report %v, first %v", again["+ refiner"], first["+ refiner"])
	}
	if st2, _ := os.Stat(filepath.Join(ref, refiner.CandidatesFile)); !st2.ModTime().Equal(stat.ModTime()) {
		t.Errorf("the resumed run recomputed the candidates")
	}
}
