package classifier_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rundir"
)

// TestTrain trains a tiny query-type and a tiny mlc classifier from scratch through the
// library recipe on a small dataset (the dev split carved with Dev and Seed): each fills in
// its kind's loss and metric, records its run and prints its test report; bad settings are
// refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 80, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, loss, metric, report string
	}{
		{classifier.KindQueryType, "ce", "accuracy", "query-type accuracy"},
		{classifier.KindMLC, "bce", "ndcg@5", "(mlc)"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			cfg := classifier.DefaultTrainConfig()
			var out, log bytes.Buffer
			cfg.Kind, cfg.RunDir, cfg.Data, cfg.Dev, cfg.Seed = c.kind, filepath.Join(dir, c.kind), d, 0.25, 7
			cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Batch, cfg.Epochs, cfg.Quiet = 1, 16, 2, 16, 1, true
			cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &out, &log
			res, err := classifier.Train(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary == nil || res.Summary.Steps == 0 || (res.Test == nil) == (res.Types == nil) {
				t.Fatalf("result %+v", res)
			}
			if _, ok := res.Summary.BestMetrics[c.metric]; !ok {
				t.Errorf("best metrics %v lack the default metric %s", res.Summary.BestMetrics, c.metric)
			}
			if !strings.Contains(out.String(), c.report) || !strings.Contains(log.String(), c.loss+" loss") {
				t.Errorf("stdout %q, stderr %q", out.String(), log.String())
			}
			m, err := rundir.Read(cfg.RunDir)
			if err != nil || m.Kind != "classifier" || m.Split.DevFraction != 0.25 || m.Split.Seed != 7 {
				t.Errorf("run.json %+v, %v", m, err)
			}
		})
	}
	for _, c := range []struct {
		name string
		edit func(*classifier.TrainConfig)
		want string
	}{
		{"kind", func(c *classifier.TrainConfig) { c.Kind = "tools" }, `-kind "tools"`},
		{"querytype loss", func(c *classifier.TrainConfig) { c.Loss = "softmax" }, "-kind querytype wants ce or bce"},
		{"mlc loss", func(c *classifier.TrainConfig) { c.Kind, c.Loss = classifier.KindMLC, "ce" }, "-kind mlc wants bce or softmax"},
		{"querytype metric", func(c *classifier.TrainConfig) { c.Metric = "ndcg@5" }, `-metric "ndcg@5"`},
		{"max-len", func(c *classifier.TrainConfig) { c.MaxLen = 1 }, "-max-len 1"},
		{"dev", func(c *classifier.TrainConfig) { c.Dev = 1 }, "-dev 1"},
		{"batch", func(c *classifier.TrainConfig) { c.Batch = 0 }, "-batch 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := classifier.DefaultTrainConfig()
			cfg.RunDir, cfg.Data = filepath.Join(dir, "bad"), d
			c.edit(&cfg)
			if _, err := classifier.Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
