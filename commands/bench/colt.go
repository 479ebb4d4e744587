package benchcmd

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/train"
)

// coltBench times one epoch of COLT's graph stage on a dataset (default ToolLens) and on a
// synthetic dataset `-scale` times larger (queries, tools, scenes and edges), with random
// stage-1 embeddings of -dim dimensions: the epoch is the same computation whatever the
// embedding values.
func coltBench(args []string) error {
	fs := flag.NewFlagSet("bench colt", flag.ContinueOnError)
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset")
	scale := fs.Int("scale", 10, "size of the synthetic copy relative to the dataset")
	dim := fs.Int("dim", 192, "embedding size")
	batch := fs.Int("batch", 2048, "queries per batch")
	be := fs.String("backend", "go", "backend")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.Positive("scale", *scale), cli.Positive("dim", *dim), cli.Positive("batch", *batch)); err != nil {
		return err
	}
	d, err := data.Load(*dataDir)
	if err != nil {
		return err
	}
	bk, err := backend.Open(*be)
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %9s %9s %9s %10s %12s\n", "graph", "queries", "tools", "edges", "s/epoch", "steps/epoch")
	for _, s := range []int{1, *scale} {
		sd := d
		if s > 1 {
			sd = replicate(d, s)
		}
		tr, _ := sd.Split("train")
		graphs, err := tgraph.FromSplit(sd, tr)
		if err != nil {
			return err
		}
		r := rand.New(rand.NewPCG(1, uint64(s)))
		rows := func(n int) [][]float32 {
			out := make([][]float32, n)
			for i := range out {
				out[i] = make([]float32, *dim)
				for k := range out[i] {
					out[i][k] = float32(r.NormFloat64())
				}
			}
			colt.NormalizeRows(out)
			return out
		}
		store := model.NewStore()
		queries := rows(len(sd.Queries))
		if err := colt.InitVariables(store, bk, queries, rows(len(sd.Tools)), rows(len(sd.Scenes))); err != nil {
			return err
		}
		task := &colt.Task{Cfg: colt.Default(), Data: sd, Train: tr, Dev: tr, Graphs: graphs, Queries: queries, Dim: *dim, BatchSize: *batch, Seed: 1, Backend: bk}
		if err := task.Prepare(); err != nil {
			return err
		}
		opt := train.DefaultOptimizer()
		opt.LR, opt.Schedule = 1e-3, "constant"
		exec, err := newStepExec(bk, store, task, opt)
		if err != nil {
			return err
		}
		n := task.Batches(0)
		if err := exec(0, 0); err != nil { // compile
			return err
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := exec(1, i); err != nil {
				return err
			}
		}
		el := time.Since(start).Seconds()
		name := sd.Name
		if s > 1 {
			name += " x" + strconv.Itoa(s) + " (synthetic)"
		}
		fmt.Printf("%-28s %9d %9d %9d %10.2f %12d\n", name, len(sd.Queries), len(sd.Tools), graphs.QueryTool.NumEdges()+graphs.QueryScene.NumEdges()+graphs.SceneTool.NumEdges(), el, n)
	}
	return nil
}

// replicate makes a dataset s times larger: s disjoint copies of every query, tool, scene and
// judgement (ids suffixed with the copy number).
func replicate(d *data.Dataset, s int) *data.Dataset {
	out := &data.Dataset{Name: d.Name, ToolIndex: map[string]int{}, QueryIndex: map[string]int{}, Splits: map[string]*data.Split{}}
	nq, nt, ns := len(d.Queries), len(d.Tools), len(d.Scenes)
	for c := 0; c < s; c++ {
		for _, t := range d.Tools {
			t.ID = t.ID + "#" + strconv.Itoa(c)
			out.ToolIndex[t.ID] = len(out.Tools)
			out.Tools = append(out.Tools, t)
		}
		for _, q := range d.Queries {
			q.ID = q.ID + "#" + strconv.Itoa(c)
			out.QueryIndex[q.ID] = len(out.Queries)
			out.Queries = append(out.Queries, q)
		}
		for i, sc := range d.Scenes {
			m := make([]int, len(sc))
			for k, t := range sc {
				m[k] = t + c*nt
			}
			out.Scenes = append(out.Scenes, m)
			out.SceneIDs = append(out.SceneIDs, d.SceneIDs[i]+"#"+strconv.Itoa(c))
		}
	}
	for name, sp := range d.Splits {
		ns2 := &data.Split{Name: name, Relevant: map[int][]int{}, Scene: map[int]int{}}
		for c := 0; c < s; c++ {
			for _, q := range sp.Queries {
				q2 := q + c*nq
				ns2.Queries = append(ns2.Queries, q2)
				for _, t := range sp.Relevant[q] {
					ns2.Relevant[q2] = append(ns2.Relevant[q2], t+c*nt)
				}
				if sc, ok := sp.Scene[q]; ok {
					ns2.Scene[q2] = sc + c*ns
				}
			}
		}
		out.Splits[name] = ns2
	}
	return out
}
