// Package colt is COLT's collaborative stage (Qu et al., CIKM 2024): LightGCN over the
// query-tool and query-scene graphs of the training split, on top of a stage-1 bi-encoder,
// trained with a list-wise multi-label loss and cross-view contrastive losses, so that the
// retrieved set is complete.
//
// Nodes start from the stage-1 embeddings (queries: query tower; tools: tool tower; scenes:
// the mean of their tools) and are trainable. Two views: tool-centric (Q-T graph -> e_q^T,
// e_t^T; a scene's e_s^T is the mean of its tools' e_t^T) and scene-centric (Q-S graph ->
// e_q^S, e_s^S). score(q, t) = cos(e_q^S, e_t^T) + cos(e_q^T, e_t^T).
//
// Queries outside the training split (dev, test, new queries) are not graph nodes: they keep
// their stage-1 embedding e_q for both views, so score(q, t) = 2 cos(e_q, e_t^T) — COLT's
// propagated tool embeddings are what they gain. Layers are merged as the reference code
// does (graph.CombineNormSum: E⁰ plus each propagated layer L2-normalised), so an isolated
// node's output is exactly its input: this is what a graph that included them without edges
// would compute.
package colt

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/support/exceptions"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/losses"
)

// Config holds COLT's hyper-parameters; Default has the paper's ToolLens settings.
type Config struct {
	Layers      int     `json:"layers"`
	Lambda      float64 `json:"lambda"`   // weight of the contrastive losses
	Tau         float64 `json:"tau"`      // contrastive temperature
	ListLen     int     `json:"list_len"` // tools per query in the list-wise loss
	EdgeDropout float64 `json:"edge_dropout"`
	// Ablations.
	Pairwise   bool   `json:"pairwise"`    // BPR-style pairwise loss instead of list-wise
	NoContrast bool   `json:"no_contrast"` // drop the cross-view losses
	Views      string `json:"views"`       // "both", "scene" (scene view only) or "tool" (tool view only)
	// FreezeQueries keeps the query node inputs at their stage-1 embeddings (only tools and
	// scenes are trained), so that the learned tools stay in the space of the stage-1 query
	// encoder, which is what queries outside the graph (test, new queries) are embedded with.
	FreezeQueries bool `json:"freeze_queries"`
}

// Default returns the COLT paper's ToolLens settings.
func Default() Config {
	return Config{Layers: 1, Lambda: 0.04, Tau: 0.1, ListLen: 10, EdgeDropout: 0.2, Views: "both"}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Layers < 0:
		return fmt.Errorf("colt: layers %d < 0", c.Layers)
	case c.Tau <= 0:
		return fmt.Errorf("colt: tau %v must be > 0", c.Tau)
	case c.ListLen < 2:
		return fmt.Errorf("colt: list length %d < 2", c.ListLen)
	case c.EdgeDropout < 0 || c.EdgeDropout >= 1:
		return fmt.Errorf("colt: edge dropout %v not in [0, 1)", c.EdgeDropout)
	case c.Views != "both" && c.Views != "scene" && c.Views != "tool":
		return fmt.Errorf("colt: views %q: want both, scene or tool", c.Views)
	}
	return nil
}

// Variable paths of the node embeddings.
const (
	QueryVar = "/colt/query"
	ToolVar  = "/colt/tool"
	SceneVar = "/colt/scene"
)

// InitVariables creates the node embedding variables from stage-1 embeddings, through an
// initialisation graph run on backend (so training graphs see them as parameters).
func InitVariables(store *model.Store, be compute.Backend, queries, tools, scenes [][]float32) error {
	for _, v := range []struct {
		path string
		rows [][]float32
	}{{QueryVar, queries}, {ToolVar, tools}, {SceneVar, scenes}} {
		d := len(v.rows[0])
		flat := make([]float32, 0, len(v.rows)*d)
		for _, r := range v.rows {
			flat = append(flat, r...)
		}
		t := tensors.FromFlatDataAndDimensions(flat, len(v.rows), d)
		store.VariableWithShape(v.path, t.Shape(), initializer.BroadcastTensorToShape(t))
	}
	return store.InitializeVariables(be, nil)
}

// table returns a node embedding table, which must exist (InitVariables or a checkpoint).
func table(s *model.Scope, g *Graph, path string, n, d int) *Node {
	v := s.Store().GetVariable(path)
	if v == nil {
		exceptions.Panicf("colt: variable %s missing: initialise from stage-1 embeddings or restore a checkpoint", path)
	}
	if want := shapes.Make(dtypes.Float32, n, d); !v.Shape().Equal(want) {
		exceptions.Panicf("colt: variable %s has shape %s, want %s", path, v.Shape(), want)
	}
	return v.NodeValue(g)
}

// Propagate computes the propagated embeddings: tool view (eqT, etT, esT) and scene view
// (eqS, esS). Edges of the query-tool and query-scene graphs may be drop-out samples; the
// scene-tool graph averages a scene's tools.
func (c Config) Propagate(s *model.Scope, g *Graph, nq, nt, ns, d int, qt, qs, st tgraph.Edges) (eqT, etT, esT, eqS, esS *Node) {
	q := table(s, g, QueryVar, nq, d)
	if c.FreezeQueries {
		q = StopGradient(q)
	}
	t := table(s, g, ToolVar, nt, d)
	sc := table(s, g, SceneVar, ns, d)
	if c.Views == "scene" {
		// Scene view only: tools are not propagated over the query-tool graph.
		eqT, etT = q, t
	} else {
		eqT, etT = tgraph.Propagate(q, t, qt, c.Layers, tgraph.CombineNormSum)
	}
	esT = tgraph.AggregateLeft(etT, st)
	eqS, esS = tgraph.Propagate(q, sc, qs, c.Layers, tgraph.CombineNormSum)
	return
}

// score is cos(a, b) over the last axis for [.., D] nodes of equal shape.
func cos(a, b *Node) *Node {
	return ReduceSum(Mul(losses.Normalize(a), losses.Normalize(b)), -1)
}

// Loss is the training loss of a batch. in: query-tool edges (left, right, weight), query-
// scene edges (left, right, weight), batch query indices [B], list tools [B, L], list labels
// [B, L] (1 for positives), batch scene indices [B].
func (c Config) Loss(s *model.Scope, in []*Node, nq, nt, ns, d int, st tgraph.Edges) *Node {
	g := in[0].Graph()
	qt := tgraph.Edges{NLeft: nq, NRight: nt, Left: in[0], Right: in[1], Weight: in[2]}
	qs := tgraph.Edges{NLeft: nq, NRight: ns, Left: in[3], Right: in[4], Weight: in[5]}
	bq, list, labels, bs := in[6], in[7], in[8], in[9]
	eqT, etT, esT, eqS, esS := c.Propagate(s, g, nq, nt, ns, d, qt, qs, st)
	b, l := list.Shape().Dimensions[0], list.Shape().Dimensions[1]
	tl := Reshape(Gather(etT, InsertAxes(Reshape(list, b*l), -1)), b, l, d) // [B, L, D]
	qT := InsertAxes(Gather(eqT, InsertAxes(bq, -1)), 1)                    // [B, 1, D]
	qS := InsertAxes(Gather(eqS, InsertAxes(bq, -1)), 1)
	var scores *Node
	switch c.Views {
	case "scene":
		scores = cos(BroadcastToDims(qS, b, l, d), tl)
	case "tool":
		scores = cos(BroadcastToDims(qT, b, l, d), tl)
	default:
		scores = Add(cos(BroadcastToDims(qS, b, l, d), tl), cos(BroadcastToDims(qT, b, l, d), tl))
	}
	var loss *Node
	if c.Pairwise {
		// BPR: every (positive, negative) pair of the list: -log sigmoid(s_pos - s_neg).
		pos := ConvertDType(labels, dtypes.Float32)
		diff := Sub(InsertAxes(scores, 2), InsertAxes(scores, 1)) // [B, L, L]: s_i - s_j
		w := Mul(InsertAxes(pos, 2), InsertAxes(OneMinus(pos), 1))
		bpr := losses.StableSoftplus(Neg(diff)) // -log sigmoid(diff)
		loss = Div(ReduceAllSum(Mul(bpr, w)), Max(ReduceAllSum(w), ScalarOne(g, dtypes.Float32)))
	} else {
		// COLT's scores are in [-2, 2]; the list-wise softmax uses them directly as logits, as
		// the reference implementation does.
		loss = losses.COLTListwise(scores, labels, nil)
	}
	if !c.NoContrast && c.Views == "both" {
		lq := losses.CrossViewInfoNCE(Gather(eqS, InsertAxes(bq, -1)), Gather(eqT, InsertAxes(bq, -1)), c.Tau, false)
		ls := losses.CrossViewInfoNCE(Gather(esS, InsertAxes(bs, -1)), Gather(esT, InsertAxes(bs, -1)), c.Tau, false)
		loss = Add(loss, MulScalar(Add(lq, ls), c.Lambda))
	}
	return loss
}

// NormalizeRows L2-normalises rows in place (host side).
func NormalizeRows(rows [][]float32) {
	for _, r := range rows {
		n := 0.0
		for _, v := range r {
			n += float64(v) * float64(v)
		}
		if n > 0 {
			inv := float32(1 / math.Sqrt(n))
			for i := range r {
				r[i] *= inv
			}
		}
	}
}
