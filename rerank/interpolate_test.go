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

func near(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-float64(b[i])) > tol {
			return false
		}
	}
	return true
}

func TestNormalize(t *testing.T) {
	r3 := float32(math.Sqrt(1.5)) // z-scores of 1, 2, 3: population std sqrt(2/3)
	for _, tc := range []struct {
		name string
		in   []float32
		n    Norm
		want []float32
	}{
		{"minmax", []float32{0.2, 0.6, 1.0}, NormMinMax, []float32{0, 0.5, 1}},
		{"minmax, unsorted and negative", []float32{-0.5, 0.5, 0, 1.5}, NormMinMax, []float32{0, 0.5, 0.25, 1}},
		{"minmax, all equal", []float32{0.7, 0.7}, NormMinMax, []float32{0, 0}},
		{"minmax, one score", []float32{0.3}, NormMinMax, []float32{0}},
		{"zscore", []float32{1, 2, 3}, NormZScore, []float32{-r3, 0, r3}},
		{"zscore, two", []float32{0.1, 0.5}, NormZScore, []float32{-1, 1}},
		{"zscore, all equal", []float32{2, 2, 2}, NormZScore, []float32{0, 0, 0}},
		{"off copies", []float32{0.3, -1}, NormOff, []float32{0.3, -1}},
		{"empty", nil, NormMinMax, []float32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float32(nil), tc.in...)
			got := Normalize(tc.in, tc.n)
			if !near(got, tc.want, 1e-6) {
				t.Errorf("Normalize(%v, %s) = %v, want %v", tc.in, tc.n, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) && len(in) > 0 {
				t.Errorf("input changed to %v", tc.in)
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	for _, tc := range []struct {
		name          string
		second, first []float32
		w             float32
		n             Norm
		want          []float32
		err           string
	}{
		// ce [.9 .1 .5] -> [1 0 .5]; first [.2 .8 .5] -> [0 1 .5]; .3·ce + .7·first.
		{name: "minmax w=.3", second: []float32{0.9, 0.1, 0.5}, first: []float32{0.2, 0.8, 0.5}, w: 0.3, n: NormMinMax, want: []float32{0.3, 0.7, 0.5}},
		{name: "minmax w=1", second: []float32{0.9, 0.1, 0.5}, first: []float32{0.2, 0.8, 0.5}, w: 1, n: NormMinMax, want: []float32{1, 0, 0.5}},
		{name: "minmax w=0", second: []float32{0.9, 0.1, 0.5}, first: []float32{0.2, 0.8, 0.5}, w: 0, n: NormMinMax, want: []float32{0, 1, 0.5}},
		// ce [.1 .5] -> z [-1 1]; first [.4 .2] -> z [1 -1]; .75·ce + .25·first.
		{name: "zscore w=.75", second: []float32{0.1, 0.5}, first: []float32{0.4, 0.2}, w: 0.75, n: NormZScore, want: []float32{-0.5, 0.5}},
		{name: "lengths", second: []float32{0.1}, first: []float32{0.1, 0.2}, w: 0.5, n: NormMinMax, err: "1 cross-encoder scores with 2"},
		{name: "weight above 1", second: []float32{0.1}, first: []float32{0.2}, w: 1.5, n: NormMinMax, err: "weight 1.5"},
		{name: "negative weight", second: []float32{0.1}, first: []float32{0.2}, w: -0.1, n: NormMinMax, err: "weight -0.1"},
		{name: "NaN weight", second: []float32{0.1}, first: []float32{0.2}, w: float32(math.NaN()), n: NormMinMax, err: "weight NaN"},
		{name: "off", second: []float32{0.1}, first: []float32{0.2}, w: 0.5, n: NormOff, err: "want minmax or zscore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Interpolate(tc.second, tc.first, tc.w, tc.n)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !near(got, tc.want, 1e-6) {
				t.Errorf("Interpolate = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseNormAndWeights(t *testing.T) {
	for s, want := range map[string]Norm{"": NormOff, "off": NormOff, "minmax": NormMinMax, "zscore": NormZScore} {
		if got, err := ParseNorm(s); err != nil || got != want {
			t.Errorf("ParseNorm(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseNorm("sigmoid"); err == nil {
		t.Error("ParseNorm(sigmoid) must fail")
	}
	if got, want := Weights(10), []float32{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Weights(10) = %v", got)
	}
	if got, want := Weights(4), []float32{0, 0.25, 0.5, 0.75, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Weights(4) = %v", got)
	}
}

// TestPipelineInterpolated checks rankings by hand-computed fused scores.
func TestPipelineInterpolated(t *testing.T) {
	lib := testLib(t) // tool 0 = {0,1,2}, tool 1 = {3,4}, tool 2 = {5,6,7} (unseen), tool 3 = {8}
	ctx := context.Background()
	coarse := []int{0, 3, 8, 1, 5, 4, 2, 6, 7}
	ce := map[int]float32{0: 0.5, 1: 0.3, 2: 0.45, 3: 0.4, 4: 0.35, 5: 0.9, 6: 0.95, 7: 0.2, 8: 0.1}
	// First-stage scores, decreasing along coarse: 0 .9, 3 .8, 8 .7, 1 .6, 5 .5, 4 .4, 2 .3, 6 .2, 7 .1.
	first := make([]float32, 9)
	for i, a := range coarse {
		first[a] = float32(9-i) / 10
	}
	for _, tc := range []struct {
		name   string
		p      Params
		mode   Mode
		multi  bool
		want   []int
		scored [][]int
	}{
		{
			// Kept 0 3 8 5 (m_s 3, m_u 6). ce .5 .4 .1 .9 -> minmax .5 .375 0 1; first .9 .8 .7 .5 ->
			// 1 .75 .5 0. w .5: 0 .75, 3 .5625, 8 .25, 5 .5: 0, 3, 5, 8; then 1 4 2 6 7.
			name: "no hierarchy, w .5", p: Params{MS: 3, MU: 6, W: 0.5}, mode: ModeNone,
			want: []int{0, 3, 5, 8, 1, 4, 2, 6, 7}, scored: [][]int{{0, 3, 8, 5}},
		},
		{
			// Same, w .8: 0 .6, 3 .45, 8 .1, 5 .8: 5, 0, 3, 8.
			name: "no hierarchy, w .8", p: Params{MS: 3, MU: 6, W: 0.8}, mode: ModeNone,
			want: []int{5, 0, 3, 8, 1, 4, 2, 6, 7}, scored: [][]int{{0, 3, 8, 5}},
		},
		{
			// w 1 ranks by the cross-encoder alone (minmax is monotone): TestPipelineRun's "no hierarchy".
			name: "no hierarchy, w 1", p: Params{MS: 3, MU: 6, W: 1}, mode: ModeNone,
			want: []int{5, 0, 3, 8, 1, 4, 2, 6, 7}, scored: [][]int{{0, 3, 8, 5}},
		},
		{
			// Alg. 1 on the fused scores of w .5 (0 .75, 3 .5625, 5 .5, 8 .25), tau_s .7: X = {tool 0}
			// (API 0), seen: F1 = 0 (and no extension), F2 = 3 5 8.
			name: "single-tool, w .5", p: Params{MS: 3, MU: 6, TauS: 0.7, W: 0.5}, mode: ModeSingle,
			want: []int{0, 3, 5, 8, 1, 4, 2, 6, 7}, scored: [][]int{{0, 3, 8, 5}},
		},
		{
			// tau_s .45: X = {tool 0, tool 1, tool 2}; tool 2 is unseen: 6, 7 join F1 = 0 3 5 6 7,
			// re-reranked: ce .5 .4 .9 .95 .2 -> (.4, .26667, .93333, 1, 0); first .9 .8 .5 .2 .1
			// -> (1, .875, .5, .125, 0); w .5: 0 .7, 3 .57083, 5 .71667, 6 .5625, 7 0.
			// F1 = 5 0 3 6 7, F2 = 8.
			name: "single-tool, extended X, w .5", p: Params{MS: 3, MU: 6, TauS: 0.45, W: 0.5}, mode: ModeSingle,
			want: []int{5, 0, 3, 6, 7, 8, 1, 4, 2}, scored: [][]int{{0, 3, 8, 5}, {0, 3, 5, 6, 7}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &fixedScorer{scores: ce}
			p := &Pipeline{Lib: lib, Scorer: s, Params: tc.p, Mode: tc.mode, Norm: NormMinMax}
			got, err := p.RunQuery(ctx, Query{Text: "q", Coarse: coarse, First: first, Multi: tc.multi})
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
	// Interpolation without first-stage scores, or a weight out of range, is an error.
	p := &Pipeline{Lib: lib, Scorer: &fixedScorer{scores: ce}, Params: Params{MS: 3, MU: 6, W: 0.5}, Norm: NormMinMax}
	if _, err := p.Run(ctx, "q", coarse, false); err == nil || !strings.Contains(err.Error(), "first-stage scores") {
		t.Errorf("no first-stage scores: %v", err)
	}
	p.Params.W = 2
	if _, err := p.RunQuery(ctx, Query{Text: "q", Coarse: coarse, First: first}); err == nil || !strings.Contains(err.Error(), "weight 2") {
		t.Errorf("weight 2: %v", err)
	}
	p.Params.W = 0.5
	if _, err := p.RunQuery(ctx, Query{Text: "q", Coarse: coarse, First: first[:4]}); err == nil || !strings.Contains(err.Error(), "no first-stage score") {
		t.Errorf("short first-stage scores: %v", err)
	}
}

// TestWeightZeroIsFirstStage checks that w = 0 returns the coarse ranking exactly, in every
// mode, for any truncation and thresholds, without asking the cross-encoder.
func TestWeightZeroIsFirstStage(t *testing.T) {
	lib := testLib(t)
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		coarse := r.Perm(9)
		first := make([]float32, 9)
		for i, a := range coarse {
			first[a] = 1 - float32(i)/9 + 0.01*r.Float32()
		}
		for _, mode := range []Mode{ModeAuto, ModeNone, ModeSingle, ModeMulti} {
			for _, norm := range []Norm{NormMinMax, NormZScore} {
				s := &fixedScorer{scores: map[int]float32{0: 0.9, 1: 0.1, 2: 0.8, 3: 0.5, 4: 0.95, 5: 0.3, 6: 0.6, 7: 0.7, 8: 0.2}}
				p := &Pipeline{Lib: lib, Scorer: s, Mode: mode, Norm: norm, Params: Params{MS: 2, MU: 5, TauS: 0.1, TauM: 0, N: 1}}
				got, err := p.RunQuery(context.Background(), Query{Text: "q", Coarse: coarse, First: first, Multi: trial%2 == 0})
				if err != nil {
					t.Fatal(err)
				}
				if g := CandidateAPIs(got); !reflect.DeepEqual(g, coarse) {
					t.Fatalf("trial %d mode %d %s: w=0 ranking %v, want the coarse %v", trial, mode, norm, g, coarse)
				}
				if len(s.calls) != 0 {
					t.Fatalf("w=0 asked the cross-encoder %v", s.calls)
				}
			}
		}
	}
}

// TestSearchPicksWeight is a dev split of two queries (recall@1) that only w = 0.4 ranks
// right: query a needs w > 1/3, query b needs w < 5/11.
func TestSearchPicksWeight(t *testing.T) {
	lib, err := NewLibrary([]int{0, 1, 2, 3, 4, 5}, []bool{true, true, true, true, true, true})
	if err != nil {
		t.Fatal(err)
	}
	first := []float32{0.9, 0.5, 0.1, 0.9, 0.5, 0.1} // minmax per query: 1, .5, 0
	cache := &ScoreCache{}
	// a: ce 0 1 .6 (minmax same): API 1 beats 0 when w + .5(1-w) > 1-w, w > 1/3.
	cache.Put("a", 0, 0)
	cache.Put("a", 1, 1)
	cache.Put("a", 2, 0.6)
	// b: ce .4 1 0: API 3 beats 4 when .4w + (1-w) > w + .5(1-w), w < 5/11.
	cache.Put("b", 3, 0.4)
	cache.Put("b", 4, 1)
	cache.Put("b", 5, 0)
	qs := []Query{
		{Text: "a", Coarse: []int{0, 1, 2}, First: first, Relevant: []int{1}},
		{Text: "b", Coarse: []int{3, 4, 5}, First: first, Relevant: []int{3}},
	}
	r1 := func(ranked, rel []int) float64 { r, _, _ := metrics.Query(ranked, rel, 1); return r }
	base := Pipeline{Lib: lib, Scorer: cache, Mode: ModeNone, Norm: NormMinMax}
	g := Grid{M: [][2]int{{3, 4}}, W: Weights(10)}
	best, val, err := Search(context.Background(), base, qs, g, r1)
	if err != nil {
		t.Fatal(err)
	}
	if best.W != 0.4 || val != 1 {
		t.Fatalf("best w %v (dev recall@1 %v), want 0.4 (1)", best.W, val)
	}
	// Every other weight gets one query right.
	for _, w := range Weights(10) {
		pl := base
		pl.Params = Params{MS: 3, MU: 4, W: w}
		rk, err := pl.RunAll(context.Background(), qs)
		if err != nil {
			t.Fatal(err)
		}
		s := (r1(rk[0], qs[0].Relevant) + r1(rk[1], qs[1].Relevant)) / 2
		if want := map[bool]float64{true: 1, false: 0.5}[w == 0.4]; s != want {
			t.Errorf("w %v: dev recall@1 %v, want %v", w, s, want)
		}
	}
	// Without interpolation the grid's weights are ignored: the cross-encoder alone gets a
	// right and b wrong.
	base.Norm = NormOff
	if best, val, err = Search(context.Background(), base, qs, g, r1); err != nil || val != 0.5 {
		t.Fatalf("no interpolation: best %v, dev %v, %v; want 0.5", best, val, err)
	}
}

// TestSearchWithWeights checks the decomposed search over weights against a brute-force pass
// over the full product grid, and that the best never scores below the first stage (w = 0).
func TestSearchWithWeights(t *testing.T) {
	ctx := context.Background()
	ndcg3 := func(ranked, rel []int) float64 { _, n, _ := metrics.Query(ranked, rel, 3); return n }
	grid := Grid{M: [][2]int{{2, 4}, {4, 8}}, TauS: []float32{0.3, 0.9}, TauM: []float32{0.2, 0.8}, N: []int{1, 2}, W: Weights(4)}
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
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
		cache := &ScoreCache{}
		var qs []Query
		firstStage := 0.0
		for i := range 12 {
			text := fmt.Sprintf("q%d", i)
			coarse := r.Perm(nAPI)
			first := make([]float32, nAPI)
			for j, a := range coarse {
				cache.Put(text, a, r.Float32())
				first[a] = 1 - float32(j)/float32(nAPI)
			}
			rel := []int{coarse[r.IntN(6)], coarse[r.IntN(10)]}
			qs = append(qs, Query{Text: text, Coarse: coarse, First: first, Multi: r.IntN(2) == 0, Relevant: rel})
			firstStage += ndcg3(coarse, rel) / 12
		}
		for _, mode := range []Mode{ModeAuto, ModeNone, ModeSingle, ModeMulti} {
			for _, norm := range []Norm{NormMinMax, NormZScore} {
				base := Pipeline{Lib: lib, Scorer: cache, Sim: func(a, b int) float32 { return float32((a*7+b*7)%10) / 10 }, Mode: mode, Norm: norm}
				best, got, err := Search(ctx, base, qs, grid, ndcg3)
				if err != nil {
					t.Fatal(err)
				}
				want := math.Inf(-1)
				for _, w := range grid.W {
					for _, m := range grid.M {
						for _, ts := range grid.TauS {
							for _, tm := range grid.TauM {
								for _, n := range grid.N {
									p := base
									p.Params = Params{MS: m[0], MU: m[1], TauS: ts, TauM: tm, N: n, W: w}
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
				}
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("seed %d mode %d %s: search best %.6f (%v), full grid best %.6f", seed, mode, norm, got, best, want)
				}
				if got < firstStage-1e-9 {
					t.Errorf("seed %d mode %d %s: tuned %.6f below the first stage's %.6f", seed, mode, norm, got, firstStage)
				}
			}
		}
	}
}

func TestPairedT(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		// Differences 1, 2, 3: mean 2, sample sd 1, se 1/√3.
		{[]float64{1, 2, 3}, []float64{0, 0, 0}, 2 * math.Sqrt(3)},
		// Differences .5, -.5, .5, .5: mean .25, sample sd .5, se .25.
		{[]float64{1, 0, 1, 1}, []float64{0.5, 0.5, 0.5, 0.5}, 1},
		{[]float64{1, 1}, []float64{0.5, 0.5}, math.Inf(1)},
		{[]float64{0, 0}, []float64{0.5, 0.5}, math.Inf(-1)},
		{[]float64{0.3, 0.2}, []float64{0.3, 0.2}, 0},
		{[]float64{1}, []float64{0}, 0},
		{[]float64{1, 2}, []float64{0}, 0},
	} {
		if got := PairedT(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
			t.Errorf("PairedT(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
