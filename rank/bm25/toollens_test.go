package bm25_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/toolret/toolret/internal/sharedtest"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank/bm25"
)

// TestToolLensBM25 reproduces the COLT paper's BM25 row on ToolLens test within 3 points on
// every metric, in under 5 s. Skipped when ../shared is absent.
func TestToolLensBM25(t *testing.T) {
	dir := sharedtest.Dir(t, "datasets/toollens")
	d, err := data.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	docs := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		docs[i] = tl.Text
	}
	rep, err := metrics.Run(context.Background(), d, "test", bm25.New(docs, bm25.DefaultParams), []int{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	paper := map[string]float64{"recall@3": 21.58, "recall@5": 26.88, "ndcg@3": 23.19, "ndcg@5": 26.09, "comp@3": 3.89, "comp@5": 6.13}
	got := rep.Overall.Map()
	for k, want := range paper {
		t.Logf("%-9s toolret %6.2f  paper %6.2f", k, got[k], want)
		if math.Abs(got[k]-want) > 3 {
			t.Errorf("%s = %.2f, paper %.2f: more than 3 points apart", k, got[k], want)
		}
	}
	t.Logf("BM25 over %d test queries: %v", rep.Overall.N, took)
	if took > 5*time.Second {
		t.Errorf("BM25 took %v, limit 5s", took)
	}
}
