package refiner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
)

// TestTrain trains a tiny refiner through the library recipe over a random bi-encoder run on a
// small dataset: the candidates are cached, the first-stage weight is chosen on dev and
// recorded, both test rows are printed; bad settings are refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	d, be, err := exporttest.SmallStage1(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := refiner.DefaultTrainConfig()
	var out, log bytes.Buffer
	cfg.RunDir, cfg.Retriever, cfg.Data, cfg.WarmStart = filepath.Join(dir, "ref"), be, d, true
	cfg.N, cfg.Depth, cfg.Batch, cfg.Epochs, cfg.Quiet = 8, 12, 16, 1, true
	cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &out, &log
	res, err := refiner.Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == nil || res.Summary.Steps == 0 || len(res.Weight.Dev) != len(refiner.Weights) || res.Test["+ refiner"].Dataset == "" {
		t.Fatalf("result %+v", res)
	}
	for _, f := range []string{refiner.CandidatesFile, refiner.WeightFile, "test_metrics.json", refiner.ConfigFile} {
		if _, err := os.Stat(filepath.Join(cfg.RunDir, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(out.String(), "first stage (bi-encoder)") || !strings.Contains(log.String(), "first-stage weight on dev") {
		t.Errorf("stdout %q, stderr %q", out.String(), log.String())
	}
	if m, err := rundir.Read(cfg.RunDir); err != nil || m.Kind != "refiner" || m.Parent != be {
		t.Errorf("run.json %+v, %v", m, err)
	}
	// -head-lr's prefixes name the refiner's own layers (learned slot positions are off here).
	if c, err := checkpoints.Load(checkpoints.Dir(cfg.RunDir, res.Summary.Steps)); err != nil {
		t.Error(err)
	} else {
		for _, p := range refiner.HeadVars {
			n := 0
			for _, name := range c.Names() {
				if strings.HasPrefix("/"+strings.TrimPrefix(name, "/"), p) {
					n++
				}
			}
			if (n == 0) != (p == "/slot_positions/") {
				t.Errorf("%d checkpoint variables under %s: %v", n, p, c.Names())
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(*refiner.TrainConfig)
		want string
	}{
		{"no retriever", func(c *refiner.TrainConfig) { c.Retriever = "" }, "-first-stage RUN is required"},
		{"depth below n", func(c *refiner.TrainConfig) { c.Depth = 4 }, "-depth 4: must be >= -n 8"},
		{"weight", func(c *refiner.TrainConfig) { c.FirstStageWeight = 2 }, "-first-stage-weight 2"},
		{"bm25 run", func(c *refiner.TrainConfig) { c.Candidates, c.CandidatesRun = "bm25", be }, "-candidates bm25 has no run"},
		{"mlc without run", func(c *refiner.TrainConfig) { c.Candidates = "mlc" }, "-candidates mlc needs -candidates-run"},
		{"missing", func(c *refiner.TrainConfig) { c.Missing = "skip" }, `-missing "skip"`},
		{"order", func(c *refiner.TrainConfig) { c.Order = "random" }, `-order "random"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			bad.RunDir = filepath.Join(dir, "bad")
			c.edit(&bad)
			if _, err := refiner.Train(context.Background(), bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
