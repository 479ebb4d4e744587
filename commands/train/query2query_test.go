package traincmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// TestQuery2Query trains the query2query objective through the command line on the embedded
// dataset (triplets by BM25, then by a first retriever run), resumes it, and checks the flag
// errors.
func TestQuery2Query(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	common := []string{"-objective", "query2query", "-layers", "1", "-hidden", "32", "-heads", "2", "-batch", "32", "-epochs", "1",
		"-vocab-size", "1500", "-positives-per-query", "1", "-negatives-per-query", "3", "-quiet"}
	run := filepath.Join(dir, "run")
	if err := biencoderCmd(append([]string{"-run", run}, common...)); err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := biencoder.ReadTriplets(filepath.Join(run, biencoder.TripletsFile), d)
	if err != nil || len(ns) < 1000 {
		t.Fatalf("triplets of %d anchors, %v", len(ns), err)
	}
	b, err := os.ReadFile(filepath.Join(run, biencoder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := biencoder.Unmarshal(b)
	if err != nil || cfg.Objective != biencoder.ObjectiveQuery2Query || cfg.Margin != 1 {
		t.Fatalf("config objective %q margin %v, %v", cfg.Objective, cfg.Margin, err)
	}
	var tm map[string]map[string]any
	b, _ = os.ReadFile(filepath.Join(run, "test_metrics.json"))
	if err := json.Unmarshal(b, &tm); err != nil || tm["usage"]["recall@5"] == nil {
		t.Fatalf("test metrics %s: %v", b, err)
	}
	// The tools are the usage vectors of queries it was trained to cluster: far above chance
	// (70 tools: R@5 ~ 7%).
	if r5 := tm["usage"]["recall@5"].(float64); r5 < 30 {
		t.Errorf("usage R@5 = %.1f after training: the model did not learn", r5)
	}
	// Resuming the finished run reads its triplets back and trains no further.
	if err := biencoderCmd([]string{"-run", run, "-resume", "-quiet"}); err != nil {
		t.Fatalf("resume: %v", err)
	}

	// Triplets by a first retriever's query embeddings: its dev split is taken.
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "first")
	if err := exporttest.WriteRun(first, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := rundir.Carve(d, "train", 0.2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(first, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	run2 := filepath.Join(dir, "run2")
	if err := biencoderCmd(append([]string{"-run", run2, "-first-stage", first, "-test", ""}, common...)); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.Read(run2)
	if err != nil || m.Parent != first || m.Split.DevFraction != 0.2 || len(m.Split.DevIDs) != len(sp.DevIDs) {
		t.Fatalf("run.json %+v, %v: want the -first-stage's split and parent", m, err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"objective", []string{"-objective", "tool2vec"}, `objective "tool2vec"`},
		{"retriever without query2query", []string{"-first-stage", first}, "-first-stage is used by -objective query2query only"},
		{"hard negatives", []string{"-objective", "query2query", "-hard-negatives", "1", "-negatives", "x"}, "-hard-negatives and -negatives are tool negatives"},
		{"separate towers", []string{"-objective", "query2query", "-separate-towers"}, "one shared tower"},
		{"margin", []string{"-objective", "query2query", "-margin", "0"}, "-margin 0"},
		{"positives", []string{"-objective", "query2query", "-positives-per-query", "0"}, "-positives-per-query 0"},
		{"negatives", []string{"-objective", "query2query", "-negatives-per-query", "-1"}, "-negatives-per-query -1"},
		{"dev with retriever", []string{"-objective", "query2query", "-first-stage", first, "-dev", "0.3"}, "-dev 0.3: the dev split is the -first-stage run's"},
	} {
		err := biencoderCmd(append([]string{"-run", filepath.Join(dir, "bad-"+strings.ReplaceAll(tc.name, " ", "-"))}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
