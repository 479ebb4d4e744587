package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/models/classifier"
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

// TestRerankStages trains, on the embedded dataset with a small training part (-dev 0.9 keeps
// ~200 training queries), a tiny bi-encoder, then a cross-encoder on its negatives (from
// scratch and warm-started), a query-type classifier and an mlc classifier, and checks the
// run files, that the losses fall and that the dev/test evaluations ran.
func TestRerankStages(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	tiny := []string{"-layers", "1", "-hidden", "32", "-heads", "2", "-quiet", "-dev", "0.9"}
	if err := biencoderCmd(append([]string{"-run", be, "-epochs", "1", "-batch", "16", "-vocab-size", "1200", "-test", ""}, tiny...)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		frac float64
	}{
		{"crossencoder", []string{"crossencoder", "-m", "10", "-max-len", "64", "-batch", "8", "-epochs", "2", "-lr", "1e-3", "-dev-max", "20", "-test", ""}, 0.95},
		{"crossencoder-listwise-warm", []string{"crossencoder", "-m", "10", "-warm-start", "-loss", "listwise", "-negatives-per-positive", "2", "-batch", "8", "-epochs", "4", "-lr", "2e-3", "-dev-max", "20", "-test", ""}, 0.97},
		{"querytype", []string{"classifier", "-kind", "querytype", "-batch", "16", "-epochs", "12", "-lr", "2e-3", "-test", ""}, 0.95},
		{"mlc", []string{"classifier", "-kind", "mlc", "-batch", "16", "-epochs", "3", "-lr", "2e-3"}, 0.6},
		{"mlc-warm", []string{"classifier", "-kind", "mlc", "-warm-start", "-batch", "16", "-epochs", "3", "-lr", "2e-3", "-test", ""}, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			args := append([]string{tc.args[0], "-retriever", be, "-run", run}, tc.args[1:]...)
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
			for _, f := range []string{cfgFile, "tokenizer.json", "vocab.txt", "metrics.jsonl", "plot.html", "summary.json", classifier.SplitFile} {
				if _, err := os.Stat(filepath.Join(run, f)); err != nil {
					t.Errorf("run lacks %s", f)
				}
			}
			sp, err := classifier.ReadSplit(run, 0)
			if err != nil || sp.DevFraction != 0.9 || sp.Seed != 1 {
				t.Errorf("recorded split %+v, %v", sp, err)
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
	if err := crossencoderCmd([]string{"-run", filepath.Join(dir, "x")}); err == nil {
		t.Error("crossencoder without -retriever must fail")
	}
	if err := classifierCmd([]string{"-kind", "mlc", "-warm-start", "-run", filepath.Join(dir, "z")}); err == nil || !strings.Contains(err.Error(), "-retriever") {
		t.Errorf("-warm-start without -retriever: %v", err)
	}
	if err := classifierCmd([]string{"-kind", "nope", "-run", filepath.Join(dir, "y")}); err == nil {
		t.Error("unknown classifier kind must fail")
	}
}
