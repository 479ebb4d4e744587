package data

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/datatest"
)

func TestOpenSources(t *testing.T) {
	root := datatest.Mix(t)
	t.Setenv(DatasetPathEnv, root)
	d, err := OpenSources("lens:1,mix:3")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"lens": 0.25, "mix/a": 0.25, "mix/b": 0.5}
	if len(d.Libraries) != len(want) {
		t.Fatalf("libraries %+v", d.Libraries)
	}
	for _, l := range d.Libraries {
		if math.Abs(l.Weight-want[l.Name]) > 1e-9 {
			t.Errorf("library %s weight %v, want %v", l.Name, l.Weight, want[l.Name])
		}
		for _, tool := range l.Tools {
			if d.Libraries[d.LibraryOf(tool)].Name != l.Name {
				t.Errorf("tool %s in %s and %s", d.Tools[tool].ID, l.Name, d.Libraries[d.LibraryOf(tool)].Name)
			}
		}
	}
	if d.Name != "lens+mix" || len(d.Tools) != 9 || d.ToolIndex["lens:3"] == 0 && d.Tools[0].ID != "lens:3" || d.QueryIndex["mix:b1"] == 0 {
		t.Errorf("dataset %s: %d tools, ids %v", d.Name, len(d.Tools), d.ToolIndex)
	}
	if n := len(d.Splits["train"].Queries); n != 50 {
		t.Errorf("train has %d queries, want 50", n)
	}
	if s := d.Splits["test"]; s == nil || len(s.Queries) != 2 || len(s.Relevant[d.QueryIndex["lens:t1"]]) != 2 {
		t.Errorf("test split %+v", s)
	}
	// The dev split has queries of every library, frac of each.
	_, dev, err := d.CarveDev("train", 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, q := range dev.Queries {
		per[d.Libraries[d.QueryLibrary(dev, q)].Name]++
	}
	if per["lens"] != 4 || per["mix/a"] != 2 || per["mix/b"] != 4 {
		t.Errorf("dev queries per library %v, want lens 4, mix/a 2, mix/b 4", per)
	}

	// One source of a dataset, and a dataset alone (its sources become libraries, ids kept).
	d, err = OpenSources("lens,mix/b:2")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Libraries) != 2 || d.Libraries[1].Name != "mix/b" || math.Abs(d.Libraries[1].Weight-2.0/3) > 1e-9 || len(d.Tools) != 7 {
		t.Errorf("lens,mix/b:2: libraries %+v, %d tools", d.Libraries, len(d.Tools))
	}
	d, err = OpenSources(filepath.Join(root, "mix"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Libraries) != 2 || d.Tools[0].ID != "a/x0" || math.Abs(d.Libraries[0].Weight-1.0/3) > 1e-9 {
		t.Errorf("mix alone: libraries %+v, first tool %s", d.Libraries, d.Tools[0].ID)
	}
	d, err = OpenSources("servers")
	if err != nil {
		t.Fatal(err)
	}
	if d.Libraries != nil {
		t.Errorf("a dataset with prefixed ids but no %s: libraries %+v, want one", SourcesFile, d.Libraries)
	}
	d, err = OpenSources(filepath.Join(root, "lens"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Libraries != nil || d.Tools[0].ID != "1" {
		t.Errorf("lens alone: libraries %+v, first tool %s", d.Libraries, d.Tools[0].ID)
	}
}

func TestOpenSourcesErrors(t *testing.T) {
	root := datatest.Mix(t)
	t.Setenv(DatasetPathEnv, root)
	for _, c := range []struct{ spec, want string }{
		{"lens,mix/zzz", `dataset mix has no source "zzz" (sources: a, b)`},
		{"lens,nowhere", `-data entry "nowhere": no such dataset directory`},
		{"lens:0,mix", `-data entry "lens:0": weight 0: must be > 0`},
		{"lens:-1,mix", `weight -1: must be > 0`},
		{"lens:abc,mix", `-data entry "lens:abc": weight "abc": not a number`},
		{"lens:abc", `-data entry "lens:abc": weight "abc": not a number`},
		{"lens,notrain", `dataset notrain has no "train" split (splits: test)`},
		{"lens,,mix", `an empty entry`},
		{"lens,lens", `dataset lens listed twice`},
		{"mix/a,mix/a", `source listed twice`},
		{"lens/x,mix", `dataset lens has no sources`},
		{"servers/gh", `dataset servers has no sources`},
	} {
		t.Run(c.spec, func(t *testing.T) {
			_, err := OpenSources(c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("OpenSources(%q) = %v, want an error with %q", c.spec, err, c.want)
			}
		})
	}
}

func TestIsSourceList(t *testing.T) {
	for spec, want := range map[string]bool{"": false, "../shared/datasets/toollens": false, "toollens:1": true, "toollens:x": true, "a,b": true} {
		if got := IsSourceList(spec); got != want {
			t.Errorf("IsSourceList(%q) = %v, want %v", spec, got, want)
		}
	}
}

// A held-out-tool view written by convert (WriteBEIR with holdout.json) mixes with other
// sources: its held-out tools' queries stay in test, none of them trains, and the merged
// dataset lists the held-out tools.
func TestOpenSourcesHoldoutView(t *testing.T) {
	root := datatest.Mix(t)
	t.Setenv(DatasetPathEnv, root)
	lens, err := Open(filepath.Join(root, "lens"), &Holdout{Fraction: 0.25, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	view := filepath.Join(root, "lensview")
	if err := WriteBEIR(lens, view); err != nil {
		t.Fatal(err)
	}
	d, err := OpenSources("lensview:1,mix:1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Holdout != nil {
		t.Errorf("merged dataset Holdout %+v, want nil (not a view itself)", d.Holdout)
	}
	if len(d.HeldOut) != len(lens.HeldOut) || len(d.HeldOut) == 0 {
		t.Fatalf("merged HeldOut %v, view's %v", d.HeldOut, lens.HeldOut)
	}
	held := map[int]bool{}
	for i, h := range d.HeldOut {
		if want := "lensview:" + lens.Tools[lens.HeldOut[i]].ID; d.Tools[h].ID != want {
			t.Errorf("held-out tool %d is %s, want %s", i, d.Tools[h].ID, want)
		}
		held[h] = true
	}
	tr := d.Splits["train"]
	for _, q := range tr.Judged() {
		if anyIn(tr.Relevant[q], held) {
			t.Errorf("training query %s needs a held-out tool", d.Queries[q].ID)
		}
	}
	ts := d.Splits["test"]
	if ts == nil || len(ts.Queries) != len(lens.Splits["test"].Queries) {
		t.Fatalf("merged test split %+v, want the view's %d queries", ts, len(lens.Splits["test"].Queries))
	}
	for _, q := range ts.Judged() {
		if !anyIn(ts.Relevant[q], held) {
			t.Errorf("test query %s needs no held-out tool", d.Queries[q].ID)
		}
	}
	// The view's library carves its dev split by tools: every dev query of it needs a tool
	// that no training query of the library needs; the mix's libraries carve by queries.
	train, dev, err := d.CarveDev("train", 0.2, 1)
	if err != nil {
		t.Fatalf("dev of the merged dataset: %v", err)
	}
	for _, lib := range d.Libraries {
		if want := strings.HasPrefix(lib.Name, "lensview"); lib.View != want {
			t.Errorf("library %s: View %v, want %v", lib.Name, lib.View, want)
		}
	}
	trained := map[int]bool{}
	for _, q := range train.Judged() {
		for _, tl := range train.Relevant[q] {
			trained[tl] = true
		}
	}
	viewDev, mixDev, mixNew := 0, 0, 0
	for _, q := range dev.Judged() {
		isNew := false
		for _, tl := range dev.Relevant[q] {
			isNew = isNew || !trained[tl]
		}
		if d.Libraries[d.QueryLibrary(dev, q)].View {
			viewDev++
			if !isNew {
				t.Errorf("view dev query %s needs only tools its training part trains on", d.Queries[q].ID)
			}
		} else {
			mixDev++
			if isNew {
				mixNew++
			}
		}
	}
	if viewDev == 0 || mixDev == 0 {
		t.Errorf("dev queries: %d of the view, %d of the mix; want both", viewDev, mixDev)
	}
	if mixNew == mixDev {
		t.Errorf("every one of the mix's %d dev queries needs an untrained tool: carved by tools, want by queries", mixDev)
	}
	again, _, _ := d.CarveDev("train", 0.2, 1)
	if !reflect.DeepEqual(again.Queries, train.Queries) {
		t.Error("CarveDev is not deterministic")
	}
}
