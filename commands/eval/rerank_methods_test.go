package evalcmd

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

func TestRerankMethods(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	ks := []int{1, 5, 10}
	nTools := len(f.d.Tools)
	// The paper's pipeline (the cross-encoder's scores alone); interpolation has its subtest.
	base := func(kv map[string]string) map[string]string {
		out := map[string]string{"first-stage": r.be, "reranker": r.ce, "cutoffs": "1,5,10", "m-seen": "3", "m-unseen": "8", "grid-m": "2:4,3:8", "interpolate": "off"}
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
		first := func(s *data.Split, k int) []rank.Ranking {
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
		fusedRankings := func(s *data.Split, coarse []rank.Ranking, m int, w float64, norm string) [][]int {
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
