package losses

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

// infoNCEGraph returns the loss graph over inputs (queries, positives[, hardNegatives]) with a
// constant mask (nil for none).
func infoNCEGraph(mask [][]bool, cfg InfoNCEConfig) lossGraph {
	return func(xs []*Node) *Node {
		var hard, m *Node
		if len(xs) > 2 {
			hard = xs[2]
		}
		if mask != nil {
			m = Const(xs[0].Graph(), mask)
		}
		return InfoNCE(xs[0], xs[1], hard, m, cfg)
	}
}

func TestInfoNCEHandComputed(t *testing.T) {
	e := math.E
	// Dot product, τ = 1, B = 2: q0=(1,0) q1=(0,1) p0=(1,0) p1=(1,1).
	// Logits: row 0 = (1, 1), row 1 = (0, 1).
	// q→t: loss0 = log(e+e) - 1 = log 2, loss1 = log(1+e) - 1.
	// t→q: tool 0 scores queries (1, 0): log(e+1) - 1; tool 1 scores (1, 1): log 2.
	// Masking p1 as a positive of q0 removes it from row 0 (loss0 = log(e)-1 = 0) and removes
	// q0 from tool 1's row (loss'1 = 0).
	q := arr{[]int{2, 2}, []float64{1, 0, 0, 1}}
	p := arr{[]int{2, 2}, []float64{1, 0, 1, 1}}
	mask := [][]bool{{true, true}, {false, true}}
	l1 := math.Log(1+e) - 1
	dotCfg := InfoNCEConfig{Temperature: 1, Similarity: SimDot}
	sym := dotCfg
	sym.Symmetric = true
	masked := dotCfg
	noMask := dotCfg
	noMask.NoMasking = true
	symNoMask := sym
	symNoMask.NoMasking = true

	// Cosine, τ = 0.5, B = 2, k = 1: q0=(1,0) q1=(0,2) p0=(3,4) p1=(0,1) h0=(1,0) h1=(-1,0).
	// Cosines row 0: (0.6, 0, 1, -1), row 1: (0.8, 1, 0, 0); logits are twice that.
	// loss0 = log(e^1.2 + e^0 + e^2 + e^-2) - 1.2, loss1 = log(e^1.6 + e^2 + 1 + 1) - 2.
	// Masking h0 (candidate 2) as a positive of q0 drops e^2 from loss0.
	cq := arr{[]int{2, 2}, []float64{1, 0, 0, 2}}
	cp := arr{[]int{2, 2}, []float64{3, 4, 0, 1}}
	ch := arr{[]int{2, 1, 2}, []float64{1, 0, -1, 0}}
	c0 := math.Log(math.Exp(1.2)+1+math.Exp(2)+math.Exp(-2)) - 1.2
	c0m := math.Log(math.Exp(1.2)+1+math.Exp(-2)) - 1.2
	c1 := math.Log(math.Exp(1.6)+math.Exp(2)+2) - 2
	cmask := [][]bool{{true, false, true, false}, {false, true, false, false}}
	cosCfg := InfoNCEConfig{Temperature: 0.5, Similarity: SimCosine}

	for _, tc := range []struct {
		name string
		mask [][]bool
		cfg  InfoNCEConfig
		in   []arr
		want float64
	}{
		{"dot/unmasked", nil, dotCfg, []arr{q, p}, (math.Log(2) + l1) / 2},
		{"dot/masked", mask, masked, []arr{q, p}, (0 + l1) / 2},
		{"dot/masking-disabled", mask, noMask, []arr{q, p}, (math.Log(2) + l1) / 2},
		{"dot/symmetric", nil, sym, []arr{q, p}, ((math.Log(2)+l1)/2 + (l1+math.Log(2))/2) / 2},
		{"dot/symmetric-masked", mask, sym, []arr{q, p}, ((0+l1)/2 + (l1+0)/2) / 2},
		{"dot/symmetric-masking-disabled", mask, symNoMask, []arr{q, p}, ((math.Log(2)+l1)/2 + (l1+math.Log(2))/2) / 2},
		{"cosine/hard", nil, cosCfg, []arr{cq, cp, ch}, (c0 + c1) / 2},
		{"cosine/hard-masked", cmask, cosCfg, []arr{cq, cp, ch}, (c0m + c1) / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustLoss(t, infoNCEGraph(tc.mask, tc.cfg), tc.in...)
			near(t, "InfoNCE", got, tc.want, 1e-12)
		})
	}
}

// refInfoNCE is InfoNCE in plain float64 loops.
func refInfoNCE(q, p, h arr, mask [][]bool, cfg InfoNCEConfig) float64 {
	qs, ps := q.rows(), p.rows()
	cands := append([][]float64(nil), ps...)
	if h.data != nil {
		cands = append(cands, h.rows()...)
	}
	b := len(qs)
	sim := func(a, c []float64) float64 {
		if cfg.Similarity == SimCosine {
			return cosine(a, c) / cfg.Temperature
		}
		return dot(a, c) / cfg.Temperature
	}
	useMask := mask != nil && !cfg.NoMasking
	q2t := 0.0
	for i := range b {
		logits := make([]float64, len(cands))
		keep := make([]bool, len(cands))
		for j := range cands {
			logits[j] = sim(qs[i], cands[j])
			keep[j] = j == i || !useMask || !mask[i][j]
		}
		q2t += lse(logits, keep) - logits[i]
	}
	q2t /= float64(b)
	if !cfg.Symmetric {
		return q2t
	}
	t2q := 0.0
	for j := range b {
		logits := make([]float64, b)
		keep := make([]bool, b)
		for i := range b {
			logits[i] = sim(qs[i], ps[j])
			keep[i] = i == j || !useMask || !mask[i][j]
		}
		t2q += lse(logits, keep) - logits[j]
	}
	return (q2t + t2q/float64(b)) / 2
}

func randMask(rng *rand.Rand, b, n int) [][]bool {
	m := make([][]bool, b)
	for i := range m {
		m[i] = make([]bool, n)
		for j := range m[i] {
			m[i][j] = j == i || rng.IntN(3) == 0
		}
	}
	return m
}

func TestInfoNCEMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const b, k, d = 3, 2, 3
	for _, sim := range []Similarity{SimCosine, SimDot} {
		for _, symmetric := range []bool{false, true} {
			for _, hard := range []bool{false, true} {
				q, p := randArr(rng, b, d), randArr(rng, b, d)
				in := []arr{q, p}
				n := b
				var h arr
				if hard {
					h = randArr(rng, b, k, d)
					in = append(in, h)
					n += b * k
				}
				mask := randMask(rng, b, n)
				cfg := InfoNCEConfig{Temperature: 0.3, Similarity: sim, Symmetric: symmetric}
				name := sim.String()
				got := mustLoss(t, infoNCEGraph(mask, cfg), in...)
				near(t, name+" masked", got, refInfoNCE(q, p, h, mask, cfg), 1e-10)
				unmasked := mustLoss(t, infoNCEGraph(nil, cfg), in...)
				near(t, name+" unmasked", unmasked, refInfoNCE(q, p, h, nil, cfg), 1e-10)
				if got >= unmasked {
					t.Errorf("%s: masking false negatives should lower the loss: masked %g, unmasked %g", name, got, unmasked)
				}
			}
		}
	}
}

func TestInfoNCEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const b, k, d = 3, 2, 3
	mask := randMask(rng, b, b+b*k)
	for _, sim := range []Similarity{SimCosine, SimDot} {
		t.Run(sim.String(), func(t *testing.T) {
			cfg := InfoNCEConfig{Temperature: 0.5, Similarity: sim, Symmetric: true}
			checkGrad(t, infoNCEGraph(mask, cfg), randArr(rng, b, d), randArr(rng, b, d), randArr(rng, b, k, d))
		})
	}
}

func TestInfoNCEBadInput(t *testing.T) {
	q := arr{[]int{2, 2}, []float64{1, 0, 0, 1}}
	p3 := arr{[]int{3, 2}, make([]float64, 6)}
	for _, tc := range []struct {
		name string
		f    lossGraph
		in   []arr
		want string
	}{
		{"shape mismatch", infoNCEGraph(nil, InfoNCEConfig{Temperature: 1}), []arr{q, p3}, "same shape"},
		{"zero temperature", infoNCEGraph(nil, InfoNCEConfig{}), []arr{q, q}, "temperature"},
		{"mask shape", infoNCEGraph([][]bool{{true}}, InfoNCEConfig{Temperature: 1}), []arr{q, q}, "isPositive mask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evalLoss(tc.f, tc.in...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestFalseNegativeMask(t *testing.T) {
	// Query 7 has tools {1, 2}; query 8 has {2, 3}; query 9 has {4}.
	rel := RelevanceFromMap(map[int][]int{7: {1, 2}, 8: {2, 3}, 9: {4}})
	for _, tc := range []struct {
		name      string
		queries   []int
		positives []int
		hard      [][]int
		rel       Relevance
		want      [][]bool
	}{
		{
			name:    "other positives and duplicate tools",
			queries: []int{7, 8, 9}, positives: []int{1, 2, 4},
			hard: [][]int{{3}, {1}, {2}}, rel: rel,
			// Candidates: tools 1, 2, 4 | hard 3, 1, 2.
			want: [][]bool{
				{true, true, false, false, true, true},
				{false, true, false, true, false, true},
				{false, false, true, false, false, false},
			},
		},
		{
			name:    "same query twice without relevance",
			queries: []int{7, 7, 9}, positives: []int{1, 2, 1}, rel: nil,
			want: [][]bool{
				{true, true, true},
				{true, true, false},
				{true, false, true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FalseNegativeMask(tc.queries, tc.positives, tc.hard, tc.rel)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mask\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name      string
		queries   []int
		positives []int
		hard      [][]int
		want      string
	}{
		{"length", []int{1, 2}, []int{1}, nil, "2 queries but 1 positives"},
		{"ragged", []int{1, 2}, []int{1, 2}, [][]int{{1}, {}}, "hard-negative row 1"},
		{"rows", []int{1, 2}, []int{1, 2}, [][]int{{1}}, "hard-negative rows"},
		{"negative id", []int{1, -2}, []int{1, 2}, nil, "negative id"},
	} {
		t.Run("error/"+tc.name, func(t *testing.T) {
			_, err := FalseNegativeMask(tc.queries, tc.positives, tc.hard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestFalseNegativeMaskFeedsInfoNCE checks the host mask has the layout InfoNCE expects: a
// batch where query 0's hard negative is its other positive loses exactly that term.
func TestFalseNegativeMaskFeedsInfoNCE(t *testing.T) {
	mask, err := FalseNegativeMask([]int{0, 1}, []int{10, 11}, [][]int{{12}, {13}},
		RelevanceFromMap(map[int][]int{0: {10, 12}, 1: {11}}))
	if err != nil {
		t.Fatal(err)
	}
	// Dot, τ = 1; q0 = (1, 0), q1 = (0, 1); p0 = (1, 0), p1 = (0, 1); h0 = (2, 0), h1 = (0, 0).
	// Row 0 logits (1, 0, 2, 0) with candidate 2 masked: log(e + 1 + 1) - 1.
	// Row 1 logits (0, 1, 0, 0): log(1 + e + 1 + 1) - 1.
	q := arr{[]int{2, 2}, []float64{1, 0, 0, 1}}
	h := arr{[]int{2, 1, 2}, []float64{2, 0, 0, 0}}
	want := (math.Log(math.E+2) - 1 + math.Log(math.E+3) - 1) / 2
	got := mustLoss(t, infoNCEGraph(mask, InfoNCEConfig{Temperature: 1, Similarity: SimDot}), q, q, h)
	near(t, "InfoNCE", got, want, 1e-12)
}
