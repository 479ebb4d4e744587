// Command bfcl prints all-MiniLM-L6-v2's R@1 and R@5 on BFCL's test split
// (../shared/datasets/bfcl) with each tool's text made from its function (functions.json,
// imported as a library) under each template given ("" is library.DefaultTemplate), or the
// corpus's own text ("corpus") (docs/results/2026-11-29-tool-text.md):
//
//	go run -tags onnx ./experiments/2026-11-29-tool-text/bfcl corpus '' TEMPLATE...   (BACKEND=onnx: the backend)
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
	"github.com/toolret/toolret/models/biencoder"
)

const dir = "../shared/datasets/bfcl"

func main() {
	d, err := data.Load(dir)
	check(err)
	tools, _, err := importer.Functions(dir+"/functions.json", "")
	check(err)
	byID := map[string]library.Tool{}
	for _, t := range tools {
		byID[t.ID()] = t
	}
	be, err := backend.Open(os.Getenv("BACKEND"))
	check(err)
	m, err := export.Open(context.Background(), "sentence-transformers/all-MiniLM-L6-v2", be)
	check(err)
	sp, err := d.Split("test")
	check(err)
	qs := make([]string, len(sp.Queries))
	for i, q := range sp.Queries {
		qs[i] = d.Queries[q].Text
	}
	qe, err := m.Embed(biencoder.QueryTower, qs)
	check(err)
	for _, tmpl := range os.Args[1:] {
		texts := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			if tmpl == "corpus" {
				texts[i] = t.Text
				continue
			}
			lt, ok := byID[t.ID]
			if !ok {
				check(fmt.Errorf("no function %s", t.ID))
			}
			texts[i], err = library.Text(lt, tmpl)
			check(err)
		}
		emb, err := m.Embed(biencoder.ToolTower, texts)
		check(err)
		var r5, r1 float64
		for qi, q := range sp.Queries {
			idx := make([]int, len(emb))
			s := make([]float32, len(emb))
			for i, e := range emb {
				idx[i] = i
				for j := range e {
					s[i] += e[j] * qe[qi][j]
				}
			}
			sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
			rel := map[int]bool{}
			for _, t := range sp.Relevant[q] {
				rel[t] = true
			}
			hit := 0
			for _, t := range idx[:5] {
				if rel[t] {
					hit++
				}
			}
			r5 += float64(hit) / float64(len(rel))
			if rel[idx[0]] {
				r1 += 1 / float64(len(rel))
			}
		}
		n := float64(len(sp.Queries))
		fmt.Printf("%q: %d queries, R@1 %.2f R@5 %.2f\n", tmpl, len(sp.Queries), 100*r1/n, 100*r5/n)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
