package crossencoder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rundir"
)

// TestTrain trains a tiny cross-encoder through the library recipe over a random bi-encoder
// run on a small dataset: the run records the retriever's dev split and parent, the test
// report is printed and written, a second new run into the directory is refused, and bad
// settings are refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	d, be, err := exporttest.SmallStage1(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crossencoder.DefaultTrainConfig()
	var out, log bytes.Buffer
	cfg.RunDir, cfg.Retriever, cfg.Data, cfg.Args = filepath.Join(dir, "ce"), be, d, map[string]string{"depth": "8"}
	cfg.Depth, cfg.Negatives, cfg.MaxLen, cfg.Batch, cfg.Epochs, cfg.Quiet = 8, 3, 48, 8, 1, true
	cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &out, &log
	res, err := crossencoder.Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == nil || res.Summary.Steps == 0 || res.Test == nil {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(out.String(), "cross-encoder reranking of the retriever's top 8") {
		t.Errorf("stdout %q lacks the test report", out.String())
	}
	if !strings.Contains(log.String(), "cross-encoder: bert, 1 layers, hidden 16") {
		t.Errorf("stderr %q lacks the model line (a warm start from the retriever)", log.String())
	}
	m, err := rundir.Read(cfg.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := rundir.Read(be)
	if m.Kind != "crossencoder" || m.Parent != be || m.Args["depth"] != "8" || len(m.Split.DevIDs) != len(parent.Split.DevIDs) {
		t.Errorf("run.json: kind %q parent %q args %v, %d dev ids (retriever %d)", m.Kind, m.Parent, m.Args, len(m.Split.DevIDs), len(parent.Split.DevIDs))
	}
	if _, err := os.Stat(filepath.Join(cfg.RunDir, "test_metrics.json")); err != nil {
		t.Error(err)
	}
	if _, err := crossencoder.Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("a new run into a run: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*crossencoder.TrainConfig)
		want string
	}{
		{"no retriever", func(c *crossencoder.TrainConfig) { c.Retriever = "" }, "needs -first-stage"},
		{"depth", func(c *crossencoder.TrainConfig) { c.Depth = 0 }, "depth 0: must be > 0"}, // the library names the setting, train crossencoder its flag,
		{"negatives", func(c *crossencoder.TrainConfig) { c.Negatives = 0 }, "negatives-per-positive 0: must be > 0"},
		{"max-len", func(c *crossencoder.TrainConfig) { c.MaxLen = 2 }, "-max-len 2"},
		{"loss", func(c *crossencoder.TrainConfig) { c.Loss = "hinge" }, `-loss "hinge"`},
		{"pooling", func(c *crossencoder.TrainConfig) { c.Pooling = "mean" }, `-pooling "mean"`},
		{"warmup", func(c *crossencoder.TrainConfig) { c.Warmup = 1 }, "-warmup 1"},
		{"arch", func(c *crossencoder.TrainConfig) { c.Arch = "gpt" }, `-arch "gpt"`},
		{"scratch sizes", func(c *crossencoder.TrainConfig) { c.WarmStart, c.Layers = false, 0 }, "-layers 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			bad.RunDir = filepath.Join(dir, "bad")
			c.edit(&bad)
			if _, err := crossencoder.Train(context.Background(), bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
