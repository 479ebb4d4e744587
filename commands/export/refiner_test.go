package exportcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/toolindex"
)

// TestIndexRefiner exports an index with -refiner and reads it back: the manifest entry and
// file sums, tool_ids.json in the dataset's order, the packaged variables (the best
// checkpoint's without the optimizer state, byte for byte), a packaged refiner that scores as
// the run does, and toolindex.Load serving it. Then the refusals, which leave no output.
func TestIndexRefiner(t *testing.T) {
	if testing.Short() {
		t.Skip("trains refiners")
	}
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	run, ref := filepath.Join(tmp, "be"), filepath.Join(tmp, "ref")
	if err := exporttest.WriteRecordedRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRefinerRun(ref, run, exporttest.RefinerOptions{N: 6}, be, 4); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "index")
	man, err := exportRun(run, "index", out, false, "", "go", ref)
	if err != nil {
		t.Fatal(err)
	}
	best, err := rundir.BestCheckpoint(ref)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		wantIDs[i] = tl.ID
	}
	rm := man.Refiner
	if rm == nil || rm.Dir != export.IndexRefinerDir || rm.Candidates != "bi-encoder" || rm.N != 6 || rm.Tools != len(d.Tools) ||
		rm.ToolsSHA256 != export.ToolIDsDigest(wantIDs) || rm.Source != best {
		t.Fatalf("manifest refiner entry %+v", rm)
	}
	read, err := export.ReadManifest(out)
	if err != nil || read.Refiner == nil || *read.Refiner != *rm {
		t.Fatalf("manifest.json refiner entry %+v (%v), want %+v", read.Refiner, err, rm)
	}
	for _, f := range []string{"variables.safetensors", "state.json", refiner.ConfigFile, "tokenizer.json", export.RefinerToolIDs} {
		if _, ok := man.Files[export.IndexRefinerDir+"/"+f]; !ok {
			t.Errorf("manifest files lack %s/%s", export.IndexRefinerDir, f)
		}
	}
	rdir := filepath.Join(out, export.IndexRefinerDir)
	ids, err := export.ReadRefinerToolIDs(rdir)
	if err != nil || !slices.Equal(ids, wantIDs) {
		t.Errorf("tool ids %v (%v), want the dataset's", ids, err)
	}
	// The variables: the checkpoint's, byte for byte, without /optimizer/.
	orig, err := safetensors.Open(filepath.Join(best, "variables.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	packed, err := safetensors.Open(filepath.Join(rdir, "variables.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range orig.Names() {
		if !strings.HasPrefix(n, "/optimizer/") {
			want = append(want, n)
		}
	}
	if got := packed.Names(); !slices.Equal(got, want) || len(want) == len(orig.Names()) {
		t.Errorf("packaged variables %v, want the checkpoint's %v without its %d optimizer variables", got, want, len(orig.Names())-len(want))
	}
	for _, n := range want {
		a, _, _ := orig.Raw(n)
		b, _, _ := packed.Raw(n)
		if !bytes.Equal(a, b) {
			t.Errorf("variable %s differs from the checkpoint's", n)
		}
	}
	// The packaged refiner scores as the run.
	mRun, err := refiner.LoadRun(ref, be)
	if err != nil {
		t.Fatal(err)
	}
	mPkg, err := refiner.LoadRun(rdir, be)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{d.Queries[0].Text, d.Queries[1].Text, "weather in Lisbon"}
	lists := [][]int{{1, 2, 3, 4, 5, 6}, {9, 8, 7}, {0, 69, 33, 12}}
	a, err := mRun.Scores(context.Background(), texts, lists)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mPkg.Scores(context.Background(), texts, lists)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("query %d: packaged refiner scores %v, run %v", i, b[i], a[i])
		}
	}
	r, err := toolindex.Load(out, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	if dir, kind, n := r.Refiner(); dir != rdir || kind != "bi-encoder" || n != 6 {
		t.Errorf("retriever refiner %s %s %d", dir, kind, n)
	}

	// Refusals.
	mlc := filepath.Join(tmp, "ref-mlc")
	if err := exporttest.WriteRefinerRun(mlc, run, exporttest.RefinerOptions{Candidates: "mlc", N: 4}, be, 4); err != nil {
		t.Fatal(err)
	}
	run2 := filepath.Join(tmp, "be2")
	if err := exporttest.WriteRecordedRun(run2, exporttest.Options{}, be, 8); err != nil {
		t.Fatal(err)
	}
	ddir := filepath.Join(tmp, "data")
	if err := os.CopyFS(ddir, os.DirFS("../../data/default")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(ddir, "corpus.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"_id": "extra-tool", "title": "extra", "text": "an extra tool"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name, run, format, data, ref, want string
	}{
		{"hf", run, "hf", "", ref, "-refiner is packaged with an index"},
		{"mlc candidates", run, "index", "", mlc, "re-orders mlc candidates"},
		{"another first stage", run2, "index", "", ref, "re-orders the candidates of " + run},
		{"other data", run, "index", ddir, ref, "trained on other data"},
		{"not a refiner", run, "index", "", run, "not a checkpoint of this model kind"},
		{"missing", run, "index", "", filepath.Join(tmp, "nope"), "nope"},
	} {
		o := filepath.Join(tmp, "bad-"+strings.ReplaceAll(c.name, " ", "-"))
		_, err := exportRun(c.run, c.format, o, false, c.data, "go", c.ref)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if _, err := os.Stat(o); err == nil {
			t.Errorf("%s: a failed export left %s", c.name, o)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, ".bad-*")); len(left) > 0 {
		t.Errorf("failed exports left temporary directories %v", left)
	}
}
