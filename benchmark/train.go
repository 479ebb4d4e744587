package benchmark

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// ToolLens-like token lengths ([CLS] and [SEP] included) when the dataset is absent:
// quantiles of ToolLens's 18,770 queries and 464 tool texts under the bert-base-uncased
// WordPiece vocabulary, interpolated linearly.
var (
	lenQuantiles   = []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1}
	queryQuantiles = []float64{8, 16, 21, 31, 45, 58, 87, 144}
	toolQuantiles  = []float64{54, 69, 92, 124, 191, 336, 795, 1051}
)

// LengthSampler draws token lengths.
type LengthSampler func(r *rand.Rand) int

func quantileSampler(q []float64) LengthSampler {
	return func(r *rand.Rand) int {
		u := r.Float64()
		for i := 1; i < len(lenQuantiles); i++ {
			if u <= lenQuantiles[i] {
				f := (u - lenQuantiles[i-1]) / (lenQuantiles[i] - lenQuantiles[i-1])
				return int(q[i-1] + f*(q[i]-q[i-1]) + 0.5)
			}
		}
		return int(q[len(q)-1])
	}
}

func listSampler(l []int) LengthSampler {
	return func(r *rand.Rand) int { return l[r.IntN(len(l))] }
}

// ToolLensLengths returns samplers of query and tool token lengths: the texts of dataDir
// tokenized with vocab when both are readable, else the built-in ToolLens quantiles.
func ToolLensLengths(dataDir, vocab string) (q, t LengthSampler, source string) {
	d, err := data.Load(dataDir)
	var tok *tokenize.Tokenizer
	if err == nil {
		tok, err = tokenize.FromVocab(vocab, true)
	}
	if err != nil || len(d.Queries) == 0 || len(d.Tools) == 0 {
		why := "no queries or tools"
		if err != nil {
			why = err.Error()
		}
		return quantileSampler(queryQuantiles), quantileSampler(toolQuantiles), fmt.Sprintf("built-in ToolLens length quantiles (%s)", why)
	}
	var ql, tl []int
	for _, x := range d.Queries {
		ql = append(ql, len(tok.Encode(x.Text))+2)
	}
	for _, x := range d.Tools {
		tl = append(tl, len(tok.Encode(x.Text))+2)
	}
	return listSampler(ql), listSampler(tl), fmt.Sprintf("%d query and %d tool texts of %s, %s", len(ql), len(tl), dataDir, filepath.Base(vocab))
}

// TrainBatch is one synthetic step: real token lengths per row and the padded lengths.
type TrainBatch struct {
	Q    []int `json:"q"`
	T    []int `json:"t"`
	QPad int   `json:"qpad"`
	TPad int   `json:"tpad"`
}

// TrainSpec is a synthetic bi-encoder training benchmark: the model's sizes, the batch, the
// longest query and tool, the padding, the number of steps, and the samplers of the texts'
// token lengths.
type TrainSpec struct {
	Layers, Hidden, Intermediate, Vocab int
	Batch, QueryLen, ToolLen, Steps     int
	// Warmup is the untimed steps after every shape's compilation (0: 2).
	Warmup                    int
	Pad                       biencoder.Padding
	QueryLengths, ToolLengths LengthSampler
}

// TrainPlan is the batches of a benchmark, the same for every engine: their lengths, their
// inputs (random token ids), and what they hold.
type TrainPlan struct {
	Batches []TrainBatch
	Inputs  [][]*tensors.Tensor
	// RealTokens and PadTokens are the tokens of every step, without and with padding;
	// FLOPs their matmul FLOPs (TrainStepFLOPs); Shapes the distinct padded shapes.
	RealTokens, PadTokens int
	FLOPs                 float64
	Shapes                int
	// Warmup is the untimed steps run after compilation.
	Warmup int
}

// PlanTrain draws the batches of s from r: a pure function of r's state. Each text's length
// is drawn (clamped to [2, its maximum]), each batch padded as s.Pad pads it, then every
// batch's random token ids are drawn.
func PlanTrain(r *rand.Rand, s TrainSpec) *TrainPlan {
	p := &TrainPlan{Warmup: s.Warmup}
	if p.Warmup <= 0 {
		p.Warmup = 2
	}
	shapesSeen := map[[2]int]bool{}
	for range s.Steps {
		var b TrainBatch
		lq, lt := 0, 0
		for range s.Batch {
			q, t := min(max(s.QueryLengths(r), 2), s.QueryLen), min(max(s.ToolLengths(r), 2), s.ToolLen)
			b.Q, b.T = append(b.Q, q), append(b.T, t)
			lq, lt, p.RealTokens = max(lq, q), max(lt, t), p.RealTokens+q+t
		}
		b.QPad, b.TPad = PadLen(s.Pad, lq, s.QueryLen), PadLen(s.Pad, lt, s.ToolLen)
		p.PadTokens += s.Batch * (b.QPad + b.TPad)
		p.FLOPs += TrainStepFLOPs(s.Layers, s.Hidden, s.Intermediate, s.Batch, b.QPad, b.TPad)
		shapesSeen[[2]int{b.QPad, b.TPad}] = true
		p.Batches = append(p.Batches, b)
	}
	p.Shapes = len(shapesSeen)
	p.Inputs = make([][]*tensors.Tensor, len(p.Batches))
	for i, b := range p.Batches {
		p.Inputs[i] = TrainInputs(r, b, s.Batch, s.Vocab)
	}
	return p
}

// TrainTiming is what TimeTrain measured: the untimed compilation of every shape (with the
// warm-up steps) and the timed steps.
type TrainTiming struct {
	Compile, Steps time.Duration
	// CPU is the process's CPU time (user + system, every thread) over the timed steps: on a
	// machine shared with other jobs, a measure of the work that wall time is not.
	CPU time.Duration
}

// TimeTrain times the steps of p on be: cfg's InfoNCE loss and opt's update, every shape
// compiled first (untimed) and p.Warmup steps run, then every batch once, under profile when not nil (a CPU
// profile of the timed steps).
func TimeTrain(be compute.Backend, cfg *biencoder.Config, opt train.Optimizer, p *TrainPlan, profile func(func() error) error) (TrainTiming, error) {
	var tt TrainTiming
	// A tensor is bound to the first backend that uses it: each backend gets its own copies.
	inputs := make([][]any, len(p.Inputs))
	for i, in := range p.Inputs {
		inputs[i] = make([]any, len(in))
		for j, t := range in {
			c, err := t.LocalClone()
			if err != nil {
				return tt, err
			}
			inputs[i][j] = c
		}
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(1))
	exec, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) *Node {
		s.SetTraining(in[0].Graph(), true)
		loss := cfg.Loss(s, in)
		opt.Update(s, loss)
		return loss
	})
	if err != nil {
		return tt, err
	}
	exec.SetMaxCache(max(p.Shapes, DefaultExecMaxCacheSize))
	// Compile every shape once (and warm up), untimed.
	start, compiled := time.Now(), map[[2]int]bool{}
	for i, b := range p.Batches {
		if s := [2]int{b.QPad, b.TPad}; !compiled[s] {
			compiled[s] = true
			if _, err := exec.Call(inputs[i]...); err != nil {
				return tt, err
			}
		}
	}
	tt.Compile = time.Since(start)
	for range p.Warmup {
		if _, err := exec.Call(inputs[0]...); err != nil {
			return tt, err
		}
	}
	if profile == nil {
		profile = func(f func() error) error { return f() }
	}
	err = profile(func() error {
		start, cpu0 := time.Now(), CPUTime()
		for i := range p.Batches {
			out, err := exec.Call(inputs[i]...)
			if err != nil {
				return err
			}
			if _, err := tensors.CopyFlatData[float32](out[0]); err != nil { // wait for the step
				return err
			}
		}
		tt.Steps, tt.CPU = time.Since(start), CPUTime()-cpu0
		return nil
	})
	return tt, err
}

// PadLen is the padded length of a batch whose longest text has n tokens.
func PadLen(p biencoder.Padding, n, maxLen int) int {
	if p == biencoder.PadFixed {
		return maxLen
	}
	return tokenize.Bucket(n, maxLen, tokenize.MultipleBuckets(int(p), maxLen))
}

// TrainInputs returns a step's inputs: random token ids (from 1000 up) over each row's real
// length, padding id 0 and mask 0 after it; no false negatives.
func TrainInputs(r *rand.Rand, b TrainBatch, batch, vocab int) []*tensors.Tensor {
	side := func(lens []int, l int) (*tensors.Tensor, *tensors.Tensor) {
		ids, mask := make([]int32, batch*l), make([]int32, batch*l)
		for i, n := range lens {
			for j := range n {
				ids[i*l+j], mask[i*l+j] = int32(1000+r.IntN(vocab-1000)), 1
			}
		}
		return tensors.FromFlatDataAndDimensions(ids, batch, l), tensors.FromFlatDataAndDimensions(mask, batch, l)
	}
	qi, qm := side(b.Q, b.QPad)
	ti, tm := side(b.T, b.TPad)
	fm := tensors.FromFlatDataAndDimensions(make([]bool, batch*batch), batch, batch)
	return []*tensors.Tensor{qi, qm, ti, tm, fm}
}
