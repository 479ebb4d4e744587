package train

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Cached is implemented by a Task whose loss is a function of per-row embeddings, so that a
// batch can be encoded a mini-batch at a time: GradCache (Gao et al. 2021, "Scaling Deep
// Contrastive Learning Batch Size under Memory Limited Setup"), what sentence-transformers'
// CachedMultipleNegativesRankingLoss does. With MiniBatch() > 0 the trainer runs each batch in
// three passes:
//
//  1. every chunk's embeddings, without gradients (the encoder's activations of one chunk
//     live at a time);
//  2. the loss over all of them and its gradient with respect to each embedding row;
//  3. every chunk again, its embeddings' gradient back-propagated through the encoder and
//     summed into the batch's, the random state of pass 1 replayed so that dropout draws the
//     same masks (checked: a chunk whose embeddings differ from pass 1's stops the run).
//
// The summed gradient is the whole batch's, up to float rounding, so a step equals the
// uncached one (tested) while memory is that of one chunk; the encoder runs forward twice.
type Cached interface {
	Task
	// MiniBatch is the rows a chunk holds at most (0: batches run whole, through Loss).
	MiniBatch() int
	// Kinds is the number of kinds of rows (e.g. queries, tools, hard negatives).
	Kinds() int
	// Split returns the chunks of a batch's inputs (each of one kind, at most MiniBatch rows,
	// in row order within its kind; see SplitRows) and the inputs the loss alone reads.
	Split(inputs []*tensors.Tensor) (chunks []Chunk, rest []*tensors.Tensor, err error)
	// Embed builds the embeddings [rows, dim] of a chunk of kind (the graph is in training
	// mode). It must also make the variables that are not to be trained non-trainable, as
	// Loss does.
	Embed(scope *model.Scope, kind int, inputs []*Node) *Node
	// CachedLoss builds a batch's loss from embs (embs[k]: the embeddings of every chunk of
	// kind k concatenated in order, nil when the batch has none) and rest.
	CachedLoss(scope *model.Scope, embs, rest []*Node) *Node
}

// Chunk is one mini-batch of rows of one kind (Cached.Split).
type Chunk struct {
	Kind   int
	Inputs []*tensors.Tensor
}

// SplitRows cuts tensors that share their first axis (n rows) into chunks of kind with at
// most m rows each.
func SplitRows(kind, m int, ts ...*tensors.Tensor) ([]Chunk, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	if m <= 0 {
		return nil, fmt.Errorf("mini-batch %d: must be > 0", m)
	}
	n := ts[0].Shape().Dim(0)
	for i, t := range ts {
		if t.Rank() == 0 || t.Shape().Dim(0) != n {
			return nil, fmt.Errorf("split kind %d: input %d %s does not have the %d rows of input 0", kind, i, t.Shape(), n)
		}
	}
	var out []Chunk
	for lo := 0; lo < n; lo += m {
		hi := min(lo+m, n)
		c := Chunk{Kind: kind}
		for _, t := range ts {
			r, err := Rows(t, lo, hi)
			if err != nil {
				return nil, err
			}
			c.Inputs = append(c.Inputs, r)
		}
		out = append(out, c)
	}
	return out, nil
}

// Rows returns rows [lo, hi) of t's first axis as a new host tensor.
func Rows(t *tensors.Tensor, lo, hi int) (*tensors.Tensor, error) {
	dims := t.Shape().Dimensions
	if t.Rank() == 0 || lo < 0 || hi > dims[0] || lo > hi {
		return nil, fmt.Errorf("rows [%d, %d) of %s: out of range", lo, hi, t.Shape())
	}
	if t.DType().Bits() < 8 {
		return nil, fmt.Errorf("rows of %s: sub-byte dtypes are not supported", t.Shape())
	}
	rowBytes := int(t.Shape().ByteSize()) / dims[0]
	nd := append([]int{hi - lo}, dims[1:]...)
	out := tensors.FromShape(shapeOf(t.DType(), nd))
	var err error
	if e := t.ConstBytes(func(src []byte) {
		err = out.MutableBytes(func(dst []byte) { copy(dst, src[lo*rowBytes:hi*rowBytes]) })
	}); e != nil {
		return nil, fmt.Errorf("rows of %s: %w", t.Shape(), e)
	}
	return out, err
}

// concatRows concatenates tensors of one dtype and trailing shape along their first axis.
func concatRows(ts []*tensors.Tensor) (*tensors.Tensor, error) {
	if len(ts) == 1 {
		return ts[0], nil
	}
	dims := append([]int(nil), ts[0].Shape().Dimensions...)
	dims[0] = 0
	for _, t := range ts {
		if t.DType() != ts[0].DType() || t.Rank() != len(dims) {
			return nil, fmt.Errorf("concatenate %s and %s: shapes differ", ts[0].Shape(), t.Shape())
		}
		dims[0] += t.Shape().Dim(0)
	}
	out := tensors.FromShape(shapeOf(ts[0].DType(), dims))
	var err error
	if e := out.MutableBytes(func(dst []byte) {
		off := 0
		for _, t := range ts {
			if e := t.ConstBytes(func(src []byte) { off += copy(dst[off:], src) }); e != nil && err == nil {
				err = e
			}
		}
	}); e != nil {
		return nil, e
	}
	return out, err
}

// replayTolerance is the largest relative difference between a chunk's embeddings in passes
// 1 and 3 that is taken for float rounding (two compiled graphs of the same computation).
const replayTolerance = 1e-3

// noReplay skips the replay of pass 1's random state in pass 3 (tests: the check must catch it).
var noReplay bool

// cacheStep runs a Cached task's optimizer step in its three passes.
type cacheStep struct {
	task     Cached
	store    *model.Store
	be       compute.Backend
	opt      Optimizer
	maxCache int
	embed    map[int]*model.Exec    // pass 1, by kind
	loss     map[string]*model.Exec // pass 2, by the kinds present
	step     map[int]*model.Exec    // pass 3, by kind
	nIn      map[int]int            // inputs of a chunk, by kind
	frozen   map[int]bool           // kinds whose embeddings reach no trainable variable
	vars     map[string]bool        // the variables pass 3 accumulates gradients for
	apply    *model.Exec            // the optimizer step over vars
	applyKey string
}

func newCacheStep(be compute.Backend, store *model.Store, task Cached, opt Optimizer) *cacheStep {
	return &cacheStep{task: task, store: store, be: be, opt: opt, maxCache: 2 * DefaultExecMaxCacheSize,
		embed: map[int]*model.Exec{}, loss: map[string]*model.Exec{}, step: map[int]*model.Exec{}, nIn: map[int]int{},
		frozen: map[int]bool{}, vars: map[string]bool{}}
}

// setMaxCache sets the compiled shapes each executable caches: twice a task's batch shapes,
// since a batch's chunks add a shape for the rows left over at its end.
func (c *cacheStep) setMaxCache(n int) {
	n *= 2
	c.maxCache = n
	for _, m := range []map[int]*model.Exec{c.embed, c.step} {
		for _, x := range m {
			x.SetMaxCache(n)
		}
	}
	for _, x := range c.loss {
		x.SetMaxCache(n)
	}
}

func (c *cacheStep) newExec(fn func(s *model.Scope, in []*Node) []*Node) (*model.Exec, error) {
	x, err := model.NewExec(c.be, c.store, fn)
	if err != nil {
		return nil, err
	}
	if c.maxCache > 0 {
		x.SetMaxCache(c.maxCache)
	}
	return x, nil
}

// embedExec is pass 1 for kind: the chunk's embeddings (training mode: dropout on).
func (c *cacheStep) embedExec(kind int) (*model.Exec, error) {
	if x, ok := c.embed[kind]; ok {
		return x, nil
	}
	x, err := c.newExec(func(s *model.Scope, in []*Node) []*Node {
		s.SetTraining(in[0].Graph(), true)
		return []*Node{StopGradient(c.task.Embed(s, kind, in))}
	})
	if err == nil {
		c.embed[kind] = x
	}
	return x, err
}

// lossExec is pass 2 for the kinds present: the loss and its gradient with respect to each
// kind's embeddings.
func (c *cacheStep) lossExec(present []bool) (*model.Exec, error) {
	key := make([]byte, len(present))
	for k, p := range present {
		key[k] = '0'
		if p {
			key[k] = '1'
		}
	}
	if x, ok := c.loss[string(key)]; ok {
		return x, nil
	}
	x, err := c.newExec(func(s *model.Scope, in []*Node) []*Node {
		s.SetTraining(in[0].Graph(), true)
		embs := make([]*Node, len(present))
		var wrt []*Node
		i := 0
		for k, p := range present {
			if p {
				embs[k] = in[i]
				wrt = append(wrt, in[i])
				i++
			}
		}
		loss := ConvertDType(c.task.CachedLoss(s, embs, in[i:]), dtypes.Float32)
		return append([]*Node{loss}, Gradient(loss, wrt...)...)
	})
	if err == nil {
		c.loss[string(key)] = x
	}
	return x, err
}

// stepExec is pass 3 for kind: inputs are the chunk's, its embeddings' gradient and its
// pass-1 embeddings; the gradient of the chunk's share of the loss is added to the
// accumulators of the variables it reaches; the output is the largest relative difference
// from the pass-1 embeddings.
func (c *cacheStep) stepExec(kind int) (*model.Exec, error) {
	if x, ok := c.step[kind]; ok {
		return x, nil
	}
	n := c.nIn[kind]
	x, err := c.newExec(func(s *model.Scope, in []*Node) []*Node {
		g := in[0].Graph()
		s.SetTraining(g, true)
		emb := ConvertDType(c.task.Embed(s, kind, in[:n]), dtypes.Float32)
		grad, cached := in[n], in[n+1]
		surrogate := ReduceAllSum(Mul(emb, StopGradient(ConvertDType(grad, dtypes.Float32))))
		paths := accumulate(s, surrogate)
		if len(paths) == 0 {
			c.frozen[kind] = true
		}
		for _, p := range paths {
			c.vars[p] = true
		}
		diff := Div(ReduceAllMax(Abs(Sub(emb, cached))), AddScalar(ReduceAllMax(Abs(cached)), 1e-6))
		return []*Node{StopGradient(diff)}
	})
	if err == nil {
		c.step[kind] = x
	}
	return x, err
}

// applyExec is the optimizer step over the variables pass 3 accumulated gradients for
// (rebuilt when a new kind of chunk adds some).
func (c *cacheStep) applyExec() (*model.Exec, error) {
	paths := make([]string, 0, len(c.vars))
	for p := range c.vars {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	key := strings.Join(paths, "\n")
	if c.apply != nil && key == c.applyKey {
		return c.apply, nil
	}
	vars := make([]*model.Variable, len(paths))
	for i, p := range paths {
		if vars[i] = c.store.GetVariable(p); vars[i] == nil {
			return nil, fmt.Errorf("mini-batches: variable %s is gone", p)
		}
	}
	x, err := c.newExec(func(s *model.Scope, in []*Node) []*Node {
		g := in[0].Graph()
		s.SetTraining(g, true)
		lr, norm := c.opt.applyAccumulated(s, g, vars)
		return []*Node{lr, norm}
	})
	if err != nil {
		return nil, err
	}
	c.apply, c.applyKey = x, key
	return x, nil
}

// numVars counts the store's variables.
func (c *cacheStep) numVars() int {
	n := 0
	for range c.store.IterVariables() {
		n++
	}
	return n
}

// rngState returns a host copy of the store's random state (creating it if no graph has drawn yet).
func (c *cacheStep) rngState() (*tensors.Tensor, error) {
	v := c.store.GetVariable(model.JoinPath("/", model.RNGStateVariableName))
	if v == nil || !v.HasValue() {
		// Created now as the first random draw would create it (from the store's seed
		// parameter), so that the draw can be replayed.
		if err := c.store.ResetRNGState(); err != nil {
			return nil, fmt.Errorf("random state: %w", err)
		}
		if v = c.store.GetVariable(model.JoinPath("/", model.RNGStateVariableName)); v == nil {
			return nil, fmt.Errorf("random state: not created")
		}
	}
	t, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("random state: %w", err)
	}
	return t.LocalClone()
}

func (c *cacheStep) setRNGState(t *tensors.Tensor) error {
	v := c.store.GetVariable(model.JoinPath("/", model.RNGStateVariableName))
	if v == nil {
		return fmt.Errorf("random state: the variable is gone")
	}
	return v.SetValue(t)
}

// call runs one batch (inputs as Task.Batch returns them) and returns the loss, the learning
// rate and the gradient norm, as the uncached step does.
func (c *cacheStep) call(inputs []*tensors.Tensor) ([]*tensors.Tensor, error) {
	chunks, rest, err := c.task.Split(inputs)
	if err != nil {
		return nil, fmt.Errorf("mini-batches: %w", err)
	}
	if len(chunks) == 0 {
		return nil, fmt.Errorf("mini-batches: the batch has no rows")
	}
	kinds := c.task.Kinds()
	embs := make([]*tensors.Tensor, len(chunks))
	states := make([]*tensors.Tensor, len(chunks))
	byKind := make([][]*tensors.Tensor, kinds)
	for i, ch := range chunks {
		if ch.Kind < 0 || ch.Kind >= kinds {
			return nil, fmt.Errorf("mini-batch %d: kind %d of %d", i, ch.Kind, kinds)
		}
		if n, ok := c.nIn[ch.Kind]; ok && n != len(ch.Inputs) {
			return nil, fmt.Errorf("mini-batch %d of kind %d: %d inputs, earlier ones %d", i, ch.Kind, len(ch.Inputs), n)
		}
		c.nIn[ch.Kind] = len(ch.Inputs)
		x, err := c.embedExec(ch.Kind)
		if err != nil {
			return nil, err
		}
		var out []*tensors.Tensor
		for try := 0; ; try++ {
			// The first call of a graph may create and initialise variables, drawing from the
			// random state before the chunk does: then it runs again from the new state.
			vars := c.numVars()
			if states[i], err = c.rngState(); err != nil {
				return nil, err
			}
			if out, err = x.Call(anys(ch.Inputs)...); err != nil {
				return nil, fmt.Errorf("mini-batch %d (kind %d), embeddings: %w", i, ch.Kind, err)
			}
			if c.numVars() == vars {
				break
			}
			if try > 0 {
				return nil, fmt.Errorf("mini-batch %d (kind %d): its graph creates variables at every call", i, ch.Kind)
			}
		}
		if embs[i], err = out[0].LocalClone(); err != nil {
			return nil, err
		}
		byKind[ch.Kind] = append(byKind[ch.Kind], embs[i])
	}
	present := make([]bool, kinds)
	var args []*tensors.Tensor
	for k, es := range byKind {
		if len(es) == 0 {
			continue
		}
		present[k] = true
		all, err := concatRows(es)
		if err != nil {
			return nil, fmt.Errorf("mini-batches of kind %d: %w", k, err)
		}
		args = append(args, all)
	}
	lx, err := c.lossExec(present)
	if err != nil {
		return nil, err
	}
	lout, err := lx.Call(anys(append(args, rest...))...)
	if err != nil {
		return nil, fmt.Errorf("mini-batches: loss: %w", err)
	}
	loss := lout[0]
	grads := make([]*tensors.Tensor, kinds)
	j := 1
	for k, p := range present {
		if p {
			if grads[k], err = lout[j].LocalClone(); err != nil {
				return nil, err
			}
			j++
		}
	}
	if l := float64(loss.Value().(float32)); math.IsNaN(l) || math.IsInf(l, 0) {
		return []*tensors.Tensor{loss, tensors.FromScalar(float32(0)), tensors.FromScalar(float32(0))}, nil // the trainer stops on it
	}
	offset := make([]int, kinds)
	for i, ch := range chunks {
		rows := embs[i].Shape().Dim(0)
		g, err := Rows(grads[ch.Kind], offset[ch.Kind], offset[ch.Kind]+rows)
		if err != nil {
			return nil, err
		}
		offset[ch.Kind] += rows
		if c.frozen[ch.Kind] {
			continue
		}
		if !noReplay {
			if err := c.setRNGState(states[i]); err != nil {
				return nil, err
			}
		}
		x, err := c.stepExec(ch.Kind)
		if err != nil {
			return nil, err
		}
		out, err := x.Call(anys(append(append([]*tensors.Tensor(nil), ch.Inputs...), g, embs[i]))...)
		if err != nil {
			return nil, fmt.Errorf("mini-batch %d (kind %d), gradient: %w", i, ch.Kind, err)
		}
		if d := float64(out[0].Value().(float32)); !(d <= replayTolerance) {
			return nil, fmt.Errorf("mini-batch %d (kind %d): its embeddings differ from the first pass's by %.3g (relative): the random state was not replayed", i, ch.Kind, d)
		}
	}
	if len(c.vars) == 0 {
		return nil, fmt.Errorf("mini-batches: no trainable variable is reached by any embedding")
	}
	ax, err := c.applyExec()
	if err != nil {
		return nil, err
	}
	out, err := ax.Call(int32(0))
	if err != nil {
		return nil, fmt.Errorf("mini-batches: optimizer step: %w", err)
	}
	return []*tensors.Tensor{loss, out[0], out[1]}, nil
}

func anys(ts []*tensors.Tensor) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

func shapeOf(dt dtypes.DType, dims []int) shapes.Shape { return shapes.Make(dt, dims...) }
