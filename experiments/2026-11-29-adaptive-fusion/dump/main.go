// Command dump writes, for every dev query of a multi-source run, the top 100 tools of its
// own library by a model's dense score and by BM25, with their scores: the input of
// analyse.py (README.md).
//
//	go run -tags onnx ./experiments/2026-11-29-adaptive-fusion/dump -data toollens:1,toolmix:1 \
//	  -run runs/general-ms/ft -model runs/general-ms/model -index /tmp/adapt/idx -out /tmp/adapt/scores.tsv
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

func main() {
	spec := flag.String("data", "toollens:1,toolmix:1", "the run's -data")
	run := flag.String("run", "", "the trained run whose dev split is dumped")
	model := flag.String("model", "", "the model directory whose dense scores are dumped (its recipe is not applied)")
	idxDir := flag.String("index", "", "where its index of every library's tools is written (reused when present)")
	out := flag.String("out", "", "output TSV: kind (D dense, B bm25), query id, tool id, score, library")
	qrels := flag.String("qrels", "", "output TSV of the dev judgements: query id, tool id, library, its number of tools, the query's number of words")
	be := flag.String("backend", "onnx", "compute backend")
	depth := flag.Int("depth", 100, "tools kept per query and side")
	flag.Parse()
	if err := dump(*spec, *run, *model, *idxDir, *out, *qrels, *be, *depth); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

func dump(spec, run, model, idxDir, out, qrelsOut, beName string, depth int) error {
	d, err := data.OpenSources(spec)
	if err != nil {
		return err
	}
	m, err := rundir.Read(run)
	if err != nil {
		return err
	}
	_, dev, err := m.Split.Apply(d)
	if err != nil {
		return err
	}
	be, err := backend.Open(backend.Name(beName))
	if err != nil {
		return err
	}
	if _, err := os.Stat(idxDir); err != nil {
		em, err := export.Open(context.Background(), model, be)
		if err != nil {
			return err
		}
		if _, err := export.Export(em, export.Options{Format: export.FormatIndex, Out: idxDir, Data: d, NoRecipe: true}); err != nil {
			return err
		}
	}
	idx, err := toolindex.Load(idxDir, toolindex.WithBackend(be), toolindex.WithoutRecipe())
	if err != nil {
		return err
	}
	libTools := make([][]int, len(d.Libraries))
	for t := range d.Tools {
		l := d.LibraryOf(t)
		libTools[l] = append(libTools[l], t)
	}
	bms := make([]*bm25.Index, len(d.Libraries))
	for l, ts := range libTools {
		docs := make([]string, len(ts))
		for i, t := range ts {
			docs[i] = d.Tools[t].Text
		}
		bms[l] = bm25.New(docs, bm25.DefaultParams)
	}
	q, err := os.Create(qrelsOut)
	if err != nil {
		return err
	}
	defer q.Close()
	qw := bufio.NewWriter(q)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	pos := map[string]int{}
	for i, t := range d.Tools {
		pos[t.ID] = i
	}
	qs := dev.Queries
	const batch = 64
	for s := 0; s < len(qs); s += batch {
		e := min(s+batch, len(qs))
		texts := make([]string, e-s)
		for i, qi := range qs[s:e] {
			texts[i] = d.Queries[qi].Text
		}
		res, err := idx.RetrieveBatch(context.Background(), texts, len(d.Tools))
		if err != nil {
			return err
		}
		for i, rs := range res {
			qi := qs[s+i]
			lib := d.QueryLibrary(dev, qi)
			name := d.Libraries[lib].Name
			qid := d.Queries[qi].ID
			for _, t := range dev.Relevant[qi] {
				fmt.Fprintf(qw, "%s\t%s\t%s\t%d\t%d\n", qid, d.Tools[t].ID, name, len(libTools[lib]), len(strings.Fields(d.Queries[qi].Text)))
			}
			n := 0
			for _, r := range rs {
				if d.LibraryOf(pos[r.ToolID]) != lib {
					continue
				}
				fmt.Fprintf(w, "D\t%s\t%s\t%g\n", qid, r.ToolID, r.Score)
				if n++; n == depth {
					break
				}
			}
			sc := bms[lib].Scores(d.Queries[qi].Text)
			order := make([]int, len(sc))
			for j := range order {
				order[j] = j
			}
			sort.SliceStable(order, func(a, b int) bool { return sc[order[a]] > sc[order[b]] })
			for _, j := range order[:min(depth, len(order))] {
				fmt.Fprintf(w, "B\t%s\t%s\t%g\n", qid, d.Tools[libTools[lib][j]].ID, sc[j])
			}
		}
		fmt.Fprintf(os.Stderr, "\rdump: %d/%d queries", e, len(qs))
	}
	fmt.Fprintln(os.Stderr)
	if err := qw.Flush(); err != nil {
		return err
	}
	return w.Flush()
}
