package refiner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

func TestSlate(t *testing.T) {
	list := []int{10, 11, 12, 13, 14, 15}
	for _, tc := range []struct {
		name           string
		rel            []int
		n              int
		missing, order string
		wantSet        []int // candidates as a set (sorted)
		wantPos        []int // positives among them (sorted)
		wantExact      []int // exact order, when deterministic
	}{
		{"drop keeps first n", []int{14}, 3, MissingDrop, OrderRank, []int{10, 11, 12}, nil, []int{10, 11, 12}},
		{"drop keeps present positive", []int{11}, 3, MissingDrop, OrderRank, []int{10, 11, 12}, []int{11}, []int{10, 11, 12}},
		{"insert replaces the last non-positive", []int{10, 14}, 3, MissingInsert, OrderRank, []int{10, 11, 14}, []int{10, 14}, nil},
		{"insert two", []int{20, 21}, 3, MissingInsert, OrderRank, []int{10, 20, 21}, []int{20, 21}, nil},
		{"more positives than slots", []int{20, 21, 22, 23}, 2, MissingInsert, OrderRank, []int{20, 21}, []int{20, 21}, nil},
		{"short list", []int{12}, 8, MissingInsert, OrderRank, list, []int{12}, list},
		{"shuffle keeps the set", []int{15}, 4, MissingInsert, OrderShuffle, []int{10, 11, 12, 15}, []int{15}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			cand, labels := Slate(list, tc.rel, tc.n, tc.missing, tc.order, r)
			if len(cand) != len(labels) || len(cand) > tc.n {
				t.Fatalf("cand %v labels %v (n %d)", cand, labels, tc.n)
			}
			set := slices.Sorted(slices.Values(cand))
			if !reflect.DeepEqual(set, tc.wantSet) {
				t.Errorf("candidates %v, want the set %v", cand, tc.wantSet)
			}
			var pos []int
			for i, c := range cand {
				if labels[i] == 1 {
					pos = append(pos, c)
				}
			}
			slices.Sort(pos)
			if !reflect.DeepEqual(pos, tc.wantPos) {
				t.Errorf("positives %v, want %v", pos, tc.wantPos)
			}
			if tc.wantExact != nil && !reflect.DeepEqual(cand, tc.wantExact) {
				t.Errorf("order %v, want %v", cand, tc.wantExact)
			}
			if tc.order == OrderRank {
				// Non-positives keep first-stage order.
				var neg []int
				for i, c := range cand {
					if labels[i] == 0 {
						neg = append(neg, c)
					}
				}
				if !slices.IsSorted(neg) {
					t.Errorf("non-positives out of first-stage order: %v", cand)
				}
			}
		})
	}
	// Same rng state, same slate: batches are a pure function of the seed.
	a, _ := Slate(list, []int{20}, 4, MissingInsert, OrderShuffle, rand.New(rand.NewPCG(5, 6)))
	b, _ := Slate(list, []int{20}, 4, MissingInsert, OrderShuffle, rand.New(rand.NewPCG(5, 6)))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("slates differ for one seed: %v %v", a, b)
	}
}

func TestRefine(t *testing.T) {
	r := Refine(rank.Ranking{Tools: []int{7, 8, 9, 3, 4}}, []float32{0.1, 2, 0.1}, 0, 0)
	if !reflect.DeepEqual(r.Tools, []int{8, 7, 9, 3, 4}) {
		t.Errorf("tools %v, want [8 7 9 3 4] (refined top 3 with ties in first-stage order, then the rest)", r.Tools)
	}
	for i := 1; i < len(r.Scores); i++ {
		if r.Scores[i] > r.Scores[i-1] {
			t.Errorf("scores not decreasing: %v", r.Scores)
		}
	}
	// w = 1: the first stage's order; w = 0.5 by hand: z(refiner) = (-1.2247, 0, 1.2247),
	// z(first) = (1.2247, 0, -1.2247) for scores (3, 2, 1) -> all 0: first-stage order (stable);
	// with first scores (3, 2.5, 1): z = (1.0690, 0.2673, -1.3363) -> mixed (-0.0779, 0.1336,
	// -0.0558): 8, 9, 7.
	first := rank.Ranking{Tools: []int{7, 8, 9, 3}, Scores: []float32{3, 2, 1, 0}}
	for _, tc := range []struct {
		w     float64
		first []float32
		want  []int
	}{
		{1, []float32{3, 2, 1, 0}, []int{7, 8, 9, 3}},
		{0, []float32{3, 2, 1, 0}, []int{9, 8, 7, 3}},
		{0.5, []float32{3, 2, 1, 0}, []int{7, 8, 9, 3}},
		{0.5, []float32{3, 2.5, 1, 0}, []int{8, 9, 7, 3}},
	} {
		first.Scores = tc.first
		if got := Refine(first, []float32{1, 2, 3}, tc.w, 0); !reflect.DeepEqual(got.Tools, tc.want) {
			t.Errorf("w %v first %v: %v, want %v", tc.w, tc.first, got.Tools, tc.want)
		}
	}
	if r := Refine(rank.Ranking{Tools: []int{7, 8, 9}}, []float32{1, 2, 3}, 0, 2); !reflect.DeepEqual(r.Tools, []int{9, 8}) || len(r.Scores) != 2 {
		t.Errorf("k = 2: %v", r)
	}
}

// tiny returns a tokenizer, a small refiner config over arch and an initialised store with
// random tool vectors.
func tiny(t *testing.T, arch string, n, tools int, loss, slotPos string) (*tokenize.Tokenizer, *Config, *model.Store) {
	t.Helper()
	vocab, err := tokenize.BuildVocab([]string{"alpha beta gamma delta epsilon zeta eta theta find send get weather mail map"}, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New(map[string]string{"bert": "bert", "deberta": "deberta-v2"}[arch], encoder.Sizes{Vocab: tok.VocabSize(), Layers: 2, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Encoder: enc.WithPooler(false), MaxLen: 12, N: n, Tools: tools, Dim: 6, LossKind: loss, SlotPositions: slotPos,
		Candidates: candidates.Source{Kind: "bm25"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(3))
	if err := cfg.Encoder.Init(store.RootScope(), 3); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	vecs := make([][]float32, tools)
	for i := range vecs {
		vecs[i] = make([]float32, cfg.Dim)
		for j := range vecs[i] {
			vecs[i][j] = float32(rng.NormFloat64())
		}
	}
	if err := cfg.SetVectors(store, vecs); err != nil {
		t.Fatal(err)
	}
	return tok, cfg, store
}

// TestPadding: the scores of a query's real slots do not depend on padded slots (whatever
// tool they point at), on the batch's query padding or on the other queries of the batch.
func TestPadding(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"bert", "deberta"} {
		for _, pos := range []string{SlotPosNone, SlotPosLearned} {
			tok, cfg, store := tiny(t, arch, 5, 9, LossSoftmax, pos)
			m := &Model{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 8}
			ctx := context.Background()
			alone, err := m.Scores(ctx, []string{"find weather"}, [][]int{{3, 1, 4}})
			if err != nil {
				t.Fatal(err)
			}
			batched, err := m.Scores(ctx, []string{"send mail alpha beta gamma delta epsilon", "find weather"}, [][]int{{0, 1, 2, 3, 4, 5, 6}, {3, 1, 4}})
			if err != nil {
				t.Fatal(err)
			}
			if len(alone[0]) != 3 || len(batched[0]) != 5 || len(batched[1]) != 3 {
				t.Fatalf("%s/%s: score lengths %d %d %d", arch, pos, len(alone[0]), len(batched[0]), len(batched[1]))
			}
			for i := range alone[0] {
				if d := math.Abs(float64(alone[0][i] - batched[1][i])); d > 1e-5 {
					t.Errorf("%s/%s: slot %d: %v alone, %v in a padded batch", arch, pos, i, alone[0][i], batched[1][i])
				}
			}
			// Padded slots pointing at other tools: same scores.
			ids, _, mask := encoder.Tensors(tok.Pad([][]int32{tok.Single("find weather", cfg.MaxLen)}, nil, cfg.MaxLen))
			cand := tensors.FromFlatDataAndDimensions([]int32{3, 1, 4, 8, 7}, 1, 5)
			slots := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 0, 0}, 1, 5)
			exec, err := m.getExec()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Call1(ids, mask, cand, slots)
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float32](out)
			for i := range 3 {
				if d := math.Abs(float64(got[i] - alone[0][i])); d > 1e-5 {
					t.Errorf("%s/%s: slot %d changed with padded slots pointing at other tools: %v vs %v", arch, pos, i, got[i], alone[0][i])
				}
			}
			if pos == SlotPosNone && arch == "bert" {
				// Without slot positions a BERT refiner is permutation-equivariant over slots.
				perm, err := m.Scores(ctx, []string{"find weather"}, [][]int{{4, 3, 1}})
				if err != nil {
					t.Fatal(err)
				}
				for i, j := range []int{2, 0, 1} {
					if d := math.Abs(float64(perm[0][i] - alone[0][j])); d > 1e-5 {
						t.Errorf("bert/none: permuted slot %d: %v, want %v", i, perm[0][i], alone[0][j])
					}
				}
			}
		}
	}
}

// TestLossKinds checks each loss on fixed logits against hand-computed values.
func TestLossKinds(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	logits := [][]float64{{1, 2, 3, 9}, {0, 1, -1, 0}}
	labels := [][]float64{{1, 0, 1, 0}, {0, 1, 0, 0}}
	slots := [][]float64{{1, 1, 1, 0}, {1, 1, 1, 1}}
	lse0 := math.Log(math.E + math.Exp(2) + math.Exp(3))
	lse1 := math.Log(1 + math.E + math.Exp(-1) + 1)
	sp := func(x float64) float64 { return math.Log1p(math.Exp(x)) }
	bce := (sp(1) - 1 + sp(2) + sp(3) - 3 + sp(0) + sp(1) - 1 + sp(-1) + sp(0)) / 7
	for _, tc := range []struct {
		loss string
		want float64
	}{
		{LossSoftmax, ((2*lse0 - 4) + (lse1 - 1)) / 2},
		{LossSoftmaxNorm, ((2*lse0-4)/2 + (lse1 - 1)) / 2},
		{LossBCE, bce},
	} {
		cfg := &Config{LossKind: tc.loss}
		e, err := NewExec(be, func(g *Graph) *Node {
			return cfg.loss(Const(g, logits), Const(g, labels), Const(g, slots))
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call1()
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Value().(float64); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.loss, got, tc.want)
		}
	}
}

// TestGradient checks autodiff through the slots (projection, slot positions, attention
// over query and slots, scorer) against finite differences, in float64.
func TestGradient(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"bert", "deberta"} {
		t.Run(arch, func(t *testing.T) {
			tok, cfg, _ := tiny(t, arch, 4, 6, LossSoftmax, SlotPosLearned)
			cfg.Encoder = cfg.Encoder.WithDType(dtypes.Float64)
			store := model.NewStore()
			if err := cfg.Encoder.Init(store.RootScope(), 5); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			vecs := make([][]float32, cfg.Tools)
			for i := range vecs {
				vecs[i] = make([]float32, cfg.Dim)
				for j := range vecs[i] {
					vecs[i][j] = float32(rng.NormFloat64())
				}
			}
			if err := cfg.SetVectors(store, vecs); err != nil {
				t.Fatal(err)
			}
			ids, _, mask := encoder.Tensors(tok.Pad([][]int32{tok.Single("find weather map", 12), tok.Single("send mail", 12)}, nil, 12))
			cand := tensors.FromFlatDataAndDimensions([]int32{0, 2, 5, 1, 3, 4, 0, 0}, 2, 4)
			slots := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 0, 0}, 2, 4)
			labels := tensors.FromFlatDataAndDimensions([]float64{0, 1, 1, 0, 1, 0, 0, 0}, 2, 4)
			checked := []string{"/slot_proj/weight", "/slot_positions/weight", "/scorer/weight", "/embeddings/word_embeddings/weight"}
			loss := func(s *model.Scope, ids, mask, cand, slots, labels *Node) *Node {
				return cfg.Loss(s, []*Node{ids, mask, cand, slots, labels})
			}
			// Create the lazily initialised head variables.
			if _, err := model.NewExec(be, store, loss); err != nil {
				t.Fatal(err)
			}
			e0, _ := model.NewExec(be, store, loss)
			if _, err := e0.Call1(ids, mask, cand, slots, labels); err != nil {
				t.Fatal(err)
			}
			gradExec, err := model.NewExec(be, store, func(s *model.Scope, ids, mask, cand, slots, labels *Node) []*Node {
				l := loss(s, ids, mask, cand, slots, labels)
				var vs []*Node
				for _, p := range checked {
					v := store.GetVariable(p)
					if v == nil {
						t.Fatalf("no variable %s", p)
					}
					vs = append(vs, v.NodeValue(l.Graph()))
				}
				return Gradient(l, vs...)
			})
			if err != nil {
				t.Fatal(err)
			}
			grads, err := gradExec.Call(ids, mask, cand, slots, labels)
			if err != nil {
				t.Fatal(err)
			}
			eval := func() float64 {
				e, err := model.NewExec(be, store, loss)
				if err != nil {
					t.Fatal(err)
				}
				v, err := e.Call1(ids, mask, cand, slots, labels)
				if err != nil {
					t.Fatal(err)
				}
				return v.Value().(float64)
			}
			const eps = 1e-6
			worst := 0.0
			for vi, p := range checked {
				v := store.GetVariable(p)
				orig := tensors.MustCopyFlatData[float64](v.MustValue())
				g := tensors.MustCopyFlatData[float64](grads[vi])
				for range 3 {
					i := rng.IntN(len(g))
					set := func(x float64) {
						c := slices.Clone(orig)
						c[i] = x
						v.MustSetValue(tensors.FromFlatDataAndDimensions(c, v.Shape().Dimensions...))
					}
					set(orig[i] + eps)
					up := eval()
					set(orig[i] - eps)
					down := eval()
					set(orig[i])
					num := (up - down) / (2 * eps)
					err := math.Abs(num-g[i]) / max(1, math.Abs(num))
					worst = max(worst, err)
					if err > 1e-5 {
						t.Errorf("%s[%d]: autodiff %v, finite differences %v", p, i, g[i], num)
					}
				}
			}
			t.Logf("worst relative gradient error %.2g", worst)
		})
	}
}

// TestTrainOverHandBuiltFirstStage: a first stage that always ranks the right tool third.
// The query names its tool's word, the slots carry the tools' (random) vectors, so the
// refiner must learn to match query words to tool vectors; trained, it must put the right
// tool first for dev queries, where the first stage has R@1 = 0.
func TestTrainOverHandBuiltFirstStage(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	d := &data.Dataset{Name: "hand"}
	for i, w := range words {
		d.Tools = append(d.Tools, data.Tool{ID: fmt.Sprint("t", i), Text: w})
	}
	tr := &data.Split{Name: "train", Relevant: map[int][]int{}}
	dev := &data.Split{Name: "dev", Relevant: map[int][]int{}}
	lists := candidates.Lists{}
	fillers := []string{"find", "send", "get", "map"}
	for q := range 96 {
		tool := q % len(words)
		d.Queries = append(d.Queries, data.Query{ID: fmt.Sprint("q", q), Text: fillers[q%4] + " " + words[tool]})
		s := tr
		if q >= 72 {
			s = dev
		}
		s.Queries = append(s.Queries, q)
		s.Relevant[q] = []int{tool}
		// First stage: two wrong tools, then the right one, then the rest.
		l := []int{(tool + 1) % 6, (tool + 2) % 6, tool, (tool + 3) % 6, (tool + 4) % 6, (tool + 5) % 6}
		lists[q] = rank.Ranking{Tools: l, Scores: []float32{6, 5, 4, 3, 2, 1}}
	}
	tok, cfg, store := tiny(t, "bert", 4, len(words), LossSoftmax, SlotPosNone)
	task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: be, BatchSize: 8, Seed: 1, Lists: lists,
		Missing: MissingInsert, Order: OrderShuffle}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	before, err := task.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	opt := train.DefaultOptimizer()
	opt.LR = 3e-3
	sum, err := train.Run(be, store, task, train.Config{RunDir: t.TempDir(), Seed: 1, Epochs: 40, Metric: "recall@1", Optimizer: opt, Quiet: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 16}
	after, err := metrics.EvaluateDev(context.Background(), d, dev, m.Lists(lists), []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dev R@1 %.1f before training, %.1f after (%d steps)", before["recall@1"], after["recall@1"], sum.Steps)
	if after["recall@1"] < 90 {
		t.Errorf("dev R@1 %.1f after training, want >= 90 (the first stage has 0)", after["recall@1"])
	}
	// The first-stage weight chosen on dev: the first stage alone (w = 1) has R@1 0 here.
	w, vals, err := m.ChooseWeight(context.Background(), d, dev, lists, "recall@1")
	if err != nil {
		t.Fatal(err)
	}
	if vals[len(vals)-1] != 0 || w == 1 || vals[0] < 90 {
		t.Errorf("ChooseWeight: w %v, dev R@1 by weight %v (want 0 at w = 1, >= 90 at w = 0)", w, vals)
	}
	// First-stage order below the refined top N: tools 4 and 5 of each list stay in place.
	rk, err := m.Lists(lists).RankQueries(context.Background(), []rank.Query{{Index: 80, Text: d.Queries[80].Text}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rk[0].Tools[4:], lists[80].Tools[4:]) {
		t.Errorf("tail %v, want the first stage's %v", rk[0].Tools[4:], lists[80].Tools[4:])
	}
}
