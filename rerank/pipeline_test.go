package rerank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/metrics"
)

func TestPipelineRun(t *testing.T) {
	lib := testLib(t) // tool 0 = {0,1,2}, tool 1 = {3,4}, tool 2 = {5,6,7} (unseen), tool 3 = {8}
	ctx := context.Background()
	// Coarse positions: 0@1 3@2 8@3 1@4 5@5 4@6 2@7 6@8 7@9.
	coarse := []int{0, 3, 8, 1, 5, 4, 2, 6, 7}
	scores := map[int]float32{0: 0.5, 1: 0.3, 2: 0.45, 3: 0.4, 4: 0.35, 5: 0.9, 6: 0.95, 7: 0.2, 8: 0.1}
	for _, tc := range []struct {
		name   string
		p      Params
		mode   Mode
		multi  bool
		sim    func(a, b int) float32
		want   []int
		scored [][]int // cross-encoder calls
	}{
		{
			// m_s=3 keeps seen 0,3,8; m_u=6 keeps unseen 5 (position 5) but not 6, 7 (8, 9).
			// Rerank: 5 .9, 0 .5, 3 .4, 8 .1. Alg. 1: X = {tool 2} (5 > .8), unseen: its APIs
			// 6 and 7, outside the truncated list, join F1, reranked: 6 .95, 5 .9, 7 .2; F2 =
			// 0, 3, 8; then what truncation dropped, in coarse order: 1, 4, 2.
			name: "single-tool, unseen tool beyond the truncation", p: Params{MS: 3, MU: 6, TauS: 0.8}, multi: false,
			want: []int{6, 5, 7, 0, 3, 8, 1, 4, 2}, scored: [][]int{{0, 3, 8, 5}, {5, 6, 7}},
		},
		{
			// Same list with tau_s above every score: X falls back to the top result's tool (2).
			name: "single-tool, empty X", p: Params{MS: 3, MU: 6, TauS: 0.99}, multi: false,
			want: []int{6, 5, 7, 0, 3, 8, 1, 4, 2}, scored: [][]int{{0, 3, 8, 5}, {5, 6, 7}},
		},
		{
			// Seen top result: tau_s .45 puts tools 0 (0 .5) and 2 (5 .9) in X.
			name: "single-tool, two tools in X", p: Params{MS: 4, MU: 5, TauS: 0.45}, multi: false,
			want: []int{6, 5, 0, 1, 7, 3, 8, 4, 2}, scored: [][]int{{0, 3, 8, 1, 5}, {5, 0, 1, 6, 7}},
		},
		{
			// Multi-tool, n = 1, no similarity: one result per tool first. Kept (m_s = m_u = 7):
			// 0 3 8 1 5 4 2 -> reranked 5 .9, 0 .5, 2 .45, 3 .4, 4 .35, 1 .3, 8 .1.
			// Components = tools: {5}, {0,2,1}, {3,4}, {8}: F1 = 5, 0, 3, 8; F2 = 2, 4, 1.
			name: "multi-tool, components larger than n", p: Params{MS: 7, MU: 7, N: 1}, multi: true,
			want: []int{5, 0, 3, 8, 2, 4, 1, 6, 7}, scored: [][]int{{0, 3, 8, 1, 5, 4, 2}},
		},
		{
			// Similarity above tau_m joins tools 1 and 3 (APIs 3 and 8): 8 moves to F2.
			name: "multi-tool, similarity edge", p: Params{MS: 7, MU: 7, N: 1, TauM: 0.7}, multi: true,
			sim: func(a, b int) float32 {
				if a+b == 11 && (a == 3 || a == 8) {
					return 0.75
				}
				return 0.1
			},
			want: []int{5, 0, 3, 2, 4, 1, 8, 6, 7}, scored: [][]int{{0, 3, 8, 1, 5, 4, 2}},
		},
		{
			name: "no hierarchy", p: Params{MS: 3, MU: 6, TauS: 0.8}, mode: ModeNone, multi: true,
			want: []int{5, 0, 3, 8, 1, 4, 2, 6, 7}, scored: [][]int{{0, 3, 8, 5}},
		},
		{
			name: "forced multi on a single-tool query", p: Params{MS: 7, MU: 7, N: 1}, mode: ModeMulti, multi: false,
			want: []int{5, 0, 3, 8, 2, 4, 1, 6, 7}, scored: [][]int{{0, 3, 8, 1, 5, 4, 2}},
		},
		{
			name: "forced single on a multi-tool query", p: Params{MS: 3, MU: 6, TauS: 0.8}, mode: ModeSingle, multi: true,
			want: []int{6, 5, 7, 0, 3, 8, 1, 4, 2}, scored: [][]int{{0, 3, 8, 5}, {5, 6, 7}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &fixedScorer{scores: scores}
			p := &Pipeline{Lib: lib, Scorer: s, Sim: tc.sim, Params: tc.p, Mode: tc.mode}
			got, err := p.Run(ctx, "q", coarse, tc.multi)
			if err != nil {
				t.Fatal(err)
			}
			if g := CandidateAPIs(got); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("ranking %v, want %v", g, tc.want)
			}
			if !reflect.DeepEqual(s.calls, tc.scored) {
				t.Errorf("cross-encoder calls %v, want %v", s.calls, tc.scored)
			}
		})
	}
}

func TestPipelineEmpty(t *testing.T) {
	p := &Pipeline{Lib: testLib(t), Scorer: &fixedScorer{}, Params: DefaultParams}
	for _, multi := range []bool{false, true} {
		got, err := p.Run(context.Background(), "q", nil, multi)
		if err != nil || len(got) != 0 {
			t.Fatalf("empty coarse list (multi %v): %v, %v", multi, got, err)
		}
	}
}

func TestNeeded(t *testing.T) {
	lib := testLib(t)
	for _, tc := range []struct {
		coarse []int
		m      int
		want   []int
	}{
		{[]int{0, 3, 5, 8, 1}, 3, []int{0, 3, 5, 6, 7}}, // tool 2 is unseen: all its APIs
		{[]int{0, 3, 8, 1, 5}, 3, []int{0, 3, 8}},       // the unseen API is beyond m
		{[]int{7, 6}, 10, []int{7, 6, 5}},
		{nil, 10, []int{}},
	} {
		if got := Needed(lib, tc.coarse, tc.m); !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("Needed(%v, %d) = %v, want %v", tc.coarse, tc.m, got, tc.want)
		}
	}
}

func TestScoreCache(t *testing.T) {
	ctx := context.Background()
	c := &ScoreCache{}
	c.Put("a", 1, 0.5)
	c.Put("b", 1, 0.7)
	got, err := c.Score(ctx, "a", []int{1})
	if err != nil || got[0] != 0.5 {
		t.Fatalf("cached score %v, %v", got, err)
	}
	if _, err := c.Score(ctx, "a", []int{1, 2}); err == nil || !strings.Contains(err.Error(), "no score") {
		t.Fatalf("missing score without scorer: %v", err)
	}
	s := &fixedScorer{scores: map[int]float32{2: 0.9, 3: 0.1}}
	c.Scorer = s
	got, err = c.Score(ctx, "a", []int{2, 1, 3})
	if err != nil || !reflect.DeepEqual(got, []float32{0.9, 0.5, 0.1}) {
		t.Fatalf("scores %v, %v", got, err)
	}
	if !reflect.DeepEqual(s.calls, [][]int{{2, 3}}) || c.Misses() != 2 {
		t.Fatalf("scorer asked %v, misses %d: want only the missing pairs", s.calls, c.Misses())
	}
	if _, err := c.Score(ctx, "a", []int{3, 2}); err != nil || len(s.calls) != 1 {
		t.Fatalf("second call must hit the cache: calls %v, %v", s.calls, err)
	}
}

// TestSearchMatchesFullGrid checks the decomposed search against a brute-force pass over the
// full product grid, on random libraries, rankings and scores.
func TestSearchMatchesFullGrid(t *testing.T) {
	ctx := context.Background()
	ndcg3 := func(ranked, rel []int) float64 { _, n, _ := metrics.Query(ranked, rel, 3); return n }
	grid := Grid{M: [][2]int{{2, 4}, {3, 6}, {4, 8}}, TauS: []float32{0.3, 0.6, 0.9}, TauM: []float32{0.2, 0.5, 0.8}, N: []int{1, 2}}
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		nAPI := 16
		group := make([]int, nAPI)
		seen := make([]bool, nAPI)
		for a := range group {
			group[a] = r.IntN(5)
			seen[a] = r.Float64() < 0.75
		}
		lib, err := NewLibrary(group, seen)
		if err != nil {
			t.Fatal(err)
		}
		sim := make([][]float32, nAPI)
		for a := range sim {
			sim[a] = make([]float32, nAPI)
		}
		for a := range nAPI {
			for b := a + 1; b < nAPI; b++ {
				sim[a][b] = r.Float32()
				sim[b][a] = sim[a][b]
			}
		}
		cache := &ScoreCache{}
		var qs []Query
		for i := range 12 {
			text := fmt.Sprintf("q%d", i)
			coarse := r.Perm(nAPI)
			for _, a := range coarse {
				cache.Put(text, a, r.Float32())
			}
			rel := []int{coarse[r.IntN(6)], coarse[r.IntN(10)]}
			qs = append(qs, Query{Text: text, Coarse: coarse, Multi: r.IntN(2) == 0, Relevant: rel})
		}
		for _, mode := range []Mode{ModeAuto, ModeNone, ModeSingle, ModeMulti} {
			base := Pipeline{Lib: lib, Scorer: cache, Sim: func(a, b int) float32 { return sim[a][b] }, Mode: mode}
			_, got, err := Search(ctx, base, qs, grid, ndcg3)
			if err != nil {
				t.Fatal(err)
			}
			want := math.Inf(-1)
			for _, m := range grid.M {
				for _, ts := range grid.TauS {
					for _, tm := range grid.TauM {
						for _, n := range grid.N {
							p := base
							p.Params = Params{MS: m[0], MU: m[1], TauS: ts, TauM: tm, N: n}
							rk, err := p.RunAll(ctx, qs)
							if err != nil {
								t.Fatal(err)
							}
							s := 0.0
							for i, q := range qs {
								s += ndcg3(rk[i], q.Relevant)
							}
							want = max(want, s/float64(len(qs)))
						}
					}
				}
			}
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("seed %d mode %d: search best %.6f, full grid best %.6f", seed, mode, got, want)
			}
		}
		if cache.Misses() != 0 {
			t.Fatalf("search asked the cross-encoder %d times despite the cache", cache.Misses())
		}
	}
}

func TestDefaultGrid(t *testing.T) {
	g := DefaultGrid()
	if g.Size() != 3*7*7*3 {
		t.Fatalf("grid size %d", g.Size())
	}
	for _, m := range g.M {
		if m[0] >= m[1] {
			t.Errorf("m_s %d must be < m_u %d", m[0], m[1])
		}
	}
	if g.TauS[0] != 0.6 || g.TauS[6] != 0.9 || g.TauM[3] != 0.75 {
		t.Errorf("taus %v", g.TauS)
	}
	for _, s := range []string{"", "auto", "none", "single", "multi"} {
		if _, err := ParseMode(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseMode("x"); err == nil {
		t.Error("ParseMode(x) must fail")
	}
}
