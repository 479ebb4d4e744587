package toolindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Ensemble fusion methods (WithEnsemble): those of WithHybrid.
const (
	EnsembleRRF    = HybridRRF
	EnsembleMinMax = HybridMinMax
	EnsembleZScore = HybridZScore
)

// ErrEnsembleTools is the error of adding or changing tools of an ensemble index.
var ErrEnsembleTools = errors.New("ensemble index: each member scores its own copy of the tools; re-export the members to add or change tools")

// WithEnsemble fuses the index's first stage with the first stages of other exported indexes
// over the same tools (members: the same recipe trained with other seeds, say), as cmd/eval
// -method fusion -runs run:A,run:B,... fuses the runs: each index ranks its top
// m = max(k, DefaultHybridDepth) tools of the library, as eval ranks each input's top 100, and
// the lists are fused per query:
//
//   - "rrf": reciprocal rank fusion, Σ 1/(60 + rank); w must be empty.
//   - "minmax" or "zscore": Σ w[i]·norm_i(score) (fusion.Interpolate), w one non-negative
//     weight per index, this index's first, not all zero; eval -method fusion -weight dev
//     prints the weights it picks on a dev split in this order.
//
// An MLC index's scores enter the fusion as its probabilities (the softmax over the library,
// or the sigmoid), as eval ranks a trained MLC run, so that the ensemble answers as eval
// -method fusion -runs run:A,run:B,... measures it; a bi-encoder's as its similarities.
// Members are loaded with this index's backend, quantization, verification and ANN mode,
// without their refiners, and must hold every tool of this index (by id; tools deleted from
// the index since its export may stay in the members). A result's Score
// and RetrievalScore are the fused score.
//
// Members embed the queries as given (an iteration-aware member marks them as round 0 of its
// own marker): Iterate's later rounds re-mark only this index's queries. A softmax member's
// probabilities are over its own tools, deleted ones included.
//
// An ensemble is read-only: CanEmbedTools refuses added or changed tools (ErrEnsembleTools),
// which the members could not score; a tool deleted from the library leaves every answer.
// Not with WithHybrid, WithReranker or a packaged refiner (give WithoutRefiner).
func WithEnsemble(method string, members []string, w []float64) Option {
	return func(o *options) { o.ensMethod, o.ensDirs, o.ensW = method, members, w }
}

// ensembleStage is an ensemble's configuration and its loaded members.
type ensembleStage struct {
	method  string
	w       []float64
	dirs    []string
	members []*Index
}

// checkEnsemble checks WithEnsemble's options before anything is loaded: nil without it.
func checkEnsemble(o options) (*ensembleStage, error) {
	if len(o.ensDirs) == 0 {
		if o.ensMethod != "" || len(o.ensW) > 0 {
			return nil, fmt.Errorf("retriever: WithEnsemble(%q, no members): name at least one member index", o.ensMethod)
		}
		return nil, nil
	}
	e := &ensembleStage{method: o.ensMethod, w: o.ensW, dirs: o.ensDirs}
	n := 1 + len(e.dirs)
	switch e.method {
	case EnsembleRRF:
		if len(e.w) != 0 {
			return nil, fmt.Errorf("retriever: WithEnsemble(%q): rrf has no weights (it fuses ranks, k %d): pass none", e.method, fusion.DefaultK)
		}
	case EnsembleMinMax, EnsembleZScore:
		if len(e.w) != n {
			return nil, fmt.Errorf("retriever: WithEnsemble(%q): %d weights for %d indexes (this one and %d members): want one each, this index's first", e.method, len(e.w), n, len(e.dirs))
		}
		sum := 0.0
		for i, w := range e.w {
			if !(w >= 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("retriever: WithEnsemble(%q): weight %d is %v: want a finite weight >= 0", e.method, i+1, w)
			}
			sum += w
		}
		if sum == 0 {
			return nil, fmt.Errorf("retriever: WithEnsemble(%q): every weight is 0", e.method)
		}
	default:
		return nil, fmt.Errorf("retriever: WithEnsemble(%q): want %s, %s or %s", e.method, EnsembleRRF, EnsembleMinMax, EnsembleZScore)
	}
	switch {
	case o.hybrid != "":
		return nil, errors.New("retriever: WithEnsemble and WithHybrid: give one (eval -method fusion fuses BM25 as one more input)")
	case o.rerankDir != "":
		return nil, errors.New("retriever: WithEnsemble and WithReranker: a reranker over an ensemble's candidates is not supported; give one")
	}
	return e, nil
}

// loadEnsemble loads e's members for r (loaded from dir with o); e nil: none.
func loadEnsemble(e *ensembleStage, dir string, o options, r *Index) (*ensembleStage, error) {
	if e == nil {
		return nil, nil
	}
	if r.ref != nil {
		return nil, fmt.Errorf("retriever: WithEnsemble and refiner %s: the refiner was trained over this index's candidates alone; give WithoutRefiner (serve -no-refiner)", r.ref.dir)
	}
	mopts := []Option{WithBackend(o.be), WithQuantization(o.quant), WithPrecision(o.prec), WithoutRefiner(), WithBatching(o.batching), WithQueryCache(o.cacheSize)}
	if !o.verify {
		mopts = append(mopts, WithoutVerify())
	}
	if o.ann != nil {
		mopts = append(mopts, WithANN(*o.ann))
	}
	r.probs = true
	own := r.Library()
	for _, d := range e.dirs {
		m, err := Load(d, mopts...)
		if err != nil {
			return nil, fmt.Errorf("retriever: ensemble member %s: %w", d, err)
		}
		// A member may hold more tools: ones deleted from the index since (a server compacts
		// its deletions into the index, not into the members); they never reach an answer.
		lib := m.Library()
		for i := 0; i < own.Len(); i++ {
			if id := own.Tool(i).ID; !hasTool(lib, id) {
				return nil, fmt.Errorf("retriever: ensemble member %s lacks tool %q of index %s: members must hold the index's tools", d, id, dir)
			}
		}
		m.probs = true
		e.members = append(e.members, m)
	}
	return e, nil
}

func hasTool(l *Library, id string) bool {
	_, ok := l.Lookup(id)
	return ok
}

// Ensemble returns the ensemble's fusion method, member directories and weights ("" and nil
// when the index is not an ensemble).
func (r *Index) Ensemble() (method string, members []string, w []float64) {
	if r.ens == nil {
		return "", nil, nil
	}
	return r.ens.method, r.ens.dirs, r.ens.w
}

// retrieveEnsemble answers queries from lib with this index's first stage and its members',
// fused.
func (r *Index) retrieveEnsemble(ctx context.Context, lib *Library, texts, queries []string, k int) ([][]Result, error) {
	if k <= 0 {
		return nil, fmt.Errorf("retriever: k = %d, want > 0", k)
	}
	if len(queries) == 0 {
		return nil, nil
	}
	e := r.ens
	m := max(k, DefaultHybridDepth)
	lists := make([][][]Result, 1+len(e.members))
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for i := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				lists[0], errs[0] = r.retrieveOwn(ctx, lib, texts, queries, m)
				return
			}
			mem := e.members[i-1]
			if lists[i], errs[i] = mem.RetrieveFrom(ctx, mem.Library(), queries, m); errs[i] != nil {
				errs[i] = fmt.Errorf("retriever: ensemble member %s: %w", e.dirs[i-1], errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([][]Result, len(queries))
	for q := range queries {
		rk := make([]rank.Ranking, len(lists))
		for i, l := range lists {
			for _, res := range l[q] {
				t, ok := lib.Lookup(res.ToolID) // a tool deleted since a member's export leaves
				if !ok {
					continue
				}
				rk[i].Tools = append(rk[i].Tools, t)
				rk[i].Scores = append(rk[i].Scores, res.RetrievalScore)
			}
		}
		var f rank.Ranking
		var err error
		if e.method == EnsembleRRF {
			f, err = fusion.RRF(rk, fusion.DefaultK)
		} else {
			f, err = fusion.Interpolate(rk, e.w, rerank.Norm(e.method))
		}
		if err != nil {
			return nil, fmt.Errorf("retriever: ensemble %s: query %d: %w", e.method, q, err)
		}
		n := min(k, len(f.Tools))
		res := make([]Result, n)
		for j, t := range f.Tools[:n] {
			rec := lib.tools[t]
			res[j] = Result{ToolID: rec.ID, Score: f.Scores[j], RetrievalScore: f.Scores[j], Index: t,
				Title: rec.Title, Text: rec.Text, Category: rec.Category, ToolName: rec.ToolName, APIName: rec.APIName}
		}
		out[q] = res
	}
	return out, nil
}
