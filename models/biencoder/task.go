package biencoder

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/train"
)

// Task trains a bi-encoder on a dataset split (it implements train.Task).
type Task struct {
	Cfg *Config
	train.Setup
	// StrictBatches keeps every batch free of repeated queries and tools even when that makes
	// batches small (see train.NoDuplicateBatches); otherwise batches are topped up.
	StrictBatches bool
	// HardNegatives per example, sampled from Negatives (query index -> ranked tool
	// indices, positives already excluded by the miner).
	HardNegatives int
	Negatives     map[int][]int
	// Padding pads each batch's queries and tools (PadTokenizer, the zero value: the
	// tokenizer's buckets, as before -pad-multiple).
	Padding Padding
	// Reg are the training-only regularisations (frozen word embeddings, tool-text dropout).
	Reg Regularization
	// ToolQueries is the number of pseudo pairs per tool and epoch (-tool-queries; 0: none):
	// every tool of Data with a text, held-out ones included, is the positive of that many
	// pseudo queries drawn from its own text (ToolQuery, per (Seed, epoch, pair)), batched
	// with the real pairs. See toolqueries.go.
	ToolQueries int
	// MiniBatchSize encodes each batch this many rows at a time (GradCache, train.Cached;
	// 0: the whole batch at once): the same step in the memory of a mini-batch, for one more
	// forward pass of the encoder.
	MiniBatchSize int

	pseudo  toolQueries
	pairs   []train.Pair
	rel     losses.Relevance
	queries map[int][]int32
	tools   [][]int32
	texts   toolTexts
	epochs  map[int][][]train.Pair
}

// Prepare tokenizes the texts once and checks the configuration.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("biencoder: %w", err)
	}
	if t.BatchSize < 2 {
		return fmt.Errorf("biencoder: batch size %d: in-batch negatives need >= 2", t.BatchSize)
	}
	if err := t.Reg.Check(t.Cfg); err != nil {
		return err
	}
	if t.HardNegatives > 0 && len(t.Negatives) == 0 {
		return fmt.Errorf("biencoder: %d hard negatives asked but no mined negatives given (run `train mine` first)", t.HardNegatives)
	}
	if t.ToolQueries < 0 {
		return fmt.Errorf("biencoder: %d tool queries per tool: must be >= 0", t.ToolQueries)
	}
	if err := checkMiniBatch(t.MiniBatchSize, t.Cfg.Objective); err != nil {
		return err
	}
	t.queries = querySeqs(&t.Setup, t.Cfg, t.Train.Queries)
	if t.Dev != nil {
		maps.Copy(t.queries, querySeqs(&t.Setup, t.Cfg, t.Dev.Queries))
	}
	t.texts = newToolTexts(t.Data, t.Tok, t.Cfg.ToolMaxLen, t.Cfg.ToolPrompt, t.Seed, t.Reg.ToolDropout)
	t.tools = t.texts.tools
	t.pairs = t.TrainPairs()
	if len(t.pairs) == 0 {
		return fmt.Errorf("biencoder: split %s has no (query, tool) pairs", t.Train.Name)
	}
	var err error
	if t.pseudo, err = newToolQueries(t.Data, t.Tok, t.Cfg.QueryMaxLen, t.Cfg.QueryPrompt, t.Seed, t.ToolQueries); err != nil {
		return err
	}
	t.pairs = append(t.pairs, t.pseudo.pairs()...)
	if len(t.Data.Libraries) > 1 && t.HardNegatives > 0 {
		t.Negatives = sameLibrary(t.Data, t.Negatives)
	}
	t.rel = t.pseudo.relevance(losses.RelevanceFromMap(t.Train.Relevant))
	t.epochs = map[int][][]train.Pair{}
	return nil
}

func (t *Task) batches(epoch int) [][]train.Pair {
	if b, ok := t.epochs[epoch]; ok {
		return b
	}
	var b [][]train.Pair
	if len(t.Data.Libraries) > 1 { // each batch from one library
		groups, weights := train.ByLibrary(t.Data, t.pairs)
		b = train.LibraryBatches(groups, weights, t.BatchSize, t.Seed, epoch, !t.StrictBatches)
	} else {
		b = pairBatches(t.pairs, t.BatchSize, t.Seed, epoch, t.StrictBatches)
	}
	t.epochs = map[int][][]train.Pair{epoch: b} // keep one epoch cached
	return b
}

// Batches implements train.Task.
func (t *Task) Batches(epoch int) int { return len(t.batches(epoch)) }

// Loss implements train.Task (with Reg.FreezeEmbeddings, the word embeddings are marked
// non-trainable once the towers are built; with Reg.FreezeTower, that tower's variables).
func (t *Task) Loss(s *model.Scope, in []*Node) *Node {
	l := t.Cfg.loss(s, in, t.Reg)
	t.Reg.freeze(t.Cfg, s)
	return l
}

// pad turns sequences into ids and mask tensors of the length t.Padding gives the batch.
func (t *Task) pad(seqs [][]int32, maxLen int) (ids, mask *tensors.Tensor) {
	return t.Padding.Pad(t.Tok, seqs, maxLen)
}

// MaxShapes implements train.Shapes: the batch sizes (full, and a short last batch; any size
// from 2 with StrictBatches) times the padded query, tool and hard-negative lengths.
func (t *Task) MaxShapes() int {
	return pairShapes(t.Cfg, t.Tok, t.Padding, t.BatchSize, t.StrictBatches, t.HardNegatives > 0)
}

// Batch implements train.Task. With Reg.ToolDropout, example j's positive tool text loses
// words by dropRand(Seed, epoch, i, j), and hard negative k of example j by example index
// len(batch) + j·HardNegatives + k. A pseudo pair's query is its text of the epoch
// (toolQueries.seq); it has no mined negatives.
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	bs := t.batches(epoch)
	if i >= len(bs) {
		return nil, 0, fmt.Errorf("batch %d of epoch %d out of range (%d)", i, epoch, len(bs))
	}
	b := bs[i]
	qs, ps := make([]int, len(b)), make([]int, len(b))
	qSeq, tSeq := make([][]int32, len(b)), make([][]int32, len(b))
	for j, p := range b {
		qs[j], ps[j] = p.Query, p.Tool
		qSeq[j], tSeq[j] = t.queries[p.Query], t.texts.seq(epoch, i, j, p.Tool)
		if t.pseudo.is(p.Query) {
			qSeq[j] = t.pseudo.seq(epoch, p.Query)
		}
	}
	var negs [][]int
	if t.HardNegatives > 0 {
		r := rand.New(rand.NewPCG(t.Seed^0x6e6567, uint64(epoch)<<32|uint64(i)))
		negs = make([][]int, len(b))
		for j, p := range b {
			cands := t.Negatives[p.Query]
			for k := 0; k < t.HardNegatives; k++ {
				var n int
				if len(cands) > 0 {
					n = cands[r.IntN(len(cands))]
				} else { // no mined list for this query: a random non-positive tool
					var err error
					if n, err = t.randomNegative(r, p.Query); err != nil {
						return nil, 0, err
					}
				}
				negs[j] = append(negs[j], n)
			}
		}
	}
	fm, err := losses.FalseNegativeMask(qs, ps, negs, t.rel)
	if err != nil {
		return nil, 0, err
	}
	width := len(fm[0])
	flat := make([]bool, 0, len(b)*width)
	for _, row := range fm {
		flat = append(flat, row...)
	}
	qi, qm := t.pad(qSeq, t.Cfg.QueryMaxLen)
	ti, tm := t.pad(tSeq, t.Cfg.ToolMaxLen)
	in := []*tensors.Tensor{qi, qm, ti, tm, tensors.FromFlatDataAndDimensions(flat, len(b), width)}
	if t.HardNegatives > 0 {
		var nSeq [][]int32
		for j, row := range negs {
			for k, n := range row {
				nSeq = append(nSeq, t.texts.seq(epoch, i, len(b)+j*t.HardNegatives+k, n))
			}
		}
		ni, nm := t.pad(nSeq, t.Cfg.ToolMaxLen)
		in = append(in, ni, nm)
	}
	return in, len(b), nil
}

// randomNegative returns a tool drawn uniformly from those not relevant to query q
// (randomNonRelevant), or an error when q is relevant to every tool.
func (t *Task) randomNegative(r *rand.Rand, q int) (int, error) {
	n := len(t.tools)
	if libs := t.Data.Libraries; len(libs) > 1 { // a tool of the query's library
		if rel := t.Train.Relevant[q]; len(rel) > 0 || t.pseudo.is(q) {
			var lib []int
			if t.pseudo.is(q) {
				lib = libs[t.Data.LibraryOf(t.pseudo.tool(q))].Tools
			} else {
				lib = libs[t.Data.LibraryOf(rel[0])].Tools
			}
			i, err := randomNonRelevant(r, len(lib), q, func(q, c int) bool { return t.rel(q, lib[c]) })
			if err != nil {
				return 0, fmt.Errorf("biencoder: query %q is relevant to every tool of its library: no hard negative to sample", t.Data.Queries[q].ID)
			}
			return lib[i], nil
		}
	}
	c, err := randomNonRelevant(r, n, q, t.rel)
	if err != nil {
		if t.pseudo.is(q) { // relevant to its tool only: the dataset has one tool
			return 0, fmt.Errorf("biencoder: the pseudo queries of tool %q are relevant to all %d tools: no hard negative to sample", t.Data.Tools[t.pseudo.tool(q)].ID, n)
		}
		return 0, fmt.Errorf("biencoder: query %q is relevant to all %d tools and has no mined negatives: no hard negative to sample", t.Data.Queries[q].ID, n)
	}
	return c, nil
}

// Evaluate implements train.Task: dev Recall/NDCG/COMP@K (metrics.DevKs) with text tool vectors.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	return evaluateText(t.Cfg, &t.Setup, store, false)
}

// evaluateText returns the dev metrics (metrics.DevKs) of the weights of store with text tool
// vectors; marked, each dev query is marked as iteration 0 (Marked with cfg.Marker). Without
// a dev split there are none.
func evaluateText(cfg *Config, s *train.Setup, store *model.Store, marked bool) (map[string]float64, error) {
	if s.Dev == nil {
		return map[string]float64{}, nil
	}
	e := &Embedder{Cfg: cfg, Tok: s.Tok, Backend: s.Backend, Store: store, Batch: 64}
	r, err := e.Ranker(s.Data, "text", "")
	if err != nil {
		return nil, err
	}
	var rk rank.Ranker = r
	if marked {
		rk = Marked{R: r, Marker: cfg.Marker}
	}
	return metrics.EvaluateDev(context.Background(), s.Data, s.Dev, rank.Texts(rk), metrics.DevKs)
}

// sameLibrary keeps, of each query's mined negatives, the tools of the query's library (the
// library of its relevant tools): mined over every tool, a negative from another library is
// never in the query's batch.
func sameLibrary(d *data.Dataset, negs map[int][]int) map[int][]int {
	lib := map[int]int{}
	for _, s := range d.Splits {
		for q, rel := range s.Relevant {
			if len(rel) > 0 {
				lib[q] = d.LibraryOf(rel[0])
			}
		}
	}
	out := make(map[int][]int, len(negs))
	for q, cands := range negs {
		l, ok := lib[q]
		if !ok {
			out[q] = cands
			continue
		}
		kept := make([]int, 0, len(cands))
		for _, c := range cands {
			if d.LibraryOf(c) == l {
				kept = append(kept, c)
			}
		}
		out[q] = kept
	}
	return out
}

var (
	_ train.Task   = (*Task)(nil)
	_ train.Shapes = (*Task)(nil)
)

// querySeqs tokenizes the queries qs (dataset indices) after the query prompt, into at most
// the query length, keyed by query index.
func querySeqs(s *train.Setup, c *Config, qs []int) map[int][]int32 {
	out := make(map[int][]int32, len(qs))
	for _, q := range qs {
		out[q] = s.Tok.Single(c.QueryPrompt+s.Data.Queries[q].Text, c.QueryMaxLen)
	}
	return out
}
