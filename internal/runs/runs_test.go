package runs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string // "" no error
	}{
		{"warmup 0", CheckWarmup(0), ""},
		{"warmup 1", CheckWarmup(1), "-warmup 1"},
		{"warmup -0.1", CheckWarmup(-0.1), "-warmup -0.1"},
		{"max-len", CheckMaxLen(2, 3, "[CLS], [SEP], [SEP]"), "-max-len 2: must be >= 3 ([CLS], [SEP], [SEP])"},
		{"max-len ok", CheckMaxLen(3, 3, ""), ""},
		{"arch", CheckArch("gpt"), `-arch "gpt"`},
		{"arch ok", CheckArch("deberta"), ""},
		{"pooling", CheckPooling("max"), `-pooling "max": want cls, mean or pooler`},
		{"pooling ok", CheckPooling(""), ""},
		{"head scratch", (&Head{Arch: "bert", MaxLen: 8, Batch: 1, Epochs: 1, LR: 1, Accumulate: 1, Dev: 0.1}).Check(), "-layers 0"},
		{"head warm", (&Head{Arch: "bert", MaxLen: 8, Batch: 1, Epochs: 1, LR: 1, Accumulate: 1, Dev: 0.1, WarmStart: true}).Check(), ""},
		{"head default", func() error { h := DefaultHead(32, 8, 1, "ndcg@5"); return h.Check() }(), ""},
	} {
		if c.want == "" && c.err != nil || c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
}

func TestNewEncoder(t *testing.T) {
	s := encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 8, Heads: 2, MaxPositions: 16}
	for _, c := range []struct {
		arch  string
		pairs bool
		types int
		err   string
	}{
		{"bert", true, 2, ""},
		{"deberta", false, 0, ""},
		{"deberta", true, 2, ""},
		{"wordbag", true, 0, "cannot encode text pairs"},
		{"xlnet", false, 0, `-arch "xlnet"`},
	} {
		e, err := NewEncoder(c.arch, s, c.pairs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s pairs %v: %v, want %q", c.arch, c.pairs, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.arch, err)
		}
		if e.ModelType() != Archs[c.arch] || (c.pairs && e.TypeVocab() != c.types) {
			t.Errorf("%s pairs %v: %s with %d token types", c.arch, c.pairs, e.ModelType(), e.TypeVocab())
		}
		if err := CheckArchOf("bert", true, e, "x"); (err == nil) != (c.arch == "bert") {
			t.Errorf("CheckArchOf(bert, given) over %s: %v", c.arch, err)
		}
		if err := CheckArchOf("bert", false, e, "x"); err != nil {
			t.Errorf("CheckArchOf not given: %v", err)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := Open(run, false, "colt", "COLT"); err != nil {
		t.Fatalf("a new run: %v", err)
	}
	if err := Open("", false, "colt", "COLT"); err == nil {
		t.Error("no directory: no error")
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(run, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}); err != nil {
		t.Fatal(err)
	}
	if err := Open(run, false, "colt", "COLT"); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("a new run into a run: %v", err)
	}
	if err := Open(run, true, "colt", "COLT"); err == nil || !strings.Contains(err.Error(), "a biencoder run, not a COLT run") {
		t.Errorf("resuming another kind: %v", err)
	}
	if err := Open(run, true, "biencoder", "bi-encoder"); err != nil {
		t.Errorf("resume: %v", err)
	}
	if _, _, err := LoadResume(run, "nope.json", func(b []byte) (*struct{}, error) { return &struct{}{}, nil }); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadResume without its config: %v", err)
	}
}

// TestModel checks that Model takes a resumed run's recorded configuration and tokenizer, and
// builds a new run's configuration around a new encoder with its tokenizer.
func TestModel(t *testing.T) {
	type cfg struct {
		Name    string `json:"name"`
		Encoder string `json:"-"` // model_type of the encoder build was given
	}
	unmarshal := func(b []byte) (*cfg, error) {
		var c cfg
		return &c, json.Unmarshal(b, &c)
	}
	d := &data.Dataset{Tools: []data.Tool{{ID: "a", Text: "alpha beta"}}, Queries: []data.Query{{ID: "q", Text: "gamma gamma"}}}
	tr := &data.Split{Name: "train", Queries: []int{0}}
	for _, resume := range []bool{true, false} {
		run := t.TempDir()
		vocab, err := tokenize.BuildVocab([]string{"recorded words only"}, 100, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := tokenize.New(vocab, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rundir.WriteModelFiles(run, "m.json", []byte(`{"name": "recorded"}`), rec); err != nil {
			t.Fatal(err)
		}
		h := DefaultHead(16, 2, 1, "ndcg@10")
		h.RunDir, h.Resume = run, resume
		s := &Session{H: &h, Data: d, Train: tr}
		built := false
		c, tok, err := Model(s, s.Store(), "m.json", unmarshal, false, func(bc encoder.Config) *cfg {
			built = true
			return &cfg{Name: "new", Encoder: bc.ModelType()}
		})
		if err != nil {
			t.Fatalf("resume %v: %v", resume, err)
		}
		want, word := cfg{Name: "recorded"}, "recorded" // the recorded tokenizer's word
		if !resume {
			want, word = cfg{Name: "new", Encoder: "bert"}, "gamma" // built from the training texts
		}
		if _, ok := tok.ID(word); *c != want || built == resume || !ok {
			t.Errorf("resume %v: config %+v (built %v), tokenizer has %q: %v; want %+v", resume, *c, built, word, ok, want)
		}
	}
}

// batchesTask is a train.Task of which TrainConfig reads only the batches per epoch.
type batchesTask struct {
	train.Task
	n int
}

func (t batchesTask) Batches(int) int { return t.n }

func TestTrainConfigMaxSteps(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		epochs, maxSteps, steps, warmup int
	}{
		{3, 0, 300, 30},
		{3, 50, 50, 5},
		{3, 1000, 300, 30},
		{1, 100, 100, 10},
	} {
		h := DefaultHead(32, 8, c.epochs, "ndcg@5")
		h.MaxSteps = c.maxSteps
		tc, steps := (&Session{H: &h, Data: d}).TrainConfig(batchesTask{n: 100})
		if steps != c.steps || tc.MaxSteps != c.maxSteps || tc.Optimizer.Warmup != c.warmup {
			t.Errorf("epochs %d max-steps %d: steps %d, MaxSteps %d, warmup %d; want %d, %d, %d",
				c.epochs, c.maxSteps, steps, tc.MaxSteps, tc.Optimizer.Warmup, c.steps, c.maxSteps, c.warmup)
		}
	}
	h := DefaultHead(32, 8, 1, "ndcg@5")
	h.MaxSteps = -1
	if err := h.Check(); err == nil || !strings.Contains(err.Error(), "-max-steps -1") {
		t.Errorf("max-steps -1: %v", err)
	}
}

type snapConfig struct {
	Head
	Extra int `json:"extra"`
}

func (c *snapConfig) Validate() error { return c.Head.Check() }

// A new run records the configuration as Begin got it: what training adjusts afterwards (a
// warm start capping max-len) does not reach run.json, so resuming with the same
// configuration is accepted.
func TestBeginRecordsGivenConfig(t *testing.T) {
	cfg := &snapConfig{Head: DefaultHead(16, 2, 1, "ndcg@5"), Extra: 3}
	cfg.RunDir, cfg.MaxLen = filepath.Join(t.TempDir(), "run"), 128
	_, s, err := Begin(cfg, &cfg.Head, "testkind", nil, map[string]string{"max-len": "128"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxLen, cfg.Extra = 64, 4 // as a warm start caps it
	if err := s.Create(); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.Read(cfg.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var rec snapConfig
	if err := json.Unmarshal(m.Config, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.MaxLen != 128 || rec.Extra != 3 || m.Args["max-len"] != "128" {
		t.Errorf("recorded max-len %d, extra %d, args max-len %q; want 128, 3, 128 (the configuration given)", rec.MaxLen, rec.Extra, m.Args["max-len"])
	}
}
