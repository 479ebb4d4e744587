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
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
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

// weakStage1 mimics a weak stage-1 retriever, the setting COLT is for: hidden true tool vectors
// z_t; each query is the mean of its relevant tools' z plus noise of norm ≈ qNoise, and each
// stage-1 tool vector is z_t plus noise of norm ≈ tNoise (poor tool texts), so the training
// queries around a tool (its usage) locate it better than its own embedding does.
func weakStage1(r *rand.Rand, d *data.Dataset, dim int, qNoise, tNoise float64) (queries, tools, scenes [][]float32) {
	z := randomRows(r, len(d.Tools), dim)
	noise := func(n int, scale float64) [][]float32 {
		rows := randomRows(r, n, dim)
		for _, row := range rows {
			for k := range row {
				row[k] *= float32(scale)
			}
		}
		return rows
	}
	tools = noise(len(d.Tools), tNoise)
	for i := range tools {
		for k := range tools[i] {
			tools[i][k] += z[i][k]
		}
	}
	NormalizeRows(tools)
	queries = noise(len(d.Queries), qNoise)
	for _, sp := range d.Splits {
		for q, rel := range sp.Relevant {
			for _, t := range rel {
				for k := range queries[q] {
					queries[q][k] += z[t][k] / float32(len(rel))
				}
			}
		}
	}
	NormalizeRows(queries)
	scenes = make([][]float32, len(d.Scenes))
	for i, sc := range d.Scenes {
		scenes[i] = make([]float32, dim)
		for _, t := range sc {
			for k := range scenes[i] {
				scenes[i][k] += tools[t][k] / float32(len(sc))
			}
		}
	}
	return queries, tools, scenes
}

// embedded returns the embedded dataset, its training split less a 10% dev split, the dev
// split, and COLT's graphs of the training split.
func embedded(t *testing.T) (*data.Dataset, *data.Split, *data.Split, *tgraph.COLTGraphs) {
	t.Helper()
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
	return d, tr, dev, graphs
}

// stage1Dev returns the dev metrics of the stage-1 embeddings alone (cosine ranking).
func stage1Dev(d *data.Dataset, dev *data.Split, queries, tools [][]float32) map[string]float64 {
	sc := &Scorer{Tools: tools}
	var rankings []rank.Ranking
	var rel [][]int
	for _, q := range dev.Queries {
		rankings = append(rankings, rank.TopK(sc.Scores(queries[q]), 10))
		rel = append(rel, dev.Relevant[q])
	}
	return metrics.Evaluate(rankings, rel, []int{1, 3, 5, 10}).Map()
}

// TestTrainsEveryVariant trains COLT for a few epochs on the embedded dataset from weak noisy
// "stage-1" embeddings, for the full model and each ablation (inductive, as recommended), the
// reference code's isolated test queries and hold-out training alone, and checks that the loss
// goes down and that dev R@5 beats the stage-1 embeddings' own by 10 points.
func TestTrainsEveryVariant(t *testing.T) {
	d, tr, dev, graphs := embedded(t)
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	const dim = 16
	for _, v := range []struct {
		name string
		mod  func(*Config)
	}{
		{"reference", func(c *Config) { c.Inductive = false }},
		{"hold-out", func(c *Config) { c.Inductive, c.HoldOut = false, true }},
		{"full", func(*Config) {}},
		{"pairwise", func(c *Config) { c.Pairwise = true }},
		{"no-contrast", func(c *Config) { c.NoContrast = true }},
		{"scene-only", func(c *Config) { c.Views = "scene" }},
		{"tool-only", func(c *Config) { c.Views = "tool" }},
		{"layer-weights", func(c *Config) { c.ToolWeight, c.SceneWeight, c.AttachTemp = 0, 4, 0.02 }},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := Default()
			cfg.Inductive = true
			v.mod(&cfg)
			r := rand.New(rand.NewPCG(1, 2))
			queries, tools, scenes := weakStage1(r, d, dim, 0.7, 1.5)
			store := model.NewStore()
			if err := InitVariables(store, be, queries, tools, scenes); err != nil {
				t.Fatal(err)
			}
			task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim, BatchSize: 256, Seed: 3, Backend: be}
			if err := task.Prepare(); err != nil {
				t.Fatal(err)
			}
			before := stage1Dev(d, dev, queries, tools)
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
			// The tool embeddings are poor and the query usage is informative: the graph stage
			// must recover much of the gap.
			if sum.BestMetrics["recall@5"] < before["recall@5"]+10 {
				t.Errorf("dev R@5 did not improve by 10 points over stage 1: %.1f -> %.1f", before["recall@5"], sum.BestMetrics["recall@5"])
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Layers = -1 }, "layers"},
		{func(c *Config) { c.Temperature = 0 }, "temperature"},
		{func(c *Config) { c.Lambda = -0.1 }, "lambda"},
		{func(c *Config) { c.ListLen = 1 }, "list length"},
		{func(c *Config) { c.Views = "all" }, "views"},
		{func(c *Config) { c.EdgeDropout = 1 }, "edge dropout"},
		{func(c *Config) { c.AttachTemp = 0 }, "attach temperature"},
		{func(c *Config) { c.SceneWeight = -1 }, "layer weights"},
	} {
		c := Default()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c, err, tc.want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}
