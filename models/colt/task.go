package colt

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/train"
)

// Task trains COLT's graph stage (it implements train.Task).
type Task struct {
	Cfg       Config
	Data      *data.Dataset
	Train     *data.Split
	Dev       *data.Split
	Graphs    *tgraph.COLTGraphs
	Queries   [][]float32 // stage-1 embeddings of every query (unit norm)
	Dim       int
	BatchSize int
	Seed      uint64
	Backend   compute.Backend
	Files_    map[string][]byte

	trainQ   []int
	epochNo  int
	epochQT  *tgraph.Bipartite
	epochQS  *tgraph.Bipartite
	haveEdge bool
}

// Prepare checks the inputs.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	t.trainQ = t.Train.Judged()
	if len(t.trainQ) == 0 {
		return fmt.Errorf("colt: no training queries")
	}
	if len(t.Queries) != len(t.Data.Queries) {
		return fmt.Errorf("colt: %d stage-1 query embeddings for %d queries", len(t.Queries), len(t.Data.Queries))
	}
	return nil
}

// Batches implements train.Task.
func (t *Task) Batches(int) int { return (len(t.trainQ) + t.BatchSize - 1) / t.BatchSize }

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node {
	st := t.Graphs.SceneTool.Const(in[0].Graph())
	return t.Cfg.Loss(s, in, len(t.Data.Queries), len(t.Data.Tools), len(t.Data.Scenes), t.Dim, st)
}

// edges returns the epoch's drop-out graphs, padded to the full edge count (fixed shapes).
func (t *Task) edges(epoch int) (qt, qs *tgraph.Bipartite, err error) {
	if t.haveEdge && t.epochNo == epoch {
		return t.epochQT, t.epochQS, nil
	}
	drop := func(b *tgraph.Bipartite, salt uint64) (*tgraph.Bipartite, error) {
		if t.Cfg.EdgeDropout == 0 {
			return b, nil
		}
		d, err := b.Dropout(t.Cfg.EdgeDropout, t.Seed^salt, epoch, tgraph.DropRenormalize)
		if err != nil {
			return nil, err
		}
		return d.Pad(b.NumEdges())
	}
	if qt, err = drop(t.Graphs.QueryTool, 0x7174); err != nil {
		return nil, nil, err
	}
	if qs, err = drop(t.Graphs.QueryScene, 0x7173); err != nil {
		return nil, nil, err
	}
	t.epochNo, t.epochQT, t.epochQS, t.haveEdge = epoch, qt, qs, true
	return qt, qs, nil
}

// Batch implements train.Task: B training queries, each with a list of L tools (its
// positives, then random non-relevant tools), labels and scene.
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	qt, qs, err := t.edges(epoch)
	if err != nil {
		return nil, 0, err
	}
	order := append([]int(nil), t.trainQ...)
	rand.New(rand.NewPCG(t.Seed, uint64(epoch))).Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	lo, hi := i*t.BatchSize, min((i+1)*t.BatchSize, len(order))
	if lo >= hi {
		return nil, 0, fmt.Errorf("colt: batch %d of epoch %d out of range", i, epoch)
	}
	r := rand.New(rand.NewPCG(t.Seed^0x636f6c74, uint64(epoch)<<32|uint64(i)))
	L, nt := t.Cfg.ListLen, len(t.Data.Tools)
	n := hi - lo
	bq := make([]int32, n)
	bs := make([]int32, n)
	list := make([]int32, 0, n*L)
	labels := make([]float32, 0, n*L)
	for j, q := range order[lo:hi] {
		bq[j] = int32(q)
		bs[j] = int32(t.Train.Scene[q])
		rel := t.Train.Relevant[q]
		isRel := map[int]bool{}
		for k, tool := range rel {
			isRel[tool] = true
			if k < L-1 {
				list = append(list, int32(tool))
				labels = append(labels, 1)
			}
		}
		for len(list) < (j+1)*L {
			tool := r.IntN(nt)
			if !isRel[tool] {
				list = append(list, int32(tool))
				labels = append(labels, 0)
			}
		}
	}
	ql, qr, qw := qt.Tensors()
	sl, sr, sw := qs.Tensors()
	return []*tensors.Tensor{ql, qr, qw, sl, sr, sw,
		tensors.FromFlatDataAndDimensions(bq, n),
		tensors.FromFlatDataAndDimensions(list, n, L),
		tensors.FromFlatDataAndDimensions(labels, n, L),
		tensors.FromFlatDataAndDimensions(bs, n)}, n, nil
}

// ToolEmbeddings returns the propagated tool embeddings e_t^T (unit norm) for the current
// weights, on the full (no dropout) graphs.
func (t *Task) ToolEmbeddings(store *model.Store) ([][]float32, error) {
	nq, nt, ns := len(t.Data.Queries), len(t.Data.Tools), len(t.Data.Scenes)
	out, err := model.CallOnce(t.Backend, store, func(s *model.Scope, g *Graph) *Node {
		_, etT, _, _, _ := t.Cfg.Propagate(s, g, nq, nt, ns, t.Dim, t.Graphs.QueryTool.Const(g), t.Graphs.QueryScene.Const(g), t.Graphs.SceneTool.Const(g))
		return etT
	})
	if err != nil {
		return nil, err
	}
	flat := tensors.MustCopyFlatData[float32](out)
	rows := make([][]float32, nt)
	for i := range rows {
		rows[i] = flat[i*t.Dim : (i+1)*t.Dim]
	}
	NormalizeRows(rows)
	return rows, nil
}

// Evaluate implements train.Task: dev metrics with stage-1 query embeddings against the
// propagated tools.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	tools, err := t.ToolEmbeddings(store)
	if err != nil {
		return nil, err
	}
	var rankings []retrieve.Ranking
	var rel [][]int
	for _, q := range t.Dev.Queries {
		rankings = append(rankings, rank(t.Queries[q], tools, 10))
		rel = append(rel, t.Dev.Relevant[q])
	}
	return metrics.Evaluate(rankings, rel, []int{1, 3, 5, 10}).Map(), nil
}

// Files implements train.Task.
func (t *Task) Files() (map[string][]byte, error) { return t.Files_, nil }

func rank(q []float32, tools [][]float32, k int) retrieve.Ranking {
	scores := make([]float32, len(tools))
	for i, v := range tools {
		s := float32(0)
		for d := range q {
			s += q[d] * v[d]
		}
		scores[i] = s
	}
	return retrieve.TopK(scores, k)
}

// Retriever ranks tools for query texts: stage-1 query embeddings against COLT's tools.
type Retriever struct {
	Stage1 *biencoder.Embedder
	Tools  [][]float32
}

// Rank implements retrieve.Ranker.
func (r *Retriever) Rank(ctx context.Context, queries []string, k int) ([]retrieve.Ranking, error) {
	qe, err := r.Stage1.Embed(biencoder.QueryTower, queries)
	if err != nil {
		return nil, err
	}
	NormalizeRows(qe)
	out := make([]retrieve.Ranking, len(qe))
	for i, q := range qe {
		out[i] = rank(q, r.Tools, k)
	}
	return out, ctx.Err()
}

var _ train.Task = (*Task)(nil)
