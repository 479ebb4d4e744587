package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/biencoder"
)

// mineCmd ranks every training query with a trained retriever and keeps, per query, the tools
// at ranks [skip, skip+k) that are not relevant: hard negatives for the next training round.
func mineCmd(args []string) error {
	fs := flag.NewFlagSet("mine", flag.ContinueOnError)
	dataDir := fs.String("data", "", "dataset directory (default: embedded)")
	run := fs.String("run", "", "trained bi-encoder run (or checkpoint) directory")
	split := fs.String("split", "train", "split whose queries get negatives")
	k := fs.Int("k", 20, "negatives kept per query")
	skip := fs.Int("skip", 0, "ignore the top-ranked non-relevant tools (possible unlabelled positives)")
	out := fs.String("out", "", "output file (default RUN/negatives-<split>.jsonl)")
	be := fs.String("backend", "", "compute backend")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *run == "" {
		return fmt.Errorf("mine: -run is required")
	}
	d, err := loadData(*dataDir)
	if err != nil {
		return err
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
	depth := *skip + *k + 4
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
			if rank >= *skip && len(negs[q]) < *k {
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
	fmt.Fprintf(os.Stderr, "mined %d negatives for %d queries -> %s\n", *k, len(qs), *out)
	return nil
}
