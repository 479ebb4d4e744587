package traincmd

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// losses reads the training losses of a run's metrics.jsonl.
func runLosses(t *testing.T, run string) []float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Loss float64 `json:"loss"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Loss)
	}
	return out
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// checkLossFalls asserts the mean loss of the last steps is below that of the first ones.
func checkLossFalls(t *testing.T, run string, frac float64) {
	t.Helper()
	l := runLosses(t, run)
	if len(l) < 8 {
		t.Fatalf("%s: only %d steps logged", run, len(l))
	}
	n := len(l) / 4
	first, last := mean(l[:n]), mean(l[len(l)-n:])
	if !(last < frac*first) {
		t.Errorf("%s: loss did not decrease: first steps %.4f, last steps %.4f (%v)", run, first, last, l)
	}
}

// TestRerankStages trains, on the embedded dataset with a small training part (stage 1 with
// -dev 0.85 -seed 7, not the defaults, keeps ~290 training queries), a tiny bi-encoder, then a
// cross-encoder on its negatives (from scratch and warm-started), a query-type classifier and
// an mlc classifier, given no -dev or -seed, and checks that every later stage recorded and
// used exactly the stage-1 dev query ids, the run files, that the losses fall and that the
// dev/test evaluations ran; then that resuming with a changed flag is refused, naming it.
func TestRerankStages(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	tiny := []string{"-layers", "1", "-hidden", "32", "-heads", "2", "-quiet"}
	if err := biencoderCmd(append([]string{"-run", be, "-epochs", "1", "-batch", "16", "-vocab-size", "1200", "-test", "", "-dev", "0.85", "-seed", "7"}, tiny...)); err != nil {
		t.Fatal(err)
	}
	stage1, err := rundir.Read(be)
	if err != nil {
		t.Fatal(err)
	}
	if stage1.Split.DevFraction != 0.85 || stage1.Split.Seed != 7 || stage1.Kind != "biencoder" {
		t.Fatalf("stage 1 recorded %+v", stage1.Split)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, wantDev, err := d.CarveDev("train", 0.85, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(stage1.Split.DevIDs) != len(wantDev.Queries) {
		t.Fatalf("stage 1 recorded %d dev ids, carving gives %d", len(stage1.Split.DevIDs), len(wantDev.Queries))
	}
	for i, q := range wantDev.Queries {
		if stage1.Split.DevIDs[i] != d.Queries[q].ID {
			t.Fatalf("stage 1 dev id %d: %s, want %s", i, stage1.Split.DevIDs[i], d.Queries[q].ID)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		frac float64
	}{
		{"crossencoder", []string{"crossencoder", "-depth", "10", "-loss", "bce", "-negatives-per-positive", "3", "-max-len", "64", "-batch", "8", "-epochs", "2", "-lr", "1e-3", "-dev-max", "20", "-test", ""}, 0.95},
		{"crossencoder-listwise-warm", []string{"crossencoder", "-depth", "10", "-warm-start", "-loss", "listwise", "-negatives-per-positive", "2", "-batch", "8", "-epochs", "4", "-lr", "2e-3", "-dev-max", "20", "-test", ""}, 0.97},
		{"querytype", []string{"classifier", "-kind", "querytype", "-batch", "16", "-epochs", "12", "-lr", "2e-3", "-test", ""}, 0.95},
		{"mlc", []string{"classifier", "-kind", "mlc", "-batch", "16", "-epochs", "3", "-lr", "2e-3"}, 0.6},
		{"mlc-warm", []string{"classifier", "-kind", "mlc", "-warm-start", "-batch", "16", "-epochs", "3", "-lr", "2e-3", "-test", ""}, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			args := append([]string{tc.args[0], "-first-stage", be, "-run", run}, tc.args[1:]...)
			args = append(args, tiny...)
			var err error
			if args[0] == "crossencoder" {
				err = crossencoderCmd(args[1:])
			} else {
				err = classifierCmd(args[1:])
			}
			if err != nil {
				t.Fatal(err)
			}
			cfgFile := classifier.ConfigFile
			if args[0] == "crossencoder" {
				cfgFile = "crossencoder.json"
			}
			for _, f := range []string{cfgFile, "tokenizer.json", "vocab.txt", "metrics.jsonl", "plot.html", "summary.json", rundir.MetaFile, train.ConfigFile} {
				if _, err := os.Stat(filepath.Join(run, f)); err != nil {
					t.Errorf("run lacks %s", f)
				}
			}
			m, err := rundir.Read(run)
			if err != nil {
				t.Fatal(err)
			}
			if m.Parent != be || !slices.Equal(m.Split.DevIDs, stage1.Split.DevIDs) || m.Split.Seed != 7 || m.Split.DevFraction != 0.85 {
				t.Errorf("%s recorded parent %s, split (dev %v, seed %d, %d ids): not stage 1's", tc.name, m.Parent, m.Split.DevFraction, m.Split.Seed, len(m.Split.DevIDs))
			}
			// The splits the stage trains and selects on are rebuilt from those ids.
			tr, dev, _, err := rundir.Splits(run, d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dev.Queries, wantDev.Queries) || len(tr.Queries)+len(dev.Queries) != len(d.Splits["train"].Judged()) {
				t.Errorf("%s: dev split is not stage 1's", tc.name)
			}
			var sum struct {
				Best map[string]float64 `json:"best_metrics"`
			}
			b, _ := os.ReadFile(filepath.Join(run, "summary.json"))
			if err := json.Unmarshal(b, &sum); err != nil || len(sum.Best) == 0 {
				t.Errorf("summary %s: no dev metrics (%v)", b, err)
			}
			checkLossFalls(t, run, tc.frac)
			if tc.name == "mlc" {
				var tm map[string]any
				b, _ := os.ReadFile(filepath.Join(run, "test_metrics.json"))
				if err := json.Unmarshal(b, &tm); err != nil || tm["recall@5"] == nil {
					t.Errorf("mlc test metrics %s: %v", b, err)
				}
			}
		})
	}
	// A later stage given another -dev than its retriever's is refused.
	if err := classifierCmd(append([]string{"-kind", "mlc", "-first-stage", be, "-run", filepath.Join(dir, "dev"), "-dev", "0.2"}, tiny...)); err == nil || !strings.Contains(err.Error(), "-dev 0.2") {
		t.Errorf("-dev differing from the retriever's: %v", err)
	}
	// Resuming with changed flags is refused, each named; the recorded flags are kept.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-lr", "0.1"}, []string{"lr 0.1 != recorded"}},
		{[]string{"-dev", "0.5", "-seed", "3"}, []string{"dev 0.5 != recorded 0.85", "seed 3 != recorded 7"}},
		{[]string{"-epochs", "3"}, []string{"epochs 3 != recorded"}},
	} {
		err := biencoderCmd(append([]string{"-run", be, "-resume", "-quiet"}, tc.args...))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("resume with %v: want error containing %q, got %v", tc.args, w, err)
			}
		}
	}
	if err := crossencoderCmd([]string{"-run", filepath.Join(dir, "x")}); err == nil {
		t.Error("crossencoder without -first-stage must fail")
	}
	if err := classifierCmd([]string{"-kind", "mlc", "-warm-start", "-run", filepath.Join(dir, "z")}); err == nil || !strings.Contains(err.Error(), "-first-stage") {
		t.Errorf("-warm-start without -first-stage: %v", err)
	}
	if err := classifierCmd([]string{"-kind", "nope", "-run", filepath.Join(dir, "y")}); err == nil {
		t.Error("unknown classifier kind must fail")
	}
}

// TestMigrate: a run directory made before run.json existed is refused by later stages with a
// message saying how to migrate it; `train migrate` then records the split it was trained with.
func TestMigrate(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	if err := biencoderCmd([]string{"-run", be, "-epochs", "1", "-batch", "16", "-vocab-size", "1200", "-test", "", "-dev", "0.85", "-seed", "3",
		"-layers", "1", "-hidden", "32", "-heads", "2", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	want, err := rundir.Read(be)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(be, rundir.MetaFile)); err != nil { // as an old run
		t.Fatal(err)
	}
	err = classifierCmd([]string{"-kind", "mlc", "-first-stage", be, "-run", filepath.Join(dir, "mlc"), "-quiet"})
	if err == nil || !strings.Contains(err.Error(), "train migrate -run "+be) {
		t.Fatalf("stage 2 on an old run: want the migration message, got %v", err)
	}
	if err := migrateCmd([]string{"-run", be, "-dev", "0.85"}); err != nil { // seed from train_config.json
		t.Fatal(err)
	}
	got, err := rundir.Read(be)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "biencoder" || !slices.Equal(got.Split.DevIDs, want.Split.DevIDs) {
		t.Errorf("migrated run: kind %s, %d dev ids; want biencoder and the %d ids it was trained with", got.Kind, len(got.Split.DevIDs), len(want.Split.DevIDs))
	}
	if err := migrateCmd([]string{"-run", be}); err == nil {
		t.Error("migrating twice must fail")
	}
	if err := migrateCmd([]string{"-run", dir}); err == nil || !strings.Contains(err.Error(), "not a toolret run") {
		t.Errorf("migrating a non-run: %v", err)
	}
}
