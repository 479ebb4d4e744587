package evaluate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// PairScorer is what the ToolRerank pipeline needs of a cross-encoder: per-query scores and
// one batched pass over many (query, API) pairs. *crossencoder.Model is one.
type PairScorer interface {
	rerank.Scorer
	ScorePairs(ctx context.Context, queries []string, pairs []crossencoder.Pair) ([]float32, error)
}

// RerankOptions are the runs and settings of a ToolRerank evaluation.
type RerankOptions struct {
	// Retriever is the bi-encoder run ranking the first stage, with Vectors tool vectors from
	// the queries of Train (its recorded training part: those queries' APIs are the seen
	// ones). Reranker is the cross-encoder run, unless Scorer is set; Classifier the
	// query-type classifier run (empty: query types from the qrels, the oracle).
	Retriever, Reranker, Classifier string
	Scorer                          PairScorer
	Vectors                         string
	Backend                         compute.Backend
	// Train, Dev and Eval are the retriever's recorded training part and dev split (tuning)
	// and the evaluated split.
	Train, Dev, Eval *data.Split
	// Params, Mode and Norm are the pipeline's; Grid is what tuning searches (its W the
	// interpolation weights).
	Params rerank.Params
	Mode   rerank.Mode
	Norm   rerank.Norm
	Grid   rerank.Grid
	// Depth is the deepest truncation the pipeline or a grid can ask for: Prepare scores the
	// top Depth APIs of each query (more with Alg. 1) with the cross-encoder in one pass.
	Depth int
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Rerank is what every ToolRerank variant shares: the loaded models, the pipeline with the
// options' parameters, mode and interpolation, the splits, and Prepare, which ranks, types
// and scores the queries of a split once (memoised by split name).
type Rerank struct {
	D         *data.Dataset
	Retriever *biencoder.Ranker
	Pipeline  rerank.Pipeline
	Grid      rerank.Grid
	Dev, Eval *data.Split

	scorer PairScorer
	typer  *classifier.Model
	cache  *rerank.ScoreCache
	depth  int
	log    io.Writer
	memo   map[string][]rerank.Query
}

// NewRerank loads the runs o names and builds the pipeline over d's tools.
func NewRerank(d *data.Dataset, o RerankOptions) (*Rerank, error) {
	emb, err := biencoder.LoadRun(o.Retriever, o.Backend)
	if err != nil {
		return nil, err
	}
	ret, err := emb.RetrieverFrom(d, o.Vectors, o.Train)
	if err != nil {
		return nil, err
	}
	ce := o.Scorer
	if ce == nil {
		toolTexts := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			toolTexts[i] = t.Text
		}
		m, err := crossencoder.LoadRun(o.Reranker, o.Backend, toolTexts)
		if err != nil {
			return nil, err
		}
		ce = m
	}
	var typer *classifier.Model
	if o.Classifier != "" {
		if typer, err = classifier.LoadRun(o.Classifier, o.Backend); err != nil {
			return nil, err
		}
		if typer.Cfg.Kind != classifier.KindQueryType {
			return nil, fmt.Errorf("-classifier %s is a %s model, want querytype", o.Classifier, typer.Cfg.Kind)
		}
	}
	// Seen = used by the training queries the models were trained on (train minus dev).
	seen := make([]bool, len(d.Tools))
	for _, rel := range o.Train.Relevant {
		for _, t := range rel {
			seen[t] = true
		}
	}
	_, group := d.Groups()
	lib, err := rerank.NewLibrary(group, seen)
	if err != nil {
		return nil, err
	}
	sim := rerank.CosineMatrix(ret.Tools)
	cache := &rerank.ScoreCache{Scorer: ce}
	pl := rerank.Pipeline{Lib: lib, Scorer: cache, Sim: func(a, b int) float32 { return sim[a][b] }, Params: o.Params, Mode: o.Mode, Norm: o.Norm}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	return &Rerank{D: d, Retriever: ret, Pipeline: pl, Grid: o.Grid, Dev: o.Dev, Eval: o.Eval,
		scorer: ce, typer: typer, cache: cache, depth: o.Depth, log: log, memo: map[string][]rerank.Query{}}, nil
}

// Prepare ranks the queries of s with the retriever, types them and fills the score cache
// with every pair the pipeline (or the grid) can ask for, in one batched pass, and returns
// them in s.Queries order; a split is prepared once. The retriever scores every API (the
// interpolation's first-stage scores: Alg. 1 can add APIs from beyond the coarse list); the
// coarse list is its top max(Depth, 50).
func (r *Rerank) Prepare(s *data.Split) ([]rerank.Query, error) {
	if qs, ok := r.memo[s.Name]; ok {
		return qs, nil
	}
	qs, err := r.prepare(s)
	if err == nil {
		r.memo[s.Name] = qs
	}
	return qs, err
}

func (r *Rerank) prepare(s *data.Split) ([]rerank.Query, error) {
	ctx := context.Background()
	d, depth, mode := r.D, r.depth, r.Pipeline.Mode
	qs := s.Queries
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	start := time.Now()
	coarse, err := r.Retriever.RankTexts(texts, len(d.Tools))
	if err != nil {
		return nil, err
	}
	out := make([]rerank.Query, len(qs))
	var pairs []crossencoder.Pair
	for i, q := range qs {
		first := make([]float32, len(d.Tools))
		for j, a := range coarse[i].Tools {
			first[a] = coarse[i].Scores[j]
		}
		coarse[i].Tools = coarse[i].Tools[:min(max(depth, 50), len(coarse[i].Tools))]
		out[i] = rerank.Query{Text: texts[i], Coarse: coarse[i].Tools, First: first, Relevant: s.Relevant[q]}
		need := coarse[i].Tools[:min(depth, len(coarse[i].Tools))]
		if mode == rerank.ModeAuto || mode == rerank.ModeSingle { // Alg. 1 may add unseen tools' APIs
			need = rerank.Needed(r.Pipeline.Lib, coarse[i].Tools, depth)
		}
		for _, a := range need {
			pairs = append(pairs, crossencoder.Pair{Query: i, Tool: a})
		}
	}
	scores, err := r.scorer.ScorePairs(ctx, texts, pairs)
	if err != nil {
		return nil, err
	}
	if len(scores) != len(pairs) {
		return nil, fmt.Errorf("rerank: %d cross-encoder scores for %d pairs", len(scores), len(pairs))
	}
	for j, p := range pairs {
		r.cache.Put(texts[p.Query], p.Tool, scores[j])
	}
	fmt.Fprintf(r.log, "rerank: %s: retriever top-%d and %d cross-encoder scores for %d queries in %v\n",
		s.Name, max(depth, 50), len(pairs), len(qs), time.Since(start).Round(time.Millisecond))
	types := classifier.QueryTypes(d, s)
	if r.typer != nil {
		p, err := r.typer.PMulti(texts)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].Multi = p[i] > 0.5
		}
		acc := classifier.TypeAccuracy(p, qs, types)
		fmt.Fprintf(r.log, "rerank: %s: query-type classifier accuracy %.2f (single-tool %.2f of %.0f, multi-tool %.2f of %.0f)\n",
			s.Name, acc["accuracy"], acc["acc_single"], acc["n_single"], acc["acc_multi"], acc["n_multi"])
	} else {
		for i, q := range qs {
			out[i].Multi = types[q]
		}
	}
	return out, nil
}

// Ranker returns pl as a rank.QueryRanker of the judged queries of the evaluated split
// (Eval), reporting each pass to the log under the description desc.
func (r *Rerank) Ranker(pl rerank.Pipeline, desc string) rank.QueryRanker {
	return &rerankRanker{env: r, split: r.Eval, pl: pl, report: desc}
}

// rerankRanker runs the ToolRerank pipeline over the queries of one split.
type rerankRanker struct {
	env    *Rerank
	split  *data.Split
	pl     rerank.Pipeline
	report string
}

// RankQueries implements rank.QueryRanker for judged queries of the ranker's split.
func (r *rerankRanker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	prepared, err := r.env.Prepare(r.split)
	if err != nil {
		return nil, err
	}
	pos := make(map[int]int, len(prepared))
	for i, q := range r.split.Queries {
		pos[q] = i
	}
	sel := make([]rerank.Query, len(qs))
	for i, q := range qs {
		j, ok := pos[q.Index]
		if !ok {
			return nil, fmt.Errorf("rerank: query %d (%q) is not a query of split %s", q.Index, q.Text, r.split.Name)
		}
		sel[i] = prepared[j]
	}
	start := time.Now()
	rk, err := r.pl.RunAll(ctx, sel)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.env.log, "rerank: %s, %s on %d %s queries in %v\n", r.report, r.pl.Setting(), len(sel), r.split.Name, time.Since(start).Round(time.Millisecond))
	return ordered(rk, k), nil
}

// ordered turns a pipeline's tool lists (best first) into rankings of at most k tools (k <= 0:
// all), each scored by its rank (n for the first of n, down to 1): the pipeline gives an
// order, not comparable scores.
func ordered(rk [][]int, k int) []rank.Ranking {
	out := make([]rank.Ranking, len(rk))
	for i, tools := range rk {
		if k > 0 && len(tools) > k {
			tools = tools[:k]
		}
		out[i] = rank.Ranking{Tools: tools, Scores: make([]float32, len(tools))}
		for j := range tools {
			out[i].Scores[j] = float32(len(tools) - j)
		}
	}
	return out
}
