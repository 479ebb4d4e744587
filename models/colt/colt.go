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
// Queries outside the training split (dev, test, new queries) are not graph nodes; their input
// is their stage-1 embedding e_q. By default (Config.Inductive) they join the scene view through
// soft edges to the training scenes and take one propagation step over them, and training
// scores its batch the same way (held out of the graphs, scored from their stage-1 embeddings,
// not their trainable node inputs, then attached), so that what is trained is what is tested.
// With Inductive off they keep e_q in both views, as in the reference code (isolated nodes),
// and score(q, t) = 2 cos(e_q, e_t^T). Layers are merged as
// the reference code does (graph.CombineNormSum: E⁰ plus each propagated layer L2-normalised,
// scaled by the view's layer weight), so an isolated node's output is exactly its input.
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
	"github.com/gomlx/gomlx/support/exceptions"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/losses"
)

// Config holds COLT's hyper-parameters; Default has the paper's ToolLens settings.
type Config struct {
	Layers      int     `json:"layers" help:"LightGCN layers"`
	Lambda      float64 `json:"lambda" help:"weight of the cross-view contrastive losses"`             // weight of the contrastive losses
	Temperature float64 `json:"temperature" help:"temperature of the cross-view contrastive losses"`   // contrastive temperature
	ListLen     int     `json:"list_len" flag:"list-len" help:"tools per query in the list-wise loss"` // tools per query in the list-wise loss
	EdgeDropout float64 `json:"edge_dropout" flag:"edge-dropout" help:"edge dropout, re-sampled every epoch, in [0, 1)"`
	// Ablations.
	Pairwise   bool   `json:"pairwise" help:"ablation: pairwise (BPR) loss instead of list-wise"`             // BPR-style pairwise loss instead of list-wise
	NoContrast bool   `json:"no_contrast" flag:"no-contrast" help:"ablation: no cross-view contrastive loss"` // drop the cross-view losses
	Views      string `json:"views" help:"both, scene (scene view only) or tool (tool view only)"`            // "both", "scene" (scene view only) or "tool" (tool view only)
	// FreezeQueries keeps the query node inputs at their stage-1 embeddings (only tools and
	// scenes are trained), so that the learned tools stay in the space of the stage-1 query
	// encoder, which is what queries outside the graph (test, new queries) are embedded with.
	FreezeQueries bool `json:"freeze_queries" flag:"freeze-queries" help:"keep query nodes at their stage-1 embeddings (train tools and scenes only)"`
	// HoldOut removes the batch's queries from both graphs for the step (their edges get
	// weight 0), so that a training query is scored exactly as a test query is: isolated,
	// with its stage-1 embedding in both views, against tools propagated from the other queries.
	HoldOut bool `json:"hold_out" flag:"hold-out" help:"remove the batch's queries from the graphs for the step and score them from their stage-1 embeddings, as test queries are"`
	// Inductive gives queries outside the graphs (dev, test, new queries) a scene view: such a
	// query joins the query-scene graph through soft edges to the training scenes, weighted
	// softmax_s(cos(e_q, e_s^S) / AttachTemp), and takes one LightGCN step over them:
	// e_q^S = e_q + SceneWeight · normalize(Σ_s w_s e_s). Training scores its batch the same way
	// (the batch's queries are held out of both graphs, take their stage-1 embeddings and are
	// attached), so training queries are scored exactly as test queries are. Off, an outside query keeps e_q in both views (the
	// reference code's behaviour: its test queries are isolated graph nodes).
	Inductive  bool    `json:"inductive" help:"attach queries outside the graph (dev, test, new) to the training scenes by soft edges, and train the batch held out and attached the same way"`
	AttachTemp float64 `json:"attach_temp" flag:"attach-temp" help:"temperature of the soft query-scene edges of -inductive"`
	// ToolWeight and SceneWeight scale the propagated layers of the tool and scene views:
	// e = e⁰ + α Σ_k normalize(E^k) (LightGCN's layer weights; 1 in the reference code).
	ToolWeight  float64 `json:"tool_layer_weight" flag:"tool-layer-weight" help:"weight of the propagated layers in the tool view (1: reference)"`
	SceneWeight float64 `json:"scene_layer_weight" flag:"scene-layer-weight" help:"weight of the propagated layers in the scene view (1: reference)"`
}

// Default returns the COLT paper's ToolLens settings, with queries outside the graph attached
// to the scenes (Inductive; the reference code leaves them isolated).
func Default() Config {
	return Config{Layers: 1, Lambda: 0.04, Temperature: 0.1, ListLen: 10, EdgeDropout: 0.2, Views: "both",
		Inductive: true, AttachTemp: 0.05, ToolWeight: 1, SceneWeight: 1}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Layers < 0:
		return fmt.Errorf("colt: layers %d < 0", c.Layers)
	case c.Inductive && c.AttachTemp <= 0:
		return fmt.Errorf("colt: attach temperature %v must be > 0", c.AttachTemp)
	case c.ToolWeight < 0 || c.SceneWeight < 0:
		return fmt.Errorf("colt: layer weights %v, %v must be >= 0", c.ToolWeight, c.SceneWeight)
	case c.Lambda < 0:
		return fmt.Errorf("colt: lambda %v must be >= 0", c.Lambda)
	case c.Temperature <= 0:
		return fmt.Errorf("colt: temperature %v must be > 0", c.Temperature)
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

// InitVariables creates the node embedding variables from stage-1 embeddings, holding them
// as they are (other variables the store declared are initialised on be).
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
		// The value as is (no initialisation graph, which XLA would compile the vectors into).
		if _, err := store.CreateVariable(v.path, tensors.FromFlatDataAndDimensions(flat, len(v.rows), d)); err != nil {
			return fmt.Errorf("colt: %s: %w", v.path, err)
		}
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

// Views holds the propagated embeddings: tool view (QT, TT, ST) and scene view (QS, SS), and
// the scene inputs S0 (what an attached query receives from its scenes).
type Views struct {
	QT, TT, ST, QS, SS, S0 *Node
}

// Propagate computes the propagated embeddings of both views. Edges of the query-tool and
// query-scene graphs may be drop-out samples; the scene-tool graph averages a scene's tools.
func (c Config) Propagate(s *model.Scope, g *Graph, nq, nt, ns, d int, qt, qs, st tgraph.Edges) Views {
	q := table(s, g, QueryVar, nq, d)
	if c.FreezeQueries {
		q = StopGradient(q)
	}
	t := table(s, g, ToolVar, nt, d)
	sc := table(s, g, SceneVar, ns, d)
	var v Views
	if c.Views == "scene" {
		// Scene view only: tools are not propagated over the query-tool graph.
		v.QT, v.TT = q, t
	} else {
		v.QT, v.TT = tgraph.Propagate(q, t, qt, c.Layers, tgraph.CombineNormSum)
		v.QT, v.TT = weigh(q, v.QT, c.ToolWeight), weigh(t, v.TT, c.ToolWeight)
	}
	v.ST = tgraph.AggregateLeft(v.TT, st)
	v.QS, v.SS = tgraph.Propagate(q, sc, qs, c.Layers, tgraph.CombineNormSum)
	v.QS, v.SS = weigh(q, v.QS, c.SceneWeight), weigh(sc, v.SS, c.SceneWeight)
	v.S0 = sc
	return v
}

// weigh returns x0 + α (out - x0): out's propagated layers scaled by α.
func weigh(x0, out *Node, alpha float64) *Node {
	if alpha == 1 {
		return out
	}
	return Add(x0, MulScalar(Sub(out, x0), alpha))
}

// Attach returns the scene-view embeddings [B, D] of queries q [B, D] that are not graph nodes
// (Config.Inductive): soft edges to the scenes allowed by known [NS] (true for scenes of
// training queries), w = softmax(cos(q, ss) / AttachTemp), and one propagation step over them.
func (c Config) Attach(q, ss, s0, known *Node) *Node {
	sim := DivScalar(MatMul(losses.Normalize(q), Transpose(losses.Normalize(ss), 0, 1)), c.AttachTemp) // [B, NS]
	known = BroadcastToDims(InsertAxes(known, 0), sim.Shape().Dimensions...)
	sim = Where(known, sim, BroadcastToDims(Scalar(q.Graph(), sim.DType(), -1e9), sim.Shape().Dimensions...))
	m := MatMul(Softmax(sim, -1), s0) // [B, D]
	return Add(q, MulScalar(losses.Normalize(m), c.SceneWeight))
}

// score is cos(a, b) over the last axis for [.., D] nodes of equal shape.
func cos(a, b *Node) *Node {
	return ReduceSum(Mul(losses.Normalize(a), losses.Normalize(b)), -1)
}

// Batch inputs of Loss, in order (Task.Batch builds them): the query-tool edges (left, right,
// weight), the query-scene edges (left, right, weight), the batch's query indices [B], list
// tools [B, L], list labels [B, L] (1 for positives), the batch's scene indices [B] and the
// batch's stage-1 query embeddings [B, D].
const (
	InQTLeft = iota
	InQTRight
	InQTWeight
	InQSLeft
	InQSRight
	InQSWeight
	InQueries
	InList
	InLabels
	InScenes
	InEmbeddings
	NumInputs
)

// Loss is the training loss of a batch (inputs: see InQTLeft). known [NS] marks the scenes a
// query may be attached to (Inductive).
func (c Config) Loss(s *model.Scope, in []*Node, nq, nt, ns, d int, st tgraph.Edges, known *Node) *Node {
	g := in[0].Graph()
	b := c.batch(s, in, nq, nt, ns, d, st, known)
	labels := in[InLabels]
	var loss *Node
	if c.Pairwise {
		// BPR: every (positive, negative) pair of the list: -log sigmoid(s_pos - s_neg).
		pos := ConvertDType(labels, dtypes.Float32)
		diff := Sub(InsertAxes(b.scores, 2), InsertAxes(b.scores, 1)) // [B, L, L]: s_i - s_j
		w := Mul(InsertAxes(pos, 2), InsertAxes(OneMinus(pos), 1))
		bpr := losses.StableSoftplus(Neg(diff)) // -log sigmoid(diff)
		loss = Div(ReduceAllSum(Mul(bpr, w)), Max(ReduceAllSum(w), ScalarOne(g, dtypes.Float32)))
	} else {
		// COLT's scores are in [-2, 2]; the list-wise softmax uses them directly as logits, as
		// the reference implementation does.
		loss = losses.COLTListwise(b.scores, labels, nil)
	}
	if !c.NoContrast && c.Views == "both" {
		lq := losses.CrossViewInfoNCE(b.qS, b.qT, c.Temperature, false)
		ls := c.sceneContrast(b.sS, b.sT, in[InScenes])
		loss = Add(loss, MulScalar(Add(lq, ls), c.Lambda))
	}
	return loss
}

// batchOut holds what the losses of a batch compare: the list scores [B, L], the batch
// queries' scene- and tool-view embeddings [B, D] and their scenes' [B, D].
type batchOut struct {
	scores, qS, qT, sS, sT *Node
}

// batch scores a batch's lists. With HoldOut or Inductive the batch's queries are held out of
// both graphs and scored from their stage-1 embeddings, as Scorer scores queries outside the
// graph; otherwise (the reference code) from their propagated node embeddings.
func (c Config) batch(s *model.Scope, in []*Node, nq, nt, ns, d int, st tgraph.Edges, known *Node) batchOut {
	if len(in) != NumInputs {
		exceptions.Panicf("colt: %d batch inputs, want %d", len(in), NumInputs)
	}
	g := in[0].Graph()
	qt := tgraph.Edges{NLeft: nq, NRight: nt, Left: in[InQTLeft], Right: in[InQTRight], Weight: in[InQTWeight]}
	qs := tgraph.Edges{NLeft: nq, NRight: ns, Left: in[InQSLeft], Right: in[InQSRight], Weight: in[InQSWeight]}
	bq, list, bs := in[InQueries], in[InList], in[InScenes]
	inductive := c.Inductive && c.Views != "tool"
	if c.HoldOut || c.Inductive {
		qt, qs = holdOut(qt, bq), holdOut(qs, bq)
	}
	v := c.Propagate(s, g, nq, nt, ns, d, qt, qs, st)
	b, l := list.Shape().Dimensions[0], list.Shape().Dimensions[1]
	tl := Reshape(Gather(v.TT, InsertAxes(Reshape(list, b*l), -1)), b, l, d) // [B, L, D]
	var out batchOut
	if c.HoldOut || c.Inductive {
		// Held out of the graphs, the batch is scored as queries outside the graph are: from
		// its stage-1 embeddings (not the trainable node inputs), attached to the scenes.
		e := losses.Normalize(in[InEmbeddings])
		out.qT, out.qS = e, e
		if inductive {
			out.qS = c.Attach(e, v.SS, v.S0, known)
		}
	} else {
		out.qT = Gather(v.QT, InsertAxes(bq, -1))
		out.qS = Gather(v.QS, InsertAxes(bq, -1))
	}
	qT, qS := BroadcastToDims(InsertAxes(out.qT, 1), b, l, d), BroadcastToDims(InsertAxes(out.qS, 1), b, l, d)
	switch c.Views {
	case "scene":
		out.scores = cos(qS, tl)
	case "tool":
		out.scores = cos(qT, tl)
	default:
		out.scores = Add(cos(qS, tl), cos(qT, tl))
	}
	out.sS, out.sT = Gather(v.SS, InsertAxes(bs, -1)), Gather(v.ST, InsertAxes(bs, -1))
	return out
}

// sceneContrast is the scene-level cross-view loss: InfoNCE between the scene- and tool-view
// embeddings of the batch's scenes bs [B], where a scene appearing more than once in the batch
// is not a negative of itself (false-negative masking: row j is dropped from row i's
// denominator when bs[j] == bs[i], j != i).
func (c Config) sceneContrast(sS, sT, bs *Node) *Node {
	same := Equal(InsertAxes(bs, 1), InsertAxes(bs, 0)) // [B, B]
	return losses.InfoNCE(sS, sT, nil, same, losses.InfoNCEConfig{Temperature: c.Temperature, Similarity: losses.SimCosine})
}

// holdOut zeroes the weights of e's edges whose left (query) node is in the batch bq. The other
// weights keep the full graph's degrees: every propagated layer is L2-normalised per node
// (CombineNormSum), so a tool's aggregate is what renormalising would give; a query's
// aggregate weighs its tools by their full-graph degrees (1/√d_t) rather than the held-out ones.
func holdOut(e tgraph.Edges, bq *Node) tgraph.Edges {
	w := e.Weight
	in := Scatter(InsertAxes(bq, -1), OnesLike(ConvertDType(bq, w.DType())), shapes.Make(w.DType(), e.NLeft), false, false)
	in = MinScalar(in, 1) // a query listed twice in the batch
	e.Weight = Mul(w, OneMinus(Gather(in, InsertAxes(e.Left, -1))))
	return e
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
