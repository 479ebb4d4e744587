package colt

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/train"
)

func randomRows(r *rand.Rand, n, d int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, d)
		for k := range rows[i] {
			rows[i][k] = float32(r.NormFloat64())
		}
	}
	NormalizeRows(rows)
	return rows
}

// TestTrainsEveryVariant trains COLT for a few epochs on the embedded dataset from random
// "stage-1" embeddings, for the full model and each ablation, and checks that the loss goes
// down and dev metrics improve over the untrained start.
func TestTrainsEveryVariant(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	tr, dev, err := d.CarveDev("train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	graphs, err := tgraph.FromSplit(d, tr)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	const dim = 16
	for _, v := range []struct {
		name string
		mod  func(*Config)
	}{
		{"full", func(*Config) {}},
		{"pairwise", func(c *Config) { c.Pairwise = true }},
		{"no-contrast", func(c *Config) { c.NoContrast = true }},
		{"scene-only", func(c *Config) { c.Views = "scene" }},
		{"tool-only", func(c *Config) { c.Views = "tool" }},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := Default()
			v.mod(&cfg)
			r := rand.New(rand.NewPCG(1, 2))
			queries, tools := randomRows(r, len(d.Queries), dim), randomRows(r, len(d.Tools), dim)
			scenes := randomRows(r, len(d.Scenes), dim)
			store := model.NewStore()
			if err := InitVariables(store, be, queries, tools, scenes); err != nil {
				t.Fatal(err)
			}
			task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim, BatchSize: 256, Seed: 3, Backend: be}
			if err := task.Prepare(); err != nil {
				t.Fatal(err)
			}
			before, err := task.Evaluate(store)
			if err != nil {
				t.Fatal(err)
			}
			opt := train.DefaultOptimizer()
			opt.LR, opt.Schedule, opt.ClipNorm = 0.01, "constant", 0
			run := filepath.Join(t.TempDir(), "run")
			sum, err := train.Run(be, store, task, train.Config{RunDir: run, Seed: 3, Epochs: 8, Metric: "recall@5", Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: true}, false)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var first, last struct{ Loss float64 }
			json.Unmarshal([]byte(lines[0]), &first)
			json.Unmarshal([]byte(lines[len(lines)-1]), &last)
			t.Logf("loss %.4f -> %.4f; dev R@5 %.1f -> %.1f", first.Loss, last.Loss, before["recall@5"], sum.BestMetrics["recall@5"])
			if !(last.Loss < first.Loss) {
				t.Errorf("loss did not decrease: %.4f -> %.4f", first.Loss, last.Loss)
			}
			if sum.BestMetrics["recall@5"] <= before["recall@5"] {
				t.Errorf("dev R@5 did not improve from random embeddings: %.1f -> %.1f", before["recall@5"], sum.BestMetrics["recall@5"])
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Layers: -1, Tau: 0.1, ListLen: 10, Views: "both"}, {Tau: 0, ListLen: 10, Views: "both"}, {Tau: 0.1, ListLen: 1, Views: "both"}, {Tau: 0.1, ListLen: 10, Views: "all"}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}
