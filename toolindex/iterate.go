package toolindex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
)

// Round is one round of the iterative retrieval loop (Xu et al.): the tools retrieved for
// the instruction q^t and the refiner's answer.
type Round struct {
	// Iteration is t, from 0 (the user's query).
	Iteration int
	// Query is q^t; Text is what was retrieved with (the iteration marker, then q^t).
	Query, Text string
	// Ranking is the retrieved tools, best first (tool indices of the ranker: the index's
	// positions for Index.Iterate), Depth of them.
	Ranking rank.Ranking
	// Results are Index.Iterate's results for Text; nil for a Loop over another ranker.
	Results []Result
	// Replies, Refined, Stop, Reason and Error are the refiner's answer as a collection's
	// feedback.Line records it: Refined is q^(t+1); the last round has Stop and its Reason
	// (feedback.Reason*), Error with Reason "error".
	Replies []feedback.Reply
	Refined string
	Stop    bool
	Reason  string
	Error   string
	// RetrieveTime and RefineTime are the round's time retrieving and refining.
	RetrieveTime, RefineTime time.Duration
}

// Loop runs the iterative retrieval over any ranker of a tool library: at round t it ranks
// the instruction q^t (marked with Marker) and hands the top K tools to a refiner, which
// answers q^(t+1) or stops. The stop rules are feedback.Run's, so a loop over the ranker a
// collection used reproduces the collection's lines.
type Loop struct {
	// Rank returns the top k tools of one text, best first.
	Rank func(ctx context.Context, text string, k int) (rank.Ranking, error)
	// Tool returns ranked tool i as the refiner sees it.
	Tool func(i int) (feedback.Tool, error)
	// K is the number of tools shown to the refiner (default 10); Depth the number kept in
	// each Round's Ranking (default K; the refiner sees the first K).
	K, Depth int
	// Marker is the iteration marker of an iteration-aware retriever (biencoder.Mark;
	// "" for none).
	Marker string
	// QueryID is passed to the refiner (feedback.Input.QueryID).
	QueryID string
}

// IterateOption configures Index.Iterate.
type IterateOption func(*Loop)

// WithFeedbackK shows the refiner the top k tools of each round (default 10).
func WithFeedbackK(k int) IterateOption { return func(l *Loop) { l.K = k } }

// WithDepth keeps the top n tools of each round in its Results (default: the K shown to the
// refiner).
func WithDepth(n int) IterateOption { return func(l *Loop) { l.Depth = n } }

// WithMarker puts the iteration marker of an iteration-aware retriever before each round's
// instruction: the format (one %d) its run recorded (biencoder.json "marker"; train
// biencoder -feedback -marker). Index.Iterate defaults to the index's (Marker); "" turns
// it off.
func WithMarker(format string) IterateOption { return func(l *Loop) { l.Marker = format } }

// WithQueryID names the query for the refiner.
func WithQueryID(id string) IterateOption { return func(l *Loop) { l.QueryID = id } }

// Iterate runs the iterative retrieval loop for query with refiner ref: round 0 retrieves
// for the query itself, and each later round for the instruction the refiner gave at the
// round before, until the refiner stops ("N/A", an unchanged instruction, a failed step) or
// maxRounds refinements were made (rounds 0..maxRounds; the last round is retrieved, not
// refined). All rounds are answered from one library version. It returns the rounds in
// order; an error of the retriever or the refiner ends it.
func (r *Index) Iterate(ctx context.Context, query string, ref feedback.Rewriter, maxRounds int, opts ...IterateOption) ([]Round, error) {
	lib := r.Library()
	var results [][]Result // per Rank call, for the rounds' Results
	var l Loop
	l = Loop{
		Marker: r.Marker(),
		Rank: func(ctx context.Context, text string, k int) (rank.Ranking, error) {
			// Rank is called once per round, in order, with q^t marked: the lexical stage,
			// reranker and refiner get q^t itself.
			q := text
			if l.Marker != "" {
				q = strings.TrimPrefix(text, fmt.Sprintf(l.Marker, len(results)))
			}
			res, err := r.retrieve(ctx, lib, []string{text}, []string{q}, k, false)
			if err != nil {
				return rank.Ranking{}, err
			}
			rk := rank.Ranking{Tools: make([]int, len(res[0])), Scores: make([]float32, len(res[0]))}
			for i, x := range res[0] {
				rk.Tools[i], rk.Scores[i] = x.Index, x.Score
			}
			results = append(results, res[0])
			return rk, nil
		},
		Tool: func(i int) (feedback.Tool, error) {
			if i < 0 || i >= lib.Len() {
				return feedback.Tool{}, fmt.Errorf("retriever: tool index %d of %d", i, lib.Len())
			}
			t := lib.Tool(i)
			return feedback.ToolOf(i, data.Tool{ID: t.ID, Title: t.Title, Text: t.Text, Category: t.Category, ToolName: t.ToolName, APIName: t.APIName}), nil
		},
	}
	for _, o := range opts {
		o(&l)
	}
	rounds, err := l.Iterate(ctx, query, ref, maxRounds)
	for i := range rounds {
		if i < len(results) {
			rounds[i].Results = results[i]
		}
	}
	return rounds, err
}

// Iterate runs the loop for query with refiner ref (see Index.Iterate).
func (l *Loop) Iterate(ctx context.Context, query string, ref feedback.Rewriter, maxRounds int) ([]Round, error) {
	k, depth := l.K, l.Depth
	if k == 0 {
		k = 10
	}
	if depth == 0 {
		depth = k
	}
	switch {
	case l.Rank == nil || l.Tool == nil:
		return nil, errors.New("iterate: no ranker")
	case ref == nil:
		return nil, errors.New("iterate: no refiner")
	case k < 0 || depth < 0:
		return nil, fmt.Errorf("iterate: k %d, depth %d: must be > 0", k, depth)
	case maxRounds < 0:
		return nil, fmt.Errorf("iterate: max rounds %d: must be >= 0", maxRounds)
	}
	if l.Marker != "" {
		if err := biencoder.CheckMarker(l.Marker); err != nil {
			return nil, fmt.Errorf("iterate: %w", err)
		}
	}
	var out []Round
	text := query
	for t := 0; ; t++ {
		rd := Round{Iteration: t, Query: text, Text: biencoder.Mark(l.Marker, t, text)}
		start := time.Now()
		rk, err := l.Rank(ctx, rd.Text, max(k, depth))
		if err != nil {
			return out, fmt.Errorf("iterate: round %d: retrieve: %w", t, err)
		}
		rd.RetrieveTime = time.Since(start)
		rd.Ranking = cut(rk, depth)
		if t >= maxRounds {
			rd.Stop, rd.Reason = true, feedback.ReasonIterations
			return append(out, rd), nil
		}
		top := cut(rk, k)
		in := feedback.Input{QueryID: l.QueryID, Original: query, Query: text, Iteration: t, Tools: make([]feedback.Tool, len(top.Tools))}
		for i, ti := range top.Tools {
			if in.Tools[i], err = l.Tool(ti); err != nil {
				return out, fmt.Errorf("iterate: round %d: %w", t, err)
			}
		}
		start = time.Now()
		st, err := ref.Rewrite(ctx, in)
		rd.RefineTime = time.Since(start)
		if err != nil {
			return out, fmt.Errorf("iterate: round %d: %w", t, err)
		}
		rd.Replies = st.Replies
		// The stop rules of feedback.Run's loop.
		refined := oneLine(st.Refined)
		switch {
		case st.Err != "":
			rd.Stop, rd.Reason, rd.Error = true, feedback.ReasonError, st.Err
		case st.Stop:
			rd.Stop, rd.Reason = true, feedback.ReasonNA
		case refined == "":
			rd.Stop, rd.Reason, rd.Error = true, feedback.ReasonError, "the refiner returned no instruction"
		case strings.EqualFold(refined, oneLine(text)):
			rd.Stop, rd.Reason = true, feedback.ReasonUnchanged
		default:
			rd.Refined = refined
		}
		out = append(out, rd)
		if rd.Stop {
			return out, nil
		}
		text = refined
	}
}

func cut(r rank.Ranking, n int) rank.Ranking {
	if len(r.Tools) <= n {
		return r
	}
	out := rank.Ranking{Tools: r.Tools[:n]}
	if len(r.Scores) >= n {
		out.Scores = r.Scores[:n]
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
