package biencoder

import (
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// tinyEmbedding returns the go backend, tinyTask and a store with its encoder initialised.
func tinyEmbedding(t *testing.T) (compute.Backend, *Task, *model.Store) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := tinyTask(t)
	store := model.NewStore()
	if err := task.Cfg.Encoder.Init(encoder.In(store.RootScope(), ""), 3); err != nil {
		t.Fatal(err)
	}
	return be, task, store
}

// TestEmbedderReadsCurrentWeights: an Embedder kept across a weight update embeds with the new
// weights, as a new Embedder does (its graphs take the weights as parameters; on the go
// backend, which bakes an inference graph's variables in as constants, the kept one would
// repeat the old embeddings).
func TestEmbedderReadsCurrentWeights(t *testing.T) {
	be, task, store := tinyEmbedding(t)
	texts := []string{"get the weather", "send an email please"}
	embed := func(e *Embedder) [][]float32 {
		t.Helper()
		out, err := e.Embed(ToolTower, texts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	kept := &Embedder{Cfg: task.Cfg, Tok: task.Tok, Backend: be, Store: store, Batch: 2}
	before := embed(kept)
	changed := 0
	for v := range store.IterVariables() {
		if v.Shape().Rank() != 2 {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		flat := tensors.MustCopyFlatData[float32](val)
		for i := range flat {
			flat[i] = -flat[i] + 0.01*float32(i%7)
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(flat, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
		changed++
	}
	if changed == 0 {
		t.Fatal("no weight matrix to change")
	}
	after := embed(kept)
	fresh := embed(&Embedder{Cfg: task.Cfg, Tok: task.Tok, Backend: be, Store: store, Batch: 2})
	same := true
	for i := range before {
		for d := range before[i] {
			if before[i][d] != after[i][d] {
				same = false
			}
			if diff := after[i][d] - fresh[i][d]; diff > 1e-6 || diff < -1e-6 {
				t.Fatalf("text %d dim %d: kept Embedder %v, new one %v", i, d, after[i][d], fresh[i][d])
			}
		}
	}
	if same {
		t.Fatal("the kept Embedder gave the embeddings of the old weights")
	}
}

func TestRankerQueryTokens(t *testing.T) {
	task := tinyTask(t)
	r := &Ranker{e: &Embedder{Cfg: task.Cfg, Tok: task.Tok}}
	limit := task.Cfg.QueryMaxLen
	for _, text := range []string{"get the weather", strings.Repeat("send an email please ", limit)} {
		want := len(task.Tok.Single(text, 0))
		if n, l := r.QueryTokens(text); n != want || l != limit {
			t.Errorf("QueryTokens(%.20q) = %d, %d; want %d, %d (the query length)", text, n, l, want, limit)
		}
	}
	if n, _ := r.QueryTokens(strings.Repeat("send an email please ", limit)); n <= limit {
		t.Errorf("a long query counts %d tokens, not more than the query length %d", n, limit)
	}
}

// TestEmbedderSetLengths: lengths set after loading embed as an embedder built with them does
// (a tool text longer than the training length is no longer cut), and a length out of range
// is refused with nothing changed.
func TestEmbedderSetLengths(t *testing.T) {
	be, task, store := tinyEmbedding(t)
	positions := task.Cfg.Encoder.MaxPositions()
	long := []string{strings.Repeat("send an email get the weather ", 4)} // > 8 tokens
	embedder := func(query, tool int) *Embedder {
		cfg := *task.Cfg
		cfg.QueryMaxLen, cfg.ToolMaxLen = query, tool
		return &Embedder{Cfg: &cfg, Tok: task.Tok, Backend: be, Store: store, Batch: 2}
	}
	embed := func(e *Embedder) []float32 {
		t.Helper()
		out, err := e.Embed(ToolTower, long)
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	e := embedder(8, 8)
	short := embed(e)
	if err := e.SetLengths(0, positions); err != nil {
		t.Fatal(err)
	}
	if e.Cfg.QueryMaxLen != 8 || e.Cfg.ToolMaxLen != positions {
		t.Fatalf("lengths after SetLengths(0, %d): query %d, tool %d", positions, e.Cfg.QueryMaxLen, e.Cfg.ToolMaxLen)
	}
	got, want := embed(e), embed(embedder(8, positions))
	same := true
	for d := range got {
		if diff := got[d] - want[d]; diff > 1e-6 || diff < -1e-6 {
			t.Fatalf("dim %d: %v after SetLengths, %v built with the length", d, got[d], want[d])
		}
		same = same && got[d] == short[d]
	}
	if same {
		t.Fatal("the longer tool length embedded the long text as the 8-token cut did")
	}
	for _, tt := range []struct{ query, tool int }{{1, 0}, {0, 1}, {-2, 0}, {0, positions + 1}, {positions + 1, 0}} {
		e := embedder(8, 8)
		err := e.SetLengths(tt.query, tt.tool)
		if err == nil || !strings.Contains(err.Error(), "length") {
			t.Errorf("SetLengths(%d, %d) = %v, want a length error", tt.query, tt.tool, err)
		}
		if e.Cfg.QueryMaxLen != 8 || e.Cfg.ToolMaxLen != 8 {
			t.Errorf("SetLengths(%d, %d) refused but changed the lengths to %d, %d", tt.query, tt.tool, e.Cfg.QueryMaxLen, e.Cfg.ToolMaxLen)
		}
	}
}
