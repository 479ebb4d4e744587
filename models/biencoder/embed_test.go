package biencoder

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// TestEmbedderReadsCurrentWeights: an Embedder kept across a weight update embeds with the new
// weights, as a new Embedder does (its graphs take the weights as parameters; on the go
// backend, which bakes an inference graph's variables in as constants, the kept one would
// repeat the old embeddings).
func TestEmbedderReadsCurrentWeights(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := tinyTask(t)
	store := model.NewStore()
	if err := task.Cfg.Encoder.Init(encoder.In(store.RootScope(), ""), 3); err != nil {
		t.Fatal(err)
	}
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
