package recipe

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// tiny is a bi-encoder small enough to train in seconds on the embedded default dataset.
func tiny(run string) biencoder.TrainConfig {
	c := biencoder.DefaultTrainConfig()
	c.RunDir, c.Quiet = run, true
	c.Model.Layers, c.Model.Hidden, c.Model.Heads, c.Model.VocabSize = 1, 32, 2, 800
	c.Training.Epochs, c.Training.Batch = 1, 32
	c.Split.Test = ""
	return c
}

// TestBiEncoderRecordsAndResumes trains through the library, checks run.json records the
// typed configuration with its auto fields resolved, and that a resumption with another
// configuration is refused naming each field that differs.
func TestBiEncoderRecordsAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	var log bytes.Buffer
	cfg := tiny(run)
	cfg.Stderr = &log
	res, err := BiEncoder(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.RunDir != run || res.Summary == nil || res.Summary.Steps == 0 || res.Test != nil {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(log.String(), "bi-encoder: 1 layers, hidden 32") {
		t.Errorf("messages: %s", log.String())
	}
	m, err := rundir.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	var rec biencoder.TrainConfig
	if err := json.Unmarshal(m.Config, &rec); err != nil {
		t.Fatal(err)
	}
	if m.Format != rundir.Format || rec.Training.LR != 5e-4 || rec.Model.Pooling != "mean" || rec.Model.Similarity != "cosine" ||
		rec.Model.Arch != "bert" || rec.Split.Dev != 0.1 || m.Args["epochs"] != "1" || m.Args["lr"] != "0.0005" {
		t.Errorf("run.json format %d, config %s, args %v", m.Format, m.Config, m.Args)
	}
	again := tiny(run)
	again.Resume, again.Training.Epochs, again.Model.Symmetric = true, 2, true
	_, err = BiEncoder(context.Background(), again)
	want := "symmetric true != recorded false, epochs 2 != recorded 1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resume with other settings: %v, want %q", err, want)
	}
	if _, err := BiEncoder(context.Background(), tiny(run)); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("a new run into a run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, "summary.json")); err != nil {
		t.Error(err)
	}
}

func TestBiEncoderChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*biencoder.TrainConfig)
		want string
	}{
		{"no run", func(c *biencoder.TrainConfig) { c.RunDir = "" }, "no run directory (-run)"},
		{"batch", func(c *biencoder.TrainConfig) { c.Training.Batch = 0 }, "-batch 0: must be > 0"},
		{"arch", func(c *biencoder.TrainConfig) { c.Model.Arch = "xlnet" }, `-arch "xlnet"`},
		{"dev", func(c *biencoder.TrainConfig) { c.Split.Dev = 1.5 }, "-dev 1.5"},
		{"negatives", func(c *biencoder.TrainConfig) { c.Training.HardNegatives = 2 }, "-hard-negatives 2 needs -negatives"},
		{"feedback flag", func(c *biencoder.TrainConfig) { c.Training.Alpha = 0.5 }, "-alpha is a flag of -feedback training"},
		{"tool queries", func(c *biencoder.TrainConfig) { c.Training.ToolQueries = -1 }, "-tool-queries -1"},
		{"q2q towers", func(c *biencoder.TrainConfig) {
			c.Model.Objective, c.Model.SeparateTowers = biencoder.ObjectiveQuery2Query, true
		}, "-separate-towers does not apply"},
		{"resume nothing", func(c *biencoder.TrainConfig) { c.Resume = true }, "run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tiny(filepath.Join(t.TempDir(), "run"))
			tc.set(&c)
			if _, err := BiEncoder(context.Background(), c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
