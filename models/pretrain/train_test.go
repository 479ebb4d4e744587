package pretrain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/rundir"
)

// TestTrain pre-trains a tiny encoder through the library recipe on a small dataset: the run
// is a pretrain run and a bi-encoder, its speed is recorded, the default metric follows the
// objectives, and bad settings are refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 80, 10)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pretrain.DefaultTrainConfig()
	var log bytes.Buffer
	cfg.RunDir, cfg.Data, cfg.Args = filepath.Join(dir, "pre"), d, map[string]string{"epochs": "2"}
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.VocabSize, cfg.Batch, cfg.Epochs, cfg.DevMax = 1, 16, 2, 500, 32, 2, 16
	cfg.Dev, cfg.Backend, cfg.Quiet, cfg.Stderr = 0.25, "go", true, &log
	res, err := pretrain.Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == nil || res.Time.Steps != res.Summary.Steps || res.Time.StepsPerEpoch*2 != res.Time.Steps {
		t.Fatalf("result %+v", res)
	}
	if _, ok := res.Summary.BestMetrics["contrastive_acc"]; !ok {
		t.Errorf("best metrics %v: no contrastive_acc, the default metric", res.Summary.BestMetrics)
	}
	var tm pretrain.Time
	b, err := os.ReadFile(filepath.Join(cfg.RunDir, pretrain.TimeFile))
	if err != nil || json.Unmarshal(b, &tm) != nil || tm != res.Time {
		t.Errorf("%s %s (%v), result %+v", pretrain.TimeFile, b, err, res.Time)
	}
	if m, err := rundir.Read(cfg.RunDir); err != nil || m.Kind != "pretrain" || m.Args["epochs"] != "2" {
		t.Errorf("run.json %+v, %v", m, err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := biencoder.LoadRun(cfg.RunDir, bk); err != nil {
		t.Errorf("the run is no bi-encoder: %v", err)
	}
	if !strings.Contains(log.String(), "pretrain: bert, 1 layers, hidden 16") {
		t.Errorf("stderr %q", log.String())
	}
	if got := pretrain.DefaultMetric("mlm"); got != "mlm_acc" {
		t.Errorf("DefaultMetric(mlm) = %s", got)
	}
	for _, c := range []struct {
		name string
		edit func(*pretrain.TrainConfig)
		want string
	}{
		{"objective", func(c *pretrain.TrainConfig) { c.Objective = "mlm,nsp" }, "-objective"},
		{"batch", func(c *pretrain.TrainConfig) { c.Batch = 1 }, "-batch 1: in-batch negatives"},
		{"crop-max", func(c *pretrain.TrainConfig) { c.CropMax = 0.05 }, "-crop-max 0.05"},
		{"views", func(c *pretrain.TrainConfig) { c.Views = "pairs" }, `-views "pairs"`},
		{"metric", func(c *pretrain.TrainConfig) { c.Objective, c.Metric = "mlm", "contrastive_acc" }, `-metric "contrastive_acc"`},
		{"vocab-size", func(c *pretrain.TrainConfig) { c.VocabSize = 0 }, "vocab-size 0: must be > 0"}, // the library names the setting, train pretrain its flag,
		{"max-len", func(c *pretrain.TrainConfig) { c.MaxLen = 2 }, "-max-len 2"},
		{"a run already", func(c *pretrain.TrainConfig) { c.RunDir = cfg.RunDir }, "-resume"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			bad.RunDir, bad.Metric = filepath.Join(dir, "bad"), ""
			c.edit(&bad)
			if _, err := pretrain.Train(context.Background(), bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
