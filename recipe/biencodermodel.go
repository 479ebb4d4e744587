package recipe

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// checkArch validates TrainModel.Arch ("": auto).
func checkArch(arch string) error {
	if arch == "" {
		return nil
	}
	return encoder.CheckArch(arch)
}

// newModel builds the model configuration and tokenizer of a new run, and its initial
// encoder weights in store when they come from cfg.Parent.Init: a bi-encoder run (its shared
// encoder, tokenizer, pooling and similarity), HF weights, else an encoder of Model's sizes
// from scratch whose tokenizer is Model.Vocab or built from the tools' and tr's query texts.
// It resolves the auto Model fields in cfg.
func newModel(cfg *biencoder.TrainConfig, d *data.Dataset, tr *data.Split, bk compute.Backend, store *model.Store, log io.Writer) (*biencoder.Config, *tokenize.Tokenizer, error) {
	m, init := &cfg.Model, cfg.Parent.Init
	var (
		bc  encoder.Config
		tok *tokenize.Tokenizer
		err error
	)
	switch {
	case init != "" && biencoder.IsRun(init):
		if bc, tok, err = initFromRun(cfg, bk, store, log); err != nil {
			return nil, nil, err
		}
		if err := encoder.CheckArchOf(m.Arch, bc, init); err != nil {
			return nil, nil, err
		}
	case init != "":
		bases := []string{""}
		if m.SeparateTowers { // each tower starts from the checkpoint's weights
			bases = []string{"/" + biencoder.QueryTower, "/" + biencoder.ToolTower}
		}
		for _, b := range bases {
			if bc, err = encoder.LoadHF(encoder.In(store.RootScope(), b), init); err != nil {
				return nil, nil, err
			}
		}
		if err := encoder.CheckArchOf(m.Arch, bc, init); err != nil {
			return nil, nil, err
		}
		if tok, err = tokenize.Load(init); err != nil {
			return nil, nil, err
		}
	default:
		if m.Vocab != "" {
			tok, err = tokenize.FromVocab(m.Vocab, true)
		} else {
			var texts []string
			for _, t := range d.Tools {
				texts = append(texts, t.Text)
			}
			for _, q := range tr.Queries {
				texts = append(texts, d.Queries[q].Text)
			}
			var vocab []string
			if vocab, err = tokenize.BuildVocab(texts, m.VocabSize, 2, true); err == nil {
				tok, err = tokenize.New(vocab, true)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		arch := m.Arch
		if arch == "" {
			arch = encoder.DefaultArch
		}
		bc, err = encoder.NewArch(arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads,
			Intermediate: m.Intermediate, MaxPositions: max(m.QueryLen, m.ToolLen)}, false) // intermediate 0: 4*hidden
		if err != nil {
			return nil, nil, err
		}
		if ii, ok := bc.(encoder.IDFInit); ok { // word weights start at the tools' idf
			df := make([]int, tok.VocabSize())
			for _, t := range d.Tools {
				seen := map[int32]bool{}
				for _, id := range tok.Single(t.Text, m.ToolLen) {
					if !seen[id] {
						seen[id] = true
						df[id]++
					}
				}
			}
			bc = ii.WithIDF(df, len(d.Tools))
		}
	}
	if m.Arch == "" {
		m.Arch = encoder.DefaultArch
	}
	if m.Pooling == "" {
		m.Pooling = string(encoder.PoolMean)
	}
	if m.Similarity == "" {
		m.Similarity = "cosine"
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return &biencoder.Config{Encoder: bc, Pooling: encoder.Pooling(m.Pooling), Shared: !m.SeparateTowers, QueryMaxLen: m.QueryLen, ToolMaxLen: m.ToolLen,
		Similarity: m.Similarity, Temperature: m.Temperature, Symmetric: m.Symmetric, NoMasking: m.NoFNMask,
		QueryPrompt: deref(m.QueryPrompt), ToolPrompt: deref(m.ToolPrompt)}, tok, nil
}

// initFromRun warm-starts a bi-encoder from the trained bi-encoder run Parent.Init: its
// shared encoder (into both towers with SeparateTowers) and tokenizer (as WarmStart loads
// them, positions extended to the longer of QueryLen and ToolLen), its pooling and
// similarity (Model.Pooling and Similarity, when given, must agree).
func initFromRun(cfg *biencoder.TrainConfig, bk compute.Backend, store *model.Store, log io.Writer) (encoder.Config, *tokenize.Tokenizer, error) {
	m, path := &cfg.Model, cfg.Parent.Init
	_, cb, _, err := rundir.LoadCheckpoint(path, biencoder.ConfigFile)
	if err != nil {
		return nil, nil, fmt.Errorf("-init: %w", err)
	}
	rc, err := biencoder.Unmarshal(cb)
	if err != nil {
		return nil, nil, fmt.Errorf("-init %s: %w", path, err)
	}
	switch {
	case !rc.Shared:
		return nil, nil, fmt.Errorf("-init %s: a bi-encoder with separate towers; export its query tower with export -format hf and give that directory", path)
	case rc.Pooling == encoder.PoolPooler:
		return nil, nil, fmt.Errorf("-init %s: pooling %s is not carried over from a run; export it with export -format hf and give that directory", path, rc.Pooling)
	case rc.Objective == biencoder.ObjectiveQuery2Query:
		return nil, nil, fmt.Errorf("-init %s: a %s run", path, rc.Objective)
	case m.Pooling != "" && m.Pooling != string(rc.Pooling):
		return nil, nil, fmt.Errorf("-pooling %s: -init %s pools with %s", m.Pooling, path, rc.Pooling)
	case m.Similarity != "" && m.Similarity != rc.Similarity:
		return nil, nil, fmt.Errorf("-similarity %s: -init %s scores by %s", m.Similarity, path, rc.Similarity)
	}
	m.Pooling, m.Similarity = string(rc.Pooling), rc.Similarity
	if m.QueryPrompt == nil {
		m.QueryPrompt = &rc.QueryPrompt
	}
	if m.ToolPrompt == nil {
		m.ToolPrompt = &rc.ToolPrompt
	}
	// One shared tower at the root, or each of the separate towers from the run's encoder.
	var bases []string
	if m.SeparateTowers {
		bases = []string{"/" + biencoder.QueryTower, "/" + biencoder.ToolTower}
	}
	return biencoder.WarmStart(path, bk, store, max(m.QueryLen, m.ToolLen), cfg.Training.Seed, log, bases...)
}

// queryTriplets returns the query2query neighbours of the training queries: read back from
// the run on resume (the run trains on the triplets it started with), else mined and written
// into the run (TripletsFile). Neighbours are nearest by the retriever run's query embeddings
// (its query tower; cosine or dot as it was trained), or without one by BM25 over the
// training query texts, so that the objective needs no first model.
func queryTriplets(runDir string, resume bool, d *data.Dataset, tr *data.Split, retriever string, bk compute.Backend, pos, neg int, log io.Writer) ([]biencoder.Neighbours, error) {
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
	fmt.Fprintf(log, "query2query: mined up to %d positives and %d negatives for %d of %d training queries by %s in %.0fs (%d without a query sharing a tool, or without one sharing none, left out) -> %s\n",
		pos, neg, len(ns), len(qs), by, time.Since(start).Seconds(), skipped, p)
	return ns, nil
}
