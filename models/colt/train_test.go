package colt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/rundir"
)

// TestTrain trains COLT's graph stage through the library recipe over a random bi-encoder run
// of the embedded dataset: the run records the retriever's split, both test rows are printed
// and returned, the stage-1 embeddings are cached and a corrupt cache is recomputed; bad
// settings are refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	be := filepath.Join(dir, "be")
	if err := exporttest.WriteRecordedRun(be, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := colt.DefaultTrainConfig()
	var out, log bytes.Buffer
	cfg.RunDir, cfg.Retriever, cfg.Data, cfg.Epochs, cfg.Batch, cfg.Quiet = filepath.Join(dir, "colt"), be, d, 1, 512, true
	cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &out, &log
	res, err := colt.Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == nil || res.Summary.Steps == 0 || len(res.Test) != 2 || res.SecondsPerEpoch <= 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(out.String(), "+ COLT") || !strings.Contains(log.String(), "COLT: 1 layers") {
		t.Errorf("stdout %q, stderr %q", out.String(), log.String())
	}
	if m, err := rundir.Read(cfg.RunDir); err != nil || m.Kind != "colt" || m.Parent != be {
		t.Errorf("run.json %+v, %v", m, err)
	}
	cache := colt.EmbeddingCache(be, d)
	if _, _, err := colt.ReadEmbeddingCache(cache, d); err != nil {
		t.Fatalf("cache: %v", err)
	}
	if err := os.WriteFile(cache, []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	again := cfg
	again.RunDir = filepath.Join(dir, "colt2")
	if _, err := colt.Train(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "recomputing the stage-1 embeddings") {
		t.Errorf("a corrupt cache was not reported: %q", log.String())
	}
	for _, c := range []struct {
		name string
		edit func(*colt.TrainConfig)
		want string
	}{
		{"no retriever", func(c *colt.TrainConfig) { c.Retriever = "" }, "-first-stage RUN"},
		{"not a bi-encoder", func(c *colt.TrainConfig) { c.Retriever = cfg.RunDir }, "not a bi-encoder run"},
		{"list-len", func(c *colt.TrainConfig) { c.Model.ListLen = 1 }, "-list-len 1"},
		{"edge-dropout", func(c *colt.TrainConfig) { c.Model.EdgeDropout = 1 }, "-edge-dropout 1"},
		{"views", func(c *colt.TrainConfig) { c.Model.Views = "all" }, `-views "all"`},
		{"metric", func(c *colt.TrainConfig) { c.Metric = "mrr" }, "mrr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			bad.RunDir = filepath.Join(dir, "bad")
			c.edit(&bad)
			if _, err := colt.Train(context.Background(), bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
