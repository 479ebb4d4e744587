package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// mineCmd ranks every training query with a trained retriever and keeps, per query, the tools
// at ranks [skip, skip+k) that are not relevant: hard negatives for the next training round.
func mineCmd(args []string) error {
	fs := flag.NewFlagSet("train mine", flag.ContinueOnError)
	cli.Data(fs)
	run := cli.Run(fs, "trained bi-encoder run (or checkpoint) directory")
	split := fs.String("split", "train", "split whose queries get negatives")
	perQuery := fs.Int("per-query", 20, "negatives kept per query")
	skip := fs.Int("skip", 0, "ignore the top-ranked non-relevant tools (possible unlabelled positives)")
	out := fs.String("out", "", "output file (default RUN/negatives-<split>.jsonl)")
	be := cli.Backend(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *run == "" {
		return fmt.Errorf("mine: -run is required")
	}
	if err := cli.First(cli.Positive("per-query", *perQuery), cli.NonNegative("skip", *skip)); err != nil {
		return err
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	// A run's run.json, when it has one (a checkpoint directory has none), must be readable
	// and name this data.
	if m, err := rundir.Read(*run); err == nil {
		if err := m.CheckData(d); err != nil {
			return fmt.Errorf("mine %s: %w", *run, err)
		}
	} else if !errors.Is(err, rundir.ErrNoMeta) {
		return fmt.Errorf("mine: %w", err)
	}
	s, err := d.Split(*split)
	if err != nil {
		return err
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	emb, err := biencoder.LoadRun(*run, bk)
	if err != nil {
		return err
	}
	r, err := emb.Retriever(d, "text", "")
	if err != nil {
		return err
	}
	qs := s.Judged()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	depth := *skip + *perQuery
	for _, q := range qs {
		depth = max(depth, *skip+*perQuery+len(s.Relevant[q]))
	}
	depth = min(depth, len(d.Tools))
	rankings, err := r.RankTexts(texts, depth)
	if err != nil {
		return err
	}
	negs := map[int][]int{}
	for i, q := range qs {
		rel := map[int]bool{}
		for _, t := range s.Relevant[q] {
			rel[t] = true
		}
		rank := 0
		for _, t := range rankings[i].Tools {
			if rel[t] {
				continue
			}
			if rank >= *skip && len(negs[q]) < *perQuery {
				negs[q] = append(negs[q], t)
			}
			rank++
		}
	}
	if *out == "" {
		*out = filepath.Join(*run, "negatives-"+*split+".jsonl")
	}
	if err := biencoder.WriteNegatives(*out, d, negs, qs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mined up to %d negatives for each of %d queries -> %s\n", *perQuery, len(qs), *out)
	return nil
}
