package fusion

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// randomLists returns n lists over tools 0..tools-1, each a random subset with random scores.
func randomLists(r *rand.Rand, n, tools int) []rank.Ranking {
	out := make([]rank.Ranking, n)
	for i := range out {
		for t := 0; t < tools; t++ {
			if r.IntN(4) > 0 {
				out[i].Tools = append(out[i].Tools, t)
				out[i].Scores = append(out[i].Scores, float32(r.IntN(7))) // ties on purpose
			}
		}
		if len(out[i].Tools) == 0 {
			out[i] = rk([]int{0}, 1)
		}
	}
	return out
}

func TestInterpolateGrouped(t *testing.T) {
	a := rk([]int{0, 1, 2}, 3, 2, 1)
	b := rk([]int{2, 1, 0}, 3, 2, 1)
	for _, tc := range []struct {
		name  string
		g     Grouped
		tools []int
	}{
		{"one set of weights ranks as Interpolate", Grouped{W: []float64{1, 0}, NewW: []float64{1, 0}, New: []bool{false, false, true}}, []int{0, 1, 2}},
		{"the new tool read from the second list", Grouped{W: []float64{1, 0}, NewW: []float64{0, 1}, Offset: 0.5, New: []bool{false, false, true}}, []int{2, 0, 1}},
		{"a tie goes to the lower tool", Grouped{W: []float64{1, 0}, NewW: []float64{0, 1}, New: []bool{false, false, true}}, []int{0, 2, 1}},
		{"a negative offset sinks it", Grouped{W: []float64{1, 0}, NewW: []float64{0, 1}, Offset: -5, New: []bool{false, false, true}}, []int{0, 1, 2}},
		{"an offset lifts a new tool", Grouped{W: []float64{1, 0}, NewW: []float64{1, 0}, Offset: 2.5, New: []bool{false, true}}, []int{1, 0, 2}},
		{"tools beyond New are trained", Grouped{W: []float64{0, 1}, NewW: []float64{1, 0}, Offset: 9, New: nil}, []int{2, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := InterpolateGrouped([]rank.Ranking{a, b}, &tc.g, rerank.NormZScore)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Tools, tc.tools) {
				t.Errorf("ranking %v, want %v", got.Tools, tc.tools)
			}
		})
	}
	// With the same weights for both groups and offset 0, exactly Interpolate, scores too.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		lists := randomLists(r, 3, 12)
		w := []float64{r.Float64(), r.Float64(), r.Float64() + 0.1}
		isNew := make([]bool, 12)
		for j := range isNew {
			isNew[j] = r.IntN(2) == 0
		}
		for _, n := range []rerank.Norm{rerank.NormZScore, rerank.NormMinMax} {
			want, err := Interpolate(lists, w, n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := InterpolateGrouped(lists, &Grouped{W: w, NewW: w, New: isNew}, n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: grouped %v, Interpolate %v", n, got, want)
			}
		}
	}
}

// TestTopGrouped: the cut rankings the weight search scores are the first tools of
// InterpolateGrouped's ranking, ties included, at every depth (insertion and sort paths).
func TestTopGrouped(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		lists := randomLists(r, 2, 50)
		isNew := make([]bool, 50)
		for j := range isNew {
			isNew[j] = r.IntN(3) == 0
		}
		g := &Grouped{W: []float64{r.Float64(), 0.5}, NewW: []float64{0.2, r.Float64()}, Offset: float64(r.IntN(5)-2) / 2, New: isNew}
		full, err := InterpolateGrouped(lists, g, rerank.NormZScore)
		if err != nil {
			t.Fatal(err)
		}
		p, err := prepare(lists, rerank.NormZScore)
		if err != nil {
			t.Fatal(err)
		}
		for _, depth := range []int{1, 5, 33, 0} {
			top, _ := p.topGrouped(g, depth, nil, nil)
			want := full.Tools
			if depth > 0 && depth < len(want) {
				want = want[:depth]
			}
			if !reflect.DeepEqual(top, want) {
				t.Fatalf("depth %d: %v, want %v", depth, top, want)
			}
		}
	}
}

func TestChooseGrouped(t *testing.T) {
	// Tools 0-3 are trained, 4-7 new. Input A ranks each query's relevant trained tool first
	// and knows nothing of new tools; input B ranks the relevant new tool first and is noise on
	// trained tools. One set of weights cannot read both; two can.
	isNew := []bool{false, false, false, false, true, true, true, true}
	var queries [][]rank.Ranking
	var relevant [][]int
	for q := 0; q < 8; q++ {
		trained, fresh := q%4, 4+(q+1)%4
		a := rk([]int{trained, (trained + 1) % 4, (trained + 2) % 4, (trained + 3) % 4, 4, 5, 6, 7}, 9, 5, 4, 3, 0, 0, 0, 0)
		b := rk([]int{fresh, (trained + 2) % 4, (trained + 3) % 4, trained, 4 + (fresh-3)%4, 4 + (fresh-2)%4, 4 + (fresh-1)%4, (trained + 1) % 4}, 9, 8, 7, 6, 2, 1, 1, 0)
		queries = append(queries, []rank.Ranking{a, b})
		relevant = append(relevant, []int{trained, fresh})
	}
	score, err := metrics.ParseMetric("recall@2")
	if err != nil {
		t.Fatal(err)
	}
	grid := Grid(2, 10)
	c, err := ChooseGrouped(queries, relevant, rerank.NormZScore, grid, Offsets(rerank.NormZScore), isNew, 2, score)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mean != 1 || c.PlainMean >= 1 {
		t.Errorf("dev R@2 %v grouped, %v with one set; want 1 and below 1", c.Mean, c.PlainMean)
	}
	if c.NewW[1] <= c.NewW[0] {
		t.Errorf("new tools' weights %v: want B's above A's", c.NewW)
	}
	for q, lists := range queries {
		got, err := InterpolateGrouped(lists, &c.Grouped, rerank.NormZScore)
		if err != nil {
			t.Fatal(err)
		}
		if s := score(got.Tools, relevant[q]); s != 1 {
			t.Errorf("query %d: the chosen weights rank %v (R@2 %v)", q, got.Tools[:2], s)
		}
	}

	// Nothing to gain (no new tools): the one set for both, offset 0, the same mean.
	c, err = ChooseGrouped(queries, relevant, rerank.NormZScore, grid, Offsets(rerank.NormZScore), nil, 2, score)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.W, c.Plain) || !reflect.DeepEqual(c.NewW, c.Plain) || c.Offset != 0 || c.Mean != c.PlainMean {
		t.Errorf("without new tools: %+v", c)
	}
}

func TestGroupedErrors(t *testing.T) {
	lists := []rank.Ranking{rk([]int{0, 1}, 1, 0)}
	for _, tc := range []struct {
		name string
		g    *Grouped
		want string
	}{
		{"nil", nil, "no grouped weights"},
		{"trained weights", &Grouped{W: []float64{0}, NewW: []float64{1}}, "weights of trained tools"},
		{"new weights", &Grouped{W: []float64{1}, NewW: []float64{1, 2}}, "weights of new tools"},
		{"offset", &Grouped{W: []float64{1}, NewW: []float64{1}, Offset: posInf()}, "offset"},
	} {
		if _, err := InterpolateGrouped(lists, tc.g, rerank.NormZScore); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := ChooseGrouped([][]rank.Ranking{lists}, [][]int{{0}}, rerank.NormZScore, Grid(1, 2), nil, nil, 1, func([]int, []int) float64 { return 0 }); err == nil {
		t.Error("no offsets: no error")
	}
}

func posInf() float64 { return 1 / zero }

var zero = 0.0

func TestOffsets(t *testing.T) {
	for _, tc := range []struct {
		n           rerank.Norm
		count       int
		first, last float64
	}{{rerank.NormZScore, 17, -2, 2}, {rerank.NormMinMax, 21, -1, 1}} {
		o := Offsets(tc.n)
		if len(o) != tc.count || o[0] != tc.first || o[len(o)-1] != tc.last {
			t.Errorf("%s: %v", tc.n, o)
		}
		has0 := false
		for _, x := range o {
			has0 = has0 || x == 0
		}
		if !has0 {
			t.Errorf("%s: %v lacks 0", tc.n, o)
		}
	}
}

func TestNewTools(t *testing.T) {
	d := &data.Dataset{Tools: make([]data.Tool, 5)}
	train := &data.Split{Queries: []int{0, 1, 2}, Relevant: map[int][]int{0: {0, 1}, 1: {1}, 2: {3}}}
	isNew, n := NewTools(d, train)
	if want := []bool{false, false, true, false, true}; !reflect.DeepEqual(isNew, want) || n != 2 {
		t.Errorf("NewTools = %v, %d; want %v, 2", isNew, n, want)
	}
}
