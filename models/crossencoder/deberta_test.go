package crossencoder

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// hubDeberta writes a directory as the hub ships microsoft/deberta-v3-*: config.json with
// type_vocab_size 0, model.safetensors with "deberta."-prefixed tensors and no pooler, and
// spm.model alone (the tokenize fixture: 2000 pieces + [MASK]); the embedding table has more
// rows than the tokenizer has tokens, as deberta-v3's 128100 for 128001.
func hubDeberta(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("../../tokenize/testdata/unigram/spm.model")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spm.model"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 2100, Hidden: 32, Layers: 2, Heads: 4, MaxPositions: 128})
	if err != nil {
		t.Fatal(err)
	}
	if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2}); err != nil {
		t.Fatal(err)
	}
	enc = enc.WithPooler(false)
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), 5); err != nil {
		t.Fatal(err)
	}
	if err := enc.SaveHF(store.RootScope(), dir, true); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDebertaV3Init initialises a cross-encoder from a hub-like DeBERTa-v3 directory (no token
// types, no pooler), with the ContextPooler head HF's DebertaV2ForSequenceClassification has
// (a new pooler), trains it a few steps and scores pairs from the saved run. The encoder must
// ignore token types (scores with and without them are equal), training must change the
// scores, and the run's scores must equal the in-memory model's.
func TestDebertaV3Init(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := hubDeberta(t)
	store := model.NewStore()
	enc, err := encoder.LoadHF(store.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if enc.TypeVocab() != 0 || enc.HasPooler() {
		t.Fatalf("hub-like encoder: type_vocab_size %d, pooler %v; want 0, false", enc.TypeVocab(), enc.HasPooler())
	}
	// Configurations the cross-encoder must refuse, and the one it trains.
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"pooler head without a pooler layer", Config{Encoder: enc, MaxLen: 96, LossKind: LossBCE, Pooling: encoder.PoolPooler}, "no pooler layer"},
		{"one token type", Config{Encoder: mustOverride(t, enc, map[string]any{"type_vocab_size": 1}), MaxLen: 96, LossKind: LossBCE}, "pairs need 2 token types"},
		{"mean head", Config{Encoder: enc, MaxLen: 96, LossKind: LossBCE, Pooling: encoder.PoolMean}, "want cls or pooler"},
		{"no token types, pooler head", Config{Encoder: enc.WithPooler(true), MaxLen: 96, LossKind: LossBCE, Pooling: encoder.PoolPooler}, ""},
		{"no token types, cls head", Config{Encoder: enc, MaxLen: 96, LossKind: LossBCE, Pooling: encoder.PoolCLS}, ""},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate = %v, want error containing %q", tc.name, err, tc.wantErr)
		}
	}
	cfg := &Config{Encoder: enc.WithPooler(true), MaxLen: 96, LossKind: LossBCE, Pooling: encoder.PoolPooler}

	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	full := d.Splits["train"]
	tr := &data.Split{Name: "train", Relevant: map[int][]int{}}
	for _, q := range full.Judged()[:12] {
		tr.Queries = append(tr.Queries, q)
		tr.Relevant[q] = full.Relevant[q]
	}
	texts := make([]string, len(d.Tools))
	for i, tool := range d.Tools {
		texts[i] = tool.Text
	}
	queries := []string{d.Queries[tr.Queries[0]].Text, d.Queries[tr.Queries[1]].Text, "weather in paris tomorrow"}
	pairs := []Pair{{0, 0}, {0, 1}, {1, 2}, {2, 3}, {2, 0}}

	// Types must not matter: the logits of pairs with types 0/1 and with all zeros are equal.
	ids, types := PairIDs(tok, tok.Encode(queries[0]), tok.Encode(texts[1]), cfg.MaxLen)
	logits := func(ty []int32) float32 {
		exec, err := model.NewExec(be, store, func(root *model.Scope, ids, types, mask *Node) *Node {
			return cfg.Logits(root, ids, types, mask)
		})
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]int32, len(ids))
		for i := range mask {
			mask[i] = 1
		}
		out, err := encoder.Guard(exec).Call1(tensors.FromFlatDataAndDimensions(ids, 1, len(ids)),
			tensors.FromFlatDataAndDimensions(ty, 1, len(ty)), tensors.FromFlatDataAndDimensions(mask, 1, len(mask)))
		if err != nil {
			t.Fatal(err)
		}
		return out.Value().([]float32)[0]
	}
	if a, b := logits(types), logits(make([]int32, len(types))); a != b {
		t.Errorf("token types change the logit of an encoder without token types: %v vs %v", a, b)
	}
	before, err := NewModel(cfg, tok, be, store, texts).ScorePairs(context.Background(), queries, pairs)
	if err != nil {
		t.Fatal(err)
	}

	run := filepath.Join(t.TempDir(), "run")
	files, err := rundir.WriteModelFiles(run, ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{Cfg: cfg, Data: d, Train: tr, Tok: tok, Candidates: map[int][]int{}, Negatives: 2, BatchSize: 4,
		Backend: be, Seed: 3, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	opt := train.DefaultOptimizer()
	opt.LR = 1e-3
	sum, err := train.Run(be, store, task, train.Config{RunDir: run, Seed: 3, Epochs: 1, KeepLast: 1, Optimizer: opt, Quiet: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps < 2 {
		t.Fatalf("trained %d steps, want >= 2", sum.Steps)
	}
	if encoder.Variable(store, "", "pooler.dense.weight") == nil {
		t.Fatal("no pooler weights after training a pooler head")
	}
	m, err := LoadRun(run, be, texts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cfg.Pooling != encoder.PoolPooler || m.Cfg.Encoder.TypeVocab() != 0 {
		t.Fatalf("stored config: pooling %q, type_vocab_size %d", m.Cfg.Pooling, m.Cfg.Encoder.TypeVocab())
	}
	after, err := m.ScorePairs(context.Background(), queries, pairs)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := NewModel(cfg, tok, be, store, texts).ScorePairs(context.Background(), queries, pairs)
	if err != nil {
		t.Fatal(err)
	}
	moved, same := 0.0, 0.0
	for i := range pairs {
		if s := after[i]; math.IsNaN(float64(s)) || s <= 0 || s >= 1 {
			t.Errorf("pair %v: score %v outside (0, 1)", pairs[i], s)
		}
		moved = max(moved, math.Abs(float64(after[i]-before[i])))
		same = max(same, math.Abs(float64(after[i]-mem[i])))
	}
	t.Logf("%d steps; scores %v -> %v (max change %.3g); run vs in-memory max diff %.3g", sum.Steps, before, after, moved, same)
	if after[0] == after[1] {
		t.Errorf("one query with two tools scores %v twice: the tool text does not reach the head", after[0])
	}
	if moved < 1e-4 {
		t.Errorf("training moved the scores by %g only", moved)
	}
	if same > 1e-6 {
		t.Errorf("the saved run scores differ from the in-memory model by %g", same)
	}
}

func mustOverride(t *testing.T, c encoder.Config, f map[string]any) encoder.Config {
	t.Helper()
	out, err := encoder.Override(c, f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
