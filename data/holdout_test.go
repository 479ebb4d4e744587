package data

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/sharedtest"
)

// needs reports whether any tool of rel is in set.
func needs(rel []int, set map[int]bool) bool {
	for _, t := range rel {
		if set[t] {
			return true
		}
	}
	return false
}

func toolSet(ts []int) map[int]bool {
	m := map[int]bool{}
	for _, t := range ts {
		m[t] = true
	}
	return m
}

// judgedTools returns the tools relevant to a judged query of s.
func judgedTools(s *Split) map[int]bool {
	m := map[int]bool{}
	for _, q := range s.Judged() {
		for _, t := range s.Relevant[q] {
			m[t] = true
		}
	}
	return m
}

func TestHoldoutTools(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	all := map[int][]int{} // every judged query of d -> relevant tools
	for _, s := range d.Splits {
		for _, q := range s.Judged() {
			all[q] = union(all[q], s.Relevant[q])
		}
	}
	nTools := 0
	for range judgedToolsOf(all) {
		nTools++
	}
	for _, tc := range []struct {
		frac float64
		seed int64
	}{{0.2, 1}, {0.2, 2}, {0.5, 7}, {0.05, 3}} {
		v, err := d.HoldoutTools(tc.frac, tc.seed)
		if err != nil {
			t.Fatalf("HoldoutTools(%v, %d): %v", tc.frac, tc.seed, err)
		}
		held := toolSet(v.HeldOut)
		if want := int(float64(nTools)*tc.frac + 0.5); len(held) != want {
			t.Errorf("frac %v: %d held-out tools, want %d of %d", tc.frac, len(held), want, nTools)
		}
		train, test := v.Splits["train"], v.Splits["test"]
		if len(v.Splits) != 2 || train == nil || test == nil {
			t.Fatalf("view splits %v, want train and test", v.SplitNames())
		}
		for _, q := range train.Queries {
			if needs(train.Relevant[q], held) {
				t.Fatalf("frac %v seed %d: training query %s needs a held-out tool", tc.frac, tc.seed, d.Queries[q].ID)
			}
		}
		for _, q := range test.Queries {
			if !needs(test.Relevant[q], held) {
				t.Fatalf("frac %v seed %d: test query %s needs no held-out tool", tc.frac, tc.seed, d.Queries[q].ID)
			}
		}
		if len(train.Queries)+len(test.Queries) != len(all) {
			t.Errorf("%d train + %d test queries, want all %d judged queries", len(train.Queries), len(test.Queries), len(all))
		}
		for _, s := range []*Split{train, test} {
			for _, q := range s.Queries {
				if !reflect.DeepEqual(s.Relevant[q], all[q]) {
					t.Fatalf("query %s: relevant %v, want all of its tools %v", d.Queries[q].ID, s.Relevant[q], all[q])
				}
			}
		}
		// Unseen tools of the view are exactly the held-out ones among the judged tools.
		seen := v.Seen("train")
		for tool := range judgedToolsOf(all) {
			if seen[tool] == held[tool] {
				t.Fatalf("tool %d: seen in training %v, held out %v", tool, seen[tool], held[tool])
			}
		}
		again, _ := d.HoldoutTools(tc.frac, tc.seed)
		if !reflect.DeepEqual(again.HeldOut, v.HeldOut) || !reflect.DeepEqual(again.Splits, v.Splits) || again.Fingerprint() != v.Fingerprint() {
			t.Errorf("frac %v seed %d: not deterministic", tc.frac, tc.seed)
		}
		if v.Fingerprint() == d.Fingerprint() || d.Holdout != nil || len(d.Splits["train"].Queries) == len(train.Queries) {
			t.Errorf("the view must not share the dataset's fingerprint nor change the dataset")
		}
	}
	a, _ := d.HoldoutTools(0.2, 1)
	b, _ := d.HoldoutTools(0.2, 2)
	if reflect.DeepEqual(a.HeldOut, b.HeldOut) || a.Fingerprint() == b.Fingerprint() {
		t.Error("seeds 1 and 2 hold out the same tools")
	}
}

func judgedToolsOf(all map[int][]int) map[int]bool {
	m := map[int]bool{}
	for _, rel := range all {
		for _, t := range rel {
			m[t] = true
		}
	}
	return m
}

func TestHoldoutErrors(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		frac float64
		want string
	}{
		{0, "want 0 < frac < 1"},
		{1, "want 0 < frac < 1"},
		{-0.2, "want 0 < frac < 1"},
		{1.5, "want 0 < frac < 1"},
		{math.NaN(), "want 0 < frac < 1"},
		{0.001, "want at least 1"}, // rounds to no tool
		{0.999, "fewer than all"},  // rounds to every tool
	} {
		if _, err := d.HoldoutTools(tc.frac, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("HoldoutTools(%v): err %v, want %q", tc.frac, err, tc.want)
		}
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.HoldoutTools(0.2, 1); err == nil || !strings.Contains(err.Error(), "already a held-out-tool view") {
		t.Errorf("holding out twice: err %v", err)
	}
	for _, frac := range []float64{0, 1, 0.0001} {
		if _, _, err := v.CarveDev("train", frac, 1); err == nil {
			t.Errorf("CarveDev(%v) on a view: no error", frac)
		}
	}
}

func TestCarveDevTools(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	full := v.Splits["train"]
	trainTools := judgedTools(full)
	for _, tc := range []struct {
		frac float64
		seed int64
	}{{0.1, 1}, {0.1, 2}, {0.3, 5}} {
		tr, dev, err := v.CarveDev("train", tc.frac, tc.seed) // a view carves by tools
		if err != nil {
			t.Fatal(err)
		}
		tr2, dev2, _ := v.CarveDevTools("train", tc.frac, tc.seed)
		if !reflect.DeepEqual(dev.Queries, dev2.Queries) || !reflect.DeepEqual(tr.Queries, tr2.Queries) {
			t.Fatal("CarveDev on a view differs from CarveDevTools")
		}
		// The dev tools: those of dev queries that no training query needs.
		seen := judgedTools(tr)
		devTools := map[int]bool{}
		for tool := range judgedTools(dev) {
			if !trainTools[tool] {
				t.Fatalf("dev tool %d is not a training tool of the view (held out: %v)", tool, v.HeldOut)
			}
			if !seen[tool] {
				devTools[tool] = true
			}
		}
		if want := int(float64(len(trainTools))*tc.frac + 0.5); len(devTools) != want {
			t.Errorf("frac %v: %d dev-only tools, want %d of %d", tc.frac, len(devTools), want, len(trainTools))
		}
		for _, q := range dev.Queries {
			if !needs(dev.Relevant[q], devTools) {
				t.Fatalf("dev query %s needs no dev tool", d.Queries[q].ID)
			}
		}
		if len(tr.Queries)+len(dev.Queries) != len(full.Judged()) {
			t.Errorf("%d + %d != %d", len(tr.Queries), len(dev.Queries), len(full.Judged()))
		}
		_, again, _ := v.CarveDev("train", tc.frac, tc.seed)
		if !reflect.DeepEqual(again.Queries, dev.Queries) {
			t.Error("CarveDevTools is not deterministic")
		}
	}
	// The dataset's own splits still carve by queries.
	_, byQuery, _ := d.CarveDev("train", 0.1, 1)
	if want := int(float64(len(d.Splits["train"].Judged()))*0.1 + 0.5); len(byQuery.Queries) != want {
		t.Errorf("standard CarveDev: %d dev queries, want %d", len(byQuery.Queries), want)
	}
}

func TestHoldoutWriteLoad(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, wantDev, _ := v.CarveDev("train", 0.1, 1)
	for _, write := range []struct {
		name string
		fn   func(*Dataset, string) error
	}{{"beir", WriteBEIR}, {"parquet", WriteParquet}} {
		dir := t.TempDir()
		if err := write.fn(v, dir); err != nil {
			t.Fatal(err)
		}
		got, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", write.name, err)
		}
		if got.Holdout == nil || *got.Holdout != *v.Holdout || !reflect.DeepEqual(got.HeldOut, v.HeldOut) {
			t.Fatalf("%s: loaded view %+v %v, want %+v %v", write.name, got.Holdout, got.HeldOut, v.Holdout, v.HeldOut)
		}
		if got.Fingerprint() != v.Fingerprint() {
			t.Errorf("%s: a written view loads with another fingerprint", write.name)
		}
		_, dev, err := got.CarveDev("train", 0.1, 1)
		if err != nil || !reflect.DeepEqual(dev.Queries, wantDev.Queries) {
			t.Errorf("%s: dev split of the loaded view differs (err %v)", write.name, err)
		}
		if _, err := Open(dir, &Holdout{Fraction: 0.2, Seed: 1}); err == nil {
			t.Errorf("%s: holding out tools of a written view again: no error", write.name)
		}
	}
	// A holdout.json that contradicts the qrels is refused.
	dir := t.TempDir()
	if err := WriteBEIR(v, dir); err != nil {
		t.Fatal(err)
	}
	train := v.Splits["train"]
	bad := `{"fraction": 0.2, "seed": 3, "held_out_tools": ["` + v.Tools[train.Relevant[train.Queries[0]][0]].ID + `"]}`
	if err := os.WriteFile(filepath.Join(dir, HoldoutFile), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "needs a held-out tool") {
		t.Errorf("contradicting %s: err %v", HoldoutFile, err)
	}
	for _, content := range []string{`{`, `{"fraction": 0.2, "seed": 1, "held_out_tools": ["no-such-tool"]}`, `{"fraction": 2, "held_out_tools": ["0"]}`} {
		if err := os.WriteFile(filepath.Join(dir, HoldoutFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), HoldoutFile) {
			t.Errorf("%s %q: err %v, want one naming the file", HoldoutFile, content, err)
		}
	}
}

// TestHoldoutToolLens checks the view of ToolLens when ../shared/datasets/toollens exists.
func TestHoldoutToolLens(t *testing.T) {
	d, err := Load(sharedtest.Dir(t, "datasets/toollens"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	held := toolSet(v.HeldOut)
	for _, q := range v.Splits["train"].Queries {
		if needs(v.Splits["train"].Relevant[q], held) {
			t.Fatal("a ToolLens training query needs a held-out tool")
		}
	}
	tr, dev, err := v.CarveDev("train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; dev %d queries, train part %d", v.Stats(), len(dev.Queries), len(tr.Queries))
}
