package toolindex

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rerank"
)

// Hybrid fusion methods (WithHybrid).
const (
	HybridRRF    = "rrf"
	HybridMinMax = "minmax"
	HybridZScore = "zscore"
)

// DefaultHybridDepth is the least number of candidates each side of a hybrid retriever ranks
// per query (WithHybridDepth).
const DefaultHybridDepth = 100

// WithHybrid fuses the first stage's dense ranking with an Okapi BM25 ranking of the tool
// texts (tools.jsonl's "text", bm25.DefaultParams, as cmd/eval -method bm25 ranks them): each
// side ranks its top m tools (m = max(k, DefaultHybridDepth), or WithHybridDepth) and the
// union is fused as package fusion does for cmd/eval -method fusion -runs DENSE,bm25:
//
//   - "rrf": reciprocal rank fusion, Σ 1/(60 + rank) (fusion.RRF, fusion.DefaultK); it has no
//     weight: pass 0.
//   - "minmax" or "zscore": w·norm(dense) + (1−w)·norm(bm25), each side's scores normalised
//     per query over its own top m (fusion.Interpolate); a tool missing from one side's list
//     gets that side's lowest normalised score. w in [0, 1]: 1 is the dense ranking, 0 the
//     BM25 ranking (ties to the lower index position); cmd/eval -method fusion -fusion minmax
//     -weight dev prints the weight chosen on a dev split (its first list's weight).
//
// The dense side is the index's first stage (a bi-encoder's similarity with the tool vectors
// WithToolVectors chose, or an MLC classifier's logit). A result's Score and RetrievalScore
// are the fused score; DenseScore and BM25Score hold the two sides' scores of the tool.
//
// The BM25 index is built from the library's tool texts when a library is loaded or set
// (SetLibrary; a library passed to RetrieveFrom without it is indexed on first use), once
// per library version: a query scores both sides on the same version. Hybrid retrieval is a
// first stage of its own: Load refuses it with a refiner (whose training and weights assumed
// the dense first stage's candidates and scores; WithoutRefiner drops an index's packaged
// refiner). A reranker (WithReranker) reranks the hybrid's top m, interpolating with the
// fused scores (WithInterpolation).
//
// An index exported from a model whose recipe fuses with BM25 records that fusion
// (export.Manifest.Hybrid): Load serves it as if WithHybrid had been given, unless
// WithHybrid is given (WithHybrid("", 0): the dense first stage alone) or WithoutRecipe.
func WithHybrid(method string, w float64) Option {
	return func(o *options) { o.hybrid, o.hybridW, o.hybridSet, o.hybridAdapt = method, w, true, nil }
}

// WithHybridAdaptive fuses as WithHybrid(method, 0.5) with minmax or zscore, except that the
// dense weight is chosen per query by a (fusion.Adaptive: clamp(base + slope·z1, 0, 1), z1
// the top z-score of the query's dense ranking over its top m), as a model's recipe with
// hybrid.adaptive does.
func WithHybridAdaptive(method string, a fusion.Adaptive) Option {
	return func(o *options) { o.hybrid, o.hybridW, o.hybridSet, o.hybridAdapt = method, a.Base, true, &a }
}

// WithoutRecipe ignores the hybrid fusion, the clauses and the reranker the index records
// from its model's recipe (export.Manifest.Hybrid, Clauses, Reranker): the dense first stage
// is served, unless WithHybrid, WithClauses or WithReranker is given.
func WithoutRecipe() Option { return func(o *options) { o.noRecipe = true } }

// recordedHybrid applies the hybrid man records to o, unless o says otherwise; it reports
// whether it did.
func recordedHybrid(o *options, man *export.Manifest) bool {
	if o.hybridSet || o.noRecipe || man.Hybrid == nil {
		return false
	}
	o.hybrid, o.hybridW, o.hybridAdapt = man.Hybrid.Fusion, man.Hybrid.Weight, man.Hybrid.Adaptive
	return true
}

// WithHybridDepth sets m, the number of tools each side of WithHybrid ranks per query (at
// least k; 0: max(k, DefaultHybridDepth)).
func WithHybridDepth(m int) Option {
	return func(o *options) { o.hybridDepth, o.hybridDepthSet = m, true }
}

// hybridStage is the configuration of a hybrid first stage.
type hybridStage struct {
	method string
	w      float64
	adapt  *fusion.Adaptive // nil: the fixed weight w
	depth  int              // 0: max(k, DefaultHybridDepth)
}

// newHybrid checks the hybrid options of o: nil without WithHybrid. refiner names the
// refiner Load would serve ("" for none).
func newHybrid(o options, refiner string) (*hybridStage, error) {
	if o.hybrid == "" {
		if o.hybridDepthSet {
			return nil, fmt.Errorf("retriever: WithHybridDepth(%d) needs WithHybrid", o.hybridDepth)
		}
		return nil, nil
	}
	h := &hybridStage{method: o.hybrid, w: o.hybridW, adapt: o.hybridAdapt, depth: o.hybridDepth}
	if h.adapt != nil {
		if h.method == HybridRRF {
			return nil, fmt.Errorf("retriever: an adaptive dense weight with hybrid %q: rrf has no weight", h.method)
		}
		if err := h.adapt.Check(); err != nil {
			return nil, fmt.Errorf("retriever: hybrid %s: %w", h.method, err)
		}
		h.w = min(1, max(0, h.adapt.Base)) // Hybrid's weight: the rule's, at z1 = 0
	}
	switch h.method {
	case HybridRRF:
		if h.w != 0 {
			return nil, fmt.Errorf("retriever: WithHybrid(%q, %v): rrf has no weight (it fuses ranks, k %d): pass 0", h.method, h.w, fusion.DefaultK)
		}
	case HybridMinMax, HybridZScore:
		if !(h.w >= 0 && h.w <= 1) {
			return nil, fmt.Errorf("retriever: WithHybrid(%q, %v): the dense weight must be in [0, 1]", h.method, h.w)
		}
	default:
		return nil, fmt.Errorf("retriever: WithHybrid(%q): want %s, %s or %s", h.method, HybridRRF, HybridMinMax, HybridZScore)
	}
	if h.depth < 0 {
		return nil, fmt.Errorf("retriever: WithHybridDepth(%d): want >= 0", h.depth)
	}
	if refiner != "" {
		return nil, fmt.Errorf("retriever: WithHybrid and refiner %s: the refiner was trained over the dense first stage's candidates and scores, not hybrid ones; give WithoutRefiner (serve -no-refiner) to serve the hybrid first stage", refiner)
	}
	return h, nil
}

// lexical is the BM25 side of one library version, built once.
type lexical struct {
	once sync.Once
	ix   *bm25.Index
}

// lexicalIndex returns the BM25 index of l's tool texts, building it on first use.
func (l *Library) lexicalIndex() *bm25.Index {
	l.lex.once.Do(func() {
		docs := make([]string, len(l.tools))
		for i, t := range l.tools {
			docs[i] = t.Text
		}
		l.lex.ix = bm25.New(docs, bm25.DefaultParams)
	})
	return l.lex.ix
}

// Hybrid returns the hybrid fusion method and the dense weight ("" when the retriever is not
// hybrid; the weight is 0 for rrf).
func (r *Index) Hybrid() (method string, w float64) {
	if r.hyb == nil {
		return "", 0
	}
	return r.hyb.method, r.hyb.w
}

// HybridAdaptive returns the adaptive dense weight of the hybrid fusion (nil when the weight
// is fixed, Hybrid's, or the retriever is not hybrid).
func (r *Index) HybridAdaptive() *fusion.Adaptive {
	if r.hyb == nil || r.hyb.adapt == nil {
		return nil
	}
	a := *r.hyb.adapt
	return &a
}

// retrieveHybrid answers queries (embedded as qe) from lib with the hybrid first stage.
func (r *Index) retrieveHybrid(ctx context.Context, lib *Library, queries []string, qe [][]float32, k int) ([][]Result, error) {
	h := r.hyb
	m := h.depth
	if m == 0 {
		m = DefaultHybridDepth
	}
	m = max(m, k)
	ix := lib.lexicalIndex()
	dense := make([]float32, lib.Len())
	out := make([][]Result, len(queries))
	for i, q := range qe {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		score(lib.scoring(), lib.bias, q, dense)
		lex := ix.Scores(queries[i])
		lists := []rank.Ranking{rank.TopK(dense, m), rank.TopK(lex, m)}
		var f rank.Ranking
		var err error
		switch {
		case h.method == HybridRRF:
			f, err = fusion.RRF(lists, fusion.DefaultK)
		case h.adapt != nil:
			f, err = fusion.InterpolateAdaptive(lists[0], lists[1], *h.adapt, rerank.Norm(h.method))
		default:
			f, err = fusion.Interpolate(lists, []float64{h.w, 1 - h.w}, rerank.Norm(h.method))
		}
		if err != nil {
			return nil, fmt.Errorf("retriever: hybrid %s: query %d: %w", h.method, i, err)
		}
		n := min(k, len(f.Tools))
		res := make([]Result, n)
		for j, t := range f.Tools[:n] {
			rec := lib.tools[t]
			s := f.Scores[j]
			res[j] = Result{ToolID: rec.ID, Score: s, RetrievalScore: s, DenseScore: dense[t], BM25Score: lex[t], Index: t,
				Title: rec.Title, Text: rec.Text, Category: rec.Category, ToolName: rec.ToolName, APIName: rec.APIName}
		}
		out[i] = res
	}
	return out, nil
}
