package toolret_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
)

// tinyHead sets a head kind's shared settings to a tiny encoder trained for two steps.
func tinyHead(h *runs.Head, dir, retriever string) {
	h.RunDir, h.Retriever, h.Quiet, h.Stdout, h.Stderr = dir, retriever, true, io.Discard, io.Discard
	h.Layers, h.Hidden, h.Heads, h.MaxSteps, h.Test = 1, 32, 2, 2, ""
}

// TestResumeEveryKind trains every built-in kind for two steps through toolret.Train (the
// later stages over one tiny bi-encoder) and checks, per kind, the library's resume:
// run.json records the typed configuration, a resume changing -lr is refused naming it, an
// unchanged resume (the caller's configuration, or RunConfig's) continues, and a run made
// before run.json held the configuration (args only) resumes and refuses the same way.
func TestResumeEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	be := filepath.Join(dir, "biencoder")
	// Each kind's tiny configuration into run (the later stages over the bi-encoder be), and
	// its learning rate.
	for _, tc := range []struct {
		kind string
		cfg  func(run string) any
		lr   func(cfg any) *float64
	}{
		{biencoder.Kind, func(run string) any {
			c := biencoder.DefaultTrainConfig()
			c.RunDir, c.Quiet, c.Stdout, c.Stderr = run, true, io.Discard, io.Discard
			c.Model.Layers, c.Model.Hidden, c.Model.Heads, c.Model.VocabSize = 1, 32, 2, 1200
			c.Training.Batch, c.Training.MaxSteps, c.Split.Test = 16, 2, ""
			return &c
		}, func(c any) *float64 { return &c.(*biencoder.TrainConfig).Training.LR }},
		{crossencoder.Kind, func(run string) any {
			c := crossencoder.DefaultTrainConfig()
			tinyHead(&c.Head, run, be)
			c.MaxLen, c.Depth, c.Negatives, c.DevMax = 64, 10, 2, 10
			return &c
		}, func(c any) *float64 { return &c.(*crossencoder.TrainConfig).LR }},
		{classifier.Kind, func(run string) any {
			c := classifier.DefaultTrainConfig()
			tinyHead(&c.Head, run, "")
			c.Kind, c.Batch = classifier.KindMLC, 16
			return &c
		}, func(c any) *float64 { return &c.(*classifier.TrainConfig).LR }},
		{refiner.Kind, func(run string) any {
			c := refiner.DefaultTrainConfig()
			tinyHead(&c.Head, run, be)
			c.N, c.Depth, c.Batch = 8, 10, 16
			return &c
		}, func(c any) *float64 { return &c.(*refiner.TrainConfig).LR }},
		{colt.Kind, func(run string) any {
			c := colt.DefaultTrainConfig()
			c.RunDir, c.Retriever, c.Quiet, c.Stdout, c.Stderr = run, be, true, io.Discard, io.Discard
			c.Epochs = 1
			return &c
		}, func(c any) *float64 { return &c.(*colt.TrainConfig).LR }},
		{pretrain.Kind, func(run string) any {
			c := pretrain.DefaultTrainConfig()
			c.RunDir, c.Quiet, c.Stderr = run, true, io.Discard
			c.Layers, c.Hidden, c.Heads, c.VocabSize, c.MaxLen = 1, 32, 2, 1200, 32
			c.Batch, c.MaxSteps, c.DevMax = 16, 2, 10
			return &c
		}, func(c any) *float64 { return &c.(*pretrain.TrainConfig).LR }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			run := filepath.Join(dir, tc.kind)
			if tc.kind == biencoder.Kind {
				run = be
			}
			ctx := context.Background()
			first, err := toolret.Train(ctx, tc.kind, tc.cfg(run))
			if err != nil {
				t.Fatal(err)
			}
			// (a) run.json records the typed configuration, -lr as trained.
			m, err := rundir.Read(run)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal(m.Config, &rec); err != nil || len(rec) == 0 {
				t.Fatalf("run.json config %s: %v", m.Config, err)
			}
			recorded, err := toolret.RunConfig(run)
			if err != nil {
				t.Fatal(err)
			}
			lr := *tc.lr(recorded)
			if lr <= 0 || m.Args["lr"] == "" {
				t.Fatalf("recorded lr %v, args %v", lr, m.Args)
			}
			resume := func(change bool, from any) error {
				t.Helper()
				cfg := from
				if cfg == nil {
					cfg = tc.cfg(run)
				}
				setOperational(cfg, run)
				if change {
					*tc.lr(cfg) = lr * 2
				}
				res, err := toolret.Train(ctx, tc.kind, cfg)
				if err == nil && res.Summary.Steps != first.Summary.Steps {
					t.Errorf("resumed run: %d steps, first %d", res.Summary.Steps, first.Summary.Steps)
				}
				return err
			}
			check := func(what string) {
				t.Helper()
				// (b) A changed -lr is refused, naming it with both values.
				err := resume(true, nil)
				if want := "lr " + strconv.FormatFloat(lr*2, 'g', -1, 64) + " != recorded " + strconv.FormatFloat(lr, 'g', -1, 64); err == nil || !strings.Contains(err.Error(), want) ||
					!strings.Contains(err.Error(), "refused, the configuration differs from the run's") {
					t.Errorf("%s: resume with another lr: %v, want an error containing %q", what, err, want)
				}
				// (c) The same configuration, or the recorded one, continues.
				if err := resume(false, nil); err != nil {
					t.Errorf("%s: resume: %v", what, err)
				}
				again, err := toolret.RunConfig(run)
				if err != nil {
					t.Fatal(err)
				}
				if err := resume(false, again); err != nil {
					t.Errorf("%s: resume with RunConfig's configuration: %v", what, err)
				}
			}
			check("typed run.json")
			// A run made before run.json held the configuration: its args migrate.
			m.Config = nil
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(run, rundir.MetaFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			check("args-only run.json")
		})
	}
}

// setOperational sets the operational fields of a kind's configuration (in runs.Head for the
// head kinds), which RunConfig leaves zero: RunDir, Resume, Quiet and the writers.
func setOperational(cfg any, dir string) {
	v := reflect.ValueOf(cfg).Elem()
	v.FieldByName("RunDir").SetString(dir)
	v.FieldByName("Resume").SetBool(true)
	v.FieldByName("Quiet").SetBool(true)
	for _, w := range []string{"Stdout", "Stderr"} {
		if f := v.FieldByName(w); f.IsValid() {
			f.Set(reflect.ValueOf(io.Discard))
		}
	}
}
