package serve

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// TestRetrieveHybrid serves the tiny index with BM25 fusion: each tool of the answer carries
// the dense and BM25 scores the retriever fused, and the answer equals the retriever's own
// (ids and scores); without -hybrid the two fields are absent.
func TestRetrieveHybrid(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		opts   []toolindex.Option
		hybrid bool
	}{
		{"dense", nil, false},
		{"minmax", []toolindex.Option{toolindex.WithHybrid("minmax", 0.3)}, true},
		{"rrf", []toolindex.Option{toolindex.WithHybrid("rrf", 0)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.Open(newIndex(t), 0, append([]toolindex.Option{toolindex.WithBackend(be)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			srv := newTestHTTP(t, st)
			q := "weather forecast for a city"
			var got RetrieveResponse
			if code, body := call(t, srv, http.MethodPost, "/v1/retrieve", "", mustJSON(map[string]any{"query": q, "k": 5}), &got); code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			want, err := st.R.Retrieve(context.Background(), q, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Tools) != len(want) || len(want) == 0 {
				t.Fatalf("%d tools, want %d", len(got.Tools), len(want))
			}
			bm25Seen := false
			for i, w := range want {
				g := got.Tools[i]
				if g.ID != w.ToolID || g.Score != w.Score {
					t.Errorf("tool %d: %s %v, want %s %v", i, g.ID, g.Score, w.ToolID, w.Score)
				}
				if !c.hybrid {
					if g.DenseScore != nil || g.BM25Score != nil {
						t.Errorf("tool %d: dense/bm25 scores without -hybrid", i)
					}
					continue
				}
				if g.DenseScore == nil || g.BM25Score == nil {
					t.Fatalf("tool %d: no dense/bm25 scores with -hybrid", i)
				}
				if *g.DenseScore != w.DenseScore || *g.BM25Score != w.BM25Score {
					t.Errorf("tool %d: dense %v bm25 %v, want %v %v", i, *g.DenseScore, *g.BM25Score, w.DenseScore, w.BM25Score)
				}
				bm25Seen = bm25Seen || *g.BM25Score > 0
			}
			if c.hybrid && !bm25Seen {
				t.Errorf("no tool with a BM25 score > 0 for %q: the check is vacuous", q)
			}
		})
	}
}

// newTestHTTP serves st with the default configuration (logs discarded).
func newTestHTTP(t *testing.T, st *store.Store) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(st, Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	return srv
}
