package evalcmd

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
)

// TestIndex evaluates exported indexes (a bi-encoder's and an MLC classifier's) with -index:
// the metrics equal those of -run on the run they were exported from (the server answers
// what eval measured), and the bad combinations of flags are refused.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	for _, c := range tinyIndexes(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			run, index := c.run, c.index
			kv := map[string]string{"cutoffs": "1,3,5,10", "backend": "go"}
			kv["run"] = run
			want := runJSON(t, kv)
			delete(kv, "run")
			kv["index"] = index
			got := runJSON(t, kv)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("-index %v\n-run   %v", got, want)
			}
			if r, _ := got["recall@10"].(float64); r <= 0 {
				t.Errorf("recall@10 = %v: the comparison is vacuous", got["recall@10"])
			}
		})
	}
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"index": filepath.Join(dir, "mlc-index"), "run": filepath.Join(dir, "mlc")}, "not with -run"},
		{map[string]string{"no-refiner": "true"}, "-no-refiner applies to -index"},
		{map[string]string{"index": filepath.Join(dir, "missing")}, "-index"},
	} {
		if err := runErr(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}

// tinyIndex is a tiny run of one kind and its tool index over the embedded dataset.
type tinyIndex struct{ name, run, index string }

// tinyIndexes writes, into dir, a tiny bi-encoder run and a tiny MLC classifier run (softmax
// loss), and exports each as an index (dir/NAME and dir/NAME-index).
func tinyIndexes(t *testing.T, dir string) []tinyIndex {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	write := map[string]func(run string) error{
		"biencoder": func(run string) error { return exporttest.WriteRun(run, exporttest.Options{}, be, 3) },
		"mlc": func(run string) error {
			return exporttest.WriteClassifierRun(run, exporttest.ClassifierOptions{Loss: "softmax"}, be, 4)
		},
	}
	var out []tinyIndex
	for _, name := range []string{"biencoder", "mlc"} {
		x := tinyIndex{name, filepath.Join(dir, name), filepath.Join(dir, name+"-index")}
		if err := write[name](x.run); err != nil {
			t.Fatal(err)
		}
		if _, err := exporttest.IndexRun(x.run, x.index, "", be); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}
