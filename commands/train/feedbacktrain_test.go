package traincmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/recipe"
	"github.com/toolret/toolret/rundir"
)

// prfFixture is a tiny dataset on disk (the embedded dataset's tools, nTrain judged train and
// nTest judged test queries), a random bi-encoder retriever run recording a dev split of it
// (10%, seed 1), and a random mlc classifier run over its tools.
type prfFixture struct {
	dir, data, retriever, mlc string
	d                         *data.Dataset
}

func newPRFFixture(t *testing.T, nTrain, nTest int) *prfFixture {
	t.Helper()
	dir := t.TempDir()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sub := *d
	sub.Splits, sub.Scenes, sub.SceneIDs = map[string]*data.Split{}, nil, nil
	for name, n := range map[string]int{"train": nTrain, "test": nTest} {
		src := d.Splits[name]
		dst := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range src.Judged()[:n] {
			dst.Queries = append(dst.Queries, q)
			dst.Relevant[q] = src.Relevant[q]
		}
		sub.Splits[name] = dst
	}
	f := &prfFixture{dir: dir, data: filepath.Join(dir, "data"), retriever: filepath.Join(dir, "be"), mlc: filepath.Join(dir, "mlc")}
	if err := data.WriteBEIR(&sub, f.data); err != nil {
		t.Fatal(err)
	}
	if f.d, err = data.Load(f.data); err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRun(f.retriever, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := rundir.Carve(f.d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(f.retriever, &rundir.Meta{Kind: "biencoder", Dataset: f.d.Name, Fingerprint: f.d.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteClassifierRun(f.mlc, exporttest.ClassifierOptions{}, bk, 1); err != nil {
		t.Fatal(err)
	}
	// Its run.json names the whole embedded dataset; its labels are this data's tools too.
	if err := os.Remove(filepath.Join(f.mlc, rundir.MetaFile)); err != nil {
		t.Fatal(err)
	}
	return f
}

// collect runs train feedback -rewriter prf into out.
func (f *prfFixture) collect(t *testing.T, out string, extra ...string) {
	t.Helper()
	args := append([]string{"-data", f.data, "-first-stage", f.retriever, "-rewriter", "prf", "-prf-model", f.mlc,
		"-iterations", "2", "-k", "5", "-out", out, "-quiet"}, extra...)
	if err := feedbackCmd(args); err != nil {
		t.Fatal(err)
	}
}

// TestFeedbackPRFCommand collects prf feedback with train feedback: the record holds the prf
// settings, the lines a refinement or a stop each, a re-run writes nothing, and flag errors.
func TestFeedbackPRFCommand(t *testing.T) {
	f := newPRFFixture(t, 30, 10)
	out := filepath.Join(f.dir, "fb", "prf.jsonl")
	os.MkdirAll(filepath.Dir(out), 0o755)
	f.collect(t, out)
	h, loops, err := feedback.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(f.mlc)
	if h.Settings["refiner"] != "prf" || h.Settings["prf-kind"] != feedback.JudgeMLC || h.Settings["prf-model"] != abs ||
		h.Settings["prf-threshold"] != "0.5" || h.Settings["llm-model"] != "" || h.Iterations != 2 || h.K != 5 || len(h.Prompts) != 0 {
		t.Errorf("record %+v", h)
	}
	refined := 0
	for _, lp := range loops {
		if !lp.Done() {
			t.Fatalf("query %s: loop not finished", lp.QueryID)
		}
		for _, l := range lp.Lines {
			if l.Refined != "" {
				refined++
				if !strings.HasPrefix(l.Refined, lp.Lines[0].Query+" ") {
					t.Errorf("query %s: refined %q does not start with q^0", lp.QueryID, l.Refined)
				}
			}
		}
	}
	if len(loops) != 40 || refined == 0 {
		t.Fatalf("%d loops, %d refinements", len(loops), refined)
	}
	b, _ := os.ReadFile(out)
	f.collect(t, out)
	if again, _ := os.ReadFile(out); !bytes.Equal(again, b) {
		t.Error("a re-run over the complete file changed it")
	}
	if err := feedbackCmd([]string{"-data", f.data, "-first-stage", f.retriever, "-rewriter", "prf", "-prf-model", f.mlc,
		"-prf-threshold", "0.7", "-iterations", "2", "-k", "5", "-out", out, "-quiet"}); err == nil || !strings.Contains(err.Error(), "prf-threshold") {
		t.Errorf("resume with another threshold: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"-rewriter", "prf"}, "-rewriter prf needs -prf-model"},
		{"threshold", []string{"-rewriter", "prf", "-prf-model", f.mlc, "-prf-threshold", "1.5"}, "-prf-threshold 1.5"},
		{"chars", []string{"-rewriter", "prf", "-prf-model", f.mlc, "-prf-chars", "0"}, "-prf-chars 0"},
		{"tools", []string{"-rewriter", "prf", "-prf-model", f.mlc, "-prf-tools", "0"}, "-prf-tools 0"},
		{"model is a bi-encoder", []string{"-rewriter", "prf", "-prf-model", f.retriever}, "not an mlc classifier"},
		{"unknown refiner", []string{"-rewriter", "gpt"}, `-rewriter "gpt": want llm or prf`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"-data", f.data, "-first-stage", f.retriever, "-quiet", "-out", filepath.Join(t.TempDir(), "x.jsonl")}, tc.args...)
			if err := feedbackCmd(a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBiencoderFeedback trains iteration-aware on a prf collection, warm-started from the
// retriever run: the run takes the retriever's dev split and names it as parent, records the
// marker in its configuration and the collection in feedback.json; the ablations train; a
// resume with a changed collection is refused; flag errors.
func TestBiencoderFeedback(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	f := newPRFFixture(t, 40, 10)
	out := filepath.Join(f.dir, "prf.jsonl")
	f.collect(t, out)
	common := []string{"-data", f.data, "-feedback", out, "-batch", "8", "-epochs", "1", "-lr", "1e-3", "-quiet"}
	run := filepath.Join(f.dir, "fbrun")
	if err := biencoderCmd(append([]string{"-run", run, "-init", f.retriever, "-alpha", "0.5", "-marker", "Round %d: "}, common...)); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := rundir.Read(f.retriever)
	if absR, _ := filepath.Abs(f.retriever); m.Parent != absR || !slices.Equal(m.Split.DevIDs, rm.Split.DevIDs) || m.Args["alpha"] != "0.5" {
		t.Errorf("run.json: parent %q, dev %v (retriever's %v), args %v", m.Parent, m.Split.DevIDs, rm.Split.DevIDs, m.Args)
	}
	cb, _ := os.ReadFile(filepath.Join(run, biencoder.ConfigFile))
	cfg, err := biencoder.Unmarshal(cb)
	if err != nil || cfg.Marker != "Round %d: " || cfg.Encoder.Hidden() != 16 {
		t.Errorf("biencoder.json: %s, %v: want the marker and the retriever's encoder (hidden 16)", cb, err)
	}
	var rec recipe.FeedbackRecord
	rb, _ := os.ReadFile(filepath.Join(run, recipe.FeedbackRecordFile))
	if err := json.Unmarshal(rb, &rec); err != nil || rec.SHA256 == "" || rec.Iterations != 2 {
		t.Errorf("feedback.json %s: %v", rb, err)
	}
	if _, err := os.Stat(filepath.Join(run, "test_metrics.json")); err != nil {
		t.Error(err)
	}
	// An iteration-aware retriever does not collect (its loop would rank unmarked instructions).
	if err := feedbackCmd([]string{"-data", f.data, "-first-stage", run, "-rewriter", "prf", "-prf-model", f.mlc, "-quiet",
		"-out", filepath.Join(f.dir, "again.jsonl")}); err == nil || !strings.Contains(err.Error(), "trained iteration-aware") {
		t.Errorf("collecting with an iteration-aware retriever: %v", err)
	}
	// The ablations: no joint loss, no hard negatives, no warm-up.
	abl := filepath.Join(f.dir, "abl")
	if err := biencoderCmd(append([]string{"-run", abl, "-feedback-joint=false", "-feedback-hard-negatives=false", "-iterations", "1",
		"-layers", "1", "-hidden", "16", "-heads", "2", "-vocab-size", "600", "-test", ""}, common...)); err != nil {
		t.Fatal(err)
	}
	// A resume refuses a collection that changed.
	b, _ := os.ReadFile(out)
	if err := os.WriteFile(out, bytes.Replace(b, []byte(`"stop":`), []byte(`"stop" :`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := biencoderCmd([]string{"-run", abl, "-resume", "-quiet"}); err == nil || !strings.Contains(err.Error(), "changed since the run started") {
		t.Errorf("resume over a changed collection: %v", err)
	}
	os.WriteFile(out, b, 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"iterations without feedback", []string{"-iterations", "2"}, "-iterations is a flag of -feedback"},
		{"hard negatives", []string{"-feedback", out, "-hard-negatives", "1", "-negatives", out}, "not with -hard-negatives"},
		{"bad marker", []string{"-feedback", out, "-marker", "It %s"}, "-marker"},
		{"alpha", []string{"-feedback", out, "-alpha", "0"}, "-alpha 0"},
		{"too many iterations", []string{"-feedback", out, "-iterations", "3"}, "-iterations 3: the collection has 2"},
		{"dev", []string{"-feedback", out, "-dev", "0.2"}, "the dev split is the retriever's"},
		{"q2q", []string{"-feedback", out, "-objective", "query2query"}, "not with -objective query2query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"-data", f.data, "-run", filepath.Join(t.TempDir(), "r"), "-quiet"}, tc.args...)
			if err := biencoderCmd(a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
