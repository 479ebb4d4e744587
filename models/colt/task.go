package colt

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/train"
)

// Task trains COLT's graph stage (it implements train.Task).
type Task struct {
	Cfg Config
	// Setup's Tok is not used (the queries come embedded).
	train.Setup
	Graphs  *tgraph.COLTGraphs
	Queries [][]float32 // stage-1 embeddings of every query (unit norm)
	Dim     int

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
	if t.BatchSize <= 0 {
		return fmt.Errorf("colt: batch size %d must be > 0", t.BatchSize)
	}
	if t.Dim <= 0 {
		return fmt.Errorf("colt: embedding size %d must be > 0", t.Dim)
	}
	t.trainQ = t.Train.Judged()
	if len(t.trainQ) == 0 {
		return fmt.Errorf("colt: no training queries")
	}
	if len(t.Queries) != len(t.Data.Queries) {
		return fmt.Errorf("colt: %d stage-1 query embeddings for %d queries", len(t.Queries), len(t.Data.Queries))
	}
	// Every training query needs its scene (the scene-centric view and its contrastive loss):
	// a dataset without scene files gets one per distinct tool set (data.Load), so a missing
	// one is an error in the data, not scene 0.
	for _, q := range t.trainQ {
		s, ok := t.Train.Scene[q]
		if !ok {
			return fmt.Errorf("colt: training query %q (split %s) has no scene", t.Data.Queries[q].ID, t.Train.Name)
		}
		if s < 0 || s >= len(t.Data.Scenes) {
			return fmt.Errorf("colt: training query %q (split %s): scene %d out of range [0, %d)", t.Data.Queries[q].ID, t.Train.Name, s, len(t.Data.Scenes))
		}
		if len(t.Queries[q]) != t.Dim {
			return fmt.Errorf("colt: stage-1 embedding of query %q has %d dimensions, want %d", t.Data.Queries[q].ID, len(t.Queries[q]), t.Dim)
		}
	}
	return nil
}

// Batches implements train.Task.
func (t *Task) Batches(int) int { return (len(t.trainQ) + t.BatchSize - 1) / t.BatchSize }

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node {
	g := in[0].Graph()
	st := t.Graphs.SceneTool.Const(g)
	known := Const(g, KnownScenes(t.Graphs))
	return t.Cfg.Loss(s, in, len(t.Data.Queries), len(t.Data.Tools), len(t.Data.Scenes), t.Dim, st, known)
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
	nt := len(t.Data.Tools)
	L := min(t.Cfg.ListLen, nt)
	n := hi - lo
	bq := make([]int32, n)
	bs := make([]int32, n)
	emb := make([]float32, 0, n*t.Dim)
	list := make([]int32, 0, n*L)
	labels := make([]float32, 0, n*L)
	for j, q := range order[lo:hi] {
		bq[j] = int32(q)
		bs[j] = int32(t.Train.Scene[q]) // present: Prepare checks
		emb = append(emb, t.Queries[q]...)
		inList := map[int]bool{}
		for k, tool := range t.Train.Relevant[q] {
			inList[tool] = true
			if k < L-1 {
				list = append(list, int32(tool))
				labels = append(labels, 1)
			}
		}
		// Negatives: distinct non-relevant tools, uniformly at random: by rejection when the
		// list is short next to the catalogue, else from a permutation.
		if need := (j+1)*L - len(list); nt-len(inList) < need {
			return nil, 0, fmt.Errorf("colt: query %d: %d relevant tools leave fewer than %d negatives among %d tools", q, len(t.Train.Relevant[q]), need, nt)
		}
		if 2*L <= nt {
			for len(list) < (j+1)*L {
				if tool := r.IntN(nt); !inList[tool] {
					inList[tool] = true
					list = append(list, int32(tool))
					labels = append(labels, 0)
				}
			}
		} else {
			for _, tool := range r.Perm(nt) {
				if len(list) == (j+1)*L {
					break
				}
				if !inList[tool] {
					list = append(list, int32(tool))
					labels = append(labels, 0)
				}
			}
		}
	}
	ql, qr, qw := qt.Tensors()
	sl, sr, sw := qs.Tensors()
	return []*tensors.Tensor{ql, qr, qw, sl, sr, sw,
		tensors.FromFlatDataAndDimensions(bq, n),
		tensors.FromFlatDataAndDimensions(list, n, L),
		tensors.FromFlatDataAndDimensions(labels, n, L),
		tensors.FromFlatDataAndDimensions(bs, n),
		tensors.FromFlatDataAndDimensions(emb, n, t.Dim)}, n, nil
}

// KnownScenes marks the scenes that have a training query (edges in the query-scene graph):
// the only scenes a query outside the graph may be attached to.
func KnownScenes(g *tgraph.COLTGraphs) []bool {
	known := make([]bool, g.QueryScene.NRight)
	for e, r := range g.QueryScene.Right {
		if g.QueryScene.Weight[e] != 0 {
			known[r] = true
		}
	}
	return known
}

// Scorer returns the scorer of queries outside the graph for the current weights, propagated
// over the full (no dropout) graphs.
func (t *Task) Scorer(store *model.Store) (*Scorer, error) {
	nq, nt, ns := len(t.Data.Queries), len(t.Data.Tools), len(t.Data.Scenes)
	outs, err := model.CallOnceN(t.Backend, store, func(s *model.Scope, g *Graph) []*Node {
		v := t.Cfg.Propagate(s, g, nq, nt, ns, t.Dim, t.Graphs.QueryTool.Const(g), t.Graphs.QueryScene.Const(g), t.Graphs.SceneTool.Const(g))
		return []*Node{v.TT, v.SS, v.S0}
	})
	if err != nil {
		return nil, err
	}
	sc := &Scorer{Tools: t.rows(outs[0])}
	NormalizeRows(sc.Tools)
	if t.Cfg.Inductive && t.Cfg.Views != "tool" {
		known := KnownScenes(t.Graphs)
		keys, vals := t.rows(outs[1]), t.rows(outs[2])
		NormalizeRows(keys)
		for i := range known {
			if known[i] {
				sc.SceneKeys = append(sc.SceneKeys, keys[i])
				sc.SceneVals = append(sc.SceneVals, vals[i])
			}
		}
		sc.Temp, sc.Weight = t.Cfg.AttachTemp, t.Cfg.SceneWeight
	}
	sc.Views = t.Cfg.Views
	return sc, nil
}

func (t *Task) rows(x *tensors.Tensor) [][]float32 {
	flat := tensors.MustCopyFlatData[float32](x)
	out := make([][]float32, len(flat)/t.Dim)
	for i := range out {
		out[i] = flat[i*t.Dim : (i+1)*t.Dim]
	}
	return out
}

// Evaluate implements train.Task: dev metrics of the dev queries (outside the graph, stage-1
// embeddings) against the propagated tools.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	if t.Dev == nil {
		return map[string]float64{}, nil
	}
	sc, err := t.Scorer(store)
	if err != nil {
		return nil, err
	}
	r := rank.ScoreFunc(func(_ context.Context, q rank.Query) ([]float32, error) {
		return sc.Scores(t.Queries[q.Index]), nil
	})
	return metrics.EvaluateDev(context.Background(), t.Data, t.Dev, r, metrics.DevKs)
}

// Scorer scores tools for a query that is not a graph node, from its stage-1 embedding e_q
// (unit norm): score(q, t) = cos(e_q^S, e_t^T) + cos(e_q, e_t^T), where e_q^S = e_q without
// scenes (Config.Inductive off) or e_q + Weight · normalize(Σ_s w_s SceneVals[s]),
// w = softmax(cos(e_q, SceneKeys[s]) / Temp), with scenes. These are the scores the training
// graph gives a batch query (Config.Inductive or HoldOut) for the same weights.
type Scorer struct {
	Tools        [][]float32 // e_t^T, unit norm
	SceneKeys    [][]float32 // e_s^S of the training scenes, unit norm; nil without Inductive
	SceneVals    [][]float32 // their inputs e_s (what an attached query receives)
	Temp, Weight float64
	// Views is Config.Views: "both" (or ""), "scene" (score = cos(e_q^S, e_t^T)) or "tool"
	// (score = cos(e_q, e_t^T); the scenes are not used), as the training loss scores them.
	Views string
}

func dot(a, b []float32) float32 {
	s := float32(0)
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Scores returns the score of every tool for a unit-norm query embedding q.
func (sc *Scorer) Scores(q []float32) []float32 {
	out := make([]float32, len(sc.Tools))
	views := float32(2) // e_q^S = e_q: cos(e_q^S, e_t) + cos(e_q, e_t)
	if sc.Views == "scene" || sc.Views == "tool" {
		views = 1
	}
	for i, v := range sc.Tools {
		out[i] = views * dot(q, v)
	}
	if sc.Views == "tool" || len(sc.SceneKeys) == 0 {
		return out
	}
	w := make([]float64, len(sc.SceneKeys))
	best := math.Inf(-1)
	for s, k := range sc.SceneKeys {
		w[s] = float64(dot(q, k)) / sc.Temp
		best = max(best, w[s])
	}
	m := make([]float32, len(q))
	for s := range w {
		w[s] = math.Exp(w[s] - best)
		for d, x := range sc.SceneVals[s] {
			m[d] += float32(w[s]) * x
		}
	}
	NormalizeRows([][]float32{m})
	qs := make([]float32, len(q))
	for d := range q {
		qs[d] = q[d] + float32(sc.Weight)*m[d]
	}
	NormalizeRows([][]float32{qs})
	for i, v := range sc.Tools {
		if sc.Views == "scene" {
			out[i] = dot(qs, v)
		} else {
			out[i] = dot(qs, v) + dot(q, v)
		}
	}
	return out
}

// Ranker ranks tools for query texts: stage-1 query embeddings scored by COLT.
type Ranker struct {
	Stage1 *biencoder.Embedder
	Scorer *Scorer
}

// Rank implements rank.Ranker.
func (r *Ranker) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	qe, err := r.Stage1.Embed(biencoder.QueryTower, queries)
	if err != nil {
		return nil, err
	}
	NormalizeRows(qe)
	out := make([]rank.Ranking, len(qe))
	for i, q := range qe {
		out[i] = rank.TopK(r.Scorer.Scores(q), k)
	}
	return out, ctx.Err()
}

var _ train.Task = (*Task)(nil)
