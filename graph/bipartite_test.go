package graph

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestNewNormalisation(t *testing.T) {
	// Pairs (0,0) (0,1) (1,1) (1,1) (2,1): the duplicate is merged, degrees are left
	// (2, 1, 1), right (1, 3).
	pairs := [][2]int{{1, 1}, {0, 1}, {2, 1}, {1, 1}, {0, 0}}
	s2, s3 := math.Sqrt(2), math.Sqrt(3)
	for _, tc := range []struct {
		norm Norm
		want []float64
	}{
		{NormSymmetric, []float64{1 / s2, 1 / (s2 * s3), 1 / s3, 1 / s3}},
		{NormLeftMean, []float64{0.5, 0.5, 1, 1}},
		{NormNone, []float64{1, 1, 1, 1}},
	} {
		t.Run(tc.norm.String(), func(t *testing.T) {
			b, err := New(3, 2, pairs, tc.norm)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b.Left, []int32{0, 0, 1, 2}) || !reflect.DeepEqual(b.Right, []int32{0, 1, 1, 1}) {
				t.Fatalf("edges left %v right %v, want sorted unique (0,0) (0,1) (1,1) (2,1)", b.Left, b.Right)
			}
			for e, w := range tc.want {
				if math.Abs(float64(b.Weight[e])-w) > 1e-7 {
					t.Errorf("edge %d weight %g, want %g", e, b.Weight[e], w)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		nLeft, nRight int
		pairs         [][2]int
		norm          Norm
		want          string
	}{
		{"left out of range", 2, 2, [][2]int{{2, 0}}, NormSymmetric, "pair 0 (2, 0) out of range"},
		{"negative", 2, 2, [][2]int{{0, 0}, {0, -1}}, NormSymmetric, "pair 1 (0, -1)"},
		{"no nodes", 0, 2, nil, NormSymmetric, "node counts"},
		{"bad norm", 2, 2, nil, Norm(9), "unknown Norm(9)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.nLeft, tc.nRight, tc.pairs, tc.norm)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	if _, err := NewFromEdges(2, 2, []int32{0}, nil, NormNone); err == nil {
		t.Error("NewFromEdges with mismatched endpoint lists should fail")
	}
}

// gridGraph is a deterministic graph with n left and m right nodes and about n·m/3 edges.
func gridGraph(t *testing.T, n, m int, norm Norm) *Bipartite {
	t.Helper()
	var pairs [][2]int
	for l := range n {
		for r := range m {
			if (l*7+r*3)%3 == 0 || r == l%m {
				pairs = append(pairs, [2]int{l, r})
			}
		}
	}
	b, err := New(n, m, pairs, norm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDropout(t *testing.T) {
	b := gridGraph(t, 300, 100, NormSymmetric)
	const rate = 0.2
	d1, err := b.Dropout(rate, 42, 3, DropRenormalize)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := b.Dropout(rate, 42, 3, DropRenormalize)
	if !reflect.DeepEqual(d1, d2) {
		t.Error("same seed and epoch should give the same graph")
	}
	d3, _ := b.Dropout(rate, 42, 4, DropRenormalize)
	if reflect.DeepEqual(d1.Left, d3.Left) && reflect.DeepEqual(d1.Right, d3.Right) {
		t.Error("another epoch should drop other edges")
	}
	// Kept fraction: binomial(E, 0.8), within 5 standard deviations.
	e := float64(b.NumEdges())
	sd := math.Sqrt(e * rate * (1 - rate))
	if kept := float64(d1.NumEdges()); math.Abs(kept-e*(1-rate)) > 5*sd {
		t.Errorf("kept %g of %g edges at rate %g", kept, e, rate)
	}
	// Renormalised weights are those of a graph built from the kept edges.
	fresh, err := NewFromEdges(b.NLeft, b.NRight, d1.Left, d1.Right, NormSymmetric)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.Weight, d1.Weight) {
		t.Error("DropRenormalize weights differ from a fresh normalisation of the kept edges")
	}
	// Rescaled weights are the original ones over the keep probability.
	rs, _ := b.Dropout(rate, 42, 3, DropRescale)
	if !reflect.DeepEqual(rs.Left, d1.Left) || !reflect.DeepEqual(rs.Right, d1.Right) {
		t.Fatal("the mode must not change which edges are dropped")
	}
	orig := map[[2]int32]float32{}
	for i := range b.Left {
		orig[[2]int32{b.Left[i], b.Right[i]}] = b.Weight[i]
	}
	for i := range rs.Left {
		want := float64(orig[[2]int32{rs.Left[i], rs.Right[i]}]) / (1 - rate)
		if math.Abs(float64(rs.Weight[i])-want) > 1e-6 {
			t.Fatalf("rescaled edge %d weight %g, want %g", i, rs.Weight[i], want)
		}
	}
	// Rate 0 keeps everything; bad rates fail.
	if d0, _ := b.Dropout(0, 1, 1, DropRenormalize); !reflect.DeepEqual(d0, b) {
		t.Error("rate 0 should return an identical graph")
	}
	for _, r := range []float64{-0.1, 1, math.NaN()} {
		if _, err := b.Dropout(r, 1, 1, DropRenormalize); err == nil {
			t.Errorf("rate %g should fail", r)
		}
	}
}

func TestPad(t *testing.T) {
	b := gridGraph(t, 5, 4, NormSymmetric)
	p, err := b.Pad(b.NumEdges() + 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.NumEdges() != b.NumEdges()+3 {
		t.Fatalf("padded to %d edges, want %d", p.NumEdges(), b.NumEdges()+3)
	}
	for e := b.NumEdges(); e < p.NumEdges(); e++ {
		if p.Left[e] != 0 || p.Right[e] != 0 || p.Weight[e] != 0 {
			t.Errorf("padding edge %d = (%d, %d, %g), want (0, 0, 0)", e, p.Left[e], p.Right[e], p.Weight[e])
		}
	}
	// Dropout ignores padding, and renormalisation does not count it as a degree.
	d, _ := p.Dropout(0, 1, 1, DropRenormalize)
	if !reflect.DeepEqual(d.Weight, b.Weight) {
		t.Error("dropout of a padded graph at rate 0 should give the unpadded graph")
	}
	if _, err := b.Pad(1); err == nil {
		t.Error("padding below the edge count should fail")
	}
}
