package traincmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
)

// TestHeadPoolingFlag checks -pooling of the classifier and cross-encoder commands: the
// default is cls over BERT and pooler over DeBERTa, the flag overrides it, a pooler head over
// an encoder without a pooler layer (a hub deberta-v3, a warm start) gets one, and other
// values are refused.
func TestHeadPoolingFlag(t *testing.T) {
	s := encoder.Sizes{Vocab: 50, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 16, MaxPositions: 16}
	bert, err := encoder.New("bert", s)
	if err != nil {
		t.Fatal(err)
	}
	deb, err := encoder.New("deberta-v2", s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		enc        encoder.Config
		want       encoder.Pooling
		wantPooler bool // the returned encoder has the pooler layer
		wantErr    string
	}{
		{"bert default", nil, bert, encoder.PoolCLS, true, ""},
		{"bert -pooling pooler", []string{"-pooling", "pooler"}, bert.WithPooler(false), encoder.PoolPooler, true, ""},
		{"deberta default", nil, deb, encoder.PoolPooler, true, ""},
		{"hub deberta-v3 default: a new pooler", nil, deb.WithPooler(false), encoder.PoolPooler, true, ""},
		{"deberta -pooling cls", []string{"-pooling", "cls"}, deb.WithPooler(false), encoder.PoolCLS, false, ""},
		{"-pooling mean", []string{"-pooling", "mean"}, deb.WithPooler(false), encoder.PoolMean, false, ""},
		{"-pooling none", []string{"-pooling", "none"}, bert, "", false, `-pooling "none": want cls, mean or pooler`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := runs.DefaultHead(32, 8, 1, "")
			fs, _, err := headFlags("test", "test", &h)
			if err != nil {
				t.Fatal(err)
			}
			fs.SetOutput(io.Discard)
			if err := cli.Parse(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			err = runs.CheckPooling(h.Pooling)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CheckPooling: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, enc := classifier.HeadPoolingOf(tc.enc, h.Pooling)
			if p != tc.want || enc.HasPooler() != tc.wantPooler || enc.ModelType() != tc.enc.ModelType() {
				t.Errorf("HeadPoolingOf: %q over %s with pooler %v; want %q with pooler %v", p, enc.ModelType(), enc.HasPooler(), tc.want, tc.wantPooler)
			}
		})
	}
}

// TestCrossEncoderInitDebertaV3 trains `crossencoder -init DIR` from a directory as the hub
// ships microsoft/deberta-v3-*: type_vocab_size 0, "deberta."-prefixed tensors without a
// pooler, spm.model alone. The run must keep the SentencePiece tokenizer, record no token
// types and the pooler head (a new ContextPooler), and score pairs once loaded.
func TestCrossEncoderInitDebertaV3(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "be")
	if err := biencoderCmd([]string{"-run", be, "-epochs", "1", "-batch", "16", "-vocab-size", "600", "-test", "", "-dev", "0.85", "-seed", "7",
		"-layers", "1", "-hidden", "16", "-heads", "2", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	hub := filepath.Join(dir, "deberta-v3")
	tinyDebertaV3(t, hub)
	run := filepath.Join(dir, "ce")
	if err := crossencoderCmd([]string{"-init", hub, "-first-stage", be, "-run", run, "-depth", "10", "-max-len", "96", "-batch", "8",
		"-epochs", "1", "-lr", "1e-3", "-dev-max", "10", "-test", "", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "spm.model")); err != nil {
		t.Errorf("the run does not keep the SentencePiece model: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(run, crossencoder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Encoder map[string]any `json:"encoder"`
		Pooling string         `json:"pooling"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Encoder["model_type"] != "deberta-v2" || c.Encoder["type_vocab_size"] != 0.0 || c.Pooling != "pooler" {
		t.Errorf("stored encoder model_type %v, type_vocab_size %v, pooling %q; want deberta-v2, 0, pooler", c.Encoder["model_type"], c.Encoder["type_vocab_size"], c.Pooling)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(d.Tools))
	for i, tool := range d.Tools {
		texts[i] = tool.Text
	}
	m, err := crossencoder.LoadRun(run, bk, texts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Score(context.Background(), d.Queries[0].Text, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range s {
		if !(v > 0 && v < 1) {
			t.Errorf("score %d: %v outside (0, 1)", i, v)
		}
	}
	if s[0] == s[1] && s[1] == s[2] {
		t.Errorf("three tools score %v alike", s[0])
	}
}

// tinyDebertaV3 writes into hub a tiny randomly initialised checkpoint laid out as the hub
// ships microsoft/deberta-v3-* (spm.model alone, "deberta."-prefixed tensors, no pooler,
// type_vocab_size 0) and returns the store it was saved from.
func tinyDebertaV3(t *testing.T, hub string) *model.Store {
	t.Helper()
	spm, err := os.ReadFile("../../tokenize/testdata/unigram/spm.model")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(hub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hub, "spm.model"), spm, 0o644); err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 2100, Hidden: 32, Layers: 1, Heads: 2, MaxPositions: 128})
	if err != nil {
		t.Fatal(err)
	}
	enc = enc.WithPooler(false)
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), 3); err != nil {
		t.Fatal(err)
	}
	if err := enc.SaveHF(store.RootScope(), hub, true); err != nil {
		t.Fatal(err)
	}
	return store
}
