package toolindex_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/toolindex"
)

// TestClausesRecipe: an index exported with a recipe that ranks by clause serves each
// query as rerank.MergeClauses merges the index's own rankings of the whole query and of
// its clauses (rerank.SplitClauses), with and without the recipe's BM25 fusion; WithClauses
// (nil) and WithoutRecipe serve whole queries; a recorded clause rule out of range is refused
// at Load, naming it.
func TestClausesRecipe(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	qs := testQueries(t, d, 6)
	var queries []string
	for i := 0; i+1 < len(qs); i += 2 {
		queries = append(queries, qs[i]+", and then "+qs[i+1], qs[i])
	}
	if n := len(rerank.SplitClauses(queries[0], 0)); n < 2 {
		t.Fatalf("test query %q has %d clauses, want several", queries[0], n)
	}
	ctx := context.Background()
	const k = 10
	for _, hybrid := range []*export.HybridRecipe{nil, {Fusion: "zscore", Weight: 0.6}} {
		dir := filepath.Join(t.TempDir(), "index")
		rec := &export.Recipe{Version: export.RecipeVersion, Hybrid: hybrid, Clauses: &export.ClausesRecipe{}}
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Recipe: rec}); err != nil {
			t.Fatal(err)
		}
		man, err := export.ReadManifest(dir)
		if err != nil || man.Clauses == nil {
			t.Fatalf("manifest clauses %v (%v): want the recipe's", man.Clauses, err)
		}
		withC, err := toolindex.Load(dir, toolindex.WithBackend(be))
		if err != nil {
			t.Fatal(err)
		}
		if c := withC.Clauses(); c == nil || c.String() != "clauses max zscore" {
			t.Fatalf("Clauses() = %v, want the recorded defaults", c)
		}
		whole, err := toolindex.Load(dir, toolindex.WithBackend(be), toolindex.WithClauses(nil))
		if err != nil {
			t.Fatal(err)
		}
		if whole.Clauses() != nil {
			t.Fatal("WithClauses(nil): still splits")
		}
		got, err := withC.RetrieveBatch(ctx, queries, k)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := whole.RetrieveBatch(ctx, queries, k)
		if err != nil {
			t.Fatal(err)
		}
		changed := false
		for i, q := range queries {
			cl := rerank.SplitClauses(q, rerank.DefaultClauseMinWords)
			if len(cl) < 2 { // one clause: the whole query's ranking
				if !slices.Equal(ids(got[i]), ids(plain[i])) {
					t.Fatalf("query %d of one clause: %v, want %v", i, ids(got[i]), ids(plain[i]))
				}
				continue
			}
			all, err := whole.RetrieveBatch(ctx, append([]string{q}, cl...), rerank.DefaultClauseDepth)
			if err != nil {
				t.Fatal(err)
			}
			lists := make([]rank.Ranking, len(all))
			for j, rs := range all {
				for _, r := range rs {
					lists[j].Tools = append(lists[j].Tools, r.Index)
					lists[j].Scores = append(lists[j].Scores, r.Score)
				}
			}
			want, err := rerank.MergeClauses(lists[0], lists[1:], rerank.ClauseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got[i]) != k {
				t.Fatalf("query %d: %d results, want %d", i, len(got[i]), k)
			}
			for j, r := range got[i] {
				if r.Index != want.Tools[j] || r.Score != want.Scores[j] || r.RetrievalScore != r.Score {
					t.Fatalf("query %d rank %d: tool %d score %v, want %d %v", i, j, r.Index, r.Score, want.Tools[j], want.Scores[j])
				}
				if r.ToolID != d.Tools[r.Index].ID && r.Title == "" {
					t.Fatalf("query %d rank %d: result without its tool's fields: %+v", i, j, r)
				}
			}
			if !slices.Equal(ids(got[i]), ids(plain[i])) {
				changed = true
			}
		}
		if !changed {
			t.Fatal("clauses changed no ranking of the multi-need queries")
		}
		noRecipe, err := toolindex.Load(dir, toolindex.WithBackend(be), toolindex.WithoutRecipe())
		if err != nil {
			t.Fatal(err)
		}
		if noRecipe.Clauses() != nil {
			t.Fatal("WithoutRecipe: the recorded clauses still apply")
		}
	}

	// A recorded rule out of range.
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["clauses"] = map[string]any{"merge": "best"}
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(dir, toolindex.WithBackend(be)); err == nil || !strings.Contains(err.Error(), `merge "best"`) {
		t.Fatalf("Load with recorded merge best: %v, want an error naming it", err)
	}
}
