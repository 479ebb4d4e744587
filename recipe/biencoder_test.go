package recipe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
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

// TestBiEncoderLoRA trains with LoRA through the library: run.json records the LoRA fields
// with alpha and targets as taken, biencoder.json the adapter configuration, the checkpoint
// holds the adapters; a resumption with another rank is refused, one leaving the auto fields
// unset is not.
func TestBiEncoderLoRA(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	var log bytes.Buffer
	cfg := tiny(run)
	cfg.Stderr = &log
	cfg.Model.LoRARank = 2
	cfg.Training.MaxSteps = 3
	if _, err := BiEncoder(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "lora: rank 2, alpha 4 (scale 2), dropout 0, targets query,value: only the adapters train") {
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
	if rec.Model.LoRARank != 2 || rec.Model.LoRAAlpha != 4 || rec.Model.LoRATargets != "query,value" {
		t.Errorf("run.json model config %+v", rec.Model)
	}
	b, err := os.ReadFile(filepath.Join(run, biencoder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := biencoder.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if mc.LoRA == nil || mc.LoRA.Rank != 2 || mc.LoRA.Alpha != 4 || strings.Join(mc.LoRA.Targets, ",") != "query,value" {
		t.Errorf("%s: lora %+v", biencoder.ConfigFile, mc.LoRA)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	e, err := biencoder.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	if e.Adapter == nil || len(e.Adapter.Tensors) != 4 || e.Cfg.LoRA != nil { // 1 layer × query, value × A, B
		t.Errorf("loaded run: adapter %+v, config LoRA %v (want 4 tensors merged, LoRA off)", e.Adapter, e.Cfg.LoRA)
	}
	again := tiny(run)
	again.Resume, again.Model.LoRARank, again.Training.MaxSteps = true, 4, 3
	if _, err = BiEncoder(context.Background(), again); err == nil || !strings.Contains(err.Error(), "lora-rank 4 != recorded 2") {
		t.Errorf("resume with another rank: %v", err)
	}
	again.Model.LoRARank, again.Training.MaxSteps = 2, 4
	if _, err = BiEncoder(context.Background(), again); err == nil || strings.Contains(err.Error(), "lora") || !strings.Contains(err.Error(), "max-steps 4 != recorded 3") {
		t.Errorf("resume with the auto LoRA fields unset: %v (want only max-steps refused)", err)
	}
}

func TestBiEncoderChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*biencoder.TrainConfig)
		want string
	}{
		{"no run", func(c *biencoder.TrainConfig) { c.RunDir = "" }, "no run directory (-run)"},
		{"batch", func(c *biencoder.TrainConfig) { c.Training.Batch = 0 }, "batch 0: must be > 0"}, // the library names the setting, train biencoder its flag
		{"arch", func(c *biencoder.TrainConfig) { c.Model.Arch = "xlnet" }, `-arch "xlnet"`},
		{"dev", func(c *biencoder.TrainConfig) { c.Split.Dev = 1.5 }, "dev 1.5: must be in (0, 1)"},
		{"negatives", func(c *biencoder.TrainConfig) { c.Training.HardNegatives = 2 }, "-hard-negatives 2 needs -negatives"},
		{"feedback flag", func(c *biencoder.TrainConfig) { c.Training.Alpha = 0.5 }, "-alpha is a flag of -feedback training"},
		{"tool queries", func(c *biencoder.TrainConfig) { c.Training.ToolQueries = -1 }, "-tool-queries -1"},
		{"q2q towers", func(c *biencoder.TrainConfig) {
			c.Model.Objective, c.Model.SeparateTowers = biencoder.ObjectiveQuery2Query, true
		}, "-separate-towers does not apply"},
		{"resume nothing", func(c *biencoder.TrainConfig) { c.Resume = true }, "run"},
		{"lora rank", func(c *biencoder.TrainConfig) { c.Model.LoRARank = -1 }, "-lora-rank -1: must be >= 0"},
		{"lora target", func(c *biencoder.TrainConfig) { c.Model.LoRARank, c.Model.LoRATargets = 4, "query,v_proj" }, `unknown target module "v_proj" (valid: query, key, value, dense)`},
		{"lora without rank", func(c *biencoder.TrainConfig) { c.Model.LoRADropout = 0.1 }, "need -lora-rank > 0"},
		{"lora on deberta", func(c *biencoder.TrainConfig) { c.Model.Arch, c.Model.LoRARank = "deberta", 4 }, `"deberta-v2" does not support LoRA (supported: bert, mpnet, xlm-roberta)`},
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

// TestBiEncoderExamples trains on a usage log and on synthetic queries (the embedded default
// dataset's tools): the log's examples, and the tools shown and not called as hard
// negatives, replace the training split and are snapshotted into the run.
func TestBiEncoderExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	d, err := data.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := d.Splits["train"]
	var log strings.Builder
	for i, q := range tr.Judged()[:60] {
		rel := tr.Relevant[q]
		other := d.Tools[(rel[0]+1)%len(d.Tools)].ID
		fmt.Fprintf(&log, `{"kind":"search","search_id":"s%d","query":%q,"shown":[%q,%q]}`+"\n", i, d.Queries[q].Text, other, d.Tools[rel[0]].ID)
		fmt.Fprintf(&log, `{"kind":"call","search_id":"s%d","tool":%q,"outcome":"ok"}`+"\n", i, d.Tools[rel[0]].ID)
	}
	fmt.Fprintf(&log, `{"kind":"call","search_id":"s0","tool":%q,"outcome":"tool_error"}`+"\n", d.Tools[0].ID)
	logPath := filepath.Join(t.TempDir(), "usage.jsonl")
	if err := os.WriteFile(logPath, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		set   func(*biencoder.TrainConfig)
		pairs string
	}{
		{"usage", func(c *biencoder.TrainConfig) { c.Split.Usage, c.Training.HardNegatives = logPath, 1 }, "54 train pairs"},
		{"synthetic", func(c *biencoder.TrainConfig) { c.Split.Synthetic = 2 }, " train pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			var msgs bytes.Buffer
			cfg := tiny(run)
			cfg.Stderr = &msgs
			tc.set(&cfg)
			if _, err := BiEncoder(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msgs.String(), tc.pairs) {
				t.Errorf("messages lack %q:\n%s", tc.pairs, msgs.String())
			}
			ex, err := data.ReadExamples(filepath.Join(run, ExamplesFile))
			if err != nil || len(ex) == 0 {
				t.Fatalf("snapshot: %d examples, %v", len(ex), err)
			}
			if tc.name == "usage" && (len(ex) != 60 || len(ex[0].Negatives) != 1 || !strings.Contains(msgs.String(), "60 searches, 61 calls (1 failed)")) {
				t.Errorf("usage examples %d, first %+v; messages %s", len(ex), ex[0], msgs.String())
			}
		})
	}
}

func TestBiEncoderExampleChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*biencoder.TrainConfig)
		want string
	}{
		{"negative synthetic", func(c *biencoder.TrainConfig) { c.Split.Synthetic = -1 }, "-synthetic -1"},
		{"llm without synthetic", func(c *biencoder.TrainConfig) { c.Split.SyntheticLLM = "http://x/v1" }, "need -synthetic N"},
		{"llm without model", func(c *biencoder.TrainConfig) { c.Split.Synthetic, c.Split.SyntheticLLM = 2, "http://x/v1" }, "give both"},
		{"usage with negatives file", func(c *biencoder.TrainConfig) { c.Split.Usage, c.Training.Negatives = "u.jsonl", "n.jsonl" }, "-usage: not with -negatives"},
		{"usage with q2q", func(c *biencoder.TrainConfig) {
			c.Split.Usage, c.Model.Objective = "u.jsonl", biencoder.ObjectiveQuery2Query
		}, "not with -objective query2query"},
		{"missing log", func(c *biencoder.TrainConfig) { c.Split.Usage = "/nonexistent/usage.jsonl" }, "-usage: usage log: open /nonexistent/usage.jsonl"},
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
