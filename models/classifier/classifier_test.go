package classifier

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// tinyData: tools a1, a2 (tool A), b1 (tool B), c1 (tool C of another category, same tool
// name as A: a different group).
func tinyData() *data.Dataset {
	d := &data.Dataset{Name: "tiny",
		Tools: []data.Tool{
			{ID: "a1", Text: "alpha one", Category: "X", ToolName: "A"},
			{ID: "a2", Text: "alpha two", Category: "X", ToolName: "A"},
			{ID: "b1", Text: "beta", Category: "X", ToolName: "B"},
			{ID: "c1", Text: "gamma", Category: "Y", ToolName: "A"},
		},
		Queries: []data.Query{{ID: "q0", Text: "one alpha"}, {ID: "q1", Text: "alpha and beta"}, {ID: "q2", Text: "two alphas"},
			{ID: "q3", Text: "alpha in X and Y"}, {ID: "q4", Text: "nothing"}},
	}
	d.Splits = map[string]*data.Split{"train": {Name: "train", Queries: []int{0, 1, 2, 3, 4},
		Relevant: map[int][]int{0: {0}, 1: {0, 2}, 2: {0, 1}, 3: {1, 3}}}}
	return d
}

func TestQueryTypes(t *testing.T) {
	d := tinyData()
	got := QueryTypes(d, d.Splits["train"])
	// q0: one API; q2: two APIs of one tool: single. q1: tools A and B; q3: X/A and Y/A: multi.
	// q4 has no relevant tool: not labelled.
	want := map[int]bool{0: false, 1: true, 2: false, 3: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("QueryTypes = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		rel   []int
		group []int
		want  bool
	}{
		{nil, nil, false},
		{[]int{2}, []int{0, 0, 1}, false},
		{[]int{0, 1}, []int{0, 0, 1}, false},
		{[]int{1, 2}, []int{0, 0, 1}, true},
		{[]int{0, 1, 2}, []int{0, 0, 1}, true},
	} {
		if got := MultiTool(tc.rel, tc.group); got != tc.want {
			t.Errorf("MultiTool(%v, %v) = %v", tc.rel, tc.group, got)
		}
	}
}

func TestTargets(t *testing.T) {
	d := tinyData()
	s := d.Splits["train"]
	ce := &Config{Kind: KindQueryType, Labels: []string{LabelSingle, LabelMulti}, LossKind: "ce"}
	got, err := Targets(ce, d, s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[1], []float32{0, 1}) || !reflect.DeepEqual(got[2], []float32{1, 0}) || len(got) != 4 {
		t.Fatalf("ce targets %v", got)
	}
	bce := &Config{Kind: KindQueryType, Labels: ce.Labels, LossKind: "bce"}
	if got, _ := Targets(bce, d, s); !reflect.DeepEqual(got[3], []float32{1}) || !reflect.DeepEqual(got[0], []float32{0}) {
		t.Fatalf("bce targets %v", got)
	}
	mlc := &Config{Kind: KindMLC, Labels: ToolLabels(d), LossKind: "bce"}
	if got, _ := Targets(mlc, d, s); !reflect.DeepEqual(got[3], []float32{0, 1, 0, 1}) {
		t.Fatalf("mlc targets %v", got)
	}
	mlc.Labels = []string{"a1", "a2", "c1", "b1"}
	if _, err := Targets(mlc, d, s); err == nil || !strings.Contains(err.Error(), "other data") {
		t.Fatalf("mlc labels of other data: %v", err)
	}
}

func TestTypeAccuracy(t *testing.T) {
	m := TypeAccuracy([]float32{0.9, 0.2, 0.6, 0.1}, []int{0, 1, 2, 3}, map[int]bool{0: true, 1: true, 2: false})
	// q0 multi ok, q1 multi wrong, q2 single wrong, q3 single ok.
	if m["accuracy"] != 50 || m["acc_multi"] != 50 || m["acc_single"] != 50 || m["n_multi"] != 2 {
		t.Fatalf("%v", m)
	}
}

// TestMLCRanking gives an mlc model zero head weights and distinct biases: every query must
// rank the tools by bias, and the ranker must refuse a dataset with other tools.
func TestMLCRanking(t *testing.T) {
	d := tinyData()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := tokenize.BuildVocab([]string{"alpha one two beta gamma nothing and in x y"}, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Kind: KindMLC, Encoder: bc, MaxLen: 16, Labels: ToolLabels(d), LossKind: "bce"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := bc.Init(store.RootScope(), 1); err != nil {
		t.Fatal(err)
	}
	head := store.RootScope().At("classifier")
	w := make([]float32, 4*8)
	if _, err := head.CreateVariable("weight", tensors.FromFlatDataAndDimensions(w, 4, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := head.CreateVariable("bias", tensors.FromValue([]float32{0.1, -2, 3, 1})); err != nil {
		t.Fatal(err)
	}
	m := &Model{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 2}
	r, err := NewRanker(m, d)
	if err != nil {
		t.Fatal(err)
	}
	// Token counts before truncation, against the max length 16: evaluation's length subsets.
	long := strings.Repeat("alpha ", 20)
	if n, limit := r.QueryTokens(long); n != 22 || limit != 16 {
		t.Errorf("QueryTokens(20 words) = %d, %d; want 22, 16", n, limit)
	}
	if n, _ := r.QueryTokens("alpha beta"); n != 4 {
		t.Errorf("QueryTokens(2 words) = %d, want 4", n)
	}
	rk, err := r.Rank(context.Background(), []string{"alpha", "beta gamma", "nothing at all"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range rk {
		if !reflect.DeepEqual(x.Tools, []int{2, 3, 0}) {
			t.Errorf("query %d ranking %v, want [2 3 0] (by bias)", i, x.Tools)
		}
		if x.Scores[0] < 0.95 || x.Scores[0] > 0.953 { // sigmoid(3) = 0.9526
			t.Errorf("query %d top score %v, want sigmoid(3)", i, x.Scores[0])
		}
	}
	// With the softmax loss the scores are a softmax over all tools: same order.
	soft := *cfg
	soft.LossKind = "softmax"
	if err := soft.Validate(); err != nil {
		t.Fatal(err)
	}
	ms := &Model{Cfg: &soft, Tok: tok, Backend: be, Store: store, Batch: 2}
	rs, err := NewRanker(ms, d)
	if err != nil {
		t.Fatal(err)
	}
	rk, err = rs.Rank(context.Background(), []string{"alpha"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Exp(3) / (math.Exp(0.1) + math.Exp(-2) + math.Exp(3) + math.Exp(1))
	if !reflect.DeepEqual(rk[0].Tools, []int{2, 3, 0, 1}) || math.Abs(float64(rk[0].Scores[0])-want) > 1e-6 {
		t.Errorf("softmax ranking %v scores %v, want [2 3 0 1], top %v", rk[0].Tools, rk[0].Scores, want)
	}
	qsoft := &Config{Kind: KindQueryType, Encoder: bc, MaxLen: 16, Labels: []string{LabelSingle, LabelMulti}, LossKind: "softmax"}
	if err := qsoft.Validate(); err == nil {
		t.Error("querytype accepted the softmax loss")
	}
	other := tinyData()
	other.Tools = other.Tools[:3]
	if _, err := NewRanker(m, other); err == nil {
		t.Error("ranker accepted a dataset with other tools")
	}
	qt := &Model{Cfg: &Config{Kind: KindQueryType}}
	if _, err := NewRanker(qt, d); err == nil {
		t.Error("a querytype model must not rank tools")
	}
}
