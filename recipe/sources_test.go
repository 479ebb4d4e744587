package recipe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/datatest"
)

// losses reads the training losses of a run's metrics.jsonl and the keys of its dev records.
func losses(t *testing.T, run string) ([]float64, map[string]bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec["loss"].(float64))
		for k := range rec {
			keys[k] = true
		}
	}
	return out, keys
}

// TestBiEncoderSources trains on a list of sources: every library's dev metrics land in
// metrics.jsonl beside the pooled ones, the missing test split of a train-only mix is a
// note, and a run stopped early and resumed trains exactly as one that was not.
func TestBiEncoderSources(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	dir := t.TempDir()
	mk := func(name, spec string) (*bytes.Buffer, func() error) {
		c := tiny(filepath.Join(dir, name))
		c.Split.Data, c.Split.Test, c.Split.Dev = spec, "test", 0.2
		c.Training.Batch, c.Training.Epochs = 4, 2
		var log bytes.Buffer
		c.Stderr, c.Stdout = &log, &log
		return &log, func() error { _, err := BiEncoder(context.Background(), c); return err }
	}
	log, run := mk("whole", "mix:1,lens:2")
	if err := run(); err != nil {
		t.Fatal(err)
	}
	whole, keys := losses(t, filepath.Join(dir, "whole"))
	for _, k := range []string{"dev_ndcg@5", "dev_lib/lens/ndcg@5", "dev_lib/mix/a/recall@5", "dev_lib/mix/b/ndcg@5"} {
		if !keys[k] {
			t.Errorf("metrics.jsonl has no %s (keys %v)", k, keys)
		}
	}
	if !strings.Contains(log.String(), "test") {
		t.Errorf("messages: %s", log)
	}

	// A train-only mix: the run is saved and the test evaluation skipped with a note.
	log, run = mk("trainonly", "mix")
	if err := run(); err != nil {
		t.Fatalf("a mix with no test split: %v", err)
	}
	if !strings.Contains(log.String(), `note: dataset mix has no split "test"`) {
		t.Errorf("no note of the missing test split: %s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "trainonly", "summary.json")); err != nil {
		t.Error(err)
	}

	// Stopped after its first step (MaxTime, operational), then resumed: the same losses.
	c := tiny(filepath.Join(dir, "resumed"))
	c.Split.Data, c.Split.Test, c.Split.Dev = "mix:1,lens:2", "", 0.2
	c.Training.Batch, c.Training.Epochs = 4, 2
	c.Training.MaxTime = 1
	if _, err := BiEncoder(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.Training.MaxTime, c.Resume = 0, true
	if _, err := BiEncoder(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	resumed, _ := losses(t, filepath.Join(dir, "resumed"))
	if !reflect.DeepEqual(whole, resumed) {
		t.Errorf("resumed losses %v\nwant %v", resumed, whole)
	}

	// A list with a held-out-tool view is refused.
	c = tiny(filepath.Join(dir, "holdout"))
	c.Split.Data, c.Split.HoldoutTools = "mix,lens", 0.2
	if _, err := BiEncoder(context.Background(), c); err == nil || !strings.Contains(err.Error(), "applies to one dataset, not a list of sources") {
		t.Errorf("a list with -holdout-tools: %v", err)
	}
}
