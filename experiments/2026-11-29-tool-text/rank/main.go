// Command rank embeds a tool library's texts under each template given ("" is
// library.DefaultTemplate) with all-MiniLM-L6-v2 and prints the rank of issue 55's example
// tools for its two queries (docs/results/2026-11-29-tool-text.md):
//
//	go run -tags onnx ./experiments/2026-11-29-tool-text/rank LIB.jsonl TEMPLATE...   (BACKEND=onnx: the backend)
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/models/biencoder"
)

func main() {
	l, err := library.Read(os.Args[1])
	check(err)
	be, err := backend.Open(os.Getenv("BACKEND"))
	check(err)
	m, err := export.Open(context.Background(), "sentence-transformers/all-MiniLM-L6-v2", be)
	check(err)
	queries := []string{"list repository issues on GitHub", "remember that Ada works at Acme"}
	qe, err := m.Embed(biencoder.QueryTower, queries)
	check(err)
	for _, tmpl := range os.Args[2:] {
		l.Template = tmpl
		texts, err := l.Texts()
		check(err)
		emb, err := m.Embed(biencoder.ToolTower, texts)
		check(err)
		fmt.Printf("template %q\n", tmpl)
		for qi, q := range queries {
			type sc struct {
				i int
				s float32
			}
			s := make([]sc, len(emb))
			for i, e := range emb {
				var d float32
				for j := range e {
					d += e[j] * qe[qi][j]
				}
				s[i] = sc{i, d}
			}
			sort.SliceStable(s, func(a, b int) bool { return s[a].s > s[b].s })
			rank := map[string]int{}
			for r, x := range s {
				rank[l.Tools[x.i].ID()] = r + 1
			}
			fmt.Printf("  %q: top3 %s, %s, %s | issues/list-for-repo %d | create_entities %d | add_observations %d\n", q,
				l.Tools[s[0].i].ID(), l.Tools[s[1].i].ID(), l.Tools[s[2].i].ID(),
				rank["github.issues/list-for-repo"], rank["memory.create_entities"], rank["memory.add_observations"])
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
