package biencoder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

func TestCheckMarker(t *testing.T) {
	for _, c := range []struct {
		format string
		ok     bool
	}{
		{"Iteration %d: ", true}, {"[%d] ", true}, {"100%% sure, round %d: ", true},
		{"", false}, {"Iteration: ", false}, {"%d and %d", false}, {"%s: ", false}, {"round %d %", false}, {"%v", false},
	} {
		if err := CheckMarker(c.format); (err == nil) != c.ok {
			t.Errorf("CheckMarker(%q) = %v, want ok %v", c.format, err, c.ok)
		}
	}
	if got := Mark("Iteration %d: ", 2, "book a flight"); got != "Iteration 2: book a flight" {
		t.Errorf("Mark: %q", got)
	}
	if got := Mark("", 2, "book a flight"); got != "book a flight" {
		t.Errorf("Mark without a marker: %q", got)
	}
	c := *fbTask(t, true, true, 1, 1).Cfg
	c.Marker = "Iteration %s"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "marker") {
		t.Errorf("config with a bad marker: %v", err)
	}
}

// fbWords are the words of the tiny feedback data: tool i is its row.
var fbWords = [][]string{
	{"weather", "rain", "forecast"},
	{"email", "send", "inbox"},
	{"flight", "book", "airport"},
	{"music", "play", "song"},
	{"recipe", "cook", "dinner"},
	{"news", "read", "headline"},
}

// fbTask returns a prepared feedback task over 6 tools and 12 training queries (query i is
// relevant to tool i%6, and query 0 also to tool 1) whose loops stop at s = i%3 (iterations
// 0..s), with T = 2. Query i's top K at iteration t is [i%6, (i+t+1)%6, (i+t+2)%6], except
// that query 1's at iteration 0 holds its relevant tool only and query 2's at iteration 1
// holds one incorrect tool (5).
func fbTask(t *testing.T, joint, hard bool, alpha float64, seed uint64) *FeedbackTask {
	t.Helper()
	d := &data.Dataset{Name: "fb", QueryIndex: map[string]int{}, ToolIndex: map[string]int{}, Splits: map[string]*data.Split{}}
	var vocabTexts []string
	for i, w := range fbWords {
		id := fmt.Sprintf("t%d", i)
		d.ToolIndex[id] = i
		d.Tools = append(d.Tools, data.Tool{ID: id, Text: strings.Join(w, " ")})
		vocabTexts = append(vocabTexts, strings.Join(w, " "))
	}
	vocabTexts = append(vocabTexts, "iteration 0 1 2 3 please now also then more :")
	tr := &data.Split{Name: "train", Relevant: map[int][]int{}}
	loops := map[int]FeedbackLoop{}
	for i := range 12 {
		tool := i % 6
		id := fmt.Sprintf("q%d", i)
		d.QueryIndex[id] = i
		text := fbWords[tool][i%3] + " please"
		d.Queries = append(d.Queries, data.Query{ID: id, Text: text})
		tr.Queries, tr.Relevant[i] = append(tr.Queries, i), []int{tool}
		if i == 0 {
			tr.Relevant[i] = []int{0, 1}
		}
		var lp FeedbackLoop
		for it := 0; it <= i%3; it++ {
			lp.Instructions = append(lp.Instructions, text+strings.Repeat(" "+fbWords[tool][(i+it)%3], it))
			ret := []int{tool, (i + it + 1) % 6, (i + it + 2) % 6}
			switch {
			case i == 1 && it == 0:
				ret = []int{tool}
			case i == 2 && it == 1:
				ret = []int{tool, 5}
			}
			lp.Retrieved = append(lp.Retrieved, ret)
		}
		loops[i] = lp
	}
	d.Splits["train"] = tr
	vocab, err := tokenize.BuildVocab(vocabTexts, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 32})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &FeedbackTask{
		Cfg: &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 24, ToolMaxLen: 8, Similarity: "cosine",
			Temperature: 0.1, Symmetric: true, Marker: DefaultMarker},
		Data: d, Train: tr, Dev: tr, Tok: tok, Backend: bk, BatchSize: 4, Seed: seed,
		Loops: loops, Iterations: 2, Alpha: alpha, Joint: joint, HardNegatives: hard,
	}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

// int32Rows returns the rows of an [N, S] int32 tensor.
func int32Rows(x *tensors.Tensor) [][]int32 {
	dims := x.Shape().Dimensions
	flat := tensors.MustCopyFlatData[int32](x)
	out := make([][]int32, dims[0])
	for i := range out {
		out[i] = flat[i*dims[1] : (i+1)*dims[1]]
	}
	return out
}

// TestFeedbackBatch checks the batches: every example brings its query's instructions of
// iterations 0..T marked with their iteration (a stopped loop repeats its last one, marked
// with its own iteration), one hard negative per instruction drawn from the incorrect tools
// of that instruction's recorded top K only (a random non-relevant tool when there is none),
// masks of [R, B, 2B]; without joint training the last instruction only, without hard
// negatives none.
func TestFeedbackBatch(t *testing.T) {
	for _, c := range []struct {
		name        string
		joint, hard bool
		rows        int
	}{
		{"joint, hard negatives", true, true, 3},
		{"last iteration only", false, true, 1},
		{"no hard negatives", true, false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := fbTask(t, c.joint, c.hard, 1, 1)
			if task.Rows() != c.rows {
				t.Fatalf("rows %d, want %d", task.Rows(), c.rows)
			}
			if c.hard && task.NoIncorrect() != 1 {
				t.Errorf("%d instructions without an incorrect tool in their top K, want 1 (query q1 at iteration 0)", task.NoIncorrect())
			}
			drawn := map[[2]int]map[int]bool{} // (query, iteration) -> negatives drawn
			for epoch := range 8 {
				for i := range task.Batches(epoch) {
					b := task.batches(epoch)[i]
					in, n, err := task.Batch(epoch, i)
					if err != nil {
						t.Fatal(err)
					}
					if want := map[bool]int{true: 7, false: 5}[c.hard]; len(in) != want || n != len(b) {
						t.Fatalf("%d inputs for %d examples, want %d for %d", len(in), n, want, len(b))
					}
					// The instructions, marked.
					var want [][]int32
					for r := range c.rows {
						for _, p := range b {
							lp := task.Loops[p.Query]
							it := min(r, len(lp.Instructions)-1)
							if !c.joint {
								it = len(lp.Instructions) - 1
							}
							want = append(want, task.Tok.Single(fmt.Sprintf("Iteration %d: ", it)+lp.Instructions[it], task.Cfg.QueryMaxLen))
						}
					}
					wantIDs := task.Tok.Pad(want, nil, task.Cfg.QueryMaxLen).IDs
					got := int32Rows(in[0])
					if len(got) != len(wantIDs) {
						t.Fatalf("%d query rows, want %d", len(got), len(wantIDs))
					}
					for j := range got {
						if !slices.Equal(got[j], wantIDs[j]) {
							t.Fatalf("epoch %d batch %d row %d: ids %v, want the marked instruction %v", epoch, i, j, got[j], wantIDs[j])
						}
					}
					if dims := in[4].Shape().Dimensions; !slices.Equal(dims, []int{c.rows, n, n + map[bool]int{true: n, false: 0}[c.hard]}) {
						t.Fatalf("mask %v", dims)
					}
					if !c.hard {
						continue
					}
					// The negatives: rows r·B + j, decoded by their token ids.
					negs := int32Rows(in[5])
					if len(negs) != c.rows*n {
						t.Fatalf("%d negatives for %d instructions", len(negs), c.rows*n)
					}
					for r := range c.rows {
						for j, p := range b {
							tool := -1
							for ti, seq := range task.tools {
								if slices.Equal(negs[r*n+j][:len(seq)], seq) {
									tool = ti
								}
							}
							lp := task.Loops[p.Query]
							it := task.iters[p.Query][r]
							if slices.Contains(task.Train.Relevant[p.Query], tool) || tool < 0 {
								t.Fatalf("query %d row %d: negative %d is relevant (or unknown)", p.Query, r, tool)
							}
							if task.NoIncorrect() > 0 && p.Query == 1 && it == 0 {
								continue // its top K is all relevant: a random non-relevant tool
							}
							if !slices.Contains(lp.Retrieved[it], tool) {
								t.Fatalf("query %d iteration %d: negative %d not in its top K %v", p.Query, it, tool, lp.Retrieved[it])
							}
							k := [2]int{p.Query, it}
							if drawn[k] == nil {
								drawn[k] = map[int]bool{}
							}
							drawn[k][tool] = true
						}
					}
				}
			}
			if !c.hard {
				return
			}
			if got := drawn[[2]int{2, 1}]; c.joint && (len(got) != 1 || !got[5]) {
				t.Errorf("query 2 iteration 1 (one incorrect tool, 5): drew %v", got)
			}
			if got := drawn[[2]int{3, 0}]; len(got) != 2 {
				t.Errorf("query 3 iteration 0 (two incorrect tools): drew %v over 8 epochs, want both", got)
			}
		})
	}
}

// TestFeedbackLoss: the joint loss of a batch is Σ_t α^t times the bi-encoder's InfoNCE of
// the batch's instructions of iteration t (computed by Config.Loss on that iteration's rows
// alone), and without joint training the InfoNCE of the last instructions.
func TestFeedbackLoss(t *testing.T) {
	for _, c := range []struct {
		joint bool
		alpha float64
	}{{true, 0.5}, {true, 1}, {false, 0.5}} {
		task := fbTask(t, c.joint, true, c.alpha, 1)
		store := model.NewStore()
		store.SetParam(model.ParamInitialSeed, int64(3))
		in, nb, err := task.Batch(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		args := func(ts []*tensors.Tensor) []any {
			out := make([]any, len(ts))
			for i, x := range ts {
				out[i] = x
			}
			return out
		}
		joint, err := model.NewExec(task.Backend, store, func(s *model.Scope, x []*Node) *Node { return task.Loss(s, x) })
		if err != nil {
			t.Fatal(err)
		}
		got, err := joint.Call1(args(in)...)
		if err != nil {
			t.Fatal(err)
		}
		single, err := model.NewExec(task.Backend, store, func(s *model.Scope, x []*Node) *Node { return task.Cfg.Loss(s, x) })
		if err != nil {
			t.Fatal(err)
		}
		qRows, nRows := int32Rows(in[0]), int32Rows(in[5])
		qMask, nMask := int32Rows(in[1]), int32Rows(in[6])
		mask := tensors.MustCopyFlatData[bool](in[4])
		w := len(mask) / task.Rows() / nb
		want := 0.0
		var parts []float64
		for r := range task.Rows() {
			sl := func(rows [][]int32) *tensors.Tensor {
				return tensors.FromFlatDataAndDimensions(slices.Concat(rows[r*nb:(r+1)*nb]...), nb, len(rows[0]))
			}
			ir := []*tensors.Tensor{sl(qRows), sl(qMask), in[2], in[3],
				tensors.FromFlatDataAndDimensions(mask[r*nb*w:(r+1)*nb*w], nb, w), sl(nRows), sl(nMask)}
			l, err := single.Call1(args(ir)...)
			if err != nil {
				t.Fatal(err)
			}
			v := float64(tensors.ToScalar[float32](l))
			parts = append(parts, v)
			want += math.Pow(c.alpha, float64(r)) * v
		}
		if !c.joint {
			want = parts[0]
		}
		g := float64(tensors.ToScalar[float32](got))
		t.Logf("joint %v α %v: loss %.5f, per iteration %.5f", c.joint, c.alpha, g, parts)
		if math.Abs(g-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("joint %v α %v: loss %.6f, Σ α^t L(q^t) = %.6f", c.joint, c.alpha, g, want)
		}
		if c.joint && len(parts) == 3 && math.Abs(parts[0]-parts[1]) < 1e-6 && math.Abs(parts[1]-parts[2]) < 1e-6 {
			t.Error("the iterations' losses are equal: the test cannot tell their weights apart")
		}
	}
}

// TestFeedbackResume: feedback training stopped after k steps and resumed ends with the
// uninterrupted run's weights, bit for bit, on the go backend; the loss falls and round 0's
// dev metrics (marked queries) are recorded.
func TestFeedbackResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		// Clipping on (the default clip norm): see TestQueryTaskTrain.
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 4, Metric: "recall@1", KeepLast: 2, Optimizer: o, Quiet: true}
	}
	store := func() *model.Store {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s
	}
	task := fbTask(t, true, true, 0.5, 1)
	per := task.Batches(0)
	ref := filepath.Join(t.TempDir(), "ref")
	refStore := store()
	sum, err := train.Run(task.Backend, refStore, task, cfg(ref), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sum.Final["recall@1"]; !ok {
		t.Errorf("final dev metrics %v: no recall@1", sum.Final)
	}
	want := weights(refStore)
	for _, k := range []int{per + 1, 3*per - 1} { // between checkpoints (one per epoch)
		dir := filepath.Join(t.TempDir(), "run")
		c := cfg(dir)
		c.StopAfter = k
		if _, err := train.Run(task.Backend, store(), fbTask(t, true, true, 0.5, 1), c, false); !errors.Is(err, train.ErrStopped) {
			t.Fatalf("stop after %d: %v", k, err)
		}
		c.StopAfter = 0
		resumed := model.NewStore()
		if _, err := train.Run(task.Backend, resumed, fbTask(t, true, true, 0.5, 1), c, true); err != nil {
			t.Fatalf("resume after %d: %v", k, err)
		}
		got := weights(resumed)
		if len(got) != len(want) {
			t.Fatalf("resumed store has %d variables, want %d", len(got), len(want))
		}
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Fatalf("stopped after %d steps and resumed: variable %s differs from the uninterrupted run", k, p)
			}
		}
	}
}

// TestMarkedRanker: Marked ranks the marked texts.
func TestMarkedRanker(t *testing.T) {
	var seen []string
	r := Marked{R: rankFunc(func(q []string) { seen = append(seen, q...) }), Marker: "It %d: ", T: 2}
	if _, err := r.Rank(context.Background(), []string{"a", "b"}, 3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"It 2: a", "It 2: b"}) {
		t.Errorf("ranked %q", seen)
	}
}

type rankFunc func([]string)

func (f rankFunc) Rank(_ context.Context, q []string, k int) ([]rank.Ranking, error) {
	f(q)
	return make([]rank.Ranking, len(q)), nil
}
