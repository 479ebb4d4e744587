package biencoder

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/train"
)

// TestDropWords: each word is dropped with probability p (the rate within 4 standard
// deviations), the kept words keep their order, a text is never emptied, and p = 0 keeps all.
func TestDropWords(t *testing.T) {
	words := strings.Fields(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa ", 5)) // 50 words
	for _, p := range []float64{0, 0.1, 0.3, 0.6} {
		r := rand.New(rand.NewPCG(1, 2))
		kept, total := 0, 0
		for range 2000 {
			w := DropWords(words, p, r)
			if !isSubsequence(w, words) {
				t.Fatalf("p %v: %q is not a subsequence of the text", p, w)
			}
			kept += len(w)
			total += len(words)
		}
		rate := 1 - float64(kept)/float64(total)
		sd := math.Sqrt(p * (1 - p) / float64(total))
		if math.Abs(rate-p) > 4*sd+1e-12 {
			t.Errorf("p %v: dropped %.4f of the words (sd %.4f)", p, rate, sd)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for range 500 {
		w := DropWords([]string{"a", "b", "c"}, 0.99, r)
		if len(w) == 0 {
			t.Fatal("p 0.99: a text lost every word")
		}
		seen[strings.Join(w, " ")] = true
	}
	if !seen["a"] || !seen["b"] || !seen["c"] {
		t.Errorf("p 0.99: the word kept is not drawn among all of them: %v", seen)
	}
	if w := DropWords(nil, 0.5, r); len(w) != 0 {
		t.Errorf("empty text: %q", w)
	}
}

func isSubsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// TestDropRand: the generator depends on (seed, epoch, batch, example) and on nothing else.
func TestDropRand(t *testing.T) {
	draw := func(seed uint64, e, b, x int) uint64 { return dropRand(seed, e, b, x).Uint64() }
	if draw(1, 2, 3, 4) != draw(1, 2, 3, 4) {
		t.Fatal("same (seed, epoch, batch, example): different draws")
	}
	seen := map[uint64]string{}
	for _, k := range [][4]int{{1, 0, 0, 0}, {2, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, 1, 0}, {1, 0, 0, 1}, {1, 1, 2, 3}, {1, 3, 2, 1}, {1, 2, 3, 1}} {
		v := draw(uint64(k[0]), k[1], k[2], k[3])
		if prev, ok := seen[v]; ok {
			t.Errorf("%v and %s draw the same number", k, prev)
		}
		seen[v] = fmt.Sprint(k)
	}
}

// dropTask is padTask with tool dropout p (and a dev split: the first 6 training queries).
func dropTask(t *testing.T, p float64, freeze bool) *Task {
	t.Helper()
	x := padTask(t, "bert", 4, 1)
	x.BatchSize = 3
	x.Reg = Regularization{FreezeEmbeddings: freeze, ToolDropout: p}
	x.Dev = &data.Split{Name: "dev", Queries: x.Train.Queries[:6], Relevant: map[int][]int{}}
	for _, q := range x.Dev.Queries {
		x.Dev.Relevant[q] = x.Train.Relevant[q]
	}
	if err := x.Prepare(); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestToolDropoutBatches: with tool dropout, each tool row of a batch (positives, then hard
// negatives) is the tool's text with its words dropped by dropRand(seed, epoch, batch,
// example), tokenized; two tasks give identical batches; queries and masks are untouched;
// no tool row is empty; about p of the tool tokens go; without dropout the rows are the
// whole texts.
func TestToolDropoutBatches(t *testing.T) {
	const p = 0.5
	plain, drop, again := dropTask(t, 0, false), dropTask(t, p, false), dropTask(t, p, false)
	whole, kept := 0, 0
	for e := range 3 {
		for i := range drop.Batches(e) {
			in0, _, err := plain.Batch(e, i)
			if err != nil {
				t.Fatal(err)
			}
			in, _, err := drop.Batch(e, i)
			if err != nil {
				t.Fatal(err)
			}
			in2, _, _ := again.Batch(e, i)
			for k := range in {
				if !bytes.Equal(tensorBytes(in[k]), tensorBytes(in2[k])) || in[k].Shape().String() != in2[k].Shape().String() {
					t.Fatalf("epoch %d batch %d input %d differs between two tasks: not a pure function of (seed, epoch, batch)", e, i, k)
				}
			}
			for _, k := range []int{0, 1, 4} { // query ids and mask, false-negative mask
				if !bytes.Equal(tensorBytes(in[k]), tensorBytes(in0[k])) {
					t.Fatalf("epoch %d batch %d: input %d changed by tool dropout", e, i, k)
				}
			}
			b := drop.batches(e)[i]
			var tools []int
			for _, pr := range b {
				tools = append(tools, pr.Tool)
			}
			negs := int32Rows(in0[5])
			for j := range b { // the hard negatives are drawn alike: recover them from the plain batch
				tools = append(tools, toolOf(t, plain, negs[j]))
			}
			rows := append(int32Rows(in[2]), int32Rows(in[5])...)
			rows0 := append(int32Rows(in0[2]), int32Rows(in0[5])...)
			for x, tool := range tools {
				w := DropWords(strings.Fields(drop.Data.Tools[tool].Text), p, dropRand(drop.Seed, e, i, x))
				want := drop.Tok.Single(strings.Join(w, " "), drop.Cfg.ToolMaxLen)
				got := trimPad(rows[x])
				if !slices.Equal(got, want) {
					t.Fatalf("epoch %d batch %d example %d (tool %d): row %v, want %v", e, i, x, tool, got, want)
				}
				if len(got) < 3 {
					t.Fatalf("epoch %d batch %d example %d: tool row %v has no word left", e, i, x, got)
				}
				if w0 := trimPad(rows0[x]); !slices.Equal(w0, plain.tools[tool]) {
					t.Fatalf("without dropout: row %v, want the whole text %v", w0, plain.tools[tool])
				}
				whole += len(plain.tools[tool]) - 2
				kept += len(got) - 2
			}
		}
	}
	frac := 1 - float64(kept)/float64(whole)
	t.Logf("tool dropout %v: %.3f of the tool tokens dropped (%d of %d)", p, frac, whole-kept, whole)
	if math.Abs(frac-p) > 0.1 { // tokens, not words (DropWords's rate: TestDropWords); texts of 2-20 words keep one
		t.Errorf("tool dropout %v dropped %.3f of the tool tokens", p, frac)
	}
}

// toolOf returns the tool whose whole text tokenizes to row (padding trimmed).
func toolOf(t *testing.T, x *Task, row []int32) int {
	t.Helper()
	r := trimPad(row)
	for i, s := range x.tools {
		if slices.Equal(s, r) {
			return i
		}
	}
	t.Fatalf("row %v is no tool's text", r)
	return -1
}

// trimPad drops the trailing padding (id 0) of a row.
func trimPad(row []int32) []int32 {
	n := len(row)
	for n > 0 && row[n-1] == 0 {
		n--
	}
	return row[:n]
}

// TestToolDropoutEval: dev evaluation embeds whole tool texts whatever the tool dropout (the
// same metrics as without it). Encoding (Embedder, LoadRun) has no task, hence no dropout.
func TestToolDropoutEval(t *testing.T) {
	plain, drop := dropTask(t, 0, false), dropTask(t, 0.9, false)
	store := model.NewStore()
	if err := plain.Cfg.Encoder.Init(store.RootScope(), 5); err != nil {
		t.Fatal(err)
	}
	m0, err := plain.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := drop.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(m0) == 0 || fmt.Sprint(m0) != fmt.Sprint(m1) {
		t.Errorf("dev metrics without tool dropout %v, with %v", m0, m1)
	}
}

// TestFreezeEmbeddings: after training steps with FreezeEmbeddings (and weight decay), the
// word embedding table of every tower is byte-identical to its initial value, it has no
// optimizer state, and every layer's weights changed; without it the table changes.
func TestFreezeEmbeddings(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	for _, c := range []struct {
		name   string
		arch   string
		shared bool
		freeze bool
	}{
		{"bert", "bert", true, true},
		{"deberta-v2", "deberta-v2", true, true},
		{"bert separate towers", "bert", false, true},
		{"bert not frozen", "bert", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := padTask(t, c.arch, 4, 1)
			x.Cfg.Shared = c.shared
			x.Reg.FreezeEmbeddings = c.freeze
			if err := x.Prepare(); err != nil {
				t.Fatal(err)
			}
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(3))
			for _, tower := range []string{QueryTower, ToolTower} {
				if err := x.Cfg.Encoder.Init(encoder.In(store.RootScope(), x.Cfg.TowerBase(tower)), 7); err != nil {
					t.Fatal(err)
				}
			}
			before := weights(store)
			o := train.DefaultOptimizer()
			o.LR, o.WeightDecay, o.Warmup = 1e-2, 0.1, 0
			cfg := train.Config{RunDir: t.TempDir(), Seed: 1, Epochs: 1, MaxSteps: 3, KeepLast: 1, Optimizer: o, Quiet: true}
			if _, err := train.Run(x.Backend, store, x, cfg, false); err != nil {
				t.Fatal(err)
			}
			after := weights(store)
			var frozen []string
			for _, tower := range []string{QueryTower, ToolTower} {
				v := encoder.Variable(store, x.Cfg.TowerBase(tower), WordEmbeddings)
				if v == nil {
					t.Fatalf("no %s in the %s tower", WordEmbeddings, tower)
				}
				frozen = append(frozen, v.Path())
			}
			if c.shared && frozen[0] != frozen[1] || !c.shared && frozen[0] == frozen[1] {
				t.Fatalf("word embedding tables %v", frozen)
			}
			for _, p := range slices.Compact(frozen) {
				same := bytes.Equal(before[p], after[p])
				switch {
				case c.freeze && !same:
					t.Errorf("%s changed in training", p)
				case !c.freeze && same:
					t.Errorf("not frozen: %s did not change in training (the test cannot tell freezing)", p)
				}
				if _, ok := after["/optimizer/m"+p]; c.freeze == ok {
					t.Errorf("%s: optimizer state %v, frozen %v", p, ok, c.freeze)
				}
			}
			layers := 0
			for p, w := range before {
				if strings.Contains(p, "/encoder/layer/") {
					layers++
					if bytes.Equal(after[p], w) {
						t.Errorf("%s did not change in training", p)
					}
				}
			}
			if layers == 0 {
				t.Fatalf("no layer variables among %d", len(before))
			}
		})
	}
}

// TestRegularizationResume: with frozen word embeddings and tool dropout, a run stopped
// between checkpoints and resumed ends bit-identical to an uninterrupted run (go backend).
func TestRegularizationResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 3, KeepLast: 2, Optimizer: o, Quiet: true}
	}
	store := func() *model.Store {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s
	}
	ref := dropTask(t, 0.3, true)
	refStore := store()
	if _, err := train.Run(ref.Backend, refStore, ref, cfg(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weights(refStore)
	k := ref.Batches(0) + 1 // between checkpoints (one per epoch)
	dir := filepath.Join(t.TempDir(), "run")
	c := cfg(dir)
	c.StopAfter = k
	if _, err := train.Run(ref.Backend, store(), dropTask(t, 0.3, true), c, false); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("stop after %d: %v", k, err)
	}
	c.StopAfter = 0
	resumed := model.NewStore()
	if _, err := train.Run(ref.Backend, resumed, dropTask(t, 0.3, true), c, true); err != nil {
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

// TestFeedbackRegularization: the feedback task drops tool words as Task does (positives by
// example j, the hard negative of row r by B + r·B + j) and freezes the word embeddings.
func TestFeedbackRegularization(t *testing.T) {
	const p = 0.6
	plain := fbTask(t, true, true, 1, 1)
	x := fbTask(t, true, true, 1, 1)
	x.Reg = Regularization{FreezeEmbeddings: true, ToolDropout: p}
	if err := x.Prepare(); err != nil {
		t.Fatal(err)
	}
	changed := false
	for i := range x.Batches(0) {
		in0, _, err := plain.Batch(0, i)
		if err != nil {
			t.Fatal(err)
		}
		in, _, err := x.Batch(0, i)
		if err != nil {
			t.Fatal(err)
		}
		b := x.batches(0)[i]
		nb := len(b)
		rows, rows0 := append(int32Rows(in[2]), int32Rows(in[5])...), append(int32Rows(in0[2]), int32Rows(in0[5])...)
		for n, row0 := range rows0 {
			tool := -1
			for k, s := range plain.tools {
				if slices.Equal(trimPad(row0), s) {
					tool = k
				}
			}
			if tool < 0 {
				t.Fatalf("batch %d row %d is no tool's text", i, n)
			}
			w := DropWords(strings.Fields(x.Data.Tools[tool].Text), p, dropRand(x.Seed, 0, i, n)) // n = nb + r·nb + j for negatives
			want := x.Tok.Single(strings.Join(w, " "), x.Cfg.ToolMaxLen)
			if got := trimPad(rows[n]); !slices.Equal(got, want) {
				t.Fatalf("batch %d row %d (of %d positives): %v, want %v", i, n, nb, got, want)
			}
			changed = changed || !slices.Equal(trimPad(rows[n]), trimPad(row0))
		}
	}
	if !changed {
		t.Error("tool dropout changed no tool row")
	}
	store := model.NewStore()
	if err := x.Cfg.Encoder.Init(store.RootScope(), 2); err != nil {
		t.Fatal(err)
	}
	before := weights(store)
	o := train.DefaultOptimizer()
	o.LR, o.WeightDecay, o.Warmup = 1e-2, 0.1, 0
	cfg := train.Config{RunDir: t.TempDir(), Seed: 1, Epochs: 1, MaxSteps: 2, KeepLast: 1, Optimizer: o, Quiet: true}
	if _, err := train.Run(x.Backend, store, x, cfg, false); err != nil {
		t.Fatal(err)
	}
	after := weights(store)
	pth := encoder.Variable(store, "", WordEmbeddings).Path()
	if !bytes.Equal(before[pth], after[pth]) {
		t.Errorf("feedback training changed the frozen %s", pth)
	}
	if bytes.Equal(before["/encoder/layer/0/output/dense/weight"], after["/encoder/layer/0/output/dense/weight"]) {
		t.Error("feedback training changed no layer weight")
	}
}

func TestRegularizationValidate(t *testing.T) {
	for _, c := range []struct {
		r  Regularization
		ok bool
	}{
		{Regularization{}, true}, {Regularization{ToolDropout: 0.5, FreezeEmbeddings: true}, true},
		{Regularization{ToolDropout: 1}, false}, {Regularization{ToolDropout: -0.1}, false}, {Regularization{ToolDropout: math.NaN()}, false},
	} {
		if err := c.r.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok %v", c.r, err, c.ok)
		}
	}
	x := padTask(t, "bert", 4, 0)
	x.Reg.ToolDropout = 1
	if err := x.Prepare(); err == nil || !strings.Contains(err.Error(), "tool dropout 1") {
		t.Errorf("Prepare with tool dropout 1: %v", err)
	}
}
