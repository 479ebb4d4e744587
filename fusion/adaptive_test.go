package fusion

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// long is a ranking of n tools scored 3, then 1 for the rest.
func long(n int) rank.Ranking {
	r := rank.Ranking{Tools: make([]int, n), Scores: make([]float32, n)}
	for i := range n {
		r.Tools[i], r.Scores[i] = i, 1
	}
	r.Scores[0] = 3
	return r
}

func TestAdaptiveWeight(t *testing.T) {
	// Scores 3, 1, 1, 1: mean 1.5, population sd sqrt(0.75), z1 = 1.5/0.866 = 1.7321.
	peaked := rank.Ranking{Tools: []int{0, 1, 2, 3}, Scores: []float32{3, 1, 1, 1}}
	z1 := 1.5 / math.Sqrt(0.75)
	for _, c := range []struct {
		name string
		a    Adaptive
		r    rank.Ranking
		want float64
	}{
		{"fixed", Adaptive{Base: 0.7}, peaked, 0.7},
		{"slope", Adaptive{Base: 0.9, Slope: -0.1}, peaked, 0.9 - 0.1*z1},
		{"clamped above", Adaptive{Base: 0.9, Slope: 0.1}, peaked, 1},
		{"clamped below", Adaptive{Base: 0.1, Slope: -0.5}, peaked, 0},
		{"one tool: z1 0", Adaptive{Base: 0.6, Slope: -0.1}, rank.Ranking{Tools: []int{4}, Scores: []float32{9}}, 0.6},
		{"equal scores: z1 0", Adaptive{Base: 0.6, Slope: -0.1}, rank.Ranking{Tools: []int{1, 2}, Scores: []float32{2, 2}}, 0.6},
		{"empty", Adaptive{Base: 0.6, Slope: -0.1}, rank.Ranking{}, 0.6},
		// Only the first AdaptiveDepth scores count: a tail of 400 more at 1 leaves z1 as it
		// is over the first 100 (one 3, 99 at 1: mean 1.02, z1 = 1.98/sqrt(0.0396) = 9.95;
		// over all 500 it would be 22.3).
		{"depth", Adaptive{Base: 1.5, Slope: -0.1}, long(500), 1.5 - 0.1*(1.98/math.Sqrt(0.0396))},
	} {
		if got := c.a.Weight(c.r); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: weight %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseAdaptive(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Adaptive
		err  string
	}{
		{"0.95,-0.075", Adaptive{Base: 0.95, Slope: -0.075}, ""},
		{" 1 , 0 ", Adaptive{Base: 1}, ""},
		{"0.95", Adaptive{}, "want BASE,SLOPE"},
		{"x,0", Adaptive{}, "base"},
		{"1,y", Adaptive{}, "slope"},
		{"Inf,0", Adaptive{}, "finite"},
	} {
		got, err := ParseAdaptive(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseAdaptive(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
}

// TestInterpolateAdaptive: the fusion at the query's weight is Interpolate's at that weight.
func TestInterpolateAdaptive(t *testing.T) {
	dense := rank.Ranking{Tools: []int{0, 1, 2, 3}, Scores: []float32{0.9, 0.5, 0.4, 0.1}}
	lex := rank.Ranking{Tools: []int{3, 2, 5}, Scores: []float32{12, 4, 1}}
	a := Adaptive{Base: 0.9, Slope: -0.2}
	got, err := InterpolateAdaptive(dense, lex, a, rerank.NormZScore)
	if err != nil {
		t.Fatal(err)
	}
	w := a.Weight(dense)
	want, err := Interpolate([]rank.Ranking{dense, lex}, []float64{w, 1 - w}, rerank.NormZScore)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("adaptive %v, Interpolate at %v %v", got, w, want)
	}
	if _, err := InterpolateAdaptive(dense, lex, Adaptive{Base: math.NaN()}, rerank.NormZScore); err == nil {
		t.Error("a NaN base: no error")
	}
	// An empty lexical side with a weight clamped to 0 keeps the dense ranking.
	got, err = InterpolateAdaptive(dense, rank.Ranking{}, Adaptive{Base: 0, Slope: -1}, rerank.NormZScore)
	if err != nil || !reflect.DeepEqual(got.Tools, dense.Tools) {
		t.Errorf("no lexical tools: %v, %v; want the dense order %v", got.Tools, err, dense.Tools)
	}
}

// TestChooseAdaptive: two libraries, one where the dense ranking is peaked (z1 high) and the
// lexical side holds the relevant tool, one where the dense ranking is flat and right. No
// fixed weight serves both; a negative slope does, and each library counts once however many
// queries it has.
func TestChooseAdaptive(t *testing.T) {
	var queries [][]rank.Ranking
	var relevant [][]int
	var groups []int
	// Library 0 (3 queries): dense peaked at tool 0 (z1 3), relevant tool 1 is first lexically.
	peaked := rank.Ranking{Tools: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Scores: []float32{10, 1, 0.99, 0.98, 0.97, 0.96, 0.95, 0.94, 0.93, 0.92}}
	for range 3 {
		queries = append(queries, []rank.Ranking{peaked, {Tools: []int{1, 0}, Scores: []float32{5, 1}}})
		relevant = append(relevant, []int{1})
		groups = append(groups, 0)
	}
	// Library 1 (1 query): dense evenly spread (z1 1.57) with the relevant tool 0 first,
	// lexical prefers the dense ranking's last tool.
	flat := rank.Ranking{Tools: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Scores: []float32{1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1}}
	queries = append(queries, []rank.Ranking{flat, {Tools: []int{9, 0}, Scores: []float32{5, 1}}})
	relevant = append(relevant, []int{0})
	groups = append(groups, 1)
	top1 := func(ranked, rel []int) float64 {
		if len(ranked) > 0 && ranked[0] == rel[0] {
			return 1
		}
		return 0
	}
	bases, slopes := AdaptiveGrid()
	c, err := ChooseAdaptive(queries, relevant, groups, rerank.NormZScore, bases, slopes, top1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mean != 1 || c.Slope >= 0 {
		t.Errorf("choice %+v: want a negative slope serving both libraries (macro 1)", c.Adaptive)
	}
	if c.FixedMean != 0.5 || len(c.Groups) != 2 || c.Groups[0] != 1 || c.Groups[1] != 1 {
		t.Errorf("choice %+v: want the best fixed weight at macro 0.5 and both libraries at 1", c)
	}
	for _, bad := range []struct {
		name    string
		q       [][]rank.Ranking
		rel     [][]int
		g       []int
		b, s    []float64
		errWant string
	}{
		{"groups short", queries, relevant, groups[:1], bases, slopes, "groups"},
		{"no grid", queries, relevant, groups, nil, slopes, "bases"},
		{"three lists", [][]rank.Ranking{{{}, {}, {}}}, [][]int{{0}}, []int{0}, bases, slopes, "dense and a lexical"},
		{"NaN base", queries, relevant, groups, []float64{math.NaN()}, slopes, "finite"},
	} {
		if _, err := ChooseAdaptive(bad.q, bad.rel, bad.g, rerank.NormZScore, bad.b, bad.s, top1); err == nil || !strings.Contains(err.Error(), bad.errWant) {
			t.Errorf("%s: error %v, want %q", bad.name, err, bad.errWant)
		}
	}
}
