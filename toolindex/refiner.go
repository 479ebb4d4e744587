package toolindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
)

// libraryVersionKey is export.IndexVersionKey: the tools.safetensors
// metadata key a compaction of live updates (or cmd/export -update) writes.
const libraryVersionKey = export.IndexVersionKey

// WithRefiner re-orders the top N of the first stage's results (N, the refiner's slot count)
// with the ToolRefiner in dir: a refiner packaged with an index (its refiner/ directory,
// cmd/export -format index -refiner RUN), or a refiner run or checkpoint (train refiner). The
// refiner must re-order the candidates of the index's own first stage: on a bi-encoder's index,
// by the vectors the index scores with (a refiner over -candidates bi-encoder needs text
// vectors, one over usage needs usage vectors; without WithToolVectors, Load picks the
// refiner's); on an MLC classifier's index, a refiner over -candidates mlc of that classifier.
// Other pairings, and bm25 candidates, are refused. Its tools must be the index's tools as
// exported (a run's are the tools of the data it was trained on: the index must be that
// data's, unchanged since export; a packaged refiner lists its tool ids).
//
// An index exported with a refiner serves it without this option; WithoutRefiner turns it
// off.
func WithRefiner(dir string) Option { return func(o *options) { o.refinerDir = dir } }

// WithoutRefiner serves the first stage alone, even when the index has a refiner.
func WithoutRefiner() Option { return func(o *options) { o.noRefiner = true } }

// refinerStage is a loaded refiner and the row of its tool table of each tool id.
type refinerStage struct {
	m    *refiner.Model
	dir  string
	kind string // its candidate source: "bi-encoder", "usage" or "mlc"
	rows map[string]int
}

// refinerVectors maps a refiner's candidate source to the tool vectors the index must score
// with (an MLC index's are its head's rows, reported as text).
var refinerVectors = map[string]string{"bi-encoder": biencoder.VectorsText, "usage": biencoder.VectorsUsage, "mlc": biencoder.VectorsText}

// loadRefiner loads the refiner of o (WithRefiner) or the one packaged with the index in dir,
// or returns nil. tools are the index's tools as loaded.
func loadRefiner(dir string, man *export.Manifest, meta map[string]string, tools []export.ToolRecord, o options, be compute.Backend) (*refinerStage, error) {
	rdir := o.refinerDir
	packaged := false
	switch {
	case o.noRefiner:
		return nil, nil
	case rdir == "" && man.Refiner == nil:
		return nil, nil
	case rdir == "":
		p, err := man.RefinerDir(dir)
		if err != nil {
			return nil, fmt.Errorf("retriever: %w", err)
		}
		rdir, packaged = p, true
	}
	m, err := refiner.LoadRun(rdir, be)
	if err != nil {
		return nil, fmt.Errorf("retriever: refiner: %w", err)
	}
	kind := m.Cfg.Candidates.Kind
	if err := export.RefinerFits(kind, man.Stage()); err != nil {
		return nil, fmt.Errorf("retriever: refiner %s re-orders %s candidates (first stage %s), index %s was exported from %s: %w", rdir, kind, m.Cfg.Candidates, dir, man.Source, err)
	}
	if same, known := export.SameRun(m.Cfg.Candidates.Run, man.Source); known && !same {
		return nil, fmt.Errorf("retriever: refiner %s re-orders the candidates of %s, index %s was exported from %s", rdir, m.Cfg.Candidates.Run, dir, man.Source)
	}
	ids, err := export.ReadRefinerToolIDs(rdir)
	switch {
	case err == nil:
		if len(ids) != m.Cfg.Tools {
			return nil, fmt.Errorf("retriever: refiner %s: %s lists %d tools, its table has %d", rdir, export.RefinerToolIDs, len(ids), m.Cfg.Tools)
		}
		if packaged && (man.Refiner.Tools != len(ids) || man.Refiner.ToolsSHA256 != export.ToolIDsDigest(ids)) {
			return nil, fmt.Errorf("retriever: index %s: %s does not match the manifest's refiner entry", dir, filepath.Join(rdir, export.RefinerToolIDs))
		}
	case errors.Is(err, fs.ErrNotExist):
		// A run: its table is in the order of its training data's tools.
		rm, err := rundir.Read(rundir.RunOf(rdir))
		if err != nil {
			return nil, fmt.Errorf("retriever: refiner: %w", err)
		}
		if rm.Fingerprint == "" || rm.Fingerprint != man.DataFingerprint {
			return nil, fmt.Errorf("retriever: refiner %s was trained on other data (fingerprint %.12s) than index %s holds (%.12s): its tools are not the index's", rdir, rm.Fingerprint, dir, man.DataFingerprint)
		}
		ids = make([]string, len(tools))
		for i, t := range tools {
			ids[i] = t.ID
		}
	default:
		return nil, fmt.Errorf("retriever: refiner: %w", err)
	}
	if !packaged {
		// The index must hold the tools the refiner knows, as exported.
		if _, ok := meta[libraryVersionKey]; ok {
			return nil, fmt.Errorf("retriever: index %s was updated since export (library version %s): its tools may not be refiner %s's; package the refiner with the index (cmd/export -format index -refiner RUN)", dir, meta[libraryVersionKey], rdir)
		}
		if err := sameTools(ids, tools); err != nil {
			return nil, fmt.Errorf("retriever: refiner %s and index %s: %w", rdir, dir, err)
		}
	}
	rows := make(map[string]int, len(ids))
	for i, id := range ids {
		rows[id] = i
	}
	return &refinerStage{m: m, dir: rdir, kind: kind, rows: rows}, nil
}

// sameTools reports an error naming a difference when the refiner's tool ids and the index's
// tools are not the same set.
func sameTools(ids []string, tools []export.ToolRecord) error {
	in := make(map[string]bool, len(tools))
	for _, t := range tools {
		in[t.ID] = true
	}
	missing := 0
	first := ""
	for _, id := range ids {
		if !in[id] {
			if missing == 0 {
				first = id
			}
			missing++
		}
	}
	if missing > 0 || len(ids) != len(tools) {
		return fmt.Errorf("other tools: %d of the refiner's %d tools are not in the index (e.g. %q), which has %d", missing, len(ids), first, len(tools))
	}
	return nil
}

// depth is how many first-stage results the refiner needs for k results: its N slots.
func (s *refinerStage) depth(k int) int { return max(k, s.m.Cfg.N) }

// deepen returns the top of the first stage's scores over lib, top or deeper, so that it
// holds N tools the refiner knows (or every tool): tools added since export (no row in its
// table) may rank among them.
func (s *refinerStage) deepen(lib *Library, scores []float32, top rank.Ranking) rank.Ranking {
	for m := len(top.Tools); m < lib.Len(); {
		known := 0
		for _, t := range top.Tools {
			if _, ok := s.rows[lib.tools[t].ID]; ok {
				known++
			}
		}
		if known >= s.m.Cfg.N {
			break
		}
		m = min(2*m+s.m.Cfg.N-known, lib.Len())
		top = rank.TopK(scores, m)
	}
	return top
}

// refine re-orders each query's first-stage results res[i] (best first) as refiner.Refine
// does: the first N results whose tools the refiner knows, by its score (ties in first-stage
// order), then the rest in first-stage order. Tools it does not know (added to the library
// after export: no Tool2Vec vector) are in the rest, at their first-stage positions among it
// (deepen made the list long enough to hold N known tools).
// Score becomes the refiner's logit (mixed with the first stage's score by the refiner's
// first-stage weight) for refined results, and lower, decreasing values for the rest;
// RetrievalScore is kept. The first stage's score of query i's result is prob(i,
// RetrievalScore) (an MLC's probability, as the refiner's candidates had), or RetrievalScore
// when prob is nil.
func (s *refinerStage) refine(ctx context.Context, queries []string, res [][]Result, prob func(i int, x float32) float32) error {
	n := s.m.Cfg.N
	lists := make([][]int, len(res)) // refiner rows
	order := make([][]int, len(res)) // positions in res[i]: the refined candidates, then the rest
	for i, rs := range res {
		var rest []int
		for j, x := range rs {
			if row, ok := s.rows[x.ToolID]; ok && len(lists[i]) < n {
				lists[i] = append(lists[i], row)
				order[i] = append(order[i], j)
				continue
			}
			rest = append(rest, j)
		}
		order[i] = append(order[i], rest...)
	}
	sc, err := s.m.Scores(ctx, queries, lists)
	if err != nil {
		return fmt.Errorf("retriever: refiner: %w", err)
	}
	for i, rs := range res {
		first := rank.Ranking{Tools: order[i], Scores: make([]float32, len(order[i]))}
		for j, p := range order[i] {
			first.Scores[j] = rs[p].RetrievalScore
			if prob != nil {
				first.Scores[j] = prob(i, first.Scores[j])
			}
		}
		r := refiner.Refine(first, sc[i], s.m.Cfg.FirstStageWeight, 0)
		out := make([]Result, len(rs))
		for j, p := range r.Tools {
			out[j] = rs[p]
			out[j].Score = r.Scores[j]
		}
		res[i] = out
	}
	return nil
}

// Refiner describes the refiner stage: its directory, its candidate source and slot count N;
// "" and 0 without one.
func (r *Index) Refiner() (dir, candidates string, n int) {
	if r.ref == nil {
		return "", "", 0
	}
	return r.ref.dir, r.ref.kind, r.ref.m.Cfg.N
}
