package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestIndex evaluates exported indexes (a bi-encoder's and an MLC classifier's) with -index:
// the metrics equal those of -run on the run they were exported from (the server answers
// what eval measured), and the bad combinations of flags are refused.
func TestIndex(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		write func(run string) error
	}{
		{"biencoder", func(run string) error { return exporttest.WriteRun(run, exporttest.Options{}, be, 3) }},
		{"mlc", func(run string) error {
			return exporttest.WriteClassifierRun(run, exporttest.ClassifierOptions{Loss: "softmax"}, be, 4)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, index := filepath.Join(dir, c.name), filepath.Join(dir, c.name+"-index")
			if err := c.write(run); err != nil {
				t.Fatal(err)
			}
			m, err := export.LoadModel(run, be)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: index, Data: d, DataSource: "default"}); err != nil {
				t.Fatal(err)
			}
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
