package biencoder

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// padTask returns a prepared query2tool task over texts of varied lengths (3 to ~20 tokens)
// with max lengths well above them, dropout off, the given padding and architecture.
func padTask(t *testing.T, arch string, p Padding, hardNegs int) *Task {
	t.Helper()
	words := strings.Fields("get the weather forecast for a city send an email to someone book flight hotel play music song list files in folder translate text into french")
	text := func(i, n int) string {
		var b []string
		for k := range n {
			b = append(b, words[(i*7+k*3)%len(words)])
		}
		return strings.Join(b, " ")
	}
	d := &data.Dataset{Name: "pad"}
	for i := range 12 {
		d.Tools = append(d.Tools, data.Tool{ID: fmt.Sprintf("t%d", i), Text: text(i, 2+(i*5)%19)})
	}
	tr := &data.Split{Name: "train", Relevant: map[int][]int{}}
	negs := map[int][]int{}
	for i := range 24 {
		d.Queries = append(d.Queries, data.Query{ID: fmt.Sprintf("q%d", i), Text: text(i+3, 1+(i*3)%11)})
		tr.Queries, tr.Relevant[i], negs[i] = append(tr.Queries, i), []int{i % 12}, []int{(i + 5) % 12}
	}
	vocab, err := tokenize.BuildVocab(append(words, strings.Join(words, " ")), 200, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New(arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: 2, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if bc, err = encoder.Override(bc, map[string]any{"hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0}); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{
		Cfg:  &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 48, ToolMaxLen: 64, Similarity: "cosine", Temperature: 0.05},
		Data: d, Train: tr, Tok: tok, Backend: be, BatchSize: 6, Seed: 1, Padding: p,
		HardNegatives: hardNegs, Negatives: negs,
	}
	if hardNegs == 0 {
		task.Negatives = nil
	}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestPadMultiple(t *testing.T) {
	for _, c := range []struct {
		n    int
		want Padding
		err  string
	}{{16, 16, ""}, {1, 1, ""}, {0, PadFixed, ""}, {-1, 0, "-pad-multiple -1: must be >= 0"}} {
		p, err := PadMultiple(c.n)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("PadMultiple(%d): %v, want an error containing %q", c.n, err, c.err)
			}
			continue
		}
		if err != nil || p != c.want {
			t.Errorf("PadMultiple(%d) = %v, %v; want %v", c.n, p, err, c.want)
		}
	}
	tok, err := tokenize.New([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p      Padding
		maxLen int
		want   int
	}{{16, 64, 4}, {16, 40, 3}, {8, 64, 8}, {PadFixed, 64, 1}, {PadTokenizer, 64, 6}, {PadTokenizer, 40, 5}, {PadTokenizer, 512, 12}} {
		if got := c.p.Lengths(tok, c.maxLen); got != c.want {
			t.Errorf("%v.Lengths(%d) = %d, want %d", c.p, c.maxLen, got, c.want)
		}
	}
}

// TestPaddingEmbeddingsEqual: texts padded to their bucket embed as when padded to the max
// length (attention masks and mean pooling ignore padding), for BERT and DeBERTa.
func TestPaddingEmbeddingsEqual(t *testing.T) {
	for _, arch := range []string{"bert", "deberta-v2"} {
		t.Run(arch, func(t *testing.T) {
			task := padTask(t, arch, 8, 0)
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(7))
			for _, tower := range []string{QueryTower, ToolTower} {
				exec, err := model.NewExec(task.Backend, store, func(root *model.Scope, ids, mask *Node) *Node {
					return task.Cfg.Embed(root, tower, ids, mask)
				})
				if err != nil {
					t.Fatal(err)
				}
				seqs, maxLen := [][]int32{}, task.Cfg.QueryMaxLen
				if tower == ToolTower {
					for _, s := range task.tools[:6] {
						seqs = append(seqs, s)
					}
					maxLen = task.Cfg.ToolMaxLen
				} else {
					for q := range 6 {
						seqs = append(seqs, task.queries[q])
					}
				}
				var out [2][]float32
				var lens [2]int
				for i, p := range []Padding{8, PadFixed} {
					ids, mask := p.Pad(task.Tok, seqs, maxLen)
					lens[i] = ids.Shape().Dimensions[1]
					e, err := exec.Call1(ids, mask)
					if err != nil {
						t.Fatal(err)
					}
					out[i] = tensors.MustCopyFlatData[float32](e)
				}
				if lens[0] >= lens[1] {
					t.Fatalf("%s: bucketed length %d, fixed %d: the test pads nothing less", tower, lens[0], lens[1])
				}
				for j := range out[0] {
					if d := math.Abs(float64(out[0][j] - out[1][j])); d > 1e-5 {
						t.Fatalf("%s: padded to %d vs %d: embedding value %d differs by %g", tower, lens[0], lens[1], j, d)
					}
				}
			}
		})
	}
}

// stepExec builds a training step of task on be over the variables of store (training mode,
// AdamW at lr 1e-3, constant over steps steps); the step returns the loss and the gradient
// norm (in the loss's dtype).
func stepExec(t *testing.T, be compute.Backend, task *Task, store *model.Store, steps int) *model.Exec {
	t.Helper()
	opt := train.DefaultOptimizer()
	opt.LR, opt.Schedule, opt.TotalSteps = 1e-3, "constant", steps
	exec, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) []*Node {
		s.SetTraining(in[0].Graph(), true)
		l := task.Loss(s, in)
		_, n := opt.Update(s, l)
		return []*Node{l, ConvertDType(n, l.DType())}
	})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// seededStore is a new store whose variables are initialised from seed.
func seededStore(seed int64) *model.Store {
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, seed)
	return store
}

// firstBatch is task's batch 0 of epoch 0.
func firstBatch(t *testing.T, task *Task) []*tensors.Tensor {
	t.Helper()
	in, _, err := task.Batch(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// argsOf is in as the arguments of an exec.
func argsOf(in []*tensors.Tensor) []any {
	args := make([]any, len(in))
	for k, x := range in {
		args[k] = x
	}
	return args
}

// TestPaddingLossEqual: a training step (training mode, hard negatives) on the same batch
// padded to buckets and to the max length has the same loss and gradient norm within 1e-5.
func TestPaddingLossEqual(t *testing.T) {
	for _, arch := range []string{"bert", "deberta-v2"} {
		t.Run(arch, func(t *testing.T) {
			var loss, norm [2]float64
			var shapes [2]string
			for i, p := range []Padding{8, PadFixed} {
				task := padTask(t, arch, p, 1)
				exec := stepExec(t, task.Backend, task, seededStore(3), 10)
				in := firstBatch(t, task)
				for k, x := range in {
					if k != 4 { // ids and masks: the false-negative mask has no length
						shapes[i] += x.Shape().String() + " "
					}
				}
				out, err := exec.Call(argsOf(in)...)
				if err != nil {
					t.Fatal(err)
				}
				loss[i], norm[i] = float64(tensors.ToScalar[float32](out[0])), float64(tensors.ToScalar[float32](out[1]))
			}
			if shapes[0] == shapes[1] {
				t.Fatalf("both paddings gave shapes %s: the test pads nothing less", shapes[0])
			}
			t.Logf("bucketed %s: loss %.6f grad norm %.6f; fixed %s: loss %.6f grad norm %.6f", shapes[0], loss[0], norm[0], shapes[1], loss[1], norm[1])
			if math.Abs(loss[0]-loss[1]) > 1e-5 || math.Abs(norm[0]-norm[1]) > 1e-5*math.Max(1, norm[1]) {
				t.Errorf("loss %.7f vs %.7f, gradient norm %.7f vs %.7f", loss[0], loss[1], norm[0], norm[1])
			}
		})
	}
}

// TestPaddingResume: with batches padded to multiples of 8 (several shapes compile), a run
// stopped after k steps and resumed ends bit-identical to an uninterrupted run on the go
// backend; batches are a pure function of (seed, epoch, batch).
func TestPaddingResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task := func() *Task {
		x := padTask(t, "bert", 4, 1)
		x.BatchSize = 3
		return x
	}
	ref := task()
	seen := map[string]bool{}
	for i := range ref.Batches(0) {
		in, _, err := ref.Batch(0, i)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := task().Batch(0, i)
		for k := range in {
			if !bytes.Equal(tensorBytes(in[k]), tensorBytes(again[k])) || in[k].Shape().String() != again[k].Shape().String() {
				t.Fatalf("batch %d input %d differs between two tasks: not a pure function of (seed, epoch, batch)", i, k)
			}
		}
		seen[in[0].Shape().String()+in[2].Shape().String()+in[5].Shape().String()] = true
	}
	if len(seen) < 2 {
		t.Fatalf("epoch 0's batches have %d shape(s): the test compiles no second shape", len(seen))
	}
	t.Logf("epoch 0: %d batches in %d shapes", ref.Batches(0), len(seen))
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
	refStore := store()
	if _, err := train.Run(ref.Backend, refStore, ref, cfg(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weights(refStore)
	per := ref.Batches(0)
	for _, k := range []int{per + 1, 2*per - 1} { // between checkpoints (one per epoch)
		dir := filepath.Join(t.TempDir(), "run")
		c := cfg(dir)
		c.StopAfter = k
		if _, err := train.Run(ref.Backend, store(), task(), c, false); !errors.Is(err, train.ErrStopped) {
			t.Fatalf("stop after %d: %v", k, err)
		}
		c.StopAfter = 0
		resumed := model.NewStore()
		if _, err := train.Run(ref.Backend, resumed, task(), c, true); err != nil {
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

// TestMaxShapes: the trainer's executable cache bound covers every shape the batches take.
func TestMaxShapes(t *testing.T) {
	task := padTask(t, "bert", 8, 1)
	seen := map[string]bool{}
	for e := range 3 {
		for i := range task.Batches(e) {
			in, _, err := task.Batch(e, i)
			if err != nil {
				t.Fatal(err)
			}
			var k string
			for _, x := range in {
				k += x.Shape().String()
			}
			seen[k] = true
		}
	}
	// 2 batch sizes x 6 query lengths (8..48) x 8 tool lengths x 8 negative lengths.
	if n := task.MaxShapes(); n != 2*6*8*8 || len(seen) > n {
		t.Errorf("MaxShapes %d, %d shapes seen", n, len(seen))
	}
}

func tensorBytes(x *tensors.Tensor) []byte {
	var b []byte
	x.ConstBytes(func(v []byte) { b = append(b, v...) })
	return b
}
