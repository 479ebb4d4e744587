package evalcmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareSameRanking: a ranking compared with itself (live and saved) differs by nothing,
// with p = 1; bad entries and conflicting flags are refused by name.
func TestCompareSameRanking(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bm25.trec")
	runJSON(t, map[string]string{"method": "bm25", "save-run": file, "cutoffs": "1,5"})
	out := runJSON(t, map[string]string{"compare": "bm25," + file, "cutoffs": "1,5", "compare-samples": "200"})
	rows := out["metrics"].([]any)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rows))
	}
	for _, x := range rows {
		r := x.(map[string]any)
		if r["diff"].(float64) != 0 || r["p"].(float64) != 1 || r["a"] != r["b"] {
			t.Errorf("%v: want no difference, p 1", r)
		}
	}
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"compare": "bm25"}, "want two rankings"},
		{map[string]string{"compare": "bm25,bm25,bm25"}, "want two rankings"},
		{map[string]string{"compare": "bm25," + file, "run": "x"}, "not with -run"},
		{map[string]string{"compare": "bm25,/nonexistent.trec"}, "-compare"},
		{map[string]string{"compare": "bm25," + file, "compare-samples": "0"}, "-compare-samples"},
	} {
		if err := runErr(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}
