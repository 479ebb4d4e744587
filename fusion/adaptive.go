package fusion

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Adaptive is a dense weight that follows each query's dense ranking instead of one fixed
// weight for every query and library (issue #55: the same BM25 fusion weight gains on one
// library and loses on another). For a query whose dense ranking (its first AdaptiveDepth tools)
// has z-scored scores z_1 >= z_2 >= ..., the dense weight is
//
//	w(q) = clamp(Base + Slope·z_1, 0, 1)
//
// and the fusion is w(q)·norm(dense) + (1−w(q))·norm(lexical), as Interpolate with weights
// {w(q), 1−w(q)}. z_1 needs no labels: it is how far the dense model's best tool stands above
// the rest of its list. Slope 0 is the fixed weight Base. ChooseAdaptive learns Base and Slope
// across the libraries of a dev split, each library counting once.
type Adaptive struct {
	Base  float64 `json:"base"`
	Slope float64 `json:"slope"`
}

// Check reports whether a's coefficients are finite.
func (a Adaptive) Check() error {
	for _, v := range []float64{a.Base, a.Slope} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("adaptive weight %s: want finite base and slope", a)
		}
	}
	return nil
}

// String formats a as ParseAdaptive reads it: "0.95,-0.075".
func (a Adaptive) String() string {
	return strconv.FormatFloat(a.Base, 'g', -1, 64) + "," + strconv.FormatFloat(a.Slope, 'g', -1, 64)
}

// Describe formats a as a formula: "clamp(0.95 - 0.075·z1)".
func (a Adaptive) Describe() string {
	if a.Slope == 0 {
		return fmt.Sprintf("%g (fixed)", a.Base)
	}
	sign := "+"
	if a.Slope < 0 {
		sign = "-"
	}
	return fmt.Sprintf("clamp(%g %s %g·z1)", a.Base, sign, math.Abs(a.Slope))
}

// ParseAdaptive reads "BASE,SLOPE" (Adaptive.String).
func ParseAdaptive(s string) (Adaptive, error) {
	b, sl, ok := strings.Cut(s, ",")
	if !ok {
		return Adaptive{}, fmt.Errorf("adaptive weight %q: want BASE,SLOPE (w = clamp(BASE + SLOPE·z1, 0, 1))", s)
	}
	var a Adaptive
	var err error
	if a.Base, err = strconv.ParseFloat(strings.TrimSpace(b), 64); err != nil {
		return Adaptive{}, fmt.Errorf("adaptive weight %q: base: %w", s, err)
	}
	if a.Slope, err = strconv.ParseFloat(strings.TrimSpace(sl), 64); err != nil {
		return Adaptive{}, fmt.Errorf("adaptive weight %q: slope: %w", s, err)
	}
	return a, a.Check()
}

// AdaptiveDepth is how many of the dense ranking's first scores z_1 is computed over, whatever
// the depth fused: the rule then means the same when a server fuses its top 100 and when an
// evaluation ranks a whole library.
const AdaptiveDepth = 100

// Weight returns the dense weight of a query whose dense ranking is dense (best first, with
// scores): clamp(Base + Slope·z_1, 0, 1), z_1 the z-score of its first score over its first
// AdaptiveDepth scores (0 for a list of fewer than two tools or of equal scores).
func (a Adaptive) Weight(dense rank.Ranking) float64 {
	return min(1, max(0, a.Base+a.Slope*topZ(dense.Scores)))
}

// topZ is the z-score of the largest of the first AdaptiveDepth scores over them.
func topZ(scores []float32) float64 {
	scores = scores[:min(len(scores), AdaptiveDepth)]
	if len(scores) < 2 {
		return 0
	}
	z := rerank.Normalize(scores, rerank.NormZScore)
	top := math.Inf(-1)
	for _, v := range z {
		top = max(top, float64(v))
	}
	return top
}

// InterpolateAdaptive fuses a dense ranking with a second (lexical) ranking by Interpolate
// at the dense weight a gives the query, a.Weight(dense).
func InterpolateAdaptive(dense, other rank.Ranking, a Adaptive, n rerank.Norm) (rank.Ranking, error) {
	if err := a.Check(); err != nil {
		return rank.Ranking{}, err
	}
	w := a.Weight(dense)
	if w == 0 && len(other.Tools) == 0 {
		w = 1 // nothing on the lexical side: the dense ranking
	}
	return Interpolate([]rank.Ranking{dense, other}, []float64{w, 1 - w}, n)
}

// AdaptiveGrid is the grid ChooseAdaptive searches by default: bases 0.5, 0.55, ..., 1.2 and
// slopes −0.15, −0.125, ..., 0.05 (slope 0: the fixed weights 0.5 ... 1).
func AdaptiveGrid() (bases, slopes []float64) {
	for i := 0; i <= 14; i++ {
		bases = append(bases, math.Round((0.5+0.05*float64(i))*100)/100)
	}
	for i := 0; i <= 8; i++ {
		slopes = append(slopes, math.Round((-0.15+0.025*float64(i))*1000)/1000)
	}
	return bases, slopes
}

// AdaptiveChoice is what ChooseAdaptive picked and how it compared.
type AdaptiveChoice struct {
	Adaptive
	// Mean is the picked rule's macro mean metric: the mean over groups of each group's mean
	// over its queries.
	Mean float64
	// Fixed is the best fixed weight of the grid (slope 0, base <= 1) and FixedMean its macro
	// mean.
	Fixed     float64
	FixedMean float64
	// Groups holds each group's mean under the picked rule and under Fixed, by group id.
	Groups      map[int]float64
	FixedGroups map[int]float64
}

// ChooseAdaptive picks Base and Slope from bases × slopes that maximise the macro mean of
// score over groups: each query's dense and lexical lists are queries[q][0] and
// queries[q][1], groups[q] its group (a library: each library counts once, whatever its
// number of queries). A tie keeps the flatter slope, then the earlier base; the fixed weights
// (slope 0, base <= 1) are also reported apart.
func ChooseAdaptive(queries [][]rank.Ranking, relevant [][]int, groups []int, n rerank.Norm, bases, slopes []float64, score func(ranked, relevant []int) float64) (*AdaptiveChoice, error) {
	if len(queries) != len(relevant) || len(queries) != len(groups) {
		return nil, fmt.Errorf("fusion: adaptive weight: %d queries with lists, %d with relevant tools, %d with groups", len(queries), len(relevant), len(groups))
	}
	if len(queries) == 0 || len(bases) == 0 || len(slopes) == 0 {
		return nil, fmt.Errorf("fusion: adaptive weight: %d queries, %d bases, %d slopes: want all", len(queries), len(bases), len(slopes))
	}
	ps := make([]*prepared, len(queries))
	z1 := make([]float64, len(queries))
	for q, lists := range queries {
		if len(lists) != 2 {
			return nil, fmt.Errorf("fusion: adaptive weight: query %d has %d lists: want a dense and a lexical one", q, len(lists))
		}
		var err error
		if ps[q], err = prepare(lists, n); err != nil {
			return nil, fmt.Errorf("query %d: %w", q, err)
		}
		z1[q] = topZ(lists[0].Scores)
	}
	macro := func(a Adaptive) (float64, map[int]float64) {
		sum, cnt := map[int]float64{}, map[int]int{}
		for q, p := range ps {
			w := min(1, max(0, a.Base+a.Slope*z1[q]))
			sum[groups[q]] += score(p.fuse([]float64{w, 1 - w}).Tools, relevant[q])
			cnt[groups[q]]++
		}
		per := make(map[int]float64, len(sum))
		m := 0.0
		for g, s := range sum {
			per[g] = s / float64(cnt[g])
			m += per[g]
		}
		return m / float64(len(sum)), per
	}
	c := &AdaptiveChoice{Mean: math.Inf(-1), FixedMean: math.Inf(-1)}
	// Flatter slopes first, so that a tie keeps the rule closest to a fixed weight.
	slopes = append([]float64(nil), slopes...)
	sort.SliceStable(slopes, func(i, j int) bool { return math.Abs(slopes[i]) < math.Abs(slopes[j]) })
	for _, s := range slopes {
		for _, b := range bases {
			a := Adaptive{Base: b, Slope: s}
			if err := a.Check(); err != nil {
				return nil, err
			}
			m, per := macro(a)
			if m > c.Mean {
				c.Adaptive, c.Mean, c.Groups = a, m, per
			}
			if s == 0 && b <= 1 && m > c.FixedMean {
				c.Fixed, c.FixedMean, c.FixedGroups = b, m, per
			}
		}
	}
	if c.FixedGroups == nil { // no slope 0 in the grid: report the best of Base alone
		bs := append([]float64(nil), bases...)
		sort.Float64s(bs)
		for _, b := range bs {
			if b > 1 {
				break
			}
			if m, per := macro(Adaptive{Base: b}); m > c.FixedMean {
				c.Fixed, c.FixedMean, c.FixedGroups = b, m, per
			}
		}
	}
	return c, nil
}
