package crossencoder

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/train"
)

// Task trains a cross-encoder (it implements train.Task). Every training example is a group:
// a (query, positive API) pair of the training qrels followed by Negatives pairs of the same
// query with APIs sampled from the retriever's top-m (Candidates) that are not positives.
type Task struct {
	Cfg *Config
	// Setup's BatchSize counts groups per batch.
	train.Setup
	// Candidates maps a query (training and dev) to the retriever's top-m APIs, best first.
	Candidates map[int][]int
	Negatives  int // negatives per positive

	pairs []train.Pair
	qIDs  map[int][]int32
	tools [][]int32
	order map[int][][]train.Pair
}

// Prepare tokenizes the texts once and checks the configuration.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("crossencoder: %w", err)
	}
	if t.BatchSize < 1 || t.Negatives < 1 {
		return fmt.Errorf("crossencoder: batch %d and negatives per positive %d must be >= 1", t.BatchSize, t.Negatives)
	}
	if len(t.Data.Tools) <= 1 {
		return fmt.Errorf("crossencoder: need more than one tool")
	}
	t.pairs = t.TrainPairs()
	if len(t.pairs) == 0 {
		return fmt.Errorf("crossencoder: split %s has no (query, tool) pairs", t.Train.Name)
	}
	t.qIDs = map[int][]int32{}
	for _, q := range t.Train.Queries {
		ids := t.Tok.Encode(t.Data.Queries[q].Text)
		t.qIDs[q] = ids[:min(len(ids), t.Cfg.MaxLen)]
	}
	t.tools = make([][]int32, len(t.Data.Tools))
	for i, tool := range t.Data.Tools {
		ids := t.Tok.Encode(tool.Text)
		t.tools[i] = ids[:min(len(ids), t.Cfg.MaxLen)]
	}
	t.order = map[int][][]train.Pair{}
	return nil
}

// batches returns epoch's batches of groups' positive pairs: one shuffled pass over the
// pairs cut into BatchSize groups (a trailing partial batch dropped), or on a multi-source
// dataset train.LibraryBatches: every batch from one library, each library's share of the
// batches its weight (Library.Weight), short batches topped up within the library.
func (t *Task) batches(epoch int) [][]train.Pair {
	if b, ok := t.order[epoch]; ok {
		return b
	}
	var b [][]train.Pair
	if len(t.Data.Libraries) > 1 {
		groups, weights := train.ByLibrary(t.Data, t.pairs)
		b = train.LibraryBatches(groups, weights, t.BatchSize, t.Seed, epoch, true)
	} else {
		o := append([]train.Pair(nil), t.pairs...)
		r := rand.New(rand.NewPCG(t.Seed, uint64(epoch)+0x63726f73))
		r.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		for lo := 0; lo+t.BatchSize <= len(o); lo += t.BatchSize {
			b = append(b, o[lo:lo+t.BatchSize])
		}
		if len(b) == 0 { // fewer pairs than a batch: one short batch
			b = append(b, o)
		}
	}
	t.order = map[int][][]train.Pair{epoch: b} // keep one epoch cached
	return b
}

// Batches implements train.Task.
func (t *Task) Batches(epoch int) int { return len(t.batches(epoch)) }

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node { return t.Cfg.Loss(s, in) }

// SampleNegatives draws k non-positive APIs of the nTools in the library for one query:
// distinct ones from cands (the retriever's top-m) first, then uniformly from the rest of the
// library. When fewer than k non-positive APIs exist the ones found repeat, so a group always
// has k negatives; when none exists (the query is relevant to every API) it returns an error.
func SampleNegatives(r *rand.Rand, cands []int, positive func(int) bool, nTools, k int) ([]int, error) {
	return SampleNegativesIn(r, cands, positive, nil, nTools, k)
}

// SampleNegativesIn is SampleNegatives within one library of a multi-source dataset: lib
// lists the library's tool indices (nil: every index below nTools), and neither a candidate
// outside lib nor a uniform draw leaves it, so a group's negatives are tools its query could
// have been shown beside (Dataset.Libraries).
func SampleNegativesIn(r *rand.Rand, cands []int, positive func(int) bool, lib []int, nTools, k int) ([]int, error) {
	if k <= 0 {
		return nil, nil
	}
	n, tool := nTools, func(i int) int { return i }
	in := func(c int) bool { return c >= 0 && c < nTools }
	if lib != nil {
		n, tool = len(lib), func(i int) int { return lib[i] }
		in = func(c int) bool {
			_, ok := slices.BinarySearch(lib, c)
			return ok
		}
	}
	taken := map[int]bool{}
	var pool []int
	for _, c := range cands {
		if in(c) && !positive(c) && !taken[c] {
			taken[c] = true
			pool = append(pool, c)
		}
	}
	clear(taken)
	out := make([]int, 0, k)
	draw := func() {
		i := r.IntN(len(pool))
		out = append(out, pool[i])
		taken[pool[i]] = true
		pool[i] = pool[len(pool)-1]
		pool = pool[:len(pool)-1]
	}
	for len(out) < k && len(pool) > 0 {
		draw()
	}
	for tries := 0; len(out) < k && tries < 100*k && n > 0; tries++ {
		t := tool(r.IntN(n))
		if !taken[t] && !positive(t) {
			taken[t] = true
			out = append(out, t)
		}
	}
	if len(out) < k { // few non-positives left: draw from all of them
		pool = pool[:0]
		for i := range n {
			if t := tool(i); !taken[t] && !positive(t) {
				pool = append(pool, t)
			}
		}
		for len(out) < k && len(pool) > 0 {
			draw()
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("crossencoder: no negative to sample: the query is relevant to all %d APIs", n)
	}
	for i := 0; len(out) < k; i++ { // fewer than k non-positive APIs: repeat them
		out = append(out, out[i])
	}
	return out, nil
}

// Batch implements train.Task: G groups of 1+k pairs and labels [G, 1+k].
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	bs := t.batches(epoch)
	if i < 0 || i >= len(bs) {
		return nil, 0, fmt.Errorf("batch %d of epoch %d out of range (%d batches)", i, epoch, len(bs))
	}
	batch := bs[i]
	r := rand.New(rand.NewPCG(t.Seed^0x6e6567, uint64(epoch)<<32|uint64(i)))
	k := t.Negatives
	var seqs, types [][]int32
	labels := make([]float32, 0, len(batch)*(1+k))
	for _, p := range batch {
		rel := t.Train.Relevant[p.Query]
		isPos := func(a int) bool {
			j := sort.SearchInts(rel, a)
			return j < len(rel) && rel[j] == a
		}
		var lib []int
		if libs := t.Data.Libraries; len(libs) > 1 {
			lib = libs[t.Data.LibraryOf(p.Tool)].Tools
		}
		negs, err := SampleNegativesIn(r, t.Candidates[p.Query], isPos, lib, len(t.tools), k)
		if err != nil {
			return nil, 0, fmt.Errorf("query %q: %w", t.Data.Queries[p.Query].ID, err)
		}
		for j, a := range append([]int{p.Tool}, negs...) {
			ids, ty := PairIDs(t.Tok, t.qIDs[p.Query], t.tools[a], t.Cfg.MaxLen)
			seqs, types = append(seqs, ids), append(types, ty)
			if j == 0 {
				labels = append(labels, 1)
			} else {
				labels = append(labels, 0)
			}
		}
	}
	ids, ty, mask := encoder.Tensors(t.Tok.Pad(seqs, types, t.Cfg.MaxLen))
	return []*tensors.Tensor{ids, ty, mask, tensors.FromFlatDataAndDimensions(labels, len(batch), 1+k)}, len(batch), nil
}

// Evaluate implements train.Task: the dev metrics (metrics.DevKs) of reranking each dev query's
// candidates.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	if t.Dev == nil {
		return map[string]float64{}, nil
	}
	texts := make([]string, len(t.Data.Tools))
	for i, tool := range t.Data.Tools {
		texts[i] = tool.Text
	}
	m := NewModel(t.Cfg, t.Tok, t.Backend, store, texts)
	return metrics.EvaluateDev(context.Background(), t.Data, t.Dev, Reranker(m, rank.Fixed(t.Candidates), 0), metrics.DevKs)
}

// Reranker returns the ranker that reorders the first depth tools first gives each query (all
// of them when depth <= 0) by m's scores, batched across queries.
func Reranker(m *Model, first rank.QueryRanker, depth int) *rank.Rerank {
	score := func(ctx context.Context, queries []string, pairs []rank.Pair) ([]float32, error) {
		ps := make([]Pair, len(pairs))
		for i, p := range pairs {
			ps[i] = Pair(p)
		}
		return m.ScorePairs(ctx, queries, ps)
	}
	return &rank.Rerank{First: first, Depth: depth, Score: score}
}

var _ train.Task = (*Task)(nil)
