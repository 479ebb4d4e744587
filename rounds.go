package toolret

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/rank"
)

// A Rewriter refines each query live by pseudo-relevance feedback (eval -rewriter prf): each
// round, Judge scores the tools the query's instruction retrieved, and those it accepts are
// written into the next instruction.
type Rewriter struct {
	// Judge is the run that judges the retrieved tools: an mlc classifier, refiner or
	// cross-encoder run (eval -prf-model).
	Judge string
	// PRF is which tools are accepted and how they are written (eval -prf-threshold,
	// -prf-tools, -prf-chars; a zero field: feedback.PRFOptions' default).
	PRF feedback.PRFOptions
	// K is how many tools the rewriter sees each round (0: 10; eval -rewriter-k).
	K int
}

// RoundsReport is what EvaluateRounds returns: every round's metrics and rankings.
type RoundsReport struct {
	// Method describes Run's ranker, as Evaluation.Method; Head describes the loop in one line.
	Method, Head string
	// Data is the dataset view evaluated and Split its split.
	Data  *data.Dataset
	Split *data.Split
	// Rounds are the metrics over every query of Split after each round 0..T, with the
	// queries active and refined in it and the mean times per active query.
	Rounds []evaluate.Round
	// Rankings[t] are the rankings of Split's judged queries (in fusion.SplitQueries' order)
	// at round t, a query whose loop stopped earlier keeping its last; each as deep as the
	// largest of Cutoffs (eval -save-run writes them, one file per round).
	Rankings [][]rank.Ranking
}

// EvaluateRounds evaluates cfg.Run in the iterative retrieval: cfg.Feedback's recorded
// refinements replayed, or cfg.Rewriter's live, round by round up to cfg.Iterations, each
// instruction ranked alone as a collection ranks it (an iteration-aware run with its round's
// marker). The other fields are Evaluate's: Data and its view, Split (a recorded dev split
// replays the loops collected in the split it was carved from), Vectors, Lengths, Backend,
// Cutoffs, Log; Clauses are refused.
func EvaluateRounds(ctx context.Context, cfg EvalConfig) (*RoundsReport, error) {
	file, rw, last := cfg.Feedback, cfg.Rewriter, cfg.Iterations
	switch {
	case file != "" && rw != nil:
		return nil, errors.New("evaluate: Feedback replays a collection, Rewriter runs the loop live: give one")
	case file == "" && rw == nil:
		return nil, errors.New("evaluate: EvaluateRounds: give Feedback (a collection replayed) or Rewriter (live)")
	case cfg.Run == "":
		return nil, errors.New("evaluate: Feedback and Rewriter rank with a trained run: give Run")
	case cfg.Model != "" || cfg.Index != "" || len(cfg.Fuse) > 0 || cfg.Rerank != nil || cfg.Clauses != nil:
		return nil, errors.New("evaluate: Feedback and Rewriter rank with Run alone: not with Model, Index, Fuse, Rerank or Clauses")
	case last < 0:
		return nil, fmt.Errorf("evaluate: Iterations %d: want a round >= 0", last)
	case rw != nil && rw.Judge == "":
		return nil, errors.New("evaluate: Rewriter: give its Judge, the run that judges the retrieved tools (eval -prf-model)")
	case rw != nil && rw.K < 0:
		return nil, fmt.Errorf("evaluate: Rewriter K %d: want tools > 0 (0: 10)", rw.K)
	}
	cfg.Feedback, cfg.Rewriter, cfg.Iterations = "", nil, 0
	e, err := NewEvaluation(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	d, s := e.Data, e.Split
	qr, marker := e.Ranker, ""
	if m, ok := qr.(evaluate.Marked); ok {
		qr, marker = m.QueryRanker, m.Marker
	}
	depth := 0
	for _, k := range e.cutoffs {
		depth = max(depth, k)
	}
	rankFn := evaluate.RankOne(qr) // each instruction alone, as a collection ranks it
	var r *evaluate.Rounds
	if file != "" {
		split := s.Name
		if e.dev != nil { // the recorded dev split: its queries were collected in the split it was carved from
			split = e.dev.Split.From
		}
		r, err = evaluate.Replay(ctx, d, s, rankFn, evaluate.ReplayOptions{File: file, Name: "-feedback " + file,
			Iterations: last, Split: split, Marker: marker, Depth: depth})
	} else {
		be, berr := backend.Open(backend.Name(cfg.Backend))
		if berr != nil {
			return nil, berr
		}
		k := rw.K
		if k == 0 {
			k = 10
		}
		r, err = evaluate.Live(ctx, d, s, rankFn, evaluate.LiveOptions{Judge: rw.Judge, Backend: be, PRF: rw.PRF,
			Iterations: last, K: k, Marker: marker, Depth: depth})
	}
	if err != nil {
		return nil, err
	}
	full, err := r.Evaluate(ctx, d, s, e.cutoffs)
	if err != nil {
		return nil, err
	}
	return &RoundsReport{Method: e.Method, Head: r.Head, Data: d, Split: s, Rounds: r.Stats, Rankings: full}, nil
}
