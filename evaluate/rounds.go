package evaluate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// Round is one round of the iterative retrieval (Xu et al.).
type Round struct {
	Round int `json:"round"`
	// Active is the number of queries whose loop reached this round (the others keep their
	// last ranking); Refined those refined at this round.
	Active  int `json:"active"`
	Refined int `json:"refined"`
	// Metrics are over every query of the split, each with its ranking of this round
	// (Rounds.Evaluate).
	Metrics metrics.Result `json:"metrics"`
	// RetrieveMS and RefineMS are the mean times per active query, in milliseconds.
	RetrieveMS float64 `json:"retrieve_ms_per_query"`
	RefineMS   float64 `json:"refine_ms_per_query"`
}

// Rounds are the rankings of the judged queries of a split in every round 0..T.
type Rounds struct {
	// Rankings[t][i] is judged query i's ranking at round t (no Tools: its loop stopped
	// before).
	Rankings [][]rank.Ranking
	Stats    []Round
	// Head describes the loop in one line.
	Head string
}

// RankFunc ranks one instruction of query q (an index into the dataset's queries) alone,
// its top k tools, as a collection ranks it.
type RankFunc func(ctx context.Context, q int, text string, k int) (rank.Ranking, error)

// RankOne returns the RankFunc of a QueryRanker.
func RankOne(qr rank.QueryRanker) RankFunc {
	return func(ctx context.Context, q int, text string, k int) (rank.Ranking, error) {
		rk, err := qr.RankQueries(ctx, []rank.Query{{Index: q, Text: text}}, k)
		if err != nil {
			return rank.Ranking{}, err
		}
		if len(rk) != 1 {
			return rank.Ranking{}, fmt.Errorf("%d rankings for one query", len(rk))
		}
		return rk[0], nil
	}
}

// ReplayOptions are what Replay replays.
type ReplayOptions struct {
	// File is the collection (train feedback -out FILE); Name labels it in errors (default
	// File).
	File, Name string
	// Iterations is the last round T (0: the collection's).
	Iterations int
	// Split is the split the loops were collected in (default the evaluated split's name;
	// for a run's recorded dev split, the split it was carved from).
	Split string
	// Marker is an iteration-aware run's marker (Marked), Depth the tools ranked per round.
	Marker string
	Depth  int
}

// Replay ranks the recorded instructions of the judged queries of s in a collection with
// rank, round by round. The collection must have been made on d, and hold a loop for every
// judged query, finished or as long as round T.
func Replay(ctx context.Context, d *data.Dataset, s *data.Split, rankFn RankFunc, o ReplayOptions) (*Rounds, error) {
	name := o.Name
	if name == "" {
		name = o.File
	}
	h, loops, err := feedback.Read(o.File)
	if err != nil {
		return nil, err
	}
	if fp := d.Fingerprint(); h.Fingerprint != fp {
		return nil, fmt.Errorf("%s: collected on other data (dataset %s, fingerprint %.12s; this data: %s, %.12s)", name, h.Dataset, h.Fingerprint, d.Name, fp)
	}
	T := h.Iterations
	if o.Iterations > 0 {
		if o.Iterations > T {
			return nil, fmt.Errorf("-iterations %d: the collection has %d", o.Iterations, T)
		}
		T = o.Iterations
	}
	split := o.Split
	if split == "" {
		split = s.Name
	}
	byID := map[string]feedback.Loop{}
	for _, lp := range loops {
		if lp.Split == split {
			byID[lp.QueryID] = lp
		}
	}
	judged := s.Judged()
	instr := make([][]string, len(judged))
	for i, q := range judged {
		id := d.Queries[q].ID
		lp, ok := byID[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: query %q of split %s has no recorded loop (collect -split %s)", name, id, s.Name, split)
		case !lp.Done() && len(lp.Lines) <= T:
			return nil, fmt.Errorf("%s: query %q: the collection stopped at iteration %d of %d (resume train feedback to finish it)", name, id, len(lp.Lines)-1, T)
		case oneLine(lp.Lines[0].Query) != oneLine(d.Queries[q].Text):
			return nil, fmt.Errorf("%s: query %q: recorded instruction %q, the dataset's %q", name, id, lp.Lines[0].Query, d.Queries[q].Text)
		}
		instr[i] = lp.Instructions()[:min(len(lp.Lines), T+1)]
	}
	r := newRounds(T, len(judged))
	for t := range r.Rankings {
		var took time.Duration
		st := &r.Stats[t]
		for i, q := range judged {
			if t >= len(instr[i]) {
				continue
			}
			st.Active++
			if t+1 < len(instr[i]) {
				st.Refined++
			}
			start := time.Now()
			rk, err := rankFn(ctx, q, biencoder.Mark(o.Marker, t, instr[i][t]), o.Depth)
			if err != nil {
				return nil, fmt.Errorf("round %d: query %s: %w", t, d.Queries[q].ID, err)
			}
			took += time.Since(start)
			r.Rankings[t][i] = rk
		}
		if st.Active > 0 {
			st.RetrieveMS = float64(took.Microseconds()) / 1000 / float64(st.Active)
		}
	}
	r.Head = fmt.Sprintf("replay of %s (refiner %s, T = %d): %d queries", o.File, h.Settings["refiner"], T, len(judged))
	return r, nil
}

func newRounds(T, n int) *Rounds {
	r := &Rounds{Rankings: make([][]rank.Ranking, T+1), Stats: make([]Round, T+1)}
	for t := range r.Rankings {
		r.Rankings[t] = make([]rank.Ranking, n)
		r.Stats[t].Round = t
	}
	return r
}

// LiveOptions are the live prf loop's settings.
type LiveOptions struct {
	// Judge is the run that judges the retrieved tools (feedback.LoadJudge), loaded on Backend.
	Judge   string
	Backend compute.Backend
	PRF     feedback.PRFOptions
	// Iterations is the last round T (0: 3); K the tools the refiner sees each round.
	Iterations, K int
	// Marker is an iteration-aware run's marker (Marked), Depth the tools ranked per round.
	Marker string
	Depth  int
}

// Live runs the loop with the prf refiner for each judged query of s, ranking with rank.
func Live(ctx context.Context, d *data.Dataset, s *data.Split, rankFn RankFunc, o LiveOptions) (*Rounds, error) {
	j, kind, err := feedback.LoadJudge(o.Judge, d, o.Backend)
	if err != nil {
		return nil, err
	}
	ref, err := feedback.NewPRF(j, o.PRF)
	if err != nil {
		return nil, err
	}
	T := o.Iterations
	if T == 0 {
		T = 3
	}
	tools := feedback.Tools(d)
	judged := s.Judged()
	r := newRounds(T, len(judged))
	retr := make([]time.Duration, T+1)
	refine := make([]time.Duration, T+1)
	for i, q := range judged {
		l := toolindex.Loop{
			Rank: func(ctx context.Context, text string, k int) (rank.Ranking, error) { return rankFn(ctx, q, text, k) },
			Tool: func(ti int) (feedback.Tool, error) {
				if ti < 0 || ti >= len(tools) {
					return feedback.Tool{}, fmt.Errorf("tool index %d of %d", ti, len(tools))
				}
				return tools[ti], nil
			},
			K: o.K, Depth: max(o.Depth, o.K), Marker: o.Marker, QueryID: d.Queries[q].ID,
		}
		rs, err := l.Iterate(ctx, d.Queries[q].Text, ref, T)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", d.Queries[q].ID, err)
		}
		for _, x := range rs {
			t := x.Iteration
			r.Rankings[t][i] = x.Ranking
			r.Stats[t].Active++
			if x.Refined != "" {
				r.Stats[t].Refined++
			}
			retr[t] += x.RetrieveTime
			refine[t] += x.RefineTime
		}
	}
	for t := range r.Stats {
		if n := r.Stats[t].Active; n > 0 {
			r.Stats[t].RetrieveMS = float64(retr[t].Microseconds()) / 1000 / float64(n)
			r.Stats[t].RefineMS = float64(refine[t].Microseconds()) / 1000 / float64(n)
		}
	}
	p := ref.Options()
	r.Head = fmt.Sprintf("live prf (judge %s %s, threshold %g, %d tools, %d chars; refiner sees the top %d), T = %d: %d queries",
		kind, o.Judge, p.Threshold, p.MaxTools, p.MaxChars, o.K, T, len(judged))
	return r, nil
}

// Evaluate computes each round's metrics at cutoffs ks over every judged query of s (the
// split the rounds ranked), a query whose loop stopped keeping its last ranking, into
// Stats[t].Metrics. It returns those rankings: full[t][i] is judged query i's at round t.
func (r *Rounds) Evaluate(ctx context.Context, d *data.Dataset, s *data.Split, ks []int) (full [][]rank.Ranking, err error) {
	judged := s.Judged()
	full = make([][]rank.Ranking, len(r.Rankings))
	for t := range r.Rankings {
		rk := make(rank.Fixed, len(judged))
		full[t] = make([]rank.Ranking, len(judged))
		for i, q := range judged {
			for u := t; u >= 0; u-- { // a stopped query keeps its last ranking
				if r.Rankings[u][i].Tools != nil {
					rk[q], full[t][i] = r.Rankings[u][i].Tools, r.Rankings[u][i]
					break
				}
			}
		}
		rep, err := metrics.EvaluateSplit(ctx, d, s, rk, ks)
		if err != nil {
			return nil, err
		}
		r.Stats[t].Metrics = rep.Overall
	}
	return full, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
