// Package rerank implements the ToolRerank inference pipeline (Zheng et al.): adaptive
// truncation of the coarse retrieval list, cross-encoder reranking, and hierarchy-aware
// reranking chosen by the query type (single-tool: Algorithm 1; multi-tool: Algorithm 2).
//
// Here "tool" is the hierarchy level above the API (ToolLens: tool_name) and the items being
// ranked are APIs (the corpus entries). The package is pure host-side logic over indices, so
// any retriever, cross-encoder and classifier plug in.
package rerank

import (
	"context"
	"fmt"
	"sort"
)

// Candidate is one ranked API with its score.
type Candidate struct {
	API   int
	Score float32
}

// Scorer scores (query, API) pairs; the cross-encoder implements it. Scores are in (0, 1).
type Scorer interface {
	Score(ctx context.Context, query string, apis []int) ([]float32, error)
}

// Library describes the API library: the tool (group) of each API, whether each API was seen
// in training, and all APIs of each tool.
type Library struct {
	Group []int   // API -> tool
	Seen  []bool  // API -> appears in training qrels
	APIs  [][]int // tool -> its APIs, in index order
}

// NewLibrary builds a Library from the per-API tool index and seen flags.
func NewLibrary(group []int, seen []bool) (*Library, error) {
	if len(group) != len(seen) {
		return nil, fmt.Errorf("rerank: %d groups for %d seen flags", len(group), len(seen))
	}
	n := 0
	for _, g := range group {
		if g < 0 {
			return nil, fmt.Errorf("rerank: negative tool index %d", g)
		}
		n = max(n, g+1)
	}
	lib := &Library{Group: group, Seen: seen, APIs: make([][]int, n)}
	for a, g := range group {
		lib.APIs[g] = append(lib.APIs[g], a)
	}
	return lib, nil
}

// Truncate applies adaptive truncation to a coarse ranking (best first): the API at 1-based
// position i is kept if i <= ms when it was seen in training, or i <= mu when unseen (ms < mu
// in the paper: unseen APIs get a longer leash because the retriever ranks them worse).
func Truncate(ranked []int, seen []bool, ms, mu int) []int {
	out := make([]int, 0, min(len(ranked), max(ms, mu)))
	for i, a := range ranked {
		pos := i + 1
		if (seen[a] && pos <= ms) || (!seen[a] && pos <= mu) {
			out = append(out, a)
		}
	}
	return out
}

// Rerank scores apis with the cross-encoder and returns them sorted by score, best first
// (ties keep the input order).
func Rerank(ctx context.Context, s Scorer, query string, apis []int) ([]Candidate, error) {
	if len(apis) == 0 {
		return nil, nil
	}
	scores, err := s.Score(ctx, query, apis)
	if err != nil {
		return nil, err
	}
	if len(scores) != len(apis) {
		return nil, fmt.Errorf("rerank: scorer returned %d scores for %d APIs", len(scores), len(apis))
	}
	out := make([]Candidate, len(apis))
	for i, a := range apis {
		out[i] = Candidate{a, scores[i]}
	}
	sortByScore(out)
	return out, nil
}

func sortByScore(c []Candidate) {
	sort.SliceStable(c, func(i, j int) bool { return c[i].Score > c[j].Score })
}

// SingleTool is Algorithm 1, for queries that need one tool: X is the set of tools of all
// results scoring above tauS (or the tool of the top result if none does); F1 = results whose
// tool is in X, F2 = the rest. For each unseen tool in X, every API of that tool in the whole
// library joins F1 (the retriever may have missed them), and F1 is reranked again with the
// cross-encoder. The result is F1 (by score) followed by F2 (in its reranked order).
func SingleTool(ctx context.Context, s Scorer, lib *Library, query string, results []Candidate, tauS float32) ([]Candidate, error) {
	if len(results) == 0 {
		return nil, nil
	}
	x := map[int]bool{}
	for _, r := range results {
		if r.Score > tauS {
			x[lib.Group[r.API]] = true
		}
	}
	if len(x) == 0 {
		x[lib.Group[results[0].API]] = true
	}
	var f1, f2 []Candidate
	in := map[int]bool{}
	for _, r := range results {
		if x[lib.Group[r.API]] {
			f1 = append(f1, r)
			in[r.API] = true
		} else {
			f2 = append(f2, r)
		}
	}
	var extra []int
	for tool := range x {
		unseenTool := false
		for _, a := range lib.APIs[tool] {
			if !lib.Seen[a] {
				unseenTool = true
				break
			}
		}
		if !unseenTool {
			continue
		}
		for _, a := range lib.APIs[tool] {
			if !in[a] {
				in[a] = true
				extra = append(extra, a)
			}
		}
	}
	if len(extra) > 0 {
		sort.Ints(extra)
		apis := make([]int, 0, len(f1)+len(extra))
		for _, r := range f1 {
			apis = append(apis, r.API)
		}
		apis = append(apis, extra...)
		var err error
		if f1, err = Rerank(ctx, s, query, apis); err != nil {
			return nil, err
		}
	}
	return append(f1, f2...), nil
}

// MultiTool is Algorithm 2, for queries that need several tools: results form a graph with an
// edge between two results of the same tool or whose retriever similarity exceeds tauM; from
// each connected component at most n results, the best by reranker score, go to F1, the rest
// to F2. The result is F1 followed by F2, each by score (stable). This spreads the top of the
// list over the distinct needs of the query instead of many near-duplicate APIs.
func MultiTool(lib *Library, results []Candidate, sim func(a, b int) float32, tauM float32, n int) []Candidate {
	k := len(results)
	parent := make([]int, k)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			a, b := results[i].API, results[j].API
			if lib.Group[a] == lib.Group[b] || (sim != nil && sim(a, b) > tauM) {
				if ri, rj := find(i), find(j); ri != rj {
					parent[rj] = ri
				}
			}
		}
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return results[order[x]].Score > results[order[y]].Score })
	taken := map[int]int{}
	var f1, f2 []Candidate
	for _, i := range order {
		c := find(i)
		if taken[c] < n {
			taken[c]++
			f1 = append(f1, results[i])
		} else {
			f2 = append(f2, results[i])
		}
	}
	return append(f1, f2...)
}
