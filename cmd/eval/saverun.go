package evalcmd

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/retrieve"
)

// recorder is a QueryRanker that keeps what it ranks, at least k tools per query, for
// -save-run. The rankings it returns are the longer ones: metrics read only their top K.
type recorder struct {
	retrieve.QueryRanker
	k  int
	qs []retrieve.Query
	rk []retrieve.Ranking
}

func (r *recorder) RankQueries(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	if k > 0 {
		k = max(k, r.k)
	}
	rk, err := r.QueryRanker.RankQueries(ctx, qs, k)
	if err == nil {
		r.qs = append(r.qs, qs...)
		r.rk = append(r.rk, rk...)
	}
	return rk, err
}

// save writes the recorded rankings (the top k of each) to path as a TREC run.
func (r *recorder) save(d *data.Dataset, path, tag string) error {
	res, rankScores := runResults(d, r.qs, r.rk, r.k)
	if rankScores > 0 {
		fmt.Fprintf(os.Stderr, "eval: -save-run: %d of %d rankings have no scores in rank order: written with scores n, n-1, ..., 1\n", rankScores, len(res))
	}
	if err := fusion.WriteRunFile(path, tag, res); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "eval: wrote %d rankings (top %d) to %s\n", len(res), r.k, path)
	return nil
}

// runResults turns rankings of qs (the top k of each; k <= 0: all) into TREC run results. A
// ranking without a finite score per tool in non-increasing order gets scores n, n-1, ..., 1
// (rank order); rankScores counts them.
func runResults(d *data.Dataset, qs []retrieve.Query, rk []retrieve.Ranking, k int) (res []fusion.Result, rankScores int) {
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

// runTag returns -run-tag, or toolret-<method>.
func runTag(o *options) string {
	if o.runTag != "" {
		return o.runTag
	}
	if o.run != "" {
		return "toolret-run"
	}
	return "toolret-" + strings.Join(strings.Fields(o.method), "-")
}
