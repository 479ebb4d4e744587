package toolindex_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/toolindex"
)

// TestLoadANN serves an exported index with HNSW (WithANN on) next to exact search: the
// graph is built in the background, the results are tools of the library with their exact
// scores, and most of the exact top 5 is found; ANN on with hybrid retrieval is refused.
func TestLoadANN(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	queries := testQueries(t, d, 20)
	exact, err := toolindex.Load(dir, toolindex.WithANN(toolindex.ANNConfig{Mode: toolindex.ANNOff}))
	if err != nil {
		t.Fatal(err)
	}
	if st := exact.ANN(); st.Active || st.Mode != toolindex.ANNOff {
		t.Errorf("ANN off: %+v", st)
	}
	ann, err := toolindex.Load(dir, toolindex.WithANN(toolindex.ANNConfig{Mode: toolindex.ANNOn}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ann.WaitANN(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ann.ANN(); !st.Ready || st.Nodes != ann.Len() || st.Stale != 0 {
		t.Fatalf("ANN on, after WaitANN: %+v (library of %d tools)", st, ann.Len())
	}
	want, err := exact.RetrieveBatch(ctx, queries, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ann.RetrieveBatch(ctx, queries, 5)
	if err != nil {
		t.Fatal(err)
	}
	hit := 0
	for i := range want {
		score := map[string]float32{}
		for _, r := range want[i] {
			score[r.ToolID] = r.Score
		}
		if len(got[i]) != len(want[i]) {
			t.Fatalf("query %d: %d results, want %d", i, len(got[i]), len(want[i]))
		}
		for _, r := range got[i] {
			if s, ok := score[r.ToolID]; ok {
				hit++
				if s != r.Score {
					t.Errorf("query %d: %s scored %v with HNSW, %v exactly", i, r.ToolID, r.Score, s)
				}
			}
		}
	}
	if recall := float64(hit) / float64(5*len(queries)); recall < 0.9 {
		t.Errorf("recall@5 against exact search %.3f, want >= 0.9", recall)
	}
	_, err = toolindex.Load(dir, toolindex.WithANN(toolindex.ANNConfig{Mode: toolindex.ANNOn}), toolindex.WithHybrid(toolindex.HybridRRF, 0))
	if err == nil || !strings.Contains(err.Error(), "hybrid retrieval scores every tool") {
		t.Errorf("ANN on with hybrid: %v, want an error", err)
	}
}
