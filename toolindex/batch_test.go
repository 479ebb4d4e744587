package toolindex_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolret/toolret/toolindex"
)

// Concurrent queries embedded in shared batches, or served from the query cache, get exactly
// the results each gets alone; the counters show the batches and the cache hits.
func TestBatchingAndCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	plain, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for i := range 48 {
		queries = append(queries, fmt.Sprintf("find a tool for task number %d with weather and flights", i))
	}
	want := make([][]toolindex.Result, len(queries))
	for i, q := range queries {
		if want[i], err = plain.Retrieve(context.Background(), q, 5); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		b     toolindex.Batching
		cache int
	}{
		{"batching", toolindex.Batching{MaxBatch: 16, MaxTokens: 4096, MaxWait: 20 * time.Millisecond}, 0},
		{"token budget", toolindex.Batching{MaxBatch: 64, MaxTokens: 40, MaxWait: 20 * time.Millisecond}, 0},
		{"cache", toolindex.Batching{}, 100},
		{"both", toolindex.DefaultBatching, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := toolindex.Load(dir, toolindex.WithBatching(c.b), toolindex.WithQueryCache(c.cache))
			if err != nil {
				t.Fatal(err)
			}
			for round := range 2 { // the second round hits the cache, when there is one
				var wg sync.WaitGroup
				errs := make([]error, len(queries))
				for i, q := range queries {
					wg.Go(func() {
						got, err := r.Retrieve(context.Background(), q, 5)
						if err == nil {
							err = same(got, want[i])
						}
						errs[i] = err
					})
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("round %d, query %d: %v", round, i, err)
					}
				}
			}
			st := r.Stats()
			if c.b.MaxBatch > 0 && st.Batches >= st.Texts {
				t.Errorf("%d encoder calls for %d texts: no batching", st.Batches, st.Texts)
			}
			if c.cache > 0 && st.CacheHits < int64(len(queries)) {
				t.Errorf("%d cache hits over two rounds of %d queries, want >= %d", st.CacheHits, len(queries), len(queries))
			}
			if c.cache == 0 && st.CacheHits != 0 {
				t.Errorf("%d cache hits without a cache", st.CacheHits)
			}
		})
	}
	if _, err := toolindex.Load(dir, toolindex.WithBatching(toolindex.Batching{MaxBatch: 8})); err == nil || !strings.Contains(err.Error(), "MaxTokens") {
		t.Errorf("batching without a token budget: %v, want an error naming MaxTokens", err)
	}
	if _, err := toolindex.Load(dir, toolindex.WithQueryCache(-1)); err == nil {
		t.Error("a negative query cache size was accepted")
	}
	r, err := toolindex.Load(dir, toolindex.WithBatching(toolindex.DefaultBatching))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Retrieve(ctx, "weather", 3); err == nil {
		t.Error("a cancelled request was answered")
	}
}

func same(got, want []toolindex.Result) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ToolID != want[i].ToolID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
			return fmt.Errorf("result %d: %s %.6f, want %s %.6f", i, got[i].ToolID, got[i].Score, want[i].ToolID, want[i].Score)
		}
	}
	return nil
}
