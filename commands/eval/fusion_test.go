package evalcmd

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rundir"
)

// fakeRun writes a run directory holding only run.json, with the dev split carved from d's
// train split (by tools on a held-out-tool view): enough for -first-stage as the dev split's
// source and for the view checks.
func fakeRun(t *testing.T, d *data.Dataset) string {
	t.Helper()
	sp, _, _, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rundir.Create(dir, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSaveRunFuse: the rankings -save-run writes, read back and fused alone (RRF, min-max or
// z-score with weight 1), and fused with the live method they came from, give exactly the
// metrics computed in memory, on the dataset's own splits and on a held-out-tool view.
func TestSaveRunFuse(t *testing.T) {
	for _, view := range []map[string]string{{}, {"holdout-tools": "0.2", "holdout-seed": "2"}} {
		with := func(kv map[string]string) map[string]string {
			out := map[string]string{"subsets": "true", "cutoffs": "1,3,5,10"}
			for k, v := range view {
				out[k] = v
			}
			for k, v := range kv {
				out[k] = v
			}
			return out
		}
		file := filepath.Join(t.TempDir(), "bm25.run")
		want := runJSON(t, with(map[string]string{"save-run": file, "k": "20"}))
		res, err := fusion.ReadRunFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := int(want["queries"].(float64)); len(res) != n {
			t.Fatalf("%v: %d rankings saved for %d queries", view, len(res), n)
		}
		for _, r := range res {
			if len(r.Docs) != 20 {
				t.Fatalf("query %s: %d tools saved, want -k 20", r.Query, len(r.Docs))
			}
		}
		if len(view) > 0 {
			sub := want["subsets"].(map[string]any)
			unseen, ok := sub["unseen-tools"].(map[string]any)
			if _, seen := sub["seen-tools"]; !ok || seen || unseen["queries"] != want["queries"] {
				t.Fatalf("held-out view: every test query must be in the unseen-tools row: %v", sub)
			}
		}
		for _, fl := range []map[string]string{
			{"runs": file},
			{"runs": file, "fusion": "minmax", "weight": "1"},
			{"runs": file, "fusion": "zscore", "weight": "1"},
			{"runs": "bm25," + file, "k": "20"},
			{"runs": file + "," + file, "fusion": "minmax", "weight": "0.3"},
		} {
			fl["method"] = "fusion"
			got := runJSON(t, with(fl))
			if got["dataset"] != want["dataset"] {
				t.Fatalf("%v: dataset %v, want %v", fl, got["dataset"], want["dataset"])
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v %v: fused metrics differ from the in-memory ones:\n got %v\nwant %v", view, fl, got, want)
			}
		}
	}
}

// TestFusionDevWeights: interpolation weights tuned on the recorded dev split can only match
// or beat each input alone on that split (the grid holds (1, 0) and (0, 1)), and the inputs
// may be files holding the dev and test rankings together.
func TestFusionDevWeights(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	ret := fakeRun(t, v) // the view is taken from the run
	dir := t.TempDir()
	variants := map[string]map[string]string{
		"a": {},
		"b": {"bm25-k1": "0.3", "bm25-b": "0.1", "bm25-stopwords": "true"},
	}
	devScore := map[string]float64{}
	for name, fl := range variants {
		var all []byte
		for _, split := range []string{"dev", "test"} {
			kv := map[string]string{"first-stage": ret, "split": split, "save-run": filepath.Join(dir, name+"."+split), "cutoffs": "5"}
			for k, v := range fl {
				kv[k] = v
			}
			m := runJSON(t, kv)
			if split == "dev" {
				devScore[name] = m["ndcg@5"].(float64)
				if !strings.Contains(m["split"].(string), "dev") || !strings.Contains(m["dataset"].(string), "held-out tools 0.2, seed 1") {
					t.Fatalf("-split dev with a run of a view: split %v of %v", m["split"], m["dataset"])
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, name+"."+split))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".run"), all, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if devScore["a"] == devScore["b"] {
		t.Fatalf("the two BM25 variants score alike on dev (%v): the test cannot tell", devScore)
	}
	runs := filepath.Join(dir, "a.run") + "," + filepath.Join(dir, "b.run")
	for _, norm := range []string{"minmax", "zscore"} {
		kv := map[string]string{"method": "fusion", "runs": runs, "fusion": norm, "first-stage": ret, "cutoffs": "5"}
		dev := map[string]string{"split": "dev"}
		for k, v := range kv {
			dev[k] = v
		}
		got := runJSON(t, dev)["ndcg@5"].(float64)
		if got < max(devScore["a"], devScore["b"]) {
			t.Errorf("%s: dev NDCG@5 %v with weights tuned on dev, below an input alone %v", norm, got, devScore)
		}
		dev["fusion-steps"] = "20" // a grid holding the default one: never worse on dev
		if fine := runJSON(t, dev)["ndcg@5"].(float64); fine < got {
			t.Errorf("%s: dev NDCG@5 %v with -fusion-steps 20, below %v with 10", norm, fine, got)
		}
		// A second set of weights for the view's new tools starts from the one set: never
		// worse on dev.
		dev["fusion-steps"] = "10"
		dev["new-tool-weights"] = "true"
		if grouped := runJSON(t, dev)["ndcg@5"].(float64); grouped < got-1e-9 {
			t.Errorf("%s: dev NDCG@5 %v with -new-tool-weights, below %v with one set of weights", norm, grouped, got)
		}
		// An adaptive dense weight learned on dev (one library: its macro mean is the
		// pooled one) can only match or beat the first input alone (slope 0, base 1 is in
		// its grid); a rule of slope 0 is that fixed weight.
		delete(dev, "new-tool-weights")
		delete(dev, "fusion-steps")
		dev["weight"] = "adaptive"
		if a := runJSON(t, dev)["ndcg@5"].(float64); a < devScore["a"]-1e-9 {
			t.Errorf("%s: dev NDCG@5 %v with -weight adaptive, below the first input alone %v", norm, a, devScore["a"])
		}
		dev["weight"] = "adaptive:0.7,0"
		fixedRule := runJSON(t, dev)["ndcg@5"].(float64)
		dev["weight"] = "0.7"
		if fixed := runJSON(t, dev)["ndcg@5"].(float64); fixed != fixedRule {
			t.Errorf("%s: -weight adaptive:0.7,0 gives %v, -weight 0.7 %v", norm, fixedRule, fixed)
		}
		test := runJSON(t, kv) // on test, with the same tuning
		if _, ok := test["ndcg@5"]; !ok || test["split"] != "test" {
			t.Errorf("%s: test report %v", norm, test)
		}
	}
}

func TestFusionErrors(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	test := d.Splits["test"]
	q, tool := d.Queries[test.Queries[0]].ID, d.Tools[0].ID
	std := fakeRun(t, d)
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	viewRun := fakeRun(t, v)
	for _, tc := range []struct {
		name string
		kv   map[string]string
		want string
	}{
		{"unknown query", map[string]string{"method": "fusion", "runs": write("q.run", "nope Q0 "+tool+" 1 1 t\n")}, `query id "nope" is not a query of dataset`},
		{"unknown tool", map[string]string{"method": "fusion", "runs": write("t.run", q+" Q0 zz 1 1 t\n")}, `document id "zz" is not a tool of dataset`},
		{"malformed line", map[string]string{"method": "fusion", "runs": write("m.run", q+" Q0 "+tool+" 1\n")}, "m.run:1: want 6 fields"},
		{"query missing", map[string]string{"method": "fusion", "runs": write("one.run", q+" Q0 "+tool+" 1 1 t\n")}, "no ranking for"},
		{"missing file", map[string]string{"method": "fusion", "runs": filepath.Join(dir, "absent.run")}, "absent.run"},
		{"no runs", map[string]string{"method": "fusion"}, "needs -runs"},
		{"empty entry", map[string]string{"method": "fusion", "runs": "bm25,"}, "empty entry"},
		{"rerank is not an input", map[string]string{"method": "fusion", "runs": "bm25,rerank"}, "fuse its saved rankings"},
		{"weight with rrf", map[string]string{"method": "fusion", "runs": "bm25", "fusion": "rrf", "weight": "0.5"}, "-weight applies to -fusion minmax or zscore"},
		{"default weight dev needs a run", map[string]string{"method": "fusion", "runs": "bm25,bm25", "weight": "dev"}, "the dev split is the one a trained run recorded"},
		{"unknown fusion", map[string]string{"method": "fusion", "runs": "bm25", "fusion": "max"}, `-fusion "max"`},
		{"weights per run", map[string]string{"method": "fusion", "runs": "bm25", "fusion": "minmax", "weight": "0.5,0.5"}, "2 weights for 1 -runs"},
		{"fusion steps", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore", "fusion-steps": "0"}, "-fusion-steps 0"},
		{"weight above 1", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "minmax", "weight": "1.5"}, "W in [0, 1]"},
		{"adaptive with three runs", map[string]string{"method": "fusion", "runs": "bm25,bm25,bm25", "fusion": "zscore", "weight": "adaptive"}, "fuses two -runs"},
		{"adaptive rule", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore", "weight": "adaptive:0.9"}, "want BASE,SLOPE"},
		{"adaptive needs a run", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore", "weight": "adaptive"}, "the dev split is the one a trained run recorded"},
		{"adaptive and new-tool weights", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore", "weight": "adaptive", "new-tool-weights": "true"}, "one or the other"},
		{"dev needs a run", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore"}, "the dev split is the one a trained run recorded"},
		{"split dev needs a run", map[string]string{"split": "dev"}, "the dev split is the one a trained run recorded"},
		{"runs without fusion", map[string]string{"runs": "bm25"}, "-runs is for -method fusion"},
		{"new-tool weights without fusion", map[string]string{"new-tool-weights": "true"}, "-new-tool-weights is for -method fusion"},
		{"new-tool weights with fixed weights", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "zscore", "weight": "0.5", "new-tool-weights": "true"}, "use it with -weight dev"},
		{"new-tool weights with rrf", map[string]string{"method": "fusion", "runs": "bm25,bm25", "fusion": "rrf", "new-tool-weights": "true"}, "not rrf"},
		{"run with fusion", map[string]string{"method": "fusion", "runs": "bm25", "run": std}, "run:" + std},
		{"tag", map[string]string{"save-run": filepath.Join(dir, "x.run"), "run-tag": "a b"}, "-run-tag"},
		{"save with ablations", map[string]string{"save-run": filepath.Join(dir, "x.run"), "ablations": "true"}, "not with -ablations"},
		{"standard run on a view", map[string]string{"first-stage": std, "holdout-tools": "0.2", "split": "dev"}, "omit -holdout-tools"},
		{"view run on the own splits", map[string]string{"first-stage": viewRun, "holdout-tools": "0", "split": "dev"}, "give -holdout-tools 0.2 -holdout-seed 1"},
		{"view run on another view", map[string]string{"method": "fusion", "runs": "run:" + viewRun, "holdout-tools": "0.2", "holdout-seed": "5"}, "give -holdout-tools 0.2 -holdout-seed 1"},
		{"bad holdout", map[string]string{"holdout-tools": "1"}, "-holdout-tools 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runErr(tc.kv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestFusionDefault: -method fusion without -fusion is z-score interpolation with the weights
// picked on the recorded dev split (the method that beats BM25 on held-out tools, where rrf
// loses to it); without a run to tune on it is rrf, and -weight W is z-score with W.
func TestFusionDefault(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	ret := fakeRun(t, d)
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"runs": "bm25,bm25", "first-stage": ret}, "fusion zscore of bm25, bm25, weights "},
		{map[string]string{"runs": "bm25,bm25", "first-stage": ret, "fusion": "rrf"}, "fusion rrf (k=60) of bm25, bm25"},
		{map[string]string{"runs": "bm25,bm25"}, "fusion rrf (k=60) of bm25, bm25"},
		{map[string]string{"runs": "bm25,bm25", "weight": "0.3"}, "fusion zscore of bm25, bm25, weights 0.3,0.7"},
	} {
		tc.kv["method"] = "fusion"
		_, desc, err := buildFusion(parseKV(t, tc.kv), d)
		if err != nil {
			t.Fatalf("%v: %v", tc.kv, err)
		}
		if !strings.HasPrefix(desc, tc.want) {
			t.Errorf("%v: %q, want %q...", tc.kv, desc, tc.want)
		}
		if tc.kv["retriever"] != "" && tc.kv["fusion"] == "" && !strings.HasSuffix(desc, " on dev") {
			t.Errorf("%v: %q: the default's weights are not the dev split's", tc.kv, desc)
		}
	}
}

func TestServeHint(t *testing.T) {
	for _, c := range []struct {
		items []string
		norm  string
		w     []float64
		k     float64
		want  string
	}{
		{[]string{"run:runs/a/mlc", "run:runs/b/"}, "zscore", []float64{0.3, 0.7}, 60, "serve -index idx-a-mlc -ensemble idx-b -ensemble-fusion zscore -ensemble-weights 0.3,0.7"},
		{[]string{"run:a", "run:b", "run:c"}, "", nil, 60, "serve -index idx-a -ensemble idx-b,idx-c"},
		{[]string{"run:a", "run:b"}, "", nil, 30, ""},
		{[]string{"run:/x/s1/mlc", "run:./s2/mlc"}, "", nil, 60, "serve -index idx-x-s1-mlc -ensemble idx-s2-mlc"},
		{[]string{"run:a", "bm25"}, "zscore", []float64{0.5, 0.5}, 60, ""},
		{[]string{"a.trec", "b.trec"}, "", nil, 60, ""},
	} {
		got := serveHint(c.items, c.norm, c.w, c.k)
		if (c.want == "") != (got == "") || !strings.HasSuffix(got, c.want) {
			t.Errorf("serveHint(%q, %q, %v, %g) = %q, want one ending %q", c.items, c.norm, c.w, c.k, got, c.want)
		}
	}
}
