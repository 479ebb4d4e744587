package evaluate

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
)

// Marked is an iteration-aware bi-encoder run's ranker: every query is ranked as round 0's
// instruction (marked with iteration 0). The iterative retrieval (Replay, Live) unwraps it
// and marks each round's instruction itself.
type Marked struct {
	rank.QueryRanker
	Marker string
}

// RankQueries implements rank.QueryRanker.
func (m Marked) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	marked := make([]rank.Query, len(qs))
	for i, q := range qs {
		marked[i] = rank.Query{Index: q.Index, Text: biencoder.Mark(m.Marker, 0, q.Text)}
	}
	return m.QueryRanker.RankQueries(ctx, marked, k)
}

// Recorder is a QueryRanker that keeps what it ranks, at least K tools per query, for Save.
// The rankings it returns are the longer ones: metrics read only their top K.
type Recorder struct {
	rank.QueryRanker
	K  int
	qs []rank.Query
	rk []rank.Ranking
}

// RankQueries implements rank.QueryRanker.
func (r *Recorder) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	if k > 0 {
		k = max(k, r.K)
	}
	rk, err := r.QueryRanker.RankQueries(ctx, qs, k)
	if err == nil {
		r.qs = append(r.qs, qs...)
		r.rk = append(r.rk, rk...)
	}
	return rk, err
}

// Ranker returns r as the ranker an evaluation runs, keeping what r's inner ranker tells the
// evaluation: that it ranks each query within its own library (metrics.LibraryRanker), so that
// a multi-source evaluation asks it for its top k as it asks the inner ranker, not for every
// tool (a stage whose top k depends on the depth asked, such as a hybrid normalising its lists
// or per-clause merging, would rank otherwise than the evaluation without the recorder), and
// its token counts (rank.QueryTokenizer).
func (r *Recorder) Ranker() rank.QueryRanker {
	_, lib := r.QueryRanker.(metrics.LibraryRanker)
	tok, isTok := r.QueryRanker.(rank.QueryTokenizer)
	switch {
	case lib && isTok:
		return libraryTokenRecorder{libraryRecorder{r}, tok}
	case lib:
		return libraryRecorder{r}
	case isTok:
		return tokenRecorder{r, tok}
	}
	return r
}

// libraryRecorder is a Recorder whose inner ranker is a metrics.LibraryRanker.
type libraryRecorder struct{ *Recorder }

// RanksWithinLibraries implements metrics.LibraryRanker.
func (libraryRecorder) RanksWithinLibraries() {}

// tokenRecorder is a Recorder passing its inner ranker's token counts through.
type tokenRecorder struct {
	*Recorder
	t rank.QueryTokenizer
}

// QueryTokens implements rank.QueryTokenizer.
func (r tokenRecorder) QueryTokens(text string) (int, int) { return r.t.QueryTokens(text) }

// libraryTokenRecorder is both.
type libraryTokenRecorder struct {
	libraryRecorder
	t rank.QueryTokenizer
}

// QueryTokens implements rank.QueryTokenizer.
func (r libraryTokenRecorder) QueryTokens(text string) (int, int) { return r.t.QueryTokens(text) }

// Save writes the recorded rankings of d's queries (the top K of each) to path as a TREC run
// tagged tag, and reports what it wrote to log (nil: nothing).
func (r *Recorder) Save(d *data.Dataset, path, tag string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	res, rankScores := RunResults(d, r.qs, r.rk, r.K)
	if rankScores > 0 {
		fmt.Fprintf(log, "eval: -save-run: %d of %d rankings have no scores in rank order: written with scores n, n-1, ..., 1\n", rankScores, len(res))
	}
	if err := fusion.WriteRunFile(path, tag, res); err != nil {
		return err
	}
	fmt.Fprintf(log, "eval: wrote %d rankings (top %d) to %s\n", len(res), r.K, path)
	return nil
}

// RunResults turns rankings of d's queries qs (the top k of each; k <= 0: all) into TREC
// run results. A ranking without a finite score per tool in non-increasing order gets
// scores n, n-1, ..., 1 (rank order); rankScores counts them.
func RunResults(d *data.Dataset, qs []rank.Query, rk []rank.Ranking, k int) (res []fusion.Result, rankScores int) {
	res = make([]fusion.Result, len(qs))
	for i, q := range qs {
		tools, scores := rk[i].Tools, rk[i].Scores
		if k > 0 && len(tools) > k {
			tools = tools[:k]
		}
		ordered := len(scores) >= len(tools)
		for j := 0; ordered && j < len(tools); j++ {
			s := float64(scores[j])
			ordered = !math.IsNaN(s) && !math.IsInf(s, 0) && (j == 0 || scores[j] <= scores[j-1])
		}
		r := fusion.Result{Query: d.Queries[q.Index].ID, Docs: make([]string, len(tools)), Scores: make([]float32, len(tools))}
		for j, t := range tools {
			r.Docs[j] = d.Tools[t].ID
			if ordered {
				r.Scores[j] = scores[j]
			} else {
				r.Scores[j] = float32(len(tools) - j)
			}
		}
		if !ordered {
			rankScores++
		}
		res[i] = r
	}
	return res, rankScores
}

// RoundPath is the file round t's rankings of the iterative retrieval are saved to:
// path.round<t>, before path's extension (runs/x.trec: runs/x.round1.trec).
func RoundPath(path string, t int) string {
	ext := filepath.Ext(path)
	if strings.ContainsAny(ext, `/\`) {
		ext = ""
	}
	return fmt.Sprintf("%s.round%d%s", strings.TrimSuffix(path, ext), t, ext)
}
