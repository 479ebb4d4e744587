package fusion

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Grouped is an interpolation with two sets of weights: a tool marked in New (a tool the
// trained inputs have no training query for: a held-out tool, or one added to the library
// after training) is scored Σ_i NewW[i]·norm_i(tool) + Offset, every other tool
// Σ_i W[i]·norm_i(tool). Trained inputs (a fine-tuned bi-encoder, a classifier) are strong on
// the tools they were trained on and weak or blind on new ones, where a zero-shot model and
// BM25 are as good as anywhere; one set of weights has to trade the two off, two do not. It is
// ToolRerank's treatment of seen and unseen tools apart, applied to score fusion. With NewW =
// W and Offset 0 it ranks as Interpolate with W.
type Grouped struct {
	W, NewW []float64
	Offset  float64
	// New marks the new tools by tool index; a tool beyond its length is not new.
	New []bool
}

// NewTools marks the tools of d that no judged query of train needs (held-out tools, tools a
// tool-carved dev split took, tools added after training): Grouped.New for a fusion of inputs
// trained on train. n counts them.
func NewTools(d *data.Dataset, train *data.Split) (isNew []bool, n int) {
	isNew = make([]bool, len(d.Tools))
	for i := range isNew {
		isNew[i] = true
	}
	for _, q := range train.Judged() {
		for _, t := range train.Relevant[q] {
			if t >= 0 && t < len(isNew) {
				isNew[t] = false
			}
		}
	}
	for _, b := range isNew {
		if b {
			n++
		}
	}
	return isNew, n
}

func (g *Grouped) isNew(t int) bool { return t >= 0 && t < len(g.New) && g.New[t] }

// InterpolateGrouped fuses lists as Interpolate does, with g's weights per tool group.
func InterpolateGrouped(lists []rank.Ranking, g *Grouped, n rerank.Norm) (rank.Ranking, error) {
	p, err := prepare(lists, n)
	if err != nil {
		return rank.Ranking{}, err
	}
	if err := checkGrouped(g, len(lists)); err != nil {
		return rank.Ranking{}, err
	}
	score := make(map[int]float64, len(p.tools))
	for j, t := range p.tools {
		w, off := g.W, 0.0
		if g.isNew(t) {
			w, off = g.NewW, g.Offset
		}
		s := off
		for i, row := range p.norm {
			s += w[i] * row[j]
		}
		score[t] = s
	}
	return sorted(score), nil
}

func checkGrouped(g *Grouped, n int) error {
	if g == nil {
		return fmt.Errorf("fusion: no grouped weights")
	}
	if err := checkWeights(g.W, n); err != nil {
		return fmt.Errorf("weights of trained tools: %w", err)
	}
	if err := checkWeights(g.NewW, n); err != nil {
		return fmt.Errorf("weights of new tools: %w", err)
	}
	if math.IsNaN(g.Offset) || math.IsInf(g.Offset, 0) {
		return fmt.Errorf("fusion: new-tool offset %v: want a finite number", g.Offset)
	}
	return nil
}

// Offsets returns the new-tool offsets ChooseGrouped tries for normalisation n: multiples of
// 0.25 from −2 to 2 for z-scores (standard deviations), of 0.1 from −1 to 1 for min-max.
func Offsets(n rerank.Norm) []float64 {
	step, lim := 0.25, 2.0
	if n == rerank.NormMinMax {
		step, lim = 0.1, 1.0
	}
	var out []float64
	for i := -int(math.Round(lim / step)); float64(i)*step <= lim+1e-9; i++ {
		out = append(out, math.Round(float64(i)*step*1e9)/1e9)
	}
	return out
}

// GroupedChoice is what ChooseGrouped picked and the dev means that led to it.
type GroupedChoice struct {
	Grouped
	// Plain is the best single set of weights (Choose) and PlainMean its mean; Mean is the
	// mean of the grouped weights, never below PlainMean (the search starts from Plain).
	Plain           []float64
	PlainMean, Mean float64
}

// ChooseGrouped picks grouped weights on the queries (as Choose: queries[q] holds query q's
// lists, relevant[q] its relevant tools, score a per-query metric of the ranking's first
// depth tools, depth <= 0: all of them), the new tools marked in isNew, by coordinate ascent
// over grid and offsets: the best single weights (Choose), then the new tools' weights and
// offset with those fixed, then the trained tools' weights with the new tools' fixed. Ties go
// to the earlier grid entry and offset, so with nothing to gain it returns the single
// weights for both groups and offset 0 when offsets holds 0.
func ChooseGrouped(queries [][]rank.Ranking, relevant [][]int, n rerank.Norm, grid [][]float64, offsets []float64, isNew []bool, depth int, score func(ranked, relevant []int) float64) (*GroupedChoice, error) {
	plain, means, err := Choose(queries, relevant, n, grid, score)
	if err != nil {
		return nil, err
	}
	if len(offsets) == 0 {
		return nil, fmt.Errorf("fusion: choose grouped weights: no offsets")
	}
	ps := make([]*prepared, len(queries))
	for q, lists := range queries {
		if ps[q], err = prepare(lists, n); err != nil {
			return nil, fmt.Errorf("query %d: %w", q, err)
		}
	}
	c := &GroupedChoice{Grouped: Grouped{W: plain, NewW: plain, New: isNew}, Plain: plain}
	c.PlainMean = means[0]
	for _, m := range means {
		c.PlainMean = max(c.PlainMean, m) // Choose's pick has the largest mean
	}
	// The starting point: the plain weights, at offset 0 when that is an offset, else the
	// offset nearest 0.
	off0 := offsets[0]
	for _, o := range offsets {
		if math.Abs(o) < math.Abs(off0) {
			off0 = o
		}
	}
	c.Offset = off0
	c.Mean = meanGrouped(ps, relevant, &c.Grouped, depth, score)
	for _, w := range grid {
		for _, o := range offsets {
			g := Grouped{W: c.W, NewW: w, Offset: o, New: isNew}
			if m := meanGrouped(ps, relevant, &g, depth, score); m > c.Mean {
				c.Mean, c.NewW, c.Offset = m, w, o
			}
		}
	}
	for _, w := range grid {
		g := Grouped{W: w, NewW: c.NewW, Offset: c.Offset, New: isNew}
		if m := meanGrouped(ps, relevant, &g, depth, score); m > c.Mean {
			c.Mean, c.W = m, w
		}
	}
	return c, nil
}

// meanGrouped is the mean per-query score of g's rankings of the prepared queries, each
// ranking cut to its first depth tools (depth <= 0: all), computed on all cores.
func meanGrouped(ps []*prepared, relevant [][]int, g *Grouped, depth int, score func(ranked, relevant []int) float64) float64 {
	workers := min(runtime.GOMAXPROCS(0), len(ps))
	sums := make([]float64, workers)
	var wg sync.WaitGroup
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func(wk int) {
			defer wg.Done()
			var buf []float64
			var top []int
			for q := wk; q < len(ps); q += workers {
				top, buf = ps[q].topGrouped(g, depth, top, buf)
				sums[wk] += score(top, relevant[q])
			}
		}(wk)
	}
	wg.Wait()
	s := 0.0
	for _, v := range sums {
		s += v
	}
	return s / float64(len(ps))
}

// topGrouped returns the first depth tools (all when depth <= 0) of g's fused ranking of p,
// best first, ties to the lower tool index, as InterpolateGrouped ranks them; top and buf are
// reused.
func (p *prepared) topGrouped(g *Grouped, depth int, top []int, buf []float64) ([]int, []float64) {
	n := len(p.tools)
	if depth <= 0 || depth > n {
		depth = n
	}
	buf = buf[:0]
	for j, t := range p.tools {
		w, s := g.W, 0.0
		if g.isNew(t) {
			w, s = g.NewW, g.Offset
		}
		for i, row := range p.norm {
			s += w[i] * row[j]
		}
		buf = append(buf, s)
	}
	better := func(a, b int) bool { // positions into p.tools
		if buf[a] != buf[b] {
			return buf[a] > buf[b]
		}
		return p.tools[a] < p.tools[b]
	}
	if depth > 32 { // a full sort beats insertion
		idx := make([]int, n)
		for j := range idx {
			idx[j] = j
		}
		sort.Slice(idx, func(a, b int) bool { return better(idx[a], idx[b]) })
		top = top[:0]
		for _, j := range idx[:depth] {
			top = append(top, p.tools[j])
		}
		return top, buf
	}
	// Insertion into a sorted prefix of at most depth positions.
	idx := make([]int, 0, depth)
	for j := 0; j < n; j++ {
		if len(idx) == depth && !better(j, idx[depth-1]) {
			continue
		}
		if len(idx) < depth {
			idx = append(idx, j)
		} else {
			idx[depth-1] = j
		}
		for k := len(idx) - 1; k > 0 && better(idx[k], idx[k-1]); k-- {
			idx[k], idx[k-1] = idx[k-1], idx[k]
		}
	}
	top = top[:0]
	for _, j := range idx {
		top = append(top, p.tools[j])
	}
	return top, buf
}
