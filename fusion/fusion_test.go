package fusion

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

func rk(tools []int, scores ...float32) rank.Ranking {
	return rank.Ranking{Tools: tools, Scores: scores}
}

// near reports whether a and b agree to 1e-5 element by element.
func near(a []float32, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-b[i]) > 1e-5 {
			return false
		}
	}
	return true
}

func TestRRF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lists  []rank.Ranking
		k      float64
		tools  []int
		scores []float64
	}{
		{"two lists", []rank.Ranking{rk([]int{1, 2, 3}), rk([]int{3, 1, 4})}, 60,
			[]int{1, 3, 2, 4}, []float64{1.0/61 + 1.0/62, 1.0/63 + 1.0/61, 1.0 / 62, 1.0 / 63}},
		{"k 0", []rank.Ranking{rk([]int{1, 2, 3}), rk([]int{3, 1, 4})}, 0,
			[]int{1, 3, 2, 4}, []float64{1.5, 1 + 1.0/3, 0.5, 1.0 / 3}},
		{"k changes the order", []rank.Ranking{rk([]int{1, 2}), rk([]int{3, 4, 5, 2})}, 0,
			[]int{1, 3, 2, 4, 5}, []float64{1, 1, 0.5 + 0.25, 0.5, 1.0 / 3}},
		{"k changes the order, k 10", []rank.Ranking{rk([]int{1, 2}), rk([]int{3, 4, 5, 2})}, 10,
			[]int{2, 1, 3, 4, 5}, []float64{1.0/12 + 1.0/14, 1.0 / 11, 1.0 / 11, 1.0 / 12, 1.0 / 13}},
		{"ties to the lower index", []rank.Ranking{rk([]int{6, 5}), rk([]int{5, 6})}, 60,
			[]int{5, 6}, []float64{1.0/61 + 1.0/62, 1.0/61 + 1.0/62}},
		{"a repeated tool counts once", []rank.Ranking{rk([]int{1, 1, 2})}, 60,
			[]int{1, 2}, []float64{1.0 / 61, 1.0 / 63}},
		{"one list keeps its order", []rank.Ranking{rk([]int{9, 2, 7}, 3, 2, 1)}, 60,
			[]int{9, 2, 7}, []float64{1.0 / 61, 1.0 / 62, 1.0 / 63}},
		{"no lists", nil, 60, []int{}, []float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RRF(tc.lists, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Tools, tc.tools) || !near(got.Scores, tc.scores) {
				t.Errorf("RRF = %v %v, want %v %v", got.Tools, got.Scores, tc.tools, tc.scores)
			}
		})
	}
	for _, k := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := RRF(nil, k); err == nil {
			t.Errorf("RRF k %v: no error", k)
		}
	}
}

func TestInterpolate(t *testing.T) {
	a := rk([]int{1, 2, 3}, 10, 5, 0) // minmax 1, .5, 0; zscore ±1.2247, 0
	b := rk([]int{3, 4}, 2, 1)        // minmax 1, 0; zscore 1, -1
	z := 5 / math.Sqrt(50.0/3)        // 1.2247
	for _, tc := range []struct {
		name   string
		lists  []rank.Ranking
		w      []float64
		n      rerank.Norm
		tools  []int
		scores []float64
	}{
		{"minmax equal weights, tie to the lower index", []rank.Ranking{a, b}, []float64{0.5, 0.5}, rerank.NormMinMax,
			[]int{1, 3, 2, 4}, []float64{0.5, 0.5, 0.25, 0}},
		{"minmax favouring the second", []rank.Ranking{a, b}, []float64{0.2, 0.8}, rerank.NormMinMax,
			[]int{3, 1, 2, 4}, []float64{0.8, 0.2, 0.1, 0}},
		{"weights need not sum to 1", []rank.Ranking{a, b}, []float64{2, 0}, rerank.NormMinMax,
			[]int{1, 2, 3, 4}, []float64{2, 1, 0, 0}},
		// A tool missing from a list gets the list's lowest normalised score.
		{"zscore", []rank.Ranking{a, b}, []float64{0.5, 0.5}, rerank.NormZScore,
			[]int{1, 3, 2, 4}, []float64{z/2 - 0.5, -z/2 + 0.5, -0.5, -z/2 - 0.5}},
		{"one list", []rank.Ranking{a}, []float64{1}, rerank.NormZScore,
			[]int{1, 2, 3}, []float64{z, 0, -z}},
		{"equal scores normalise to 0", []rank.Ranking{rk([]int{4, 2}, 3, 3), rk([]int{2}, 7)}, []float64{0.5, 0.5}, rerank.NormMinMax,
			[]int{2, 4}, []float64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Interpolate(tc.lists, tc.w, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Tools, tc.tools) || !near(got.Scores, tc.scores) {
				t.Errorf("Interpolate = %v %v, want %v %v", got.Tools, got.Scores, tc.tools, tc.scores)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		lists []rank.Ranking
		w     []float64
		n     rerank.Norm
		want  string
	}{
		{"weights per list", []rank.Ranking{a, b}, []float64{1}, rerank.NormMinMax, "1 weights for 2 lists"},
		{"negative weight", []rank.Ranking{a, b}, []float64{1.5, -0.5}, rerank.NormMinMax, "weight -0.5"},
		{"NaN weight", []rank.Ranking{a, b}, []float64{math.NaN(), 1}, rerank.NormMinMax, "weight NaN"},
		{"all zero", []rank.Ranking{a, b}, []float64{0, 0}, rerank.NormMinMax, "all 0"},
		{"no scores", []rank.Ranking{a, rk([]int{1, 2})}, []float64{0.5, 0.5}, rerank.NormMinMax, "list 2 has 0 scores for 2 tools"},
		{"NaN score", []rank.Ranking{rk([]int{1}, float32(math.NaN()))}, []float64{1}, rerank.NormMinMax, "finite"},
		{"infinite score", []rank.Ranking{rk([]int{1, 2}, 1, float32(math.Inf(-1)))}, []float64{1}, rerank.NormZScore, "finite"},
		{"no normalisation", []rank.Ranking{a}, []float64{1}, rerank.NormOff, "want minmax or zscore"},
	} {
		if _, err := Interpolate(tc.lists, tc.w, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestGrid(t *testing.T) {
	g := Grid(2, 10)
	if len(g) != 11 || !reflect.DeepEqual(g[0], []float64{0, 1}) || !reflect.DeepEqual(g[3], []float64{0.3, 0.7}) || !reflect.DeepEqual(g[10], []float64{1, 0}) {
		t.Errorf("Grid(2, 10) = %v", g)
	}
	want3 := [][]float64{{0, 0, 1}, {0, 0.5, 0.5}, {0, 1, 0}, {0.5, 0, 0.5}, {0.5, 0.5, 0}, {1, 0, 0}}
	if g := Grid(3, 2); !reflect.DeepEqual(g, want3) {
		t.Errorf("Grid(3, 2) = %v, want %v", g, want3)
	}
	if n := len(Grid(3, 10)); n != 66 {
		t.Errorf("Grid(3, 10) has %d points, want 66", n)
	}
	if Grid(0, 10) != nil || Grid(2, 0) != nil {
		t.Error("Grid of no lists or no steps is not empty")
	}
}

// recallAt1 is 1 when the top tool is relevant.
func recallAt1(ranked, rel []int) float64 {
	for _, r := range rel {
		if len(ranked) > 0 && ranked[0] == r {
			return 1
		}
	}
	return 0
}

// TestChoose: hand-built lists where query 1 needs the first list's weight at least 0.4 and
// query 2 at most 0.7 to rank its relevant tool first (min-max normalised; worked out in the
// comments), so the dev optimum is the earliest weight of [0.4, 0.7].
func TestChoose(t *testing.T) {
	queries := [][]rank.Ranking{
		// t1 = .4 + .6w, t2 = 1 - w, t3 = .5w: tool 1 first iff w > .375.
		{rk([]int{1, 3, 2}, 1, 0.5, 0), rk([]int{2, 1, 3}, 1, 0.4, 0)},
		// t1 = w, t2 = 1 - .4w, t3 = .5(1 - w): tool 2 first iff w < .714.
		{rk([]int{1, 2, 3}, 1, 0.6, 0), rk([]int{2, 3, 1}, 1, 0.5, 0)},
	}
	rel := [][]int{{1}, {2}}
	grid := Grid(2, 10)
	best, means, err := Choose(queries, rel, rerank.NormMinMax, grid, recallAt1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(best, []float64{0.4, 0.6}) {
		t.Errorf("best weights %v, want [0.4 0.6]", best)
	}
	want := []float64{0.5, 0.5, 0.5, 0.5, 1, 1, 1, 1, 0.5, 0.5, 0.5}
	if !reflect.DeepEqual(means, want) {
		t.Errorf("means %v, want %v", means, want)
	}
	// Reversing the grid picks the other end of the optimum.
	rev := make([][]float64, len(grid))
	for i, w := range grid {
		rev[len(grid)-1-i] = w
	}
	if best, _, _ := Choose(queries, rel, rerank.NormMinMax, rev, recallAt1); !reflect.DeepEqual(best, []float64{0.7, 0.3}) {
		t.Errorf("reversed grid: best %v, want [0.7 0.3]", best)
	}
	for _, tc := range []struct {
		name string
		q    [][]rank.Ranking
		rel  [][]int
		grid [][]float64
		want string
	}{
		{"relevant per query", queries, rel[:1], grid, "2 queries with lists, 1"},
		{"no queries", nil, nil, grid, "0 queries"},
		{"lists per weights", queries, rel, Grid(3, 10), "has 2 lists, the weights 3"},
		{"bad grid point", queries, rel, [][]float64{{0, 0}}, "all 0"},
	} {
		if _, _, err := Choose(tc.q, tc.rel, rerank.NormMinMax, tc.grid, recallAt1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
