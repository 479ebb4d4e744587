// Package fusion combines the ranked lists several retrievers return for one query into one
// ranking: reciprocal rank fusion (RRF), which needs only the ranks, and interpolation of
// normalised scores (min-max or z-score, per query and per list) with weights that Choose
// picks on a dev split. It also reads and writes rankings as TREC run files (ReadRun,
// WriteRun), the format trec_eval, pytrec_eval and ranx read.
//
// The functions are pure, and a retriever or server can fuse its BM25 and dense lists the
// same way. Ranker fuses Inputs, live rankers or saved runs of a dataset's queries (ReadInput),
// as eval -method fusion does, and Ranker.Tune picks its weights on dev queries.
package fusion

import (
	"fmt"
	"math"
	"sort"

	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// DefaultK is the RRF constant of Cormack, Clarke and Büttcher (2009).
const DefaultK = 60

// RRF fuses lists by reciprocal rank: a tool's score is the sum over the lists that hold it
// of 1/(k + rank), rank 1-based (a tool listed twice in one list counts at its best rank).
// The result holds every tool of any list, best first; ties go to the lower tool index. The
// lists' scores are not used. k must be >= 0.
func RRF(lists []rank.Ranking, k float64) (rank.Ranking, error) {
	if !(k >= 0) || math.IsInf(k, 1) {
		return rank.Ranking{}, fmt.Errorf("fusion: RRF k %v: want a finite k >= 0", k)
	}
	score := map[int]float64{}
	for _, l := range lists {
		seen := make(map[int]bool, len(l.Tools))
		for i, t := range l.Tools {
			if seen[t] {
				continue
			}
			seen[t] = true
			score[t] += 1 / (k + float64(i+1))
		}
	}
	return sorted(score), nil
}

// Interpolate fuses lists by weighted normalised scores: a tool's score is
// Σ_i w[i]·norm_i(tool), where norm_i is list i's scores normalised by n over the list
// (rerank.Normalize: per query, per list) and a tool missing from list i gets list i's lowest
// normalised score (0 for min-max). Every list needs a score per tool. The result holds every
// tool of any list, best first; ties go to the lower tool index. The weights are
// non-negative, one per list, not all zero.
func Interpolate(lists []rank.Ranking, w []float64, n rerank.Norm) (rank.Ranking, error) {
	p, err := prepare(lists, n)
	if err != nil {
		return rank.Ranking{}, err
	}
	if err := checkWeights(w, len(lists)); err != nil {
		return rank.Ranking{}, err
	}
	return p.fuse(w), nil
}

// prepared holds one query's lists normalised once, so that many weights can be tried.
type prepared struct {
	tools []int       // every tool of any list
	norm  [][]float64 // norm[i][j]: list i's normalised score of tools[j]
}

func prepare(lists []rank.Ranking, n rerank.Norm) (*prepared, error) {
	if n != rerank.NormMinMax && n != rerank.NormZScore {
		return nil, fmt.Errorf("fusion: normalisation %q: want minmax or zscore", n)
	}
	pos := map[int]int{}
	p := &prepared{norm: make([][]float64, len(lists))}
	for _, l := range lists {
		for _, t := range l.Tools {
			if _, ok := pos[t]; !ok {
				pos[t] = len(p.tools)
				p.tools = append(p.tools, t)
			}
		}
	}
	for i, l := range lists {
		if len(l.Scores) != len(l.Tools) {
			return nil, fmt.Errorf("fusion: list %d has %d scores for %d tools: score interpolation needs scores (RRF does not)", i+1, len(l.Scores), len(l.Tools))
		}
		for j, s := range l.Scores {
			if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return nil, fmt.Errorf("fusion: list %d: tool %d has score %v: want a finite score", i+1, l.Tools[j], s)
			}
		}
		ns := rerank.Normalize(l.Scores, n)
		row := make([]float64, len(p.tools))
		low := 0.0
		for j, v := range ns {
			if j == 0 || float64(v) < low {
				low = float64(v)
			}
		}
		for j := range row {
			row[j] = low
		}
		done := make(map[int]bool, len(l.Tools))
		for j, t := range l.Tools {
			if !done[t] { // the first, best-ranked occurrence
				done[t] = true
				row[pos[t]] = float64(ns[j])
			}
		}
		p.norm[i] = row
	}
	return p, nil
}

func (p *prepared) fuse(w []float64) rank.Ranking {
	score := make(map[int]float64, len(p.tools))
	for j, t := range p.tools {
		s := 0.0
		for i, row := range p.norm {
			s += w[i] * row[j]
		}
		score[t] = s
	}
	return sorted(score)
}

// sorted ranks the tools of score, best first, ties to the lower tool index.
func sorted(score map[int]float64) rank.Ranking {
	tools := make([]int, 0, len(score))
	for t := range score {
		tools = append(tools, t)
	}
	sort.Slice(tools, func(a, b int) bool {
		if sa, sb := score[tools[a]], score[tools[b]]; sa != sb {
			return sa > sb
		}
		return tools[a] < tools[b]
	})
	r := rank.Ranking{Tools: tools, Scores: make([]float32, len(tools))}
	for i, t := range tools {
		r.Scores[i] = float32(score[t])
	}
	return r
}

func checkWeights(w []float64, n int) error {
	if len(w) != n {
		return fmt.Errorf("fusion: %d weights for %d lists", len(w), n)
	}
	sum := 0.0
	for _, v := range w {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("fusion: weight %v: want a finite weight >= 0", v)
		}
		sum += v
	}
	if sum == 0 {
		return fmt.Errorf("fusion: the weights are all 0")
	}
	return nil
}

// Grid returns the weight vectors Choose tries for n lists: every vector of multiples of
// 1/steps that sums to 1 (n = 2, steps = 10: (0, 1), (0.1, 0.9), …, (1, 0)), in increasing
// lexicographic order, rounded to 1e-9.
func Grid(n, steps int) [][]float64 {
	if n < 1 || steps < 1 {
		return nil
	}
	var out [][]float64
	cur := make([]int, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == n-1 {
			cur[i] = left
			w := make([]float64, n)
			for j, c := range cur {
				w[j] = math.Round(float64(c)/float64(steps)*1e9) / 1e9
			}
			out = append(out, w)
			return
		}
		for c := 0; c <= left; c++ {
			cur[i] = c
			rec(i+1, left-c)
		}
	}
	rec(0, steps)
	return out
}

// Choose returns the weights of grid whose interpolation (normalisation n) ranks the
// queries best: queries[q] holds query q's lists (one per input, in the same order for every
// query), relevant[q] its relevant tools, and score(ranked, relevant) a per-query metric
// (such as NDCG@5) averaged over the queries. Ties go to the earlier grid entry. means[i] is
// the mean score of grid[i].
func Choose(queries [][]rank.Ranking, relevant [][]int, n rerank.Norm, grid [][]float64, score func(ranked, relevant []int) float64) (best []float64, means []float64, err error) {
	if len(queries) != len(relevant) {
		return nil, nil, fmt.Errorf("fusion: %d queries with lists, %d with relevant tools", len(queries), len(relevant))
	}
	if len(queries) == 0 || len(grid) == 0 {
		return nil, nil, fmt.Errorf("fusion: choose weights: %d queries, %d grid points: want both", len(queries), len(grid))
	}
	ps := make([]*prepared, len(queries))
	for q, lists := range queries {
		if len(lists) != len(grid[0]) {
			return nil, nil, fmt.Errorf("fusion: query %d has %d lists, the weights %d", q, len(lists), len(grid[0]))
		}
		if ps[q], err = prepare(lists, n); err != nil {
			return nil, nil, fmt.Errorf("query %d: %w", q, err)
		}
	}
	means = make([]float64, len(grid))
	bi := -1
	for i, w := range grid {
		if err := checkWeights(w, len(grid[0])); err != nil {
			return nil, nil, err
		}
		sum := 0.0
		for q, p := range ps {
			sum += score(p.fuse(w).Tools, relevant[q])
		}
		means[i] = sum / float64(len(ps))
		if bi < 0 || means[i] > means[bi] {
			bi = i
		}
	}
	return grid[bi], means, nil
}
