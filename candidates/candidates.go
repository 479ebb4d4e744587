// Package candidates opens a first-stage retriever by name and computes, caches and reloads
// its candidate lists: the top tools of each query that a second stage (the ToolRefiner)
// re-orders.
//
// Sources:
//
//	bi-encoder  a bi-encoder run, its tool tower's text vectors
//	usage       a bi-encoder run, Tool2Vec usage vectors (mean of the training queries using a tool)
//	mlc         an mlc classifier run, its scores over all tools
//	bm25        BM25 over the tool texts (no run)
package candidates

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
)

// Sources lists the first stages Open knows.
var Sources = []string{"bi-encoder", "usage", "mlc", "bm25"}

// Source names a first stage: its kind and, except for bm25, its run directory.
type Source struct {
	Kind string `json:"kind"`
	Run  string `json:"run,omitempty"`
}

func (s Source) String() string {
	if s.Run == "" {
		return s.Kind
	}
	return s.Kind + " " + s.Run
}

// Check validates the source's kind and that it has a run when it needs one.
func (s Source) Check() error {
	if !slices.Contains(Sources, s.Kind) {
		return fmt.Errorf("candidates %q: want one of %v", s.Kind, Sources)
	}
	if s.Kind != "bm25" && s.Run == "" {
		return fmt.Errorf("candidates %s: needs a run directory", s.Kind)
	}
	return nil
}

// Open returns the first stage of s as a ranker of d's tools. train is the split whose qrels
// define usage vectors (the training part of the run's recorded dev split, so that no dev
// query leaks into them); fallback reports, for usage vectors, how many tools had no training
// query and kept their text vector.
func Open(s Source, d *data.Dataset, train *data.Split, be compute.Backend) (r rank.Ranker, fallback int, err error) {
	if err := s.Check(); err != nil {
		return nil, 0, err
	}
	switch s.Kind {
	case "bm25":
		texts := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			texts[i] = t.Text
		}
		return bm25.New(texts, bm25.DefaultParams), 0, nil
	case "mlc":
		m, err := classifier.LoadRun(s.Run, be)
		if err != nil {
			return nil, 0, fmt.Errorf("candidates mlc: %w", err)
		}
		r, err := classifier.NewRanker(m, d)
		if err != nil {
			return nil, 0, fmt.Errorf("candidates mlc %s: %w", s.Run, err)
		}
		return r, 0, nil
	}
	emb, err := biencoder.LoadRun(s.Run, be)
	if err != nil {
		return nil, 0, fmt.Errorf("candidates %s: %w", s.Kind, err)
	}
	vectors := "text"
	if s.Kind == "usage" {
		vectors = "usage"
		if train == nil {
			return nil, 0, fmt.Errorf("candidates usage: no training split for the usage vectors")
		}
	}
	ret, err := emb.RetrieverFrom(d, vectors, train)
	if err != nil {
		return nil, 0, fmt.Errorf("candidates %s: %w", s.Kind, err)
	}
	return ret, ret.Fallbacks, nil
}

// Lists maps a query index to its candidate tools, best first, with the first stage's scores.
type Lists map[int]rank.Ranking

// Ranker is a QueryRanker of the lists as they are (the first stage alone).
func (l Lists) Ranker() rank.QueryRanker {
	f := make(rank.Fixed, len(l))
	for q, r := range l {
		f[q] = r.Tools
	}
	return f
}

// Compute ranks the queries (indices into d.Queries) with r and keeps each one's top depth
// tools, in batches of 256 queries.
func Compute(ctx context.Context, r rank.Ranker, d *data.Dataset, queries []int, depth int) (Lists, error) {
	return ComputeProgress(ctx, r, d, queries, depth, nil)
}

// ComputeProgress is Compute reporting the queries done of all after each batch to progress
// (when not nil).
func ComputeProgress(ctx context.Context, r rank.Ranker, d *data.Dataset, queries []int, depth int, progress func(done, total int)) (Lists, error) {
	if depth < 1 {
		return nil, fmt.Errorf("candidates: depth %d must be positive", depth)
	}
	out := make(Lists, len(queries))
	for lo := 0; lo < len(queries); lo += 256 {
		hi := min(lo+256, len(queries))
		texts := make([]string, hi-lo)
		for i, q := range queries[lo:hi] {
			texts[i] = d.Queries[q].Text
		}
		rk, err := r.Rank(ctx, texts, depth)
		if err != nil {
			return nil, fmt.Errorf("candidates: %w", err)
		}
		for i, q := range queries[lo:hi] {
			if len(rk[i].Scores) != len(rk[i].Tools) {
				return nil, fmt.Errorf("candidates: query %q: %d tools, %d scores", d.Queries[q].ID, len(rk[i].Tools), len(rk[i].Scores))
			}
			out[q] = rk[i]
		}
		if progress != nil {
			progress(hi, len(queries))
		}
	}
	return out, nil
}

// file is the on-disk form of a cache: ids, not indices, so it survives a reordered dataset.
type file struct {
	Source      Source               `json:"source"`
	Depth       int                  `json:"depth"`
	Fingerprint string               `json:"data_fingerprint"`
	Queries     map[string][]string  `json:"queries"`
	Scores      map[string][]float32 `json:"scores"`
}

// Save writes lists (computed from src at depth over d) to path atomically.
func Save(path string, src Source, depth int, d *data.Dataset, l Lists) error {
	f := file{Source: src, Depth: depth, Fingerprint: d.Fingerprint(), Queries: make(map[string][]string, len(l)), Scores: make(map[string][]float32, len(l))}
	for q, r := range l {
		ids := make([]string, len(r.Tools))
		for i, t := range r.Tools {
			ids[i] = d.Tools[t].ID
		}
		f.Queries[d.Queries[q].ID] = ids
		f.Scores[d.Queries[q].ID] = r.Scores
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// Load reads a cache written by Save for the same data, source and depth (at least depth).
// A cache of other data, of another source or shallower is an error naming what differs.
func Load(path string, src Source, depth int, d *data.Dataset) (Lists, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("candidates %s: %w", path, err)
	}
	switch {
	case f.Fingerprint != d.Fingerprint():
		return nil, fmt.Errorf("candidates %s: computed on other data (fingerprint %.12s, data %.12s)", path, f.Fingerprint, d.Fingerprint())
	case f.Source != src:
		return nil, fmt.Errorf("candidates %s: computed by %s, want %s", path, f.Source, src)
	case f.Depth < depth:
		return nil, fmt.Errorf("candidates %s: depth %d, want at least %d", path, f.Depth, depth)
	}
	qidx := make(map[string]int, len(d.Queries))
	for i, q := range d.Queries {
		qidx[q.ID] = i
	}
	tidx := make(map[string]int, len(d.Tools))
	for i, t := range d.Tools {
		tidx[t.ID] = i
	}
	out := make(Lists, len(f.Queries))
	for qid, ids := range f.Queries {
		q, ok := qidx[qid]
		if !ok {
			return nil, fmt.Errorf("candidates %s: unknown query id %q", path, qid)
		}
		tools := make([]int, len(ids))
		for i, id := range ids {
			t, ok := tidx[id]
			if !ok {
				return nil, fmt.Errorf("candidates %s: query %q: unknown tool id %q", path, qid, id)
			}
			tools[i] = t
		}
		sc := f.Scores[qid]
		if len(sc) != len(tools) {
			return nil, fmt.Errorf("candidates %s: query %q: %d tools, %d scores (a cache without scores is from an older toolret: delete it)", path, qid, len(tools), len(sc))
		}
		out[q] = rank.Ranking{Tools: tools, Scores: sc}
	}
	return out, nil
}

// Cached returns the lists of queries from the cache at path when it holds them all (same
// data, source and at least depth), else computes every query with r and rewrites the cache
// with the union, reporting the queries computed to progress (when not nil). It reports whether
// it computed.
func Cached(ctx context.Context, path string, src Source, r func() (rank.Ranker, error), d *data.Dataset, queries []int, depth int, progress func(done, total int)) (Lists, bool, error) {
	have, err := Load(path, src, depth, d)
	switch {
	case err == nil:
		missing := false
		for _, q := range queries {
			if _, ok := have[q]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			return have, false, nil
		}
	case os.IsNotExist(err):
		have = Lists{}
	default:
		return nil, false, err
	}
	rk, err := r()
	if err != nil {
		return nil, false, err
	}
	var todo []int
	for _, q := range queries {
		if _, ok := have[q]; !ok {
			todo = append(todo, q)
		}
	}
	got, err := ComputeProgress(ctx, rk, d, todo, depth, progress)
	if err != nil {
		return nil, false, err
	}
	for q, l := range got {
		have[q] = l
	}
	if err := Save(path, src, depth, d, have); err != nil {
		return nil, false, err
	}
	return have, true, nil
}
