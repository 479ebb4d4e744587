package biencoder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/train"
)

// DefaultMarker is the iteration marker of train biencoder -feedback.
const DefaultMarker = "Iteration %d: "

// CheckMarker reports an error unless format is an iteration marker: a format with exactly
// one %d verb (the iteration) and no other verb ("%%" is a literal percent sign).
func CheckMarker(format string) error {
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			i++
			continue
		}
		if i+1 < len(format) && format[i+1] == 'd' {
			n++
			i++
			continue
		}
		return fmt.Errorf("iteration marker %q: only %%d (the iteration) and %%%% may follow a %%", format)
	}
	if n != 1 {
		return fmt.Errorf("iteration marker %q: want exactly one %%d (the iteration), have %d", format, n)
	}
	return nil
}

// Mark returns the instruction of iteration t as a retriever trained with marker reads it:
// the marker with t, then the instruction (marker "" returns it unchanged).
func Mark(marker string, t int, instruction string) string {
	if marker == "" {
		return instruction
	}
	return fmt.Sprintf(marker, t) + instruction
}

// Marked is a ranker that ranks each query as the instruction of iteration T under Marker
// (Mark); the plain ranking of an iteration-aware retriever is iteration 0's.
type Marked struct {
	R      rank.Ranker
	Marker string
	T      int
}

// Rank implements rank.Ranker.
func (m Marked) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	q := make([]string, len(queries))
	for i, s := range queries {
		q[i] = Mark(m.Marker, m.T, s)
	}
	return m.R.Rank(ctx, q, k)
}

// FeedbackLoop is one training query's recorded feedback loop (feedback.Loop): its
// instructions q^0..q^s and, for each, the retrieved top-K tools (dataset indices, best
// first) from which its hard negatives are drawn.
type FeedbackLoop struct {
	Instructions []string
	Retrieved    [][]int
}

// FeedbackTask trains a bi-encoder on iterative feedback (Xu et al.): every training pair
// (query, relevant tool), batched as Task batches them, brings its query's instructions
// q^0..q^T, each prefixed with the iteration marker (Cfg.Marker, Mark); the loss is
//
//	L = Σ_{t=0..T} α^t · InfoNCE(q^t)
//
// where InfoNCE(q^t) is the bi-encoder's loss (in-batch negatives, false-negative masking,
// the configuration's temperature, similarity and symmetry) of the batch's instructions of
// iteration t against the batch's positive tools and, with HardNegatives, one hard negative
// per instruction drawn from the incorrect tools of that instruction's recorded top K (a
// random non-relevant tool when all of them are relevant). A query whose loop stopped at
// s < T keeps its last instruction for t > s (marked s, as the iterative retrieval keeps its
// last ranking), so every iteration's loss has the batch's size. Without Joint only each
// query's last instruction q^min(s,T) is trained (weight 1).
//
// Dev metrics are round 0's: the dev queries' instructions q^0 marked with iteration 0.
// Batches are a pure function of (Seed, epoch, i), so a run resumes exactly.
type FeedbackTask struct {
	Cfg *Config
	train.Setup
	// StrictBatches: see Task.
	StrictBatches bool
	// Loops holds the loop of every judged query of Train, by query index.
	Loops map[int]FeedbackLoop
	// Iterations is T: instructions beyond q^T are not used.
	Iterations int
	// Alpha is α of the iteration weights α^t.
	Alpha float64
	// Joint trains every iteration (else only each query's last instruction).
	Joint bool
	// HardNegatives adds one hard negative per instruction.
	HardNegatives bool
	// Padding: see Task.
	Padding Padding
	// Reg: see Task (tool dropout: example j's positive by dropRand(Seed, epoch, i, j), the
	// hard negative of row r by example index B + r·B + j).
	Reg Regularization
	// MiniBatchSize: see Task (the instruction rows, tools and hard negatives each encoded
	// this many rows at a time).
	MiniBatchSize int

	pairs []train.Pair
	rel   losses.Relevance
	tools [][]int32
	texts toolTexts
	// rows[q][r] is the tokenized instruction of row r (iteration r when Joint) of query q,
	// negs[q][r] the incorrect tools of its top K.
	rows   map[int][][]int32
	negs   map[int][][]int
	iters  map[int][]int // iters[q][r]: the iteration whose instruction row r holds
	epochs map[int][][]train.Pair
	// noIncorrect counts the instructions whose top K holds no incorrect tool.
	noIncorrect int
}

// Rows is the number of instructions each example brings: T+1 with Joint, else 1.
func (t *FeedbackTask) Rows() int {
	if t.Joint {
		return t.Iterations + 1
	}
	return 1
}

// Prepare checks the inputs and tokenizes the marked instructions and the tools once.
func (t *FeedbackTask) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if t.Cfg.Objective == ObjectiveQuery2Query {
		return errors.New("biencoder: feedback training is a query2tool objective")
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("biencoder: %w", err)
	}
	switch {
	case t.BatchSize < 2:
		return fmt.Errorf("biencoder: batch size %d: in-batch negatives need >= 2", t.BatchSize)
	case t.Iterations < 0:
		return fmt.Errorf("biencoder: feedback iterations %d: must be >= 0", t.Iterations)
	case !(t.Alpha > 0) || math.IsInf(t.Alpha, 0):
		return fmt.Errorf("biencoder: feedback alpha %v: must be > 0", t.Alpha)
	}
	if err := checkMiniBatch(t.MiniBatchSize, t.Cfg.Objective); err != nil {
		return err
	}
	if err := t.Reg.Check(t.Cfg); err != nil {
		return err
	}
	t.rel = losses.RelevanceFromMap(t.Train.Relevant)
	t.rows, t.negs, t.iters = map[int][][]int32{}, map[int][][]int{}, map[int][]int{}
	t.noIncorrect = 0
	var missing []string
	for _, q := range t.Train.Judged() {
		lp, ok := t.Loops[q]
		if !ok || len(lp.Instructions) == 0 {
			missing = append(missing, t.Data.Queries[q].ID)
			continue
		}
		if len(lp.Retrieved) != len(lp.Instructions) {
			return fmt.Errorf("biencoder: query %q: %d instructions, %d retrieved lists", t.Data.Queries[q].ID, len(lp.Instructions), len(lp.Retrieved))
		}
		last := min(len(lp.Instructions)-1, t.Iterations)
		negs := make([][]int, last+1)
		for it := 0; it <= last; it++ {
			for _, tool := range lp.Retrieved[it] {
				if tool < 0 || tool >= len(t.Data.Tools) {
					return fmt.Errorf("biencoder: query %q iteration %d: tool index %d out of range", t.Data.Queries[q].ID, it, tool)
				}
				if !t.rel(q, tool) {
					negs[it] = append(negs[it], tool)
				}
			}
			if len(negs[it]) == 0 {
				t.noIncorrect++
			}
		}
		for r := range t.Rows() {
			it := min(r, last)
			if !t.Joint {
				it = last
			}
			t.rows[q] = append(t.rows[q], t.Tok.Single(Mark(t.Cfg.Marker, it, lp.Instructions[it]), t.Cfg.QueryMaxLen))
			t.negs[q] = append(t.negs[q], negs[it])
			t.iters[q] = append(t.iters[q], it)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("biencoder: %d training queries have no recorded feedback (e.g. %q): collect the train split with train feedback (and let it finish)", len(missing), missing[0])
	}
	t.texts = newToolTexts(t.Data, t.Tok, t.Cfg.ToolMaxLen, t.Cfg.ToolPrompt, t.Seed, t.Reg.ToolDropout)
	t.tools = t.texts.tools
	t.pairs = t.TrainPairs()
	if len(t.pairs) == 0 {
		return fmt.Errorf("biencoder: split %s has no (query, tool) pairs", t.Train.Name)
	}
	t.epochs = map[int][][]train.Pair{}
	return nil
}

// NoIncorrect is the number of training instructions whose recorded top K holds no
// incorrect tool (their hard negatives are random non-relevant tools).
func (t *FeedbackTask) NoIncorrect() int { return t.noIncorrect }

func (t *FeedbackTask) batches(epoch int) [][]train.Pair {
	if b, ok := t.epochs[epoch]; ok {
		return b
	}
	// The bi-encoder's batches (Task.batches): the same pairs in the same order.
	b := pairBatches(t.pairs, t.BatchSize, t.Seed, epoch, t.StrictBatches)
	t.epochs = map[int][][]train.Pair{epoch: b}
	return b
}

// Batches implements train.Task.
func (t *FeedbackTask) Batches(epoch int) int { return len(t.batches(epoch)) }

// Batch implements train.Task: query ids and mask [R·B, Sq] (row r·B+j: example j's
// instruction of row r), positive tool ids and mask [B, St], the false-negative masks
// [R, B, B(+B)] and, with hard negatives, their ids and mask [R·B, St] (row r·B+j: the
// negative of example j's instruction of row r).
func (t *FeedbackTask) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	bs := t.batches(epoch)
	if i >= len(bs) {
		return nil, 0, fmt.Errorf("batch %d of epoch %d out of range (%d)", i, epoch, len(bs))
	}
	b := bs[i]
	nb, rows := len(b), t.Rows()
	qs, ps := make([]int, nb), make([]int, nb)
	tSeq := make([][]int32, nb)
	qSeq := make([][]int32, 0, rows*nb)
	for j, p := range b {
		qs[j], ps[j], tSeq[j] = p.Query, p.Tool, t.texts.seq(epoch, i, j, p.Tool)
	}
	for r := range rows {
		for _, p := range b {
			qSeq = append(qSeq, t.rows[p.Query][r])
		}
	}
	negs, err := t.sampleNegatives(epoch, i, b)
	if err != nil {
		return nil, 0, err
	}
	var flat []bool
	width := 0
	for r := range rows {
		var nr [][]int
		if negs != nil {
			nr = negs[r]
		}
		fm, err := losses.FalseNegativeMask(qs, ps, nr, t.rel)
		if err != nil {
			return nil, 0, err
		}
		width = len(fm[0])
		for _, row := range fm {
			flat = append(flat, row...)
		}
	}
	qi, qm := t.pad(qSeq, t.Cfg.QueryMaxLen)
	ti, tm := t.pad(tSeq, t.Cfg.ToolMaxLen)
	in := []*tensors.Tensor{qi, qm, ti, tm, tensors.FromFlatDataAndDimensions(flat, rows, nb, width)}
	if negs != nil {
		var nSeq [][]int32
		for r, nr := range negs {
			for j, n := range nr {
				nSeq = append(nSeq, t.texts.seq(epoch, i, nb+r*nb+j, n[0]))
			}
		}
		ni, nm := t.pad(nSeq, t.Cfg.ToolMaxLen)
		in = append(in, ni, nm)
	}
	return in, nb, nil
}

// sampleNegatives draws, for each row r and example j of batch i of epoch, one tool from the
// incorrect tools of the instruction's top K (a random non-relevant tool when there is none):
// negs[r][j] = []int{tool}. It is nil without hard negatives.
func (t *FeedbackTask) sampleNegatives(epoch, i int, b []train.Pair) ([][][]int, error) {
	if !t.HardNegatives {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(t.Seed^0x666562, uint64(epoch)<<32|uint64(i)))
	negs := make([][][]int, t.Rows())
	for r := range negs {
		negs[r] = make([][]int, len(b))
		for j, p := range b {
			var n int
			if cands := t.negs[p.Query][r]; len(cands) > 0 {
				n = cands[rng.IntN(len(cands))]
			} else {
				var err error
				if n, err = randomNonRelevant(rng, len(t.tools), p.Query, t.rel); err != nil {
					return nil, fmt.Errorf("biencoder: query %q: %w", t.Data.Queries[p.Query].ID, err)
				}
			}
			negs[r][j] = []int{n}
		}
	}
	return negs, nil
}

// randomNonRelevant draws a tool of n uniformly among those not relevant to q, or returns an
// error when q is relevant to every tool.
func randomNonRelevant(r *rand.Rand, n, q int, rel losses.Relevance) (int, error) {
	for range 64 { // rejection sampling: fast unless nearly every tool is relevant
		if c := r.IntN(max(n, 1)); n > 0 && !rel(q, c) {
			return c, nil
		}
	}
	var pool []int
	for c := range n {
		if !rel(q, c) {
			pool = append(pool, c)
		}
	}
	if len(pool) == 0 {
		return 0, fmt.Errorf("relevant to all %d tools: no hard negative to sample", n)
	}
	return pool[r.IntN(len(pool))], nil
}

func (t *FeedbackTask) pad(seqs [][]int32, maxLen int) (ids, mask *tensors.Tensor) {
	return t.Padding.Pad(t.Tok, seqs, maxLen)
}

// MaxShapes implements train.Shapes (see Task.MaxShapes).
func (t *FeedbackTask) MaxShapes() int {
	return pairShapes(t.Cfg, t.Tok, t.Padding, t.BatchSize, t.StrictBatches, t.HardNegatives)
}

// Weights returns the loss weight of each row: α^r with Joint, else 1.
func (t *FeedbackTask) Weights() []float64 {
	w := make([]float64, t.Rows())
	for r := range w {
		w[r] = 1
		if t.Joint {
			w[r] = math.Pow(t.Alpha, float64(r))
		}
	}
	return w
}

// Loss implements train.Task: Σ_r w_r · InfoNCE(row r) over the inputs of Batch (with
// Reg.FreezeEmbeddings, the word embeddings are marked non-trainable).
func (t *FeedbackTask) Loss(s *model.Scope, in []*Node) *Node {
	qAll := t.Reg.embed(t.Cfg, s, QueryTower, in[0], in[1])
	pos := t.Reg.embed(t.Cfg, s, ToolTower, in[2], in[3])
	var negAll *Node
	if len(in) == 7 {
		negAll = t.Reg.embed(t.Cfg, s, ToolTower, in[5], in[6])
	}
	total := t.loss(qAll, pos, negAll, in[4])
	t.Reg.freeze(t.Cfg, s)
	return total
}

// loss is the weighted sum over the instruction rows of InfoNCE: qAll [Rows·B, D] (row r's
// instructions at [r·B, (r+1)·B)), pos [B, D], negAll [Rows·B, D] (one hard negative per
// instruction; nil: none), masks [Rows, B, ...].
func (t *FeedbackTask) loss(qAll, pos, negAll, masks *Node) *Node {
	nb, dim := pos.Shape().Dim(0), pos.Shape().Dim(1)
	sim, _ := losses.ParseSimilarity(t.Cfg.Similarity)
	cfg := losses.InfoNCEConfig{Temperature: t.Cfg.Temperature, Similarity: sim, Symmetric: t.Cfg.Symmetric, NoMasking: t.Cfg.NoMasking}
	var total *Node
	for r, w := range t.Weights() {
		q := Slice(qAll, AxisRange(r*nb, (r+1)*nb))
		mask := Reshape(Slice(masks, AxisElem(r)), nb, -1)
		var neg *Node
		if negAll != nil {
			neg = Reshape(Slice(negAll, AxisRange(r*nb, (r+1)*nb)), nb, 1, dim)
		}
		l := MulScalar(losses.InfoNCE(q, pos, neg, mask, cfg), w)
		if total == nil {
			total = l
		} else {
			total = Add(total, l)
		}
	}
	return total
}

// Evaluate implements train.Task: round 0's dev metrics (metrics.DevKs), each dev query marked
// with iteration 0.
func (t *FeedbackTask) Evaluate(store *model.Store) (map[string]float64, error) {
	return evaluateText(t.Cfg, &t.Setup, store, true)
}

// Describe summarises the training examples for a log line.
func (t *FeedbackTask) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d train pairs × %d instructions (T = %d", len(t.pairs), t.Rows(), t.Iterations)
	if t.Joint {
		fmt.Fprintf(&b, ", joint, α = %g", t.Alpha)
	} else {
		b.WriteString(", last instruction only")
	}
	if t.HardNegatives {
		fmt.Fprintf(&b, ", one hard negative each from the recorded top K; %d instructions without an incorrect tool there", t.noIncorrect)
	}
	fmt.Fprintf(&b, ", marker %q)", t.Cfg.Marker)
	return b.String()
}

var _ train.Task = (*FeedbackTask)(nil)

// Marker returns the iteration marker of the retriever's model ("" unless it was trained on
// iterative feedback).
func (r *Ranker) Marker() string { return r.e.Cfg.Marker }
