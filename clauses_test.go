package toolret_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/rerank"
)

// TestEvalConfigClauses: Clauses is checked with the rest of the configuration, and the
// suite runs a system with it under its own name.
func TestEvalConfigClauses(t *testing.T) {
	dir := t.TempDir()
	writeSet(t, filepath.Join(dir, "bfcl"), []string{"weather forecast for a city", "book a flight ticket", "send an email"},
		map[string][]int{"weather forecast in Oslo and then book a flight to Oslo": {0, 1}, "send an email to Ada": {2}})
	bad := toolret.EvalConfig{Data: filepath.Join(dir, "bfcl"), Clauses: &rerank.ClauseOptions{Merge: "sum"}}
	if _, err := toolret.Evaluate(context.Background(), bad); err == nil || !strings.Contains(err.Error(), `merge "sum"`) {
		t.Errorf("Evaluate: %v, want the bad merge named", err)
	}
	res, err := toolret.Suite(context.Background(), toolret.SuiteConfig{Dir: dir, Sets: []string{"bfcl"}, Systems: []toolret.SuiteSystem{{Clauses: &rerank.ClauseOptions{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Systems) != 2 || res.Systems[1].Name != "bm25 +clauses max zscore" {
		t.Fatalf("systems %+v: want bm25, then bm25 +clauses max zscore", res.Systems)
	}
	// The two-tool query finds both tools in its top 2 either way; with clauses each clause's
	// tool is first in its own list.
	if r := res.Systems[1].Rows[0].Result.Recall[5]; r != 100 {
		t.Errorf("bm25 +clauses R@5 %.2f, want 100", r)
	}
}
