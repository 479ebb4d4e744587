package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
)

var (
	retrieverRun  = flag.String("retriever", "", "rerank: bi-encoder run giving the coarse top-m (and the dev split)")
	rerankerRun   = flag.String("reranker", "", "rerank: cross-encoder run (train crossencoder)")
	classifierRun = flag.String("classifier", "", "rerank: query-type classifier run (train classifier -kind querytype)")
	mSeen         = flag.Int("m-seen", rerank.DefaultParams.MS, "rerank: truncation depth for APIs seen in training (m_s)")
	mUnseen       = flag.Int("m-unseen", rerank.DefaultParams.MU, "rerank: truncation depth for unseen APIs (m_u)")
	tauS          = flag.Float64("tau-s", float64(rerank.DefaultParams.TauS), "rerank: Alg. 1 score threshold (tau_s)")
	tauM          = flag.Float64("tau-m", float64(rerank.DefaultParams.TauM), "rerank: Alg. 2 retriever-cosine threshold (tau_m)")
	nPer          = flag.Int("n", rerank.DefaultParams.N, "rerank: Alg. 2 results kept per connected component (n)")
	gridFlag      = flag.Bool("grid", false, "rerank: grid-search m_s<m_u in {10,30,50}, tau_s, tau_m in {0.6..0.9}, n in {2,3,4} on the dev split, then evaluate with the best")
	gridM         = flag.String("grid-m", "10:30,10:50,30:50", "rerank: the (m_s:m_u) pairs the grid search tries")
	gridMetric    = flag.String("grid-metric", "ndcg@5", "rerank: dev metric the grid search maximises (recall@K, ndcg@K or comp@K)")
	noHierarchy   = flag.Bool("no-hierarchy", false, "rerank ablation: truncation + cross-encoder only")
	onlyAlg       = flag.String("only", "", "rerank ablation: single or multi: use one algorithm for every query")
	oracleType    = flag.Bool("oracle-type", false, "rerank ablation: query type from the qrels instead of the classifier")
	mPlain        = flag.Int("m", 30, "rerank-m: depth of the retriever list the cross-encoder reranks")
	devFracFlag   = flag.Float64("dev", 0, "rerank: dev fraction carved from the training queries (default: the retriever run's, else 0.1)")
)

func init() {
	methods["rerank"] = method{"ToolRerank (needs -retriever, -reranker, -classifier)", buildRerank}
	methods["rerank-m"] = method{"cross-encoder reranking of the retriever's top -m (needs -retriever, -reranker)", buildRerank}
}

// rerankRanker runs the ToolRerank pipeline over the queries of the evaluated split.
type rerankRanker struct {
	d      *data.Dataset
	split  *data.Split
	prep   func(split *data.Split) ([]rerank.Query, error)
	pl     rerank.Pipeline
	report string
}

// Rank implements retrieve.Ranker for the evaluated split's queries (in split order).
func (r *rerankRanker) Rank(ctx context.Context, queries []string, k int) ([]retrieve.Ranking, error) {
	if len(queries) != len(r.split.Queries) {
		return nil, fmt.Errorf("rerank: ranker built for split %s (%d queries), asked %d", r.split.Name, len(r.split.Queries), len(queries))
	}
	for i, q := range r.split.Queries {
		if r.d.Queries[q].Text != queries[i] {
			return nil, fmt.Errorf("rerank: query %d is not the split's", i)
		}
	}
	qs, err := r.prep(r.split)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rk, err := r.pl.RunAll(ctx, qs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "rerank: %s, %s on %d %s queries in %v\n", r.report, r.pl.Params, len(qs), r.split.Name, time.Since(start).Round(time.Millisecond))
	out := make([]retrieve.Ranking, len(rk))
	for i, tools := range rk {
		if k > 0 && len(tools) > k {
			tools = tools[:k]
		}
		out[i] = retrieve.Ranking{Tools: tools, Scores: make([]float32, len(tools))}
		for j := range tools {
			out[i].Scores[j] = float32(len(tools) - j)
		}
	}
	return out, nil
}

// metricFn returns the per-query value of a metric name such as "ndcg@5".
func metricFn(name string) (func(ranked, rel []int) float64, error) {
	kind, ks, ok := strings.Cut(name, "@")
	k, err := strconv.Atoi(ks)
	if !ok || err != nil || k <= 0 {
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	switch kind {
	case "recall", "ndcg", "comp":
	default:
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	return func(ranked, rel []int) float64 {
		r, n, c := metrics.Query(ranked, rel, k)
		switch kind {
		case "recall":
			return r
		case "ndcg":
			return n
		}
		return c
	}, nil
}

// parseGridM parses "10:30,10:50" into (m_s, m_u) pairs with m_s < m_u.
func parseGridM(s string) ([][2]int, error) {
	var out [][2]int
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), ":")
		ms, err1 := strconv.Atoi(a)
		mu, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || ms <= 0 || mu <= ms {
			return nil, fmt.Errorf("-grid-m %q: want m_s:m_u pairs with 0 < m_s < m_u, separated by commas", s)
		}
		out = append(out, [2]int{ms, mu})
	}
	return out, nil
}

// cosineMatrix returns the cosine similarity of every pair of vectors.
func cosineMatrix(v [][]float32) [][]float32 {
	norm := make([]float64, len(v))
	for i, x := range v {
		s := 0.0
		for _, f := range x {
			s += float64(f) * float64(f)
		}
		norm[i] = math.Sqrt(s)
	}
	out := make([][]float32, len(v))
	for i := range v {
		out[i] = make([]float32, len(v))
	}
	for i := range v {
		out[i][i] = 1
		for j := i + 1; j < len(v); j++ {
			s := float32(0)
			for k := range v[i] {
				s += v[i][k] * v[j][k]
			}
			c := float32(0)
			if norm[i] > 0 && norm[j] > 0 {
				c = float32(float64(s) / (norm[i] * norm[j]))
			}
			out[i][j], out[j][i] = c, c
		}
	}
	return out
}

// checkSplit warns when a run's recorded dev split differs from the one used here.
func checkSplit(run string, sp classifier.DataSplit) {
	if run == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(run, classifier.SplitFile)); err != nil {
		return
	}
	if got, err := classifier.ReadSplit(run, sp.DevFraction); err == nil && got != sp {
		fmt.Fprintf(os.Stderr, "rerank: warning: %s was trained with dev fraction %v seed %d, the retriever with %v seed %d: dev queries may have been training queries\n",
			run, got.DevFraction, got.Seed, sp.DevFraction, sp.Seed)
	}
}

// rerankEnv is what every ToolRerank variant shares: the loaded models, the pipeline with
// the flags' parameters and mode, the splits, and prep, which ranks, types and scores a
// split's queries once (memoised by split name).
type rerankEnv struct {
	d         *data.Dataset
	ret       *biencoder.Retriever
	pl        rerank.Pipeline
	grid      rerank.Grid
	dev, eval *data.Split
	prep      func(split *data.Split) ([]rerank.Query, error)
}

// buildRerank loads the runs, prepares the pipeline and, with -grid, tunes it on dev.
func buildRerank(d *data.Dataset) (retrieve.Ranker, error) {
	plain := *name == "rerank-m"
	env, err := setupRerank(d, plain)
	if err != nil {
		return nil, err
	}
	pl, prep, dev, evalSplit, grid, mode := env.pl, env.prep, env.dev, env.eval, env.grid, env.pl.Mode
	desc := "ToolRerank"
	switch {
	case plain:
		desc = fmt.Sprintf("Rerank-%d", *mPlain)
	case mode == rerank.ModeNone:
		desc += " without hierarchy"
	case mode == rerank.ModeSingle:
		desc += " (Alg. 1 only)"
	case mode == rerank.ModeMulti:
		desc += " (Alg. 2 only)"
	}
	if *oracleType && mode == rerank.ModeAuto {
		desc += " with oracle query types"
	}
	if *gridFlag && !plain {
		score, err := metricFn(*gridMetric)
		if err != nil {
			return nil, err
		}
		qs, err := prep(dev)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		best, val, err := rerank.Search(context.Background(), pl, qs, grid, score)
		if err != nil {
			return nil, err
		}
		pl.Params = best
		fmt.Fprintf(os.Stderr, "rerank: grid search (%d points) on %d dev queries in %v: best %s, dev %s %.2f\n",
			grid.Size(), len(qs), time.Since(start).Round(time.Millisecond), best, *gridMetric, 100*val)
		desc += " (grid-searched on dev)"
	}
	*name = desc
	return &rerankRanker{d: d, split: evalSplit, prep: prep, pl: pl, report: desc}, nil
}

// setupRerank loads the runs named by the flags and builds the shared environment. plain is
// Rerank-m (no truncation by seen/unseen, no hierarchy step).
func setupRerank(d *data.Dataset, plain bool) (*rerankEnv, error) {
	if *retrieverRun == "" || *rerankerRun == "" {
		return nil, fmt.Errorf("-method %s needs -retriever RUN and -reranker RUN", *name)
	}
	mode := rerank.ModeAuto
	switch {
	case plain || *noHierarchy:
		mode = rerank.ModeNone
	case *onlyAlg != "":
		m, err := rerank.ParseMode(*onlyAlg)
		if err != nil || (m != rerank.ModeSingle && m != rerank.ModeMulti) {
			return nil, fmt.Errorf("-only %q: want single or multi", *onlyAlg)
		}
		mode = m
	}
	needType := mode == rerank.ModeAuto && !*oracleType
	if needType && *classifierRun == "" {
		return nil, fmt.Errorf("-method rerank needs -classifier RUN (a querytype classifier), or -oracle-type, -only or -no-hierarchy")
	}
	be, err := backend.Open(backend.Name(*beName))
	if err != nil {
		return nil, err
	}
	sp, err := classifier.ReadSplit(*retrieverRun, 0.1)
	if err != nil {
		return nil, err
	}
	if *devFracFlag > 0 {
		sp.DevFraction = *devFracFlag
	}
	checkSplit(*rerankerRun, sp)
	checkSplit(*classifierRun, sp)
	trainPart, dev, err := d.CarveDev("train", sp.DevFraction, int64(sp.Seed))
	if err != nil {
		return nil, err
	}
	evalSplit, err := d.Split(*split)
	if err != nil {
		return nil, err
	}
	emb, err := biencoder.LoadRun(*retrieverRun, be)
	if err != nil {
		return nil, err
	}
	ret, err := emb.Retriever(d, *vectors, "train")
	if err != nil {
		return nil, err
	}
	toolTexts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		toolTexts[i] = t.Text
	}
	ce, err := crossencoder.LoadRun(*rerankerRun, be, toolTexts)
	if err != nil {
		return nil, err
	}
	var typer *classifier.Model
	if needType {
		if typer, err = classifier.LoadRun(*classifierRun, be); err != nil {
			return nil, err
		}
		if typer.Cfg.Kind != classifier.KindQueryType {
			return nil, fmt.Errorf("-classifier %s is a %s model, want querytype", *classifierRun, typer.Cfg.Kind)
		}
	}
	// Seen = used by the training queries the models were trained on (train minus dev).
	seen := make([]bool, len(d.Tools))
	for _, rel := range trainPart.Relevant {
		for _, t := range rel {
			seen[t] = true
		}
	}
	_, group := d.Groups()
	lib, err := rerank.NewLibrary(group, seen)
	if err != nil {
		return nil, err
	}
	sim := cosineMatrix(ret.Tools)
	cache := &rerank.ScoreCache{Scorer: ce}
	params := rerank.Params{MS: *mSeen, MU: *mUnseen, TauS: float32(*tauS), TauM: float32(*tauM), N: *nPer}
	if plain {
		params = rerank.Params{MS: *mPlain, MU: *mPlain, TauS: params.TauS, TauM: params.TauM, N: params.N}
	}
	pl := rerank.Pipeline{Lib: lib, Scorer: cache, Sim: func(a, b int) float32 { return sim[a][b] }, Params: params, Mode: mode}
	grid := rerank.DefaultGrid()
	if grid.M, err = parseGridM(*gridM); err != nil {
		return nil, err
	}
	depth := func() int {
		m := max(params.MS, params.MU)
		if (*gridFlag || *ablations) && !plain {
			for _, g := range grid.M {
				m = max(m, g[0], g[1])
			}
		}
		if *ablations {
			for _, v := range rerankVariants {
				m = max(m, v.plainM)
			}
		}
		return m
	}()
	// prep ranks a split's judged queries with the retriever, types them and fills the score
	// cache with every pair the pipeline (or the grid) can ask for, in one batched pass.
	prep := func(s *data.Split) ([]rerank.Query, error) {
		ctx := context.Background()
		qs := s.Queries
		texts := make([]string, len(qs))
		for i, q := range qs {
			texts[i] = d.Queries[q].Text
		}
		start := time.Now()
		coarse, err := ret.RankTexts(texts, max(depth, 50))
		if err != nil {
			return nil, err
		}
		out := make([]rerank.Query, len(qs))
		var pairs []crossencoder.Pair
		for i, q := range qs {
			out[i] = rerank.Query{Text: texts[i], Coarse: coarse[i].Tools, Relevant: s.Relevant[q]}
			need := coarse[i].Tools[:min(depth, len(coarse[i].Tools))]
			if mode == rerank.ModeAuto || mode == rerank.ModeSingle { // Alg. 1 may add unseen tools' APIs
				need = rerank.Needed(lib, coarse[i].Tools, depth)
			}
			for _, a := range need {
				pairs = append(pairs, crossencoder.Pair{Query: i, Tool: a})
			}
		}
		scores, err := ce.ScorePairs(ctx, texts, pairs)
		if err != nil {
			return nil, err
		}
		for j, p := range pairs {
			cache.Put(texts[p.Query], p.Tool, scores[j])
		}
		fmt.Fprintf(os.Stderr, "rerank: %s: retriever top-%d and %d cross-encoder scores for %d queries in %v\n",
			s.Name, max(depth, 50), len(pairs), len(qs), time.Since(start).Round(time.Millisecond))
		types := classifier.QueryTypes(d, s)
		if typer != nil {
			p, err := typer.PMulti(texts)
			if err != nil {
				return nil, err
			}
			for i := range out {
				out[i].Multi = p[i] > 0.5
			}
			acc := classifier.TypeAccuracy(p, qs, types)
			fmt.Fprintf(os.Stderr, "rerank: %s: query-type classifier accuracy %.2f (single-tool %.2f of %.0f, multi-tool %.2f of %.0f)\n",
				s.Name, acc["accuracy"], acc["acc_single"], acc["n_single"], acc["acc_multi"], acc["n_multi"])
		} else {
			for i, q := range qs {
				out[i].Multi = types[q]
			}
		}
		return out, nil
	}
	memo := map[string][]rerank.Query{}
	env := &rerankEnv{d: d, ret: ret, pl: pl, grid: grid, dev: dev, eval: evalSplit}
	env.prep = func(s *data.Split) ([]rerank.Query, error) {
		if qs, ok := memo[s.Name]; ok {
			return qs, nil
		}
		qs, err := prep(s)
		if err == nil {
			memo[s.Name] = qs
		}
		return qs, err
	}
	return env, nil
}
