package toolindex_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
)

// EmbedQueries gives the query tower's embeddings (as Embed does), batches concurrent
// callers, and does not keep a lone caller waiting for others (MaxWait is for callers on
// their way, not for callers that may never come).
func TestEmbedQueries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir, toolindex.WithBatching(toolindex.Batching{MaxBatch: 64, MaxTokens: 4096, MaxWait: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for i := range 3 {
		if _, err := r.EmbedQueries(ctx, []string{fmt.Sprintf("a lone query %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("three lone queries took %v: each waited for the 5 s MaxWait", d)
	}
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("book a flight to city number %d and check the weather there", i)
	}
	want, err := r.Embed(biencoder.QueryTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	before := r.Stats()
	got := make([][]float32, len(texts))
	errs := make([]error, len(texts))
	var wg sync.WaitGroup
	for i := range texts {
		wg.Go(func() {
			e, err := r.EmbedQueries(ctx, texts[i:i+1])
			if err == nil {
				got[i] = e[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range texts {
		if errs[i] != nil {
			t.Fatalf("text %d: %v", i, errs[i])
		}
		for j := range want[i] {
			if d := math.Abs(float64(got[i][j] - want[i][j])); d > 1e-5 {
				t.Fatalf("text %d, value %d: %g, Embed gives %g", i, j, got[i][j], want[i][j])
			}
		}
	}
	st := r.Stats()
	if calls, n := st.Batches-before.Batches, st.Texts-before.Texts; n != int64(len(texts)) || calls >= n {
		t.Errorf("%d encoder calls for %d texts of %d concurrent callers: want fewer calls than texts", calls, n, len(texts))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.EmbedQueries(cancelled, texts[:1]); err == nil {
		t.Error("a cancelled context was not reported")
	}
}
