package pretrain

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// MaxSourceTokens caps the tokens of a text that windows and crops are drawn from.
const MaxSourceTokens = 512

// Streams of the random generators (xored into the seed).
const (
	orderStream = 0x7072656f72646572 // epoch order
	batchStream = 0x7072656261746368 // masks and views of a training batch
	devStream   = 0x7072656465760000 // masks and views of the dev batches (fixed)
)

// Task pre-trains an encoder on a corpus (it implements train.Task). Each epoch visits the
// training texts in a seeded random order, in batches of BatchSize (the remainder waits for
// another epoch's order); a batch's masks, windows and views are drawn from a generator
// seeded with (Seed, epoch, batch), so a batch is a pure function of them. Every evaluation
// scores the same dev batches (masks and views drawn once from Seed).
type Task struct {
	Cfg       *Config
	Tok       *tokenize.Tokenizer
	Backend   compute.Backend
	Train     []Text
	Dev       []Text
	BatchSize int
	Seed      uint64
	// ExtraFiles are stored with every checkpoint.
	ExtraFiles map[string][]byte

	sp         Specials
	train, dev []prepared
	order      map[int][]int
}

// prepared is a tokenized text: its tokens (no special token, at most MaxSourceTokens) and,
// for a tool with fields, its name and description (at most MaxLen-2 tokens).
type prepared struct {
	toks, name, desc []int32
}

// Prepare tokenizes the texts once and checks the configuration.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("pretrain: %w", err)
	}
	t.sp = SpecialsOf(t.Tok)
	if t.Cfg.MLM && t.sp.Mask < 0 {
		return fmt.Errorf("pretrain: the tokenizer has no %s token: the MLM objective needs one", tokenize.MASK)
	}
	if t.BatchSize < 2 {
		return fmt.Errorf("pretrain: batch size %d: in-batch negatives need >= 2", t.BatchSize)
	}
	if len(t.Train) < t.BatchSize {
		return fmt.Errorf("pretrain: a corpus of %d texts does not fill one batch of %d", len(t.Train), t.BatchSize)
	}
	if len(t.Dev) < 2 {
		return fmt.Errorf("pretrain: %d dev texts: need >= 2", len(t.Dev))
	}
	t.train, t.dev = t.prepare(t.Train), t.prepare(t.Dev)
	t.order = map[int][]int{}
	return nil
}

func (t *Task) prepare(texts []Text) []prepared {
	out := make([]prepared, len(texts))
	limit := t.Cfg.MaxLen - 2
	for i, x := range texts {
		p := prepared{toks: t.Tok.Encode(x.Text)}
		if len(p.toks) > MaxSourceTokens {
			p.toks = p.toks[:MaxSourceTokens]
		}
		if x.Name != "" && x.Description != "" {
			p.name, p.desc = t.Tok.Encode(x.Name), t.Tok.Encode(x.Description)
			if len(p.name) > 0 && len(p.desc) > 0 {
				p.name, p.desc = p.name[:min(len(p.name), limit)], p.desc[:min(len(p.desc), limit)]
			} else {
				p.name, p.desc = nil, nil
			}
		}
		out[i] = p
	}
	return out
}

// Batches implements train.Task.
func (t *Task) Batches(int) int { return len(t.train) / t.BatchSize }

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node { return t.Cfg.Loss(s, in) }

// Files implements train.Task.
func (t *Task) Files() (map[string][]byte, error) { return t.ExtraFiles, nil }

// epochOrder returns the seeded order of the training texts in epoch.
func (t *Task) epochOrder(epoch int) []int {
	if o, ok := t.order[epoch]; ok {
		return o
	}
	o := rand.New(rand.NewPCG(t.Seed^orderStream, uint64(epoch))).Perm(len(t.train))
	t.order = map[int][]int{epoch: o} // keep one epoch cached
	return o
}

// Batch implements train.Task.
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	if i < 0 || i >= t.Batches(epoch) {
		return nil, 0, fmt.Errorf("pretrain: batch %d of epoch %d out of range (%d)", i, epoch, t.Batches(epoch))
	}
	o := t.epochOrder(epoch)[i*t.BatchSize : (i+1)*t.BatchSize]
	rows := make([]prepared, len(o))
	for j, k := range o {
		rows[j] = t.train[k]
	}
	r := rand.New(rand.NewPCG(t.Seed^batchStream, uint64(epoch)<<32|uint64(i)))
	return t.build(rows, r, false), len(rows), nil
}

// build returns the inputs of a batch (see Config.NumInputs), drawing its masks, windows and
// views from r. Sequences are padded to a power-of-two bucket of the longest, or with full
// to MaxLen (one shape: an evaluation compiles its graph once).
func (t *Task) build(rows []prepared, r *rand.Rand, full bool) []*tensors.Tensor {
	c := t.Cfg
	limit := c.MaxLen - 2
	cls, sep := t.Tok.CLSID(), t.Tok.SEPID()
	wrap := func(x []int32) []int32 {
		out := make([]int32, 0, len(x)+2)
		return append(append(append(out, cls), x...), sep)
	}
	var masked []Masked
	var a, b [][]int32
	for _, p := range rows {
		if c.MLM {
			w := p.toks
			if len(w) > limit {
				s := r.IntN(len(w) - limit + 1)
				w = w[s : s+limit]
			}
			masked = append(masked, Mask(r, wrap(w), c.MaskRate, t.sp))
		}
		if c.Contrastive {
			fields := p.name != nil && (c.Views == ViewsFields || c.Views == ViewsBoth && r.IntN(2) == 0)
			if fields {
				a, b = append(a, wrap(p.name)), append(b, wrap(p.desc))
			} else {
				x := Crop(r, p.toks, c.CropMin, c.CropMax, c.CropDelete, limit)
				y := Crop(r, p.toks, c.CropMin, c.CropMax, c.CropDelete, limit)
				a, b = append(a, wrap(x)), append(b, wrap(y))
			}
		}
	}
	var in []*tensors.Tensor
	capLen := c.MaxLen
	if c.MLM {
		longest := 0
		for _, m := range masked {
			longest = max(longest, len(m.IDs))
		}
		l := bucket(longest, c.MaxLen)
		if full {
			l = c.MaxLen
		}
		capLen = l // views are padded to at most the MLM length: fewer shape pairs to compile
		seqs := make([][]int32, len(masked))
		for j, m := range masked {
			seqs[j] = m.IDs
		}
		ids, mask := t.pad(seqs, l)
		m := MaxPredictions(l, c.MaskRate)
		pos, lab, w := make([]int32, len(rows)*m), make([]int32, len(rows)*m), make([]float32, len(rows)*m)
		for j, x := range masked {
			for k, p := range x.Positions {
				pos[j*m+k], lab[j*m+k], w[j*m+k] = int32(j*l+p), x.Labels[k], 1
			}
		}
		in = append(in, ids, mask, tensors.FromFlatDataAndDimensions(pos, len(pos)),
			tensors.FromFlatDataAndDimensions(lab, len(lab)), tensors.FromFlatDataAndDimensions(w, len(w)))
	}
	if c.Contrastive {
		longest := 0
		for j := range a {
			longest = max(longest, len(a[j]), len(b[j]))
		}
		l := min(bucket(longest, c.MaxLen), capLen)
		if full {
			l = c.MaxLen
		}
		ai, am := t.pad(a, l)
		bi, bm := t.pad(b, l)
		in = append(in, ai, am, bi, bm)
	}
	return in
}

// bucket is the padded length of a batch whose longest sequence has n tokens: the smallest
// power of two >= max(n, 8), capped at maxLen.
func bucket(n, maxLen int) int {
	b := 8
	for b < n {
		b *= 2
	}
	return min(b, maxLen)
}

// pad returns ids and mask [rows, l] (int32); a longer sequence keeps its first l-1 tokens
// and its last ([SEP]).
func (t *Task) pad(seqs [][]int32, l int) (ids, mask *tensors.Tensor) {
	fi, fm := make([]int32, len(seqs)*l), make([]int32, len(seqs)*l)
	for j, s := range seqs {
		if len(s) > l {
			s = append(append([]int32(nil), s[:l-1]...), s[len(s)-1])
		}
		row := fi[j*l : (j+1)*l]
		for k := range row {
			row[k] = t.Tok.PadID()
		}
		copy(row, s)
		for k := range s {
			fm[j*l+k] = 1
		}
	}
	return tensors.FromFlatDataAndDimensions(fi, len(seqs), l), tensors.FromFlatDataAndDimensions(fm, len(seqs), l)
}

// devBatches are the dev texts in whole batches of BatchSize (one shape to compile), or all
// of them in one batch when they do not fill one.
func (t *Task) devBatches() [][]prepared {
	if len(t.dev) < t.BatchSize {
		return [][]prepared{t.dev}
	}
	var out [][]prepared
	for s := 0; s+t.BatchSize <= len(t.dev); s += t.BatchSize {
		out = append(out, t.dev[s:s+t.BatchSize])
	}
	return out
}

// DevTexts is the number of dev texts an evaluation scores.
func (t *Task) DevTexts() int {
	n := 0
	for _, b := range t.devBatches() {
		n += len(b)
	}
	return n
}

// Evaluate implements train.Task: on the dev texts (DevTexts of them; each evaluation the same
// masks and views, sequences padded to MaxLen), mlm_loss (mean cross-entropy of the predicted tokens) and mlm_acc (their top-1
// accuracy, percent); contrastive_loss (the symmetric InfoNCE, mean over batches weighted by
// their size) and contrastive_acc (percent of the views whose paired view is their most
// similar in the batch, both directions); loss = mlm_loss + ContrastiveWeight ×
// contrastive_loss.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	// A new graph each evaluation: an Exec kept from the previous one computes with the
	// weights it first saw on the go backend once the trainer has updated them in place
	// (donated buffers), as other tasks' evaluations do.
	exec, err := model.NewExec(t.Backend, store, func(root *model.Scope, in []*Node) []*Node {
		encoder.VariablesAsParameters(root, in[0].Graph(), train.OptimizerScope)
		return []*Node{t.Cfg.Stats(root, in)}
	})
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	exec.SetMaxCache(-1)
	var sum [6]float64
	for i, rows := range t.devBatches() {
		in := t.build(rows, rand.New(rand.NewPCG(t.Seed^devStream, uint64(i))), true)
		args := make([]any, len(in))
		for k, x := range in {
			args[k] = x
		}
		out, err := exec.Call(args...)
		if err != nil {
			return nil, fmt.Errorf("pretrain: dev batch %d: %w", i, err)
		}
		v, err := tensors.CopyFlatData[float32](out[0])
		if err != nil {
			return nil, fmt.Errorf("pretrain: dev batch %d: %w", i, err)
		}
		for k := range sum {
			sum[k] += float64(v[k])
		}
	}
	m := map[string]float64{}
	loss := 0.0
	if t.Cfg.MLM {
		n := max(sum[2], 1)
		m["mlm_loss"], m["mlm_acc"] = sum[0]/n, 100*sum[1]/n
		loss += m["mlm_loss"]
	}
	if t.Cfg.Contrastive {
		n := max(sum[5], 1)
		m["contrastive_loss"], m["contrastive_acc"] = 2*sum[3]/n, 100*sum[4]/n
		loss += t.Cfg.ContrastiveWeight * m["contrastive_loss"]
	}
	m["loss"] = loss
	return m, nil
}

var _ train.Task = (*Task)(nil)
