package biencoder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// The query2query objective is the Tool2Vec paper's retriever recipe. Its model embeds
// queries only: a tool is the mean embedding of the training queries that use it (usage
// vectors, UsageVectors), so the objective pulls together queries that share a tool and
// pushes apart queries that share none. Each training query (the anchor) is paired with its
// nearest training queries that share at least one of its tools (positives) and its nearest
// training queries that share none (negatives), nearest by a first retriever (MineTriplets);
// every (anchor, positive) pair is one example, with one of the anchor's negatives drawn per
// example and epoch. The loss is the triplet margin loss with Euclidean distance,
// max(0, ‖a − p‖ − ‖a − n‖ + margin) (margin 1 by default), over the pooled embeddings of one
// shared tower (mean pooling by default; L2-normalised for cosine models, as the paper's E5
// with its Normalize module). The dev metric is retrieval with usage vectors from the
// training part.

// Objectives.
const (
	ObjectiveQuery2Tool  = "query2tool"
	ObjectiveQuery2Query = "query2query"
)

// TripletsFile is the name of the mined query2query neighbours in a run directory: written
// when the run starts and read back on -resume, so a resumed run trains on the same triplets.
const TripletsFile = "query2query.jsonl"

// ParseObjective checks an objective name ("" means query2tool).
func ParseObjective(s string) (string, error) {
	switch s {
	case "", ObjectiveQuery2Tool:
		return ObjectiveQuery2Tool, nil
	case ObjectiveQuery2Query:
		return ObjectiveQuery2Query, nil
	}
	return "", fmt.Errorf("objective %q: want %s or %s", s, ObjectiveQuery2Tool, ObjectiveQuery2Query)
}

func (c *Config) validateObjective() error {
	o, err := ParseObjective(c.Objective)
	if err != nil {
		return fmt.Errorf("biencoder: %w", err)
	}
	if o == ObjectiveQuery2Query {
		if !c.Shared {
			return fmt.Errorf("biencoder: objective %s trains one shared tower (queries on every side of a triplet); separate towers would leave the tool tower untrained", o)
		}
		if !(c.Margin > 0) {
			return fmt.Errorf("biencoder: objective %s: margin %v must be > 0", o, c.Margin)
		}
	}
	return nil
}

// tripletLoss is the query2query loss. Inputs: ids and mask [3B, S] of the B anchors, then
// the B positives, then the B negatives (one padded batch: one encoder pass).
func (c *Config) tripletLoss(root *model.Scope, in []*Node) *Node {
	e := c.Embed(root, QueryTower, in[0], in[1])
	b := e.Shape().Dimensions[0] / 3
	a := Slice(e, AxisRange(0, b))
	p := Slice(e, AxisRange(b, 2*b))
	n := Slice(e, AxisRange(2*b, 3*b))
	return losses.Triplet(a, p, n, c.Margin, losses.DistEuclidean)
}

// Neighbours are an anchor query's mined training queries (dataset query indices), nearest
// first.
type Neighbours struct {
	Anchor int
	// Positives share at least one tool with the anchor; Negatives share none.
	Positives, Negatives []int
}

// Scorer returns the similarity of training query i to every training query (len = number
// of training queries; higher is nearer).
type Scorer func(i int) ([]float32, error)

// EmbeddingScorer scores by the inner product of query embeddings (cosine for L2-normalised
// ones): emb[i] is training query i's embedding.
func EmbeddingScorer(emb [][]float32) Scorer {
	return func(i int) ([]float32, error) {
		q := emb[i]
		out := make([]float32, len(emb))
		for j, v := range emb {
			if len(v) != len(q) {
				return nil, fmt.Errorf("query embedding %d has %d dimensions, embedding %d %d", j, len(v), i, len(q))
			}
			s := float32(0)
			for k, x := range q {
				s += x * v[k]
			}
			out[j] = s
		}
		return out, nil
	}
}

// BM25Scorer scores by Okapi BM25 (bm25.DefaultParams) of training query i's text against
// every training query text as a document.
func BM25Scorer(texts []string) Scorer {
	ix := bm25.New(texts, bm25.DefaultParams)
	return func(i int) ([]float32, error) { return ix.Scores(texts[i]), nil }
}

// MineTriplets mines the query2query neighbours of the judged queries of train (in their
// order; score(i) scores the i-th of them against all). For each anchor it keeps the
// positives nearest training queries that share a tool with it and the negatives nearest
// that share none; equal scores go to the earlier query, and the anchor is never its own
// neighbour. Anchors without any positive (their tools have no other training query) or
// without any negative are left out; skipped counts them.
func MineTriplets(train *data.Split, score Scorer, positives, negatives int) (out []Neighbours, skipped int, err error) {
	if positives < 1 || negatives < 1 {
		return nil, 0, fmt.Errorf("mine triplets: %d positives and %d negatives per query: want >= 1 each", positives, negatives)
	}
	qs := train.Judged()
	byTool := map[int][]int{} // tool -> positions in qs
	for i, q := range qs {
		for _, t := range train.Relevant[q] {
			if l := byTool[t]; len(l) == 0 || l[len(l)-1] != i {
				byTool[t] = append(l, i)
			}
		}
	}
	shares := make([]bool, len(qs))
	var marked, cands []int
	var sub []float32
	for i, q := range qs {
		s, err := score(i)
		if err != nil {
			return nil, 0, fmt.Errorf("mine triplets: query %d: %w", i, err)
		}
		if len(s) != len(qs) {
			return nil, 0, fmt.Errorf("mine triplets: query %d: %d scores for %d training queries", i, len(s), len(qs))
		}
		marked = marked[:0]
		for _, t := range train.Relevant[q] {
			for _, j := range byTool[t] {
				if !shares[j] {
					shares[j] = true
					marked = append(marked, j)
				}
			}
		}
		// Positives: the best scores among the sharing queries, scanned in index order so
		// that TopK's tie-break (lower position first) is by query order.
		cands, sub = cands[:0], sub[:0]
		for j := range qs {
			if shares[j] && j != i {
				cands, sub = append(cands, j), append(sub, s[j])
			}
		}
		n := Neighbours{Anchor: q}
		if len(cands) > 0 {
			for _, k := range rank.TopK(sub, positives).Tools {
				n.Positives = append(n.Positives, qs[cands[k]])
			}
		}
		// Negatives: the best scores overall skipping the sharing queries (the anchor is one):
		// the top len(marked)+negatives hold enough of them.
		for _, j := range rank.TopK(s, min(len(qs), len(marked)+negatives)).Tools {
			if !shares[j] {
				n.Negatives = append(n.Negatives, qs[j])
				if len(n.Negatives) == negatives {
					break
				}
			}
		}
		for _, j := range marked {
			shares[j] = false
		}
		if len(n.Positives) == 0 || len(n.Negatives) == 0 {
			skipped++
			continue
		}
		out = append(out, n)
	}
	return out, skipped, nil
}

// TripletsLine is one line of a TripletsFile (JSONL), by query ids.
type TripletsLine struct {
	Query     string   `json:"query_id"`
	Positives []string `json:"positive_ids"`
	Negatives []string `json:"negative_ids"`
}

// WriteTriplets writes mined neighbours as JSONL with ids, atomically.
func WriteTriplets(path string, d *data.Dataset, ns []Neighbours) error {
	ids := func(qs []int) []string {
		out := make([]string, len(qs))
		for i, q := range qs {
			out[i] = d.Queries[q].ID
		}
		return out
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, n := range ns {
		if err := enc.Encode(TripletsLine{Query: d.Queries[n.Anchor].ID, Positives: ids(n.Positives), Negatives: ids(n.Negatives)}); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return rundir.WriteFile(path, buf.Bytes())
}

// ReadTriplets reads a TripletsFile; a malformed line, an unknown query id or an anchor
// without positives or negatives is an error naming the line.
func ReadTriplets(path string, d *data.Dataset) ([]Neighbours, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Neighbours
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for ln := 1; sc.Scan(); ln++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l TripletsLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: malformed JSON: %w", path, ln, err)
		}
		idx := func(id string) (int, error) {
			q, ok := d.QueryIndex[id]
			if !ok {
				return 0, fmt.Errorf("%s:%d: unknown query id %q", path, ln, id)
			}
			return q, nil
		}
		var n Neighbours
		if n.Anchor, err = idx(l.Query); err != nil {
			return nil, err
		}
		for _, id := range l.Positives {
			q, err := idx(id)
			if err != nil {
				return nil, err
			}
			n.Positives = append(n.Positives, q)
		}
		for _, id := range l.Negatives {
			q, err := idx(id)
			if err != nil {
				return nil, err
			}
			n.Negatives = append(n.Negatives, q)
		}
		if len(n.Positives) == 0 || len(n.Negatives) == 0 {
			return nil, fmt.Errorf("%s:%d: query %q has %d positives and %d negatives, want >= 1 each", path, ln, l.Query, len(n.Positives), len(n.Negatives))
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// QueryTask trains a bi-encoder with the query2query objective (it implements train.Task).
type QueryTask struct {
	Cfg *Config
	train.Setup
	// Triplets are the mined neighbours (MineTriplets or ReadTriplets) of Train's queries.
	Triplets []Neighbours
	// Padding: see Task (the anchors, positives and negatives share one padded length).
	Padding Padding

	examples []queryExample
	seqs     map[int][]int32
	epoch    int
	batches  [][]int // of epoch: example indices
}

// queryExample is an (anchor, positive) pair and the anchor's negatives to draw from.
type queryExample struct {
	anchor, positive int
	negatives        []int
}

// Prepare checks the configuration and the triplets and tokenizes the queries once.
func (t *QueryTask) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if t.Cfg.Objective != ObjectiveQuery2Query {
		return fmt.Errorf("biencoder: QueryTask needs objective %s, config has %q", ObjectiveQuery2Query, t.Cfg.Objective)
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("biencoder: %w", err)
	}
	if t.BatchSize < 1 {
		return fmt.Errorf("biencoder: batch size %d: want >= 1", t.BatchSize)
	}
	isTrain := map[int]bool{}
	for _, q := range t.Train.Judged() {
		isTrain[q] = true
	}
	t.seqs = map[int][]int32{}
	tok := func(q int) error {
		if !isTrain[q] {
			return fmt.Errorf("biencoder: triplet query %q is not a judged query of split %s", t.Data.Queries[q].ID, t.Train.Name)
		}
		if _, ok := t.seqs[q]; !ok {
			t.seqs[q] = t.Tok.Single(t.Cfg.QueryPrompt+t.Data.Queries[q].Text, t.Cfg.QueryMaxLen)
		}
		return nil
	}
	t.examples = nil
	for _, n := range t.Triplets {
		if len(n.Negatives) == 0 {
			return fmt.Errorf("biencoder: triplet anchor %q has no negative", t.Data.Queries[n.Anchor].ID)
		}
		for _, q := range append(append([]int{n.Anchor}, n.Positives...), n.Negatives...) {
			if err := tok(q); err != nil {
				return err
			}
		}
		for _, p := range n.Positives {
			t.examples = append(t.examples, queryExample{anchor: n.Anchor, positive: p, negatives: n.Negatives})
		}
	}
	if len(t.examples) == 0 {
		return fmt.Errorf("biencoder: no query2query triplet (no training query shares a tool with another)")
	}
	t.batches, t.epoch = nil, -1
	return nil
}

// Examples is the number of (anchor, positive) examples of an epoch.
func (t *QueryTask) Examples() int { return len(t.examples) }

// epochBatches returns the batches of an epoch: the examples in an order that is a
// deterministic function of (Seed, epoch), cut into batches of BatchSize (the last may be
// smaller).
func (t *QueryTask) epochBatches(epoch int) [][]int {
	if t.epoch == epoch && t.batches != nil {
		return t.batches
	}
	perm := rand.New(rand.NewPCG(t.Seed, uint64(epoch))).Perm(len(t.examples))
	var bs [][]int
	for lo := 0; lo < len(perm); lo += t.BatchSize {
		bs = append(bs, perm[lo:min(lo+t.BatchSize, len(perm))])
	}
	t.epoch, t.batches = epoch, bs // keep one epoch cached
	return bs
}

// Batches implements train.Task.
func (t *QueryTask) Batches(epoch int) int { return len(t.epochBatches(epoch)) }

// Loss implements train.Task.
func (t *QueryTask) Loss(s *model.Scope, in []*Node) *Node { return t.Cfg.Loss(s, in) }

// Batch implements train.Task: the anchors, positives and negatives of micro-batch i padded
// together, [3B, S]; each example's negative is drawn from its anchor's mined negatives by a
// generator seeded with (Seed, epoch, i).
func (t *QueryTask) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	tr, err := t.triplets(epoch, i)
	if err != nil {
		return nil, 0, err
	}
	n := len(tr)
	seqs := make([][]int32, 3*n)
	for j, x := range tr {
		seqs[j], seqs[n+j], seqs[2*n+j] = t.seqs[x[0]], t.seqs[x[1]], t.seqs[x[2]]
	}
	ids, mask := t.Padding.Pad(t.Tok, seqs, t.Cfg.QueryMaxLen)
	return []*tensors.Tensor{ids, mask}, n, nil
}

// MaxShapes implements train.Shapes: a full and a short last batch, times the padded lengths.
func (t *QueryTask) MaxShapes() int {
	return maxShapes(2, t.Padding.Lengths(t.Tok, t.Cfg.QueryMaxLen))
}

// triplets returns the (anchor, positive, negative) query indices of micro-batch i of epoch.
func (t *QueryTask) triplets(epoch, i int) ([][3]int, error) {
	bs := t.epochBatches(epoch)
	if i < 0 || i >= len(bs) {
		return nil, fmt.Errorf("batch %d of epoch %d out of range (%d)", i, epoch, len(bs))
	}
	r := rand.New(rand.NewPCG(t.Seed^0x71327132, uint64(epoch)<<32|uint64(i)))
	out := make([][3]int, len(bs[i]))
	for j, x := range bs[i] {
		ex := t.examples[x]
		out[j] = [3]int{ex.anchor, ex.positive, ex.negatives[r.IntN(len(ex.negatives))]}
	}
	return out, nil
}

// Evaluate implements train.Task: dev Recall/NDCG/COMP@K (metrics.DevKs) with usage tool vectors
// from the training part (the objective trains query embeddings only).
func (t *QueryTask) Evaluate(store *model.Store) (map[string]float64, error) {
	if t.Dev == nil {
		return map[string]float64{}, nil
	}
	e := &Embedder{Cfg: t.Cfg, Tok: t.Tok, Backend: t.Backend, Store: store, Batch: 64}
	r, err := e.RetrieverFrom(t.Data, VectorsUsage, t.Train)
	if err != nil {
		return nil, err
	}
	return metrics.EvaluateDev(context.Background(), t.Data, t.Dev, rank.Texts(r), metrics.DevKs)
}

var _ train.Task = (*QueryTask)(nil)
