package encoder

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// runCfg is a model configuration for LoadRun: the vocab_size of its encoder.
type runCfg struct {
	Vocab int `json:"vocab"`
}

func TestLoadRun(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := tokenize.BuildVocab([]string{"alpha beta gamma delta"}, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	unmarshal := func(b []byte) (*runCfg, error) {
		var c runCfg
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, err
		}
		if c.Vocab <= 0 {
			return nil, errors.New("vocab must be > 0")
		}
		return &c, nil
	}
	enc := func(c *runCfg) Config {
		e, err := New("bert", Sizes{Vocab: c.Vocab, Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name, file string
		vocab      int    // stored vocab_size (0: an invalid configuration)
		wantErr    string // "": loads
	}{
		{name: "ok", file: "m.json", vocab: tok.VocabSize()},
		{name: "padded vocab", file: "m.json", vocab: tok.VocabSize() + 8},
		{name: "other kind", file: "other.json", vocab: tok.VocabSize(), wantErr: "has no other.json"},
		{name: "bad config", file: "m.json", wantErr: "vocab must be > 0"},
		{name: "other tokenizer", file: "m.json", vocab: tok.VocabSize() + MaxVocabPadding + 1, wantErr: "not this model's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			cb, _ := json.Marshal(runCfg{Vocab: tc.vocab})
			files, err := rundir.WriteModelFiles(run, "m.json", cb, tok)
			if err != nil {
				t.Fatal(err)
			}
			dir, err := checkpoints.Save(run, model.NewStore(), checkpoints.Manifest{Step: 1}, files)
			if err != nil {
				t.Fatal(err)
			}
			r, err := LoadRun(dir, tc.file, be, unmarshal, enc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err %v, want one naming %s and %q", err, dir, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Dir != dir || r.Cfg.Vocab != tc.vocab || r.Tok.VocabSize() != tok.VocabSize() || r.Store == nil {
				t.Fatalf("loaded %+v (config %+v), want dir %s, vocab %d", r, r.Cfg, dir, tc.vocab)
			}
		})
	}
}
