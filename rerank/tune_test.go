package rerank

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/toolret/toolret/metrics"
)

func TestCosineMatrix(t *testing.T) {
	v := [][]float32{{1, 0}, {0, 2}, {3, 3}, {0, 0}}
	h := float32(math.Sqrt(0.5))
	want := [][]float32{{1, 0, h, 0}, {0, 1, h, 0}, {h, h, 1, 0}, {0, 0, 0, 1}}
	got := CosineMatrix(v)
	for i := range want {
		if !near(got[i], want[i], 1e-6) {
			t.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestTune is TestSearchPicksWeight's dev split: w = 0.4 ranks both queries right, the first
// stage (w = 0) one. The gain's paired t over two queries is 1: -min-t above it falls back
// to w = 0 and the first stage's dev value.
func TestTune(t *testing.T) {
	lib, err := NewLibrary([]int{0, 1, 2, 3, 4, 5}, []bool{true, true, true, true, true, true})
	if err != nil {
		t.Fatal(err)
	}
	first := []float32{0.9, 0.5, 0.1, 0.9, 0.5, 0.1}
	cache := &ScoreCache{}
	for _, s := range []struct {
		q   string
		api int
		v   float32
	}{{"a", 0, 0}, {"a", 1, 1}, {"a", 2, 0.6}, {"b", 3, 0.4}, {"b", 4, 1}, {"b", 5, 0}} {
		cache.Put(s.q, s.api, s.v)
	}
	qs := []Query{
		{Text: "a", Coarse: []int{0, 1, 2}, First: first, Relevant: []int{1}},
		{Text: "b", Coarse: []int{3, 4, 5}, First: first, Relevant: []int{3}},
	}
	score, err := metrics.ParseMetric("recall@1")
	if err != nil {
		t.Fatal(err)
	}
	base := Pipeline{Lib: lib, Scorer: cache, Mode: ModeNone, Norm: NormMinMax}
	g := Grid{M: [][2]int{{3, 4}}, W: Weights(10)}
	for _, tc := range []struct {
		name   string
		norm   Norm
		minT   float64
		w      float32
		val    float64
		report string
	}{
		{"dev optimum kept", NormMinMax, 0, 0.4, 1, "dev recall@1 by weight (0 = the retriever alone) 0:50.00 0.1:50.00"},
		{"gain within noise", NormMinMax, 2, 0, 0.5, "< -min-t 2: w=0"},
		{"gain kept", NormMinMax, 0.5, 0.4, 1, ">= -min-t 0.5"},
		{"no interpolation", NormOff, 2, 0, 0.5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			pl := base
			pl.Norm = tc.norm
			p, val, err := Tune(context.Background(), pl, qs, g, TuneOptions{Metric: "recall@1", Score: score, MinT: tc.minT, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			if tc.norm != NormOff && p.W != tc.w || math.Abs(val-tc.val) > 1e-12 {
				t.Errorf("w %v, dev %v; want %v, %v", p.W, val, tc.w, tc.val)
			}
			if !strings.Contains(log.String(), tc.report) || tc.report == "" && log.Len() > 0 {
				t.Errorf("report %q, want it to contain %q", log.String(), tc.report)
			}
		})
	}
}
