package evalcmd

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"sort"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
)

// fixture is what the expectations of the rerank tests are computed from, independently of
// cmd/eval: the data, the retriever's recorded split and its text-vector retriever.
type fixture struct {
	d                *data.Dataset
	train, dev, test *data.Split
	ret              *biencoder.Ranker
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
	var rk []rank.Ranking
	var rel [][]int
	for i, q := range s.Queries {
		if len(s.Relevant[q]) > 0 {
			rk = append(rk, rank.Ranking{Tools: rankings[i]})
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

// TestRerankUsageVectors checks that with -tool-vectors usage the retriever's tool vectors
// come from its recorded training part only: the dev queries the grid tunes on are left out.
func TestRerankUsageVectors(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	o := parseKV(t, map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.ce, "tool-vectors": "usage"})
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
	withDev, err := emb.Ranker(f.d, "usage", "train")
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
