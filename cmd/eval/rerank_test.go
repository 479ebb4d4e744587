package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// tinyRunDirs are untrained (randomly initialised) runs of every kind for the embedded
// dataset, with the files real runs have, all on the retriever's dev split (fraction 0.1,
// seed 1); mlc is a "popularity" classifier (see writeTinyRuns), otherDev a reranker run
// recorded with another dev split and noMeta a run directory made before run.json.
type tinyRunDirs struct {
	be, ce, qt, mlc, otherDev, noMeta string
	// popularity is the mlc run's ranking of every tool, for every query.
	popularity []int
}

var (
	tinyOnce sync.Once
	tiny     tinyRunDirs
	tinyErr  error
)

func tinyRuns(t *testing.T) tinyRunDirs {
	t.Helper()
	if testing.Short() {
		t.Skip("runs models")
	}
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolret-eval-runs-")
		if err != nil {
			tinyErr = err
			return
		}
		tinyErr = writeTinyRuns(dir)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tiny
}

// setVariable sets the variable of store whose path ends in suffix.
func setVariable(store *model.Store, suffix string, v *tensors.Tensor) error {
	for vr := range store.IterVariables() {
		if strings.HasSuffix(vr.Path(), suffix) {
			return vr.SetValue(v)
		}
	}
	return os.ErrNotExist
}

func writeTinyRuns(dir string) error {
	d, err := data.Default()
	if err != nil {
		return err
	}
	be, err := backend.Open("go")
	if err != nil {
		return err
	}
	var texts []string
	for _, tool := range d.Tools {
		texts = append(texts, tool.Text)
	}
	for _, q := range d.Queries[:300] {
		texts = append(texts, q.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 600, 2, true)
	if err != nil {
		return err
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		return err
	}
	enc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		return err
	}
	split, trainPart, _, err := rundir.Carve(d, "train", 0.25, 7) // not the defaults: every stage must take it from run.json
	if err != nil {
		return err
	}
	tiny = tinyRunDirs{be: filepath.Join(dir, "be"), ce: filepath.Join(dir, "ce"), qt: filepath.Join(dir, "qt"), mlc: filepath.Join(dir, "mlc"),
		otherDev: filepath.Join(dir, "other-dev"), noMeta: filepath.Join(dir, "no-meta")}
	meta := func(run, kind string, sp rundir.Split) error {
		m := &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}
		if run != tiny.be {
			m.Parent = tiny.be
		}
		return rundir.Create(run, m)
	}
	save := func(run string, store *model.Store, files map[string][]byte) error {
		_, err := checkpoints.Save(run, store, checkpoints.Manifest{Step: 1, Seed: 1, Fingerprint: d.Fingerprint()}, files)
		return err
	}
	newStore := func() (*model.Store, error) {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s, enc.Init(s.RootScope(), 3)
	}

	bcfg := &biencoder.Config{Encoder: enc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 32, ToolMaxLen: 64, Similarity: "cosine", Temperature: 0.05}
	files, err := rundir.WriteModelFiles(tiny.be, biencoder.ConfigFile, bcfg.Marshal(), tok)
	if err != nil {
		return err
	}
	store, err := newStore()
	if err != nil {
		return err
	}
	if err := firstErr(meta(tiny.be, "biencoder", split), save(tiny.be, store, files)); err != nil {
		return err
	}

	ccfg := &crossencoder.Config{Encoder: enc, MaxLen: 64, LossKind: crossencoder.LossBCE}
	if files, err = rundir.WriteModelFiles(tiny.ce, crossencoder.ConfigFile, ccfg.Marshal(), tok); err != nil {
		return err
	}
	if store, err = newStore(); err != nil {
		return err
	}
	// Scoring once creates the head's variables.
	if _, err := crossencoder.NewModel(ccfg, tok, be, store, texts[:len(d.Tools)]).Score(context.Background(), "q", []int{0}); err != nil {
		return err
	}
	if err := firstErr(meta(tiny.ce, "crossencoder", split), save(tiny.ce, store, files)); err != nil {
		return err
	}
	other, _, _, err := rundir.Carve(d, "train", 0.25, 8)
	if err != nil {
		return err
	}
	if err := firstErr(meta(tiny.otherDev, "crossencoder", other), os.MkdirAll(tiny.noMeta, 0o755)); err != nil {
		return err
	}

	// The mlc run ranks tools by popularity in the training part, whatever the query: its
	// head's weights are 0 and its biases decrease along that order.
	count := make([]int, len(d.Tools))
	for _, rel := range trainPart.Relevant {
		for _, a := range rel {
			count[a]++
		}
	}
	tiny.popularity = make([]int, len(d.Tools))
	for i := range tiny.popularity {
		tiny.popularity[i] = i
	}
	sort.SliceStable(tiny.popularity, func(i, j int) bool { return count[tiny.popularity[i]] > count[tiny.popularity[j]] })
	bias := make([]float32, len(d.Tools))
	for r, a := range tiny.popularity {
		bias[a] = 2 - 0.05*float32(r)
	}
	for _, c := range []struct {
		run, kind string
		cfg       *classifier.Config
	}{
		{tiny.qt, "classifier", &classifier.Config{Kind: classifier.KindQueryType, Encoder: enc, MaxLen: 32, Labels: []string{classifier.LabelSingle, classifier.LabelMulti}, LossKind: "ce"}},
		{tiny.mlc, "classifier", &classifier.Config{Kind: classifier.KindMLC, Encoder: enc, MaxLen: 32, Labels: classifier.ToolLabels(d), LossKind: "bce"}},
	} {
		if files, err = rundir.WriteModelFiles(c.run, classifier.ConfigFile, c.cfg.Marshal(), tok); err != nil {
			return err
		}
		if store, err = newStore(); err != nil {
			return err
		}
		if _, err := (&classifier.Model{Cfg: c.cfg, Tok: tok, Backend: be, Store: store}).Probabilities([]string{"q"}); err != nil {
			return err
		}
		if c.run == tiny.mlc {
			if err := firstErr(
				setVariable(store, "/classifier/weight", tensors.FromFlatDataAndDimensions(make([]float32, len(d.Tools)*16), len(d.Tools), 16)),
				setVariable(store, "/classifier/bias", tensors.FromFlatDataAndDimensions(bias, len(d.Tools)))); err != nil {
				return err
			}
		}
		if err := firstErr(meta(c.run, c.kind, split), save(c.run, store, files)); err != nil {
			return err
		}
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// fixture is what the expectations of the rerank tests are computed from, independently of
// cmd/eval: the data, the retriever's recorded split and its text-vector retriever.
type fixture struct {
	d                *data.Dataset
	train, dev, test *data.Split
	ret              *biencoder.Retriever
	seen             []bool
}

func newFixture(t *testing.T, r tinyRunDirs) *fixture {
	t.Helper()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{d: d}
	if f.train, f.dev, _, err = rundir.Splits(r.be, d); err != nil {
		t.Fatal(err)
	}
	if f.test, err = d.Split("test"); err != nil {
		t.Fatal(err)
	}
	emb, err := biencoder.LoadRun(r.be, be)
	if err != nil {
		t.Fatal(err)
	}
	if f.ret, err = emb.RetrieverFrom(d, "text", nil); err != nil {
		t.Fatal(err)
	}
	f.seen = make([]bool, len(d.Tools))
	for _, rel := range f.train.Relevant {
		for _, a := range rel {
			f.seen[a] = true
		}
	}
	return f
}

// coarse returns the retriever's top k of every query of s, in s.Queries order.
func (f *fixture) coarse(t *testing.T, s *data.Split, k int) [][]int {
	t.Helper()
	texts := make([]string, len(s.Queries))
	for i, q := range s.Queries {
		texts[i] = f.d.Queries[q].Text
	}
	rk, err := f.ret.RankTexts(texts, k)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]int, len(rk))
	for i, r := range rk {
		out[i] = r.Tools
	}
	return out
}

// metricsOf evaluates rankings of s.Queries on s's judged queries at ks, as -json prints them.
func (f *fixture) metricsOf(t *testing.T, s *data.Split, rankings [][]int, ks []int) map[string]any {
	t.Helper()
	var rk []retrieve.Ranking
	var rel [][]int
	for i, q := range s.Queries {
		if len(s.Relevant[q]) > 0 {
			rk = append(rk, retrieve.Ranking{Tools: rankings[i]})
			rel = append(rel, s.Relevant[q])
		}
	}
	b, err := json.Marshal(metrics.Evaluate(rk, rel, ks))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// oracleScorer is a cross-encoder with known scores: 0.95 for a (query, API) pair whose API is
// relevant to the query text, otherwise a value in [0.1, 0.5) fixed by the pair.
type oracleScorer struct{ rel map[string]map[int]bool }

func newOracle(d *data.Dataset) oracleScorer {
	o := oracleScorer{rel: map[string]map[int]bool{}}
	for _, s := range d.Splits {
		for q, rel := range s.Relevant {
			m := o.rel[d.Queries[q].Text]
			if m == nil {
				m = map[int]bool{}
				o.rel[d.Queries[q].Text] = m
			}
			for _, a := range rel {
				m[a] = true
			}
		}
	}
	return o
}

func (o oracleScorer) score(query string, api int) float32 {
	if o.rel[query][api] {
		return 0.95
	}
	h := fnv.New32a()
	h.Write([]byte(query))
	h.Write([]byte{byte(api), byte(api >> 8)})
	return 0.1 + 0.4*float32(h.Sum32()%1000)/1000
}

func (o oracleScorer) Score(_ context.Context, query string, apis []int) ([]float32, error) {
	out := make([]float32, len(apis))
	for i, a := range apis {
		out[i] = o.score(query, a)
	}
	return out, nil
}

func (o oracleScorer) ScorePairs(_ context.Context, queries []string, pairs []crossencoder.Pair) ([]float32, error) {
	out := make([]float32, len(pairs))
	for i, p := range pairs {
		out[i] = o.score(queries[p.Query], p.Tool)
	}
	return out, nil
}

// rerankKept sorts the APIs of coarse that keep says are kept by score (stable), followed
// by the others in coarse order: what truncation + reranking must give.
func rerankKept(coarse []int, keep func(pos, api int) bool, score func(api int) float32) []int {
	var kept, rest []int
	for i, a := range coarse {
		if keep(i+1, a) {
			kept = append(kept, a)
		} else {
			rest = append(rest, a)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return score(kept[i]) > score(kept[j]) })
	return append(kept, rest...)
}

var rerankKeys = []string{"recall@1", "recall@5", "ndcg@5", "ndcg@10", "comp@5", "comp@10"}

// sameMetrics reports every metric of rerankKeys that differs between got and want.
func sameMetrics(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for _, k := range rerankKeys {
		if got[k] != want[k] || got[k] == nil {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], want[k])
		}
	}
}

func TestRerankMethods(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	ks := []int{1, 5, 10}
	nTools := len(f.d.Tools)
	// The paper's pipeline (the cross-encoder's scores alone); interpolation has its subtest.
	base := func(kv map[string]string) map[string]string {
		out := map[string]string{"retriever": r.be, "reranker": r.ce, "cutoffs": "1,5,10", "m-seen": "3", "m-unseen": "8", "grid-m": "2:4,3:8", "interpolate": "off"}
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	withOracle := func(kv map[string]string) map[string]any {
		o := parseKV(t, base(kv))
		o.rr.scorer = newOracle(f.d)
		return runOpts(t, o)
	}
	oracle := newOracle(f.d)

	// The real (untrained) cross-encoder.
	t.Run("cross-encoder", func(t *testing.T) {
		retr := runJSON(t, map[string]string{"run": r.be, "cutoffs": "1,5,10"})
		if want := f.metricsOf(t, f.test, f.coarse(t, f.test, 10), ks); true {
			sameMetrics(t, "retriever", retr, want)
		}
		// Reranking only the top 1 leaves the retriever's ranking unchanged.
		sameMetrics(t, "Rerank-1", runJSON(t, base(map[string]string{"method": "rerank-m", "depth": "1"})), retr)
		// Truncation at m_s = m_u = m keeps the top m, seen or not: ToolRerank without
		// hierarchy is then Rerank-m, through another code path.
		top8 := runJSON(t, base(map[string]string{"method": "rerank-m", "depth": "8"}))
		sameMetrics(t, "no hierarchy, m_s = m_u = 8", runJSON(t, base(map[string]string{"method": "rerank", "no-hierarchy": "true", "m-seen": "8", "m-unseen": "8"})), top8)
		if top8["ndcg@5"] == retr["ndcg@5"] && top8["recall@1"] == retr["recall@1"] {
			t.Errorf("Rerank-8 with a random cross-encoder has the retriever's metrics %v: nothing reranked?", retr)
		}
	})

	// A cross-encoder with known scores: expectations computed here from the retriever's lists.
	t.Run("oracle scores", func(t *testing.T) {
		if nTools != 70 {
			t.Fatalf("the embedded dataset has %d tools, the test assumes 70", nTools)
		}
		coarse50, coarse70 := f.coarse(t, f.test, 50), f.coarse(t, f.test, 70)
		// Reranking every API puts the relevant ones first: at most 4 per query, so R@5 and
		// C@5 are 100.
		all := withOracle(map[string]string{"method": "rerank-m", "depth": "70"})
		for _, k := range []string{"recall@5", "comp@5", "ndcg@5", "recall@10", "comp@10"} {
			if all[k] != 100.0 {
				t.Errorf("Rerank-70 with oracle scores: %s = %v, want 100", k, all[k])
			}
		}
		for _, tc := range []struct {
			name string
			kv   map[string]string
			k    int
			keep func(pos, api int) bool
		}{
			{"rerank-m 5", map[string]string{"method": "rerank-m", "depth": "5"}, 50, func(pos, _ int) bool { return pos <= 5 }},
			{"rerank-m 70", map[string]string{"method": "rerank-m", "depth": "70"}, 70, func(int, int) bool { return true }},
			{"no hierarchy 3:8", map[string]string{"method": "rerank", "no-hierarchy": "true"}, 50, func(pos, a int) bool {
				return (f.seen[a] && pos <= 3) || (!f.seen[a] && pos <= 8)
			}},
			{"no hierarchy 1:20", map[string]string{"method": "rerank", "no-hierarchy": "true", "m-seen": "1", "m-unseen": "20"}, 50, func(pos, a int) bool {
				return (f.seen[a] && pos <= 1) || (!f.seen[a] && pos <= 20)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				coarse := coarse50
				if tc.k == 70 {
					coarse = coarse70
				}
				want := make([][]int, len(coarse))
				for i, q := range f.test.Queries {
					text := f.d.Queries[q].Text
					want[i] = rerankKept(coarse[i], tc.keep, func(a int) float32 { return oracle.score(text, a) })
				}
				sameMetrics(t, tc.name, withOracle(tc.kv), f.metricsOf(t, f.test, want, ks))
			})
		}
	})

	// The hierarchy-aware modes, with oracle scores and query types: the pipeline the flags
	// describe, built here (the algorithms themselves are tested in package rerank).
	t.Run("modes", func(t *testing.T) {
		_, group := f.d.Groups()
		lib, err := rerank.NewLibrary(group, f.seen)
		if err != nil {
			t.Fatal(err)
		}
		sim := rerank.CosineMatrix(f.ret.Tools)
		queries := func(s *data.Split) []rerank.Query {
			types := classifier.QueryTypes(f.d, s)
			coarse := f.coarse(t, s, 50)
			out := make([]rerank.Query, len(s.Queries))
			for i, q := range s.Queries {
				out[i] = rerank.Query{Text: f.d.Queries[q].Text, Coarse: coarse[i], Multi: types[q], Relevant: s.Relevant[q]}
			}
			return out
		}
		testQs, devQs := queries(f.test), queries(f.dev)
		// The grid tunes on the retriever's recorded dev split (-dev 0.25 -seed 7), not a default one.
		if _, want, err := f.d.CarveDev("train", 0.25, 7); err != nil || !slices.Equal(f.dev.Queries, want.Queries) {
			t.Fatalf("dev split is not the retriever's recorded one (%v)", err)
		}
		for _, tc := range []struct {
			name   string
			kv     map[string]string
			mode   rerank.Mode
			params rerank.Params
			grid   bool
		}{
			{"single only", map[string]string{"only": "single", "tau-s": "0.6"}, rerank.ModeSingle, rerank.Params{MS: 3, MU: 8, TauS: 0.6, TauM: 0.8, N: 2}, false},
			{"multi only", map[string]string{"only": "multi", "per-component": "1", "tau-m": "0.7"}, rerank.ModeMulti, rerank.Params{MS: 3, MU: 8, TauS: 0.8, TauM: 0.7, N: 1}, false},
			{"oracle type", map[string]string{"oracle-type": "true", "m-seen": "2", "m-unseen": "6"}, rerank.ModeAuto, rerank.Params{MS: 2, MU: 6, TauS: 0.8, TauM: 0.8, N: 2}, false},
			{"oracle type, grid", map[string]string{"oracle-type": "true", "grid": "true"}, rerank.ModeAuto, rerank.Params{}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				kv := base(tc.kv)
				kv["method"] = "rerank"
				got := withOracle(kv)
				pl := rerank.Pipeline{Lib: lib, Scorer: oracle, Sim: func(a, b int) float32 { return sim[a][b] }, Params: tc.params, Mode: tc.mode}
				if tc.grid {
					g := rerank.DefaultGrid()
					g.M = [][2]int{{2, 4}, {3, 8}}
					score, err := metrics.ParseMetric("ndcg@5")
					if err != nil {
						t.Fatal(err)
					}
					if pl.Params, _, err = rerank.Search(context.Background(), pl, devQs, g, score); err != nil {
						t.Fatal(err)
					}
					t.Logf("grid on the retriever's %d dev queries: %s", len(devQs), pl.Params)
				}
				rk, err := pl.RunAll(context.Background(), testQs)
				if err != nil {
					t.Fatal(err)
				}
				sameMetrics(t, tc.name, got, f.metricsOf(t, f.test, rk, ks))
			})
		}
	})

	// Interpolation with the retriever's scores: expectations computed here.
	t.Run("interpolation", func(t *testing.T) {
		interp := func(kv map[string]string) map[string]string {
			out := base(kv)
			if _, ok := kv["interpolate"]; !ok {
				delete(out, "interpolate") // the default: minmax
			}
			return out
		}
		withOracle := func(kv map[string]string) map[string]any {
			o := parseKV(t, kv)
			o.rr.scorer = oracle
			return runOpts(t, o)
		}
		// w = 0 is the retriever's ranking, whatever the stage, with the untrained cross-encoder.
		retr := runJSON(t, map[string]string{"run": r.be, "cutoffs": "1,5,10"})
		for _, kv := range []map[string]string{
			{"method": "rerank-m", "depth": "8", "weight": "0"},
			{"method": "rerank", "classifier": r.qt, "weight": "0"},
			{"method": "rerank", "classifier": r.qt, "weight": "0", "interpolate": "zscore", "grid": "true"},
		} {
			sameMetrics(t, fmt.Sprint(kv), runJSON(t, interp(kv)), retr)
		}
		first := func(s *data.Split, k int) []retrieve.Ranking {
			texts := make([]string, len(s.Queries))
			for i, q := range s.Queries {
				texts[i] = f.d.Queries[q].Text
			}
			rk, err := f.ret.RankTexts(texts, k)
			if err != nil {
				t.Fatal(err)
			}
			return rk
		}
		// fusedRankings reranks the top m of each query of s by w·norm(oracle) +
		// (1−w)·norm(retriever), norm over those m.
		fusedRankings := func(s *data.Split, coarse []retrieve.Ranking, m int, w float64, norm string) [][]int {
			out := make([][]int, len(s.Queries))
			for i, q := range s.Queries {
				text := f.d.Queries[q].Text
				top := coarse[i].Tools[:m]
				ce, fs := make([]float64, m), make([]float64, m)
				for j, a := range top {
					ce[j], fs[j] = float64(oracle.score(text, a)), float64(coarse[i].Scores[j])
				}
				ce, fs = normalise(ce, norm), normalise(fs, norm)
				score := map[int]float64{}
				for j, a := range top {
					score[a] = w*ce[j] + (1-w)*fs[j]
				}
				out[i] = rerankKept(coarse[i].Tools, func(pos, _ int) bool { return pos <= m }, func(a int) float32 { return float32(score[a]) })
			}
			return out
		}
		testCoarse, devCoarse := first(f.test, 50), first(f.dev, 50)
		for _, tc := range []struct {
			norm string
			w    float64
		}{{"minmax", 0.5}, {"minmax", 0.2}, {"zscore", 0.7}} {
			got := withOracle(interp(map[string]string{"method": "rerank-m", "depth": "6", "interpolate": tc.norm, "weight": fmt.Sprint(tc.w)}))
			sameMetrics(t, fmt.Sprintf("rerank-m 6, %s w=%v", tc.norm, tc.w), got, f.metricsOf(t, f.test, fusedRankings(f.test, testCoarse, 6, tc.w, tc.norm), ks))
		}
		// -weight dev: the weight of 0, 0.1, ..., 1 with the best dev ndcg@5 (the first on ties).
		bestW, bestDev := -1.0, -1.0
		for i := 0; i <= 10; i++ {
			w := float64(i) / 10
			rk := fusedRankings(f.dev, devCoarse, 6, w, "minmax")
			if w == 0 {
				for j := range rk {
					rk[j] = devCoarse[j].Tools
				}
			}
			v := 0.0
			for j, q := range f.dev.Queries {
				_, n, _ := metrics.Query(rk[j], f.dev.Relevant[q], 5)
				v += n
			}
			if v > bestDev+1e-9 {
				bestW, bestDev = w, v
			}
		}
		t.Logf("dev ndcg@5 picks w=%v", bestW)
		if bestW == 0 {
			t.Fatalf("the oracle cross-encoder must get some weight on dev")
		}
		got := withOracle(interp(map[string]string{"method": "rerank-m", "depth": "6"}))
		want := f.metricsOf(t, f.test, fusedRankings(f.test, testCoarse, 6, bestW, "minmax"), ks)
		sameMetrics(t, "rerank-m 6, w on dev", got, want)
		// A gain that must be overwhelming to count (-min-t) leaves the retriever's ranking;
		// -min-t 0 keeps the dev optimum whatever its evidence.
		sameMetrics(t, "rerank-m 6, w on dev, -min-t 1e9", withOracle(interp(map[string]string{"method": "rerank-m", "depth": "6", "min-t": "1e9"})), retr)
		sameMetrics(t, "rerank-m 6, w on dev, -min-t 0", withOracle(interp(map[string]string{"method": "rerank-m", "depth": "6", "min-t": "0"})), want)
		// The check tells the chosen weight from the one below it.
		below := f.metricsOf(t, f.test, fusedRankings(f.test, testCoarse, 6, bestW-0.1, "minmax"), ks)
		if slices.EqualFunc(rerankKeys, rerankKeys, func(k, _ string) bool { return want[k] == below[k] }) {
			t.Fatalf("w=%v and w=%v give the same test metrics: the check cannot tell them apart", bestW, bestW-0.1)
		}
	})
}

// normalise is min-max or z-score normalisation, computed independently of package rerank.
func normalise(x []float64, norm string) []float64 {
	out := make([]float64, len(x))
	lo, hi, mean := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range x {
		lo, hi, mean = math.Min(lo, v), math.Max(hi, v), mean+v/float64(len(x))
	}
	sd := 0.0
	for _, v := range x {
		sd += (v - mean) * (v - mean) / float64(len(x))
	}
	sd = math.Sqrt(sd)
	for i, v := range x {
		switch {
		case norm == "minmax" && hi > lo:
			out[i] = (v - lo) / (hi - lo)
		case norm == "zscore" && sd > 0:
			out[i] = (v - mean) / sd
		}
	}
	return out
}

// TestRerankUsageVectors checks that with -tool-vectors usage the retriever's tool vectors
// come from its recorded training part only: the dev queries the grid tunes on are left out.
func TestRerankUsageVectors(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	o := parseKV(t, map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.ce, "tool-vectors": "usage"})
	env, err := setupRerank(o, f.d, true)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := biencoder.LoadRun(r.be, be)
	if err != nil {
		t.Fatal(err)
	}
	want, err := emb.RetrieverFrom(f.d, "usage", f.train)
	if err != nil {
		t.Fatal(err)
	}
	withDev, err := emb.Retriever(f.d, "usage", "train")
	if err != nil {
		t.Fatal(err)
	}
	diff := func(a, b [][]float32) float64 {
		m := 0.0
		for i := range a {
			for k := range a[i] {
				m = max(m, math.Abs(float64(a[i][k]-b[i][k])))
			}
		}
		return m
	}
	if d := diff(env.Retriever.Tools, want.Tools); d != 0 {
		t.Errorf("usage vectors differ from the training part's by %g", d)
	}
	if d := diff(env.Retriever.Tools, withDev.Tools); d == 0 {
		t.Errorf("usage vectors equal those of the whole train split: the dev queries are in them")
	}
	if env.Dev.Name != f.dev.Name || len(env.Dev.Queries) != len(f.dev.Queries) {
		t.Errorf("dev split %s (%d queries), want the retriever's %s (%d)", env.Dev.Name, len(env.Dev.Queries), f.dev.Name, len(f.dev.Queries))
	}
}

// TestRerankAblations checks every row of the -ablations table (scores computed once for all
// variants) against the same variant run on its own. The cross-encoder is the oracle scorer
// (the untrained one's path is tested by TestRerankMethods): scoring the top 50 of every dev
// and test query nine times over would take minutes.
func TestRerankAblations(t *testing.T) {
	r := tinyRuns(t)
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	oracle := newOracle(d)
	base := func(kv map[string]string) map[string]string {
		out := map[string]string{"retriever": r.be, "reranker": r.ce, "cutoffs": "1,5,10", "grid-m": "2:4,3:8"}
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	o := parseKV(t, base(map[string]string{"method": "rerank", "classifier": r.qt, "ablations": "true"}))
	o.asJSON, o.rr.scorer = true, oracle
	var out strings.Builder
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Name    string
		Params  string
		Metrics map[string]any
	}
	if err := json.Unmarshal([]byte(out.String()), &rows); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	alone := map[string]map[string]string{
		"bi-encoder alone":        {"run": r.be},
		"Rerank-10":               {"method": "rerank-m", "depth": "10"},
		"Rerank-30":               {"method": "rerank-m", "depth": "30"},
		"Rerank-50":               {"method": "rerank-m", "depth": "50"},
		"ToolRerank":              {"method": "rerank", "classifier": r.qt, "grid": "true"},
		"- without hierarchy":     {"method": "rerank", "no-hierarchy": "true", "grid": "true"},
		"- Alg. 1 only (single)":  {"method": "rerank", "only": "single", "grid": "true"},
		"- Alg. 2 only (multi)":   {"method": "rerank", "only": "multi", "grid": "true"},
		"- oracle query type":     {"method": "rerank", "oracle-type": "true", "grid": "true"},
		"- without interpolation": {"method": "rerank", "classifier": r.qt, "grid": "true", "interpolate": "off"},
	}
	if len(rows) != len(evaluate.Variants)+1 || len(rows) != len(alone) {
		t.Fatalf("%d rows, want %d", len(rows), len(evaluate.Variants)+1)
	}
	for _, row := range rows {
		kv, ok := alone[row.Name]
		if !ok {
			t.Errorf("unexpected row %q", row.Name)
			continue
		}
		delete(alone, row.Name)
		t.Run(row.Name, func(t *testing.T) {
			o := parseKV(t, base(kv))
			o.rr.scorer = oracle
			sameMetrics(t, row.Name, row.Metrics, runOpts(t, o))
		})
	}
	for name := range alone {
		t.Errorf("no row %q", name)
	}
	err = runErr(base(map[string]string{"method": "rerank", "ablations": "true", "only": "single"}))
	if err == nil || !strings.Contains(err.Error(), "-ablations") {
		t.Errorf("-ablations with -only: %v", err)
	}
}

func TestRerankErrors(t *testing.T) {
	r := tinyRuns(t)
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"method": "rerank"}, "-retriever"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce}, "-classifier"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "only": "both"}, "-only"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "classifier": r.mlc}, "querytype"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-metric": "mrr"}, "mrr"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-m": "30:10"}, "m_s < m_u"},
		{map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.ce, "interpolate": "sigmoid"}, "-interpolate"},
		{map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.ce, "weight": "1.5"}, "-weight \"1.5\""},
		{map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.ce, "weight": "best"}, "-weight \"best\""},
		// A reranker selected on another dev split: its training queries are in the grid's dev.
		{map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.otherDev}, "dev queries are training queries"},
		// A run made before run.json: the migration error.
		{map[string]string{"method": "rerank-m", "retriever": r.noMeta, "reranker": r.ce}, "train migrate"},
		{map[string]string{"method": "rerank-m", "retriever": r.be, "reranker": r.noMeta}, "train migrate"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			err := runErr(tc.kv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestMLCRun evaluates an mlc classifier run with -run (cmd/eval detects its kind): the run
// ranks tools by training popularity whatever the query, so its metrics are those of that
// one ranking.
func TestMLCRun(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	got := runJSON(t, map[string]string{"run": r.mlc, "cutoffs": "1,5,10"})
	want := make([][]int, len(f.test.Queries))
	for i := range want {
		want[i] = r.popularity
	}
	sameMetrics(t, "mlc (popularity)", got, f.metricsOf(t, f.test, want, []int{1, 5, 10}))
	if err := runErr(map[string]string{"run": r.qt}); err == nil || !strings.Contains(err.Error(), "mlc") {
		t.Fatalf("a querytype run as a ranker: %v", err)
	}
}

// TestDefaultsFlow runs the README's ToolRerank recipe with every default on a tiny dataset
// cut from the embedded one (the tools of its first 3 tool groups; 30 training and 6 test
// queries whose relevant tools are all among them): train biencoder, then crossencoder and
// classifier -kind querytype with -retriever only (the train command is built here), then eval
// -method rerank and -ablations. Beyond not failing, the default pipeline interpolates with a
// weight tuned on the retriever's dev split, so its dev metric cannot be below the
// retriever's.
func TestDefaultsFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/train and trains models")
	}
	dir := t.TempDir()
	full, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, group := full.Groups()
	d := &data.Dataset{Name: "tiny", Splits: map[string]*data.Split{}}
	newIdx := map[int]int{}
	for a, g := range group {
		if g < 3 {
			newIdx[a] = len(d.Tools)
			d.Tools = append(d.Tools, full.Tools[a])
		}
	}
	for name, n := range map[string]int{"train": 30, "test": 6} {
		s := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range full.Splits[name].Judged() {
			var rel []int
			for _, a := range full.Splits[name].Relevant[q] {
				if i, ok := newIdx[a]; ok {
					rel = append(rel, i)
				}
			}
			if len(rel) < len(full.Splits[name].Relevant[q]) || len(s.Queries) == n {
				continue
			}
			s.Queries = append(s.Queries, len(d.Queries))
			s.Relevant[len(d.Queries)] = rel
			d.Queries = append(d.Queries, full.Queries[q])
		}
		if len(s.Queries) < n {
			t.Fatalf("%s: %d queries on the first 3 tool groups, want %d", name, len(s.Queries), n)
		}
		d.Splits[name] = s
	}
	dataDir := filepath.Join(dir, "data")
	if err := data.WriteBEIR(d, dataDir); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train")
	if out, err := exec.Command("go", "build", "-o", train, "../train").CombinedOutput(); err != nil {
		t.Fatalf("go build ../train: %v\n%s", err, out)
	}
	be, ce, qt := filepath.Join(dir, "be"), filepath.Join(dir, "ce"), filepath.Join(dir, "qt")
	for _, args := range [][]string{
		{"biencoder", "-data", dataDir, "-run", be},
		{"crossencoder", "-data", dataDir, "-retriever", be, "-run", ce},
		{"classifier", "-kind", "querytype", "-data", dataDir, "-retriever", be, "-run", qt},
	} {
		start := time.Now()
		if out, err := exec.Command(train, append(args, "-quiet")...).CombinedOutput(); err != nil {
			t.Fatalf("train %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("train %s in %v", args[0], time.Since(start).Round(time.Millisecond))
	}
	t.Logf("tiny dataset: %d tools, %d training and %d test queries", len(d.Tools), len(d.Splits["train"].Queries), len(d.Splits["test"].Queries))
	kv := map[string]string{"data": dataDir, "method": "rerank", "retriever": be, "reranker": ce, "classifier": qt, "cutoffs": "1,3,5"}
	got := runJSON(t, kv)
	if _, ok := got["ndcg@5"]; !ok {
		t.Fatalf("eval -method rerank: no ndcg@5 in %v", got)
	}
	// The default pipeline's dev ndcg@5 against the retriever's on the same dev split.
	o := parseKV(t, kv)
	tiny, err := data.Load(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := setupRerank(o, tiny, false)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := env.Prepare(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t5, err := tuneOptions(&rerankOptions{gridMetric: "ndcg@5", minT: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, tuned, err := rerank.Tune(context.Background(), env.Pipeline, qs, rerank.Grid{M: [][2]int{{env.Pipeline.Params.MS, env.Pipeline.Params.MU}}, TauS: []float32{env.Pipeline.Params.TauS},
		TauM: []float32{env.Pipeline.Params.TauM}, N: []int{env.Pipeline.Params.N}, W: env.Grid.W}, t5)
	if err != nil {
		t.Fatal(err)
	}
	retr := 0.0
	for _, q := range qs {
		_, n, _ := metrics.Query(q.Coarse, q.Relevant, 5)
		retr += n / float64(len(qs))
	}
	if env.Pipeline.Norm != rerank.NormMinMax || len(env.Grid.W) != 11 || tuned < retr-1e-9 {
		t.Errorf("default pipeline: interpolation %s over %d weights, dev ndcg@5 %.4f, retriever %.4f", env.Pipeline.Norm, len(env.Grid.W), tuned, retr)
	}
	kv["ablations"] = "true"
	o = parseKV(t, kv)
	o.asJSON = true
	var out strings.Builder
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out.String()), &rows); err != nil || len(rows) != len(evaluate.Variants)+1 {
		t.Fatalf("-ablations: %d rows (%v), want %d", len(rows), err, len(evaluate.Variants)+1)
	}
}
