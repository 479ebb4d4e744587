package rerank

import (
	"context"
	"fmt"
	"math"
)

// Norm is how Interpolate puts the cross-encoder's and the first stage's scores on one scale
// before mixing them. The scales differ: the cross-encoder gives sigmoid probabilities in
// (0, 1), often saturated near 0 or 1, the bi-encoder cosines in [-1, 1] bunched in a narrow
// band; both normalisations work per query, over the candidates being reranked.
type Norm string

// Normalisations.
const (
	// NormOff: no interpolation, the cross-encoder's scores alone (the paper's pipeline).
	NormOff Norm = ""
	// NormMinMax maps each score list to [0, 1]: (s − min) / (max − min); a list whose scores
	// are all equal maps to zeros.
	NormMinMax Norm = "minmax"
	// NormZScore maps each score list to (s − mean) / std (population std); a list whose
	// scores are all equal maps to zeros.
	NormZScore Norm = "zscore"
)

func (n Norm) String() string {
	if n == NormOff {
		return "off"
	}
	return string(n)
}

// ParseNorm maps "off" (or ""), "minmax" and "zscore" to a Norm.
func ParseNorm(s string) (Norm, error) {
	switch s {
	case "", "off":
		return NormOff, nil
	case "minmax":
		return NormMinMax, nil
	case "zscore":
		return NormZScore, nil
	}
	return NormOff, fmt.Errorf("interpolation %q: want minmax, zscore or off", s)
}

// Normalize returns s normalised by n (a new slice); NormOff returns a copy of s.
func Normalize(s []float32, n Norm) []float32 {
	out := make([]float32, len(s))
	if len(s) == 0 {
		return out
	}
	switch n {
	case NormMinMax:
		lo, hi := s[0], s[0]
		for _, v := range s {
			lo, hi = min(lo, v), max(hi, v)
		}
		if r := float64(hi) - float64(lo); r > 0 {
			for i, v := range s {
				out[i] = float32((float64(v) - float64(lo)) / r)
			}
		}
	case NormZScore:
		mean := 0.0
		for _, v := range s {
			mean += float64(v)
		}
		mean /= float64(len(s))
		variance := 0.0
		for _, v := range s {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		if sd := math.Sqrt(variance / float64(len(s))); sd > 0 {
			for i, v := range s {
				out[i] = float32((float64(v) - mean) / sd)
			}
		}
	default:
		copy(out, s)
	}
	return out
}

// Interpolate returns w·Normalize(second) + (1−w)·Normalize(first), element by element: the
// fused score of candidates whose cross-encoder scores are second and first-stage scores are
// first. w must be in [0, 1] and n not NormOff.
func Interpolate(second, first []float32, w float32, n Norm) ([]float32, error) {
	if len(second) != len(first) {
		return nil, fmt.Errorf("rerank: interpolate %d cross-encoder scores with %d first-stage scores", len(second), len(first))
	}
	if n != NormMinMax && n != NormZScore {
		return nil, fmt.Errorf("rerank: interpolate with normalisation %q: want minmax or zscore", n)
	}
	if !(w >= 0 && w <= 1) {
		return nil, fmt.Errorf("rerank: interpolation weight %v: must be in [0, 1]", w)
	}
	a, b := Normalize(second, n), Normalize(first, n)
	out := make([]float32, len(a))
	for i := range a {
		out[i] = float32(float64(w)*float64(a[i]) + (1-float64(w))*float64(b[i]))
	}
	return out, nil
}

// Weights returns the interpolation weights 0, 1/steps, …, 1 (steps+1 values; steps 10 gives
// 0, 0.1, …, 1), rounded to two decimals.
func Weights(steps int) []float32 {
	steps = max(steps, 1)
	out := make([]float32, steps+1)
	for i := range out {
		out[i] = float32(math.Round(float64(i)/float64(steps)*100) / 100)
	}
	return out
}

// fused is the Scorer of one query whose scores are the cross-encoder's interpolated with the
// first stage's: every call normalises over the APIs it is given (the candidates being
// reranked together).
type fused struct {
	Scorer
	first []float32 // first-stage score of every API, by API index
	w     float32
	norm  Norm
}

func (f fused) Score(ctx context.Context, query string, apis []int) ([]float32, error) {
	ce, err := f.Scorer.Score(ctx, query, apis)
	if err != nil {
		return nil, err
	}
	if len(ce) != len(apis) {
		return nil, fmt.Errorf("rerank: scorer returned %d scores for %d APIs", len(ce), len(apis))
	}
	fs := make([]float32, len(apis))
	for i, a := range apis {
		if a < 0 || a >= len(f.first) {
			return nil, fmt.Errorf("rerank: query %q: no first-stage score for API %d (%d scores)", query, a, len(f.first))
		}
		fs[i] = f.first[a]
	}
	return Interpolate(ce, fs, f.w, f.norm)
}

// PerQuery returns score(ranking, relevant) of each query of qs under pl.
func PerQuery(ctx context.Context, pl Pipeline, qs []Query, score func(ranked, relevant []int) float64) ([]float64, error) {
	rk, err := pl.RunAll(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(qs))
	for i, q := range qs {
		out[i] = score(rk[i], q.Relevant)
	}
	return out, nil
}

// PairedT is the paired t-statistic of a over b: the mean of the differences a[i] − b[i]
// divided by its standard error (sample standard deviation / √n). Differences that are all
// equal give +Inf when positive, −Inf when negative and 0 when zero; fewer than two pairs give
// 0 (no evidence).
func PairedT(a, b []float64) float64 {
	n := len(a)
	if n != len(b) || n < 2 {
		return 0
	}
	mean := 0.0
	for i := range a {
		mean += a[i] - b[i]
	}
	mean /= float64(n)
	ss := 0.0
	for i := range a {
		d := a[i] - b[i] - mean
		ss += d * d
	}
	se := math.Sqrt(ss / float64(n-1) / float64(n))
	switch {
	case se > 0:
		return mean / se
	case mean > 0:
		return math.Inf(1)
	case mean < 0:
		return math.Inf(-1)
	}
	return 0
}
