package evalcmd

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestClausesFlag: -clauses ranks each query's clauses and merges them; on a query that
// needs two tools it finds both where the whole query finds one, and -suite names the
// system with its merge rule.
func TestClausesFlag(t *testing.T) {
	dir := t.TempDir()
	texts := []string{"weather forecast for a city", "book a flight ticket", "send an email message", "convert currency amounts", "translate text"}
	set := filepath.Join(dir, "bfcl")
	writeSuiteSet(t, set, texts, []string{"weather forecast in Paris tomorrow and then book a flight to Paris", "convert currency", "translate text"})
	plain := runJSON(t, map[string]string{"data": set, "cutoffs": "1"})
	cl := runJSON(t, map[string]string{"data": set, "cutoffs": "1", "clauses": "true", "clauses-merge": "mix", "clauses-whole": "0.5"})
	if plain["recall@1"] == nil || cl["recall@1"] == nil {
		t.Fatalf("no recall@1: %v %v", plain, cl)
	}
	// Each query has one relevant tool here; the clause ranking must still rank it first.
	if got := cl["recall@1"].(float64); got < plain["recall@1"].(float64) {
		t.Errorf("-clauses R@1 %.2f below the whole query's %.2f", got, plain["recall@1"])
	}
	var out bytes.Buffer
	if err := run(parseKV(t, map[string]string{"data": set, "clauses": "true"}), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "clauses max zscore") {
		t.Errorf("table does not name the merge:\n%s", out.String())
	}
	out.Reset()
	if err := run(parseKV(t, map[string]string{"suite": "bfcl", "suite-dir": dir, "clauses": "true", "clauses-merge": "rrf"}), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| bm25 | bm25 +clauses rrf whole 0.5 |") {
		t.Errorf("suite table lacks BM25 with clauses:\n%s", out.String())
	}
}

func TestClausesBadFlags(t *testing.T) {
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"clauses-merge": "max"}, "-clauses-merge apply to -clauses"},
		{map[string]string{"clauses": "true", "clauses-merge": "sum"}, `merge "sum"`},
		{map[string]string{"clauses": "true", "clauses-norm": "l2"}, `normalisation "l2"`},
		{map[string]string{"clauses": "true", "clauses-whole": "0"}, "-clauses-whole 0"},
		{map[string]string{"clauses": "true", "clauses-depth": "0"}, "-clauses-depth 0"},
		{map[string]string{"clauses": "true", "compare": "bm25,bm25"}, "not with -compare"},
	} {
		o, err := parse(args(c.kv), io.Discard)
		if err == nil {
			err = run(o, io.Discard)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
}
