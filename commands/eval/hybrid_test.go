package evalcmd

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestIndexHybrid: -index DIR -hybrid (what serve -hybrid answers) has the metrics of
// -method fusion over the same two rankings (the index's saved dense run and bm25's), for
// rrf, minmax and zscore, over a bi-encoder's and an MLC classifier's index; and differs
// from the dense index alone. Bad -hybrid flags are refused.
func TestIndexHybrid(t *testing.T) {
	dir := t.TempDir()
	bm := filepath.Join(dir, "bm25.trec")
	runJSON(t, map[string]string{"method": "bm25", "save-run": bm, "cutoffs": "1,3,5,10"})
	for _, c := range tinyIndexes(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			index, dense := c.index, filepath.Join(dir, c.name+".trec")
			alone := runJSON(t, map[string]string{"index": index, "save-run": dense, "cutoffs": "1,3,5,10", "backend": "go"})
			for _, h := range []struct{ method, weight string }{{"rrf", ""}, {"minmax", "0.3"}, {"zscore", "0.6"}} {
				kv := map[string]string{"index": index, "hybrid": h.method, "cutoffs": "1,3,5,10", "backend": "go"}
				fu := map[string]string{"method": "fusion", "runs": dense + "," + bm, "fusion": h.method, "cutoffs": "1,3,5,10"}
				if h.weight != "" {
					kv["hybrid-weight"], fu["weight"] = h.weight, h.weight
				}
				got, want := runJSON(t, kv), runJSON(t, fu)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: -index -hybrid %v\n-method fusion %v", h.method, got, want)
				}
				if reflect.DeepEqual(got, alone) {
					t.Errorf("%s: -hybrid has the metrics of the index alone: the comparison is vacuous", h.method)
				}
			}
		})
	}
	index := filepath.Join(dir, "biencoder-index")
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"hybrid": "rrf"}, "-hybrid and -hybrid-weight apply to -index"},
		{map[string]string{"hybrid-weight": "0.5"}, "-hybrid and -hybrid-weight apply to -index"},
		{map[string]string{"index": index, "hybrid": "sum"}, `-hybrid "sum": want rrf, minmax or zscore`},
		{map[string]string{"index": index, "hybrid-weight": "0.5"}, "-hybrid-weight needs -hybrid"},
		{map[string]string{"index": index, "hybrid": "rrf", "hybrid-weight": "0.5"}, "rrf has no weight"},
		{map[string]string{"index": index, "hybrid": "minmax", "hybrid-weight": "2"}, "-hybrid-weight 2: want a weight in [0, 1]"},
	} {
		if err := runErr(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}
