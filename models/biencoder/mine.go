package biencoder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
)

// MineConfig is the recipe of `train mine`: hard negatives for the next training round, the
// tools a trained bi-encoder ranks high for a query that are not relevant to it. Every flag
// of the command is a field, named in its comment; DefaultMineConfig holds the defaults.
type MineConfig struct {
	Run      string // -run: the trained bi-encoder run (or checkpoint) directory (required)
	Split    string // -split: the split whose judged queries get negatives (default train)
	PerQuery int    // -per-query: negatives kept per query (default 20)
	Skip     int    // -skip: top-ranked non-relevant tools ignored, possible unlabelled positives (default 0)
	Out      string // -out: the output file ("": RUN/negatives-<split>.jsonl)
	Backend  string // -backend ("": the default)
	// Data is the dataset (nil: the embedded default dataset); a run's run.json, when it has
	// one, must name it.
	Data *data.Dataset
	// Stderr receives the summary line (nil: os.Stderr).
	Stderr io.Writer
}

// DefaultMineConfig returns the command's defaults.
func DefaultMineConfig() MineConfig { return MineConfig{Split: "train", PerQuery: 20} }

// Validate checks c.
func (c *MineConfig) Validate() error {
	if c.Run == "" {
		return fmt.Errorf("mine: -run is required")
	}
	return check.First(check.Positive("per-query", c.PerQuery), check.NonNegative("skip", c.Skip))
}

// MineResult is what Mine did: the file written and the negatives of each query, by query
// index, in Queries' order.
type MineResult struct {
	Out       string
	Queries   []int
	Negatives map[int][]int
}

// Mine ranks every judged query of cfg.Split with the run's text vectors and keeps, per
// query, the tools at ranks [Skip, Skip+PerQuery) of its non-relevant ones (HardNegatives),
// written to cfg.Out (WriteNegatives, read back by ReadNegatives).
func Mine(ctx context.Context, cfg MineConfig) (*MineResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.Data
	if d == nil {
		var err error
		if d, err = data.Default(); err != nil {
			return nil, err
		}
	}
	// A run's run.json, when it has one (a checkpoint directory has none), must be readable
	// and name this data.
	if m, err := rundir.Read(cfg.Run); err == nil {
		if err := m.CheckData(d); err != nil {
			return nil, fmt.Errorf("mine %s: %w", cfg.Run, err)
		}
	} else if !errors.Is(err, rundir.ErrNoMeta) {
		return nil, fmt.Errorf("mine: %w", err)
	}
	s, err := d.Split(cfg.Split)
	if err != nil {
		return nil, err
	}
	bk, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return nil, err
	}
	emb, err := LoadRun(cfg.Run, bk)
	if err != nil {
		return nil, err
	}
	r, err := emb.Ranker(d, "text", "")
	if err != nil {
		return nil, err
	}
	qs := s.Judged()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	depth := cfg.Skip + cfg.PerQuery
	for _, q := range qs {
		depth = max(depth, cfg.Skip+cfg.PerQuery+len(s.Relevant[q]))
	}
	depth = min(depth, len(d.Tools))
	rankings, err := r.RankTexts(texts, depth)
	if err != nil {
		return nil, err
	}
	negs := HardNegatives(rankings, qs, s.Relevant, cfg.PerQuery, cfg.Skip)
	out := cfg.Out
	if out == "" {
		out = filepath.Join(cfg.Run, "negatives-"+cfg.Split+".jsonl")
	}
	if err := WriteNegatives(out, d, negs, qs); err != nil {
		return nil, err
	}
	var log io.Writer = os.Stderr
	if cfg.Stderr != nil {
		log = cfg.Stderr
	}
	fmt.Fprintf(log, "mined up to %d negatives for each of %d queries -> %s\n", cfg.PerQuery, len(qs), out)
	return &MineResult{Out: out, Queries: qs, Negatives: negs}, nil
}

// HardNegatives returns, for each query qs[i] ranked rankings[i], the tools at ranks
// [skip, skip+perQuery) among its tools not in relevant[qs[i]], best first. A query with none
// has no entry.
func HardNegatives(rankings []rank.Ranking, qs []int, relevant map[int][]int, perQuery, skip int) map[int][]int {
	negs := map[int][]int{}
	for i, q := range qs {
		rel := map[int]bool{}
		for _, t := range relevant[q] {
			rel[t] = true
		}
		rank := 0
		for _, t := range rankings[i].Tools {
			if rel[t] {
				continue
			}
			if rank >= skip && len(negs[q]) < perQuery {
				negs[q] = append(negs[q], t)
			}
			rank++
		}
	}
	return negs
}
