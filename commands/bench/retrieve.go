package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

// retrieveBench measures toolindex.Retrieve latency (one query per call, k tools) over the
// tools of a dataset (ToolLens: 464) and over a synthetic index of -synthetic random tools.
//
//	bench retrieve [-run RUN [-refiner RUN]] [-data DIR] [-n 200] [-k 10] [-synthetic 100000] [-ann off|on|auto]
//
// -ann searches the synthetic index with HNSW too (toolindex.WithANN; timed once its graph
// is built), beside exact search; bench ann measures the search alone, with recall.
//
// Without -run the model is a random bi-encoder of -layers/-hidden/-heads. With -refiner (a
// refiner run over -run's candidates, trained on -data) the index packages it and the
// dataset's tools are timed with and without it (the synthetic index: without).
func retrieveBench(args []string) error {
	fs := flag.NewFlagSet("bench retrieve", flag.ContinueOnError)
	run := fs.String("run", "", "bi-encoder or MLC classifier run to export (default: a random bi-encoder)")
	refinerRun := fs.String("refiner", "", "refiner run over -run's candidates: also time the index with it (export -refiner)")
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose tools are indexed and whose queries are timed (the embedded dataset when the default is absent; a -data given must load)")
	n := fs.Int("queries", 200, "queries timed")
	k := fs.Int("k", 10, "tools returned per query")
	synthetic := fs.Int("synthetic", 100000, "tools of the synthetic index (0: skip)")
	layers := fs.Int("layers", 4, "random model: layers")
	hidden := fs.Int("hidden", 256, "random model: hidden size")
	heads := fs.Int("heads", 4, "random model: attention heads")
	beName := fs.String("backend", "", "compute backend")
	annMode := fs.String("ann", toolindex.ANNOff, "also time the synthetic index with HNSW search: on, auto (from 50000 tools), off")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *annMode != toolindex.ANNOff && *annMode != toolindex.ANNOn && *annMode != toolindex.ANNAuto {
		return fmt.Errorf("-ann %q: want off, on or auto", *annMode)
	}
	if *refinerRun != "" && *run == "" {
		return fmt.Errorf("-refiner needs -run, the bi-encoder run whose candidates it re-orders")
	}
	if err := cli.First(cli.Positive("queries", *n), cli.Positive("k", *k), cli.NonNegative("synthetic", *synthetic),
		cli.Positive("layers", *layers), cli.Positive("hidden", *hidden), cli.Positive("heads", *heads)); err != nil {
		return err
	}

	be, err := backend.Open(backend.Name(*beName))
	if err != nil {
		return err
	}
	d, err := data.Load(*dataDir)
	if err != nil && (!errors.Is(err, os.ErrNotExist) || cli.Set(fs)["data"]) {
		return err // a dataset that exists but does not load, or one the user named
	}
	if err != nil { // the default ../shared dataset is absent
		fmt.Fprintf(os.Stderr, "bench: %v; using the embedded dataset\n", err)
		if d, err = data.Default(); err != nil {
			return err
		}
		*dataDir = "default"
	}
	var m *export.Model
	what := ""
	if *run != "" {
		if m, err = export.LoadModel(*run, be); err != nil {
			return err
		}
		what = "run " + *run
	} else {
		o := exporttest.Options{Hidden: *hidden, Layers: *layers, Heads: *heads}
		if m, err = exporttest.BiEncoder(o, be, 1); err != nil {
			return err
		}
		what = fmt.Sprintf("random bi-encoder (%d layers, hidden %d)", *layers, *hidden)
	}
	tmp, err := os.MkdirTemp("", "toolret-bench-retrieve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	start := time.Now()
	opts := export.Options{Format: export.FormatIndex, Out: dir, Data: d, DataSource: *dataDir, Refiner: *refinerRun}
	if *refinerRun != "" {
		// The run's training part: usage vectors, for a refiner over usage candidates.
		if opts.Train, _, _, err = rundir.Splits(rundir.RunOf(*run), d); err != nil {
			return fmt.Errorf("-refiner: %w", err)
		}
	}
	if _, err := export.Export(m, opts); err != nil {
		return err
	}
	fmt.Printf("retrieve: %s, %d tools of %s indexed in %v; %d queries, k=%d, backend %s\n", what, len(d.Tools), d.Name, time.Since(start).Round(time.Millisecond), *n, *k, backend.Name(*beName))
	queries := make([]string, 0, *n)
	for i := 0; len(queries) < *n; i++ {
		queries = append(queries, d.Queries[i%len(d.Queries)].Text)
	}
	measure := func(label string, opts ...toolindex.Option) error {
		r, err := toolindex.Load(dir, opts...)
		if err != nil {
			return err
		}
		ctx := context.Background()
		if err := r.WaitANN(ctx); err != nil { // time the index HNSW serves, not the exact fallback
			return err
		}
		for _, q := range queries[:min(len(queries), 50)] { // warm up: compile every length bucket
			if _, err := r.Retrieve(ctx, q, *k); err != nil {
				return err
			}
		}
		lat := make([]time.Duration, len(queries))
		for i, q := range queries {
			t0 := time.Now()
			if _, err := r.Retrieve(ctx, q, *k); err != nil {
				return err
			}
			lat[i] = time.Since(t0)
		}
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		fmt.Printf("  %-26s p50 %8.2f ms   p95 %8.2f ms   max %8.2f ms\n", label, ms(pct(0.50)), ms(pct(0.95)), ms(lat[len(lat)-1]))
		return nil
	}
	if err := measure(fmt.Sprintf("%d tools", len(d.Tools)), toolindex.WithoutRefiner()); err != nil {
		return err
	}
	if *refinerRun != "" {
		if err := measure(fmt.Sprintf("%d tools + refiner", len(d.Tools))); err != nil {
			return err
		}
	}
	if *synthetic > 0 {
		// Same query model, random unit tool vectors.
		dim := m.Towers[0].Encoder.Hidden()
		rng := rand.New(rand.NewPCG(1, 2))
		emb := make([][]float32, *synthetic)
		recs := make([]export.ToolRecord, *synthetic)
		for i := range emb {
			emb[i] = make([]float32, dim)
			for j := range emb[i] {
				emb[i][j] = float32(rng.NormFloat64())
			}
			export.L2Normalize(emb[i])
			recs[i] = export.ToolRecord{ID: fmt.Sprintf("synthetic-%d", i), Text: d.Tools[i%len(d.Tools)].Text}
		}
		// An MLC index scores dot product + per-tool bias: the synthetic tools get random
		// biases of the classifier's scale, so the timed path is the one the index serves.
		var bias []float32
		man, err := export.ReadManifest(dir)
		if err != nil {
			return err
		}
		if man.FirstStage == export.FirstStageMLC {
			bias = make([]float32, *synthetic)
			for i := range bias {
				bias[i] = float32(rng.NormFloat64())
			}
		}
		if err := export.WriteIndexFilesBias(dir, recs, emb, bias, nil); err != nil {
			return err
		}
		off := toolindex.WithANN(toolindex.ANNConfig{Mode: toolindex.ANNOff})
		if err := measure(fmt.Sprintf("%d tools (synthetic)", *synthetic), toolindex.WithoutVerify(), toolindex.WithoutRefiner(), off); err != nil {
			return err
		}
		if *annMode != toolindex.ANNOff {
			ann := toolindex.WithANN(toolindex.ANNConfig{Mode: *annMode})
			if err := measure(fmt.Sprintf("%d tools (synthetic, ann %s)", *synthetic, *annMode), toolindex.WithoutVerify(), toolindex.WithoutRefiner(), ann); err != nil {
				return err
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
