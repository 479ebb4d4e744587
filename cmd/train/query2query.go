package traincmd

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
)

// queryTriplets returns the query2query neighbours of the training queries: read back from
// the run on -resume (the run trains on the triplets it started with), else mined and written
// into the run (biencoder.TripletsFile). Neighbours are nearest by the -retriever run's query
// embeddings (its query tower; cosine or dot as it was trained), or without one by BM25 over
// the training query texts, so that the objective needs no first model.
func queryTriplets(runDir string, resume bool, d *data.Dataset, tr *data.Split, retriever string, bk compute.Backend, pos, neg int) ([]biencoder.Neighbours, error) {
	p := filepath.Join(runDir, biencoder.TripletsFile)
	if resume {
		ns, err := biencoder.ReadTriplets(p, d)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		return ns, nil
	}
	start := time.Now()
	qs := tr.Judged()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	score, by := biencoder.BM25Scorer(texts), "BM25 over the training queries"
	if retriever != "" {
		emb, err := biencoder.LoadRun(retriever, bk)
		if err != nil {
			return nil, err
		}
		qe, err := emb.Embed(biencoder.QueryTower, texts)
		if err != nil {
			return nil, err
		}
		score, by = biencoder.EmbeddingScorer(qe), "the query embeddings of "+retriever
	}
	ns, skipped, err := biencoder.MineTriplets(tr, score, pos, neg)
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("query2query: no training query shares a tool with another (%d queries): no triplet", len(qs))
	}
	if err := biencoder.WriteTriplets(p, d, ns); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "query2query: mined up to %d positives and %d negatives for %d of %d training queries by %s in %.0fs (%d without a query sharing a tool, or without one sharing none, left out) -> %s\n",
		pos, neg, len(ns), len(qs), by, time.Since(start).Seconds(), skipped, p)
	return ns, nil
}
