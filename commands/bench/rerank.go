package benchcmd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rerank"
)

// rerankBench measures per-query latency, one query at a time as a service would see it, of
// (1) cross-encoder reranking of the retriever's top m and (2) the whole ToolRerank pipeline
// (query embedding and exact top-50, query type, truncation, cross-encoder, Alg. 1/2), on
// each backend. Every query is run once untimed first, so graph compilation (once per padded
// shape) is not counted.
func rerankBench(args []string) error {
	fs := flag.NewFlagSet("bench rerank", flag.ContinueOnError)
	dataDir := fs.String("data", "", "dataset (default: the embedded default dataset)")
	split := fs.String("split", "test", "queries to time")
	retr := fs.String("first-stage", "", "bi-encoder run")
	rer := fs.String("reranker", "", "cross-encoder run")
	cls := fs.String("classifier", "", "query-type classifier run (optional: without it the pipeline uses oracle types)")
	backends := fs.String("backends", "go", "comma-separated backends (go, onnx; onnx needs -tags onnx)")
	m := fs.Int("depth", 50, "reranking depth")
	n := fs.Int("queries", 200, "queries timed")
	ms := fs.Int("m-seen", rerank.DefaultParams.MS, "pipeline m_s")
	mu := fs.Int("m-unseen", rerank.DefaultParams.MU, "pipeline m_u")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.Positive("depth", *m), cli.Positive("queries", *n), cli.Positive("m-seen", *ms), cli.Positive("m-unseen", *mu)); err != nil {
		return err
	}
	if *retr == "" || *rer == "" {
		return fmt.Errorf("bench rerank needs -first-stage RUN and -reranker RUN")
	}
	var d *data.Dataset
	var err error
	if *dataDir == "" {
		d, err = data.Default()
	} else {
		d, err = data.Load(*dataDir)
	}
	if err != nil {
		return err
	}
	s, err := d.Split(*split)
	if err != nil {
		return err
	}
	qs := s.Judged()
	qs = qs[:min(*n, len(qs))]
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	toolTexts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		toolTexts[i] = t.Text
	}
	_, group := d.Groups()
	lib, err := rerank.NewLibrary(group, d.Seen("train"))
	if err != nil {
		return err
	}
	types := classifier.QueryTypes(d, s)
	fmt.Printf("rerank latency per query on %d %s/%s queries (m = %d; pipeline m_s=%d m_u=%d)\n", len(qs), d.Name, *split, *m, *ms, *mu)
	fmt.Printf("%-8s %-26s %9s %9s %9s\n", "backend", "stage", "p50 ms", "p95 ms", "mean ms")
	for _, name := range strings.Split(*backends, ",") {
		be, err := backend.Open(name)
		if err != nil {
			fmt.Printf("%-8s (%v)\n", name, err)
			continue
		}
		emb, err := biencoder.LoadRun(*retr, be)
		if err != nil {
			return err
		}
		emb.Batch = 1
		ret, err := emb.Ranker(d, "text", "")
		if err != nil {
			return err
		}
		ce, err := crossencoder.LoadRun(*rer, be, toolTexts)
		if err != nil {
			return err
		}
		ce.Batch = max(*m, 64)
		var typer *classifier.Model
		if *cls != "" {
			if typer, err = classifier.LoadRun(*cls, be); err != nil {
				return err
			}
		}
		coarse, err := ret.RankTexts(texts, max(*m, 50))
		if err != nil {
			return err
		}
		ctx := context.Background()
		pl := rerank.Pipeline{Lib: lib, Scorer: ce, Sim: func(a, b int) float32 {
			x, y := ret.Tools[a], ret.Tools[b]
			s := float32(0)
			for k := range x {
				s += x[k] * y[k]
			}
			return s
		}, Params: rerank.Params{MS: *ms, MU: *mu, TauS: rerank.DefaultParams.TauS, TauM: rerank.DefaultParams.TauM, N: rerank.DefaultParams.N}}
		stages := []struct {
			name string
			run  func(i int) error
		}{
			{fmt.Sprintf("cross-encoder top-%d", *m), func(i int) error {
				_, err := rerank.Rerank(ctx, ce, texts[i], coarse[i].Tools[:min(*m, len(coarse[i].Tools))])
				return err
			}},
			{"ToolRerank pipeline", func(i int) error {
				rk, err := ret.RankTexts(texts[i:i+1], 50)
				if err != nil {
					return err
				}
				multi := types[qs[i]]
				if typer != nil {
					p, err := typer.PMulti(texts[i : i+1])
					if err != nil {
						return err
					}
					multi = p[0] > 0.5
				}
				_, err = pl.Run(ctx, texts[i], rk[0].Tools, multi)
				return err
			}},
		}
		for _, st := range stages {
			for i := range qs { // warm-up: compiles every padded shape
				if err := st.run(i); err != nil {
					return err
				}
			}
			lat := make([]float64, len(qs))
			for i := range qs {
				start := time.Now()
				if err := st.run(i); err != nil {
					return err
				}
				lat[i] = float64(time.Since(start).Microseconds()) / 1000
			}
			p50, p95, mean := percentiles(lat)
			fmt.Printf("%-8s %-26s %9.1f %9.1f %9.1f\n", name, st.name, p50, p95, mean)
		}
	}
	if *cls == "" {
		fmt.Fprintln(os.Stderr, "(no -classifier: the pipeline used oracle query types)")
	}
	return nil
}

// percentiles returns the median, 95th percentile (nearest rank) and mean of x.
func percentiles(x []float64) (p50, p95, mean float64) {
	if len(x) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	for _, v := range s {
		mean += v
	}
	return rank(0.5), rank(0.95), mean / float64(len(s))
}
