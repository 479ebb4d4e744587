package biencoder

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/rundir"
)

// TestRecordedConfigFormat1 migrates a format-1 run.json (flags only, made before
// -pad-multiple and -tool-queries existed) to the typed configuration.
func TestRecordedConfigFormat1(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "run-format1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.MetaFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RecordedConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultTrainConfig()
	want.RunDir, want.Resume = dir, true
	want.Split.Dev = 0.2
	want.Model.Arch, want.Model.Layers, want.Model.Hidden, want.Model.Heads, want.Model.VocabSize = "bert", 1, 32, 2, 1200
	want.Model.Pooling, want.Model.Similarity, want.Model.Symmetric = "mean", "cosine", true
	want.Training.Batch, want.Training.Epochs, want.Training.LR, want.Training.Seed = 16, 3, 0.001, 7
	want.Training.PadMultiple = -1 // made before -pad-multiple: the tokenizer's buckets
	if !reflect.DeepEqual(got, want) {
		t.Errorf("migrated config:\n got %+v\nwant %+v", got, want)
	}
	if p, err := got.Training.Padding(); err != nil || p != PadTokenizer {
		t.Errorf("padding of a run made before -pad-multiple: %v, %v", p, err)
	}
	// Written again in format 2, the typed configuration reads back the same.
	m, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetConfig(got); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(dir, m); err != nil {
		t.Fatal(err)
	}
	again, err := RecordedConfig(dir)
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("format 2 round trip: %+v, %v", again, err)
	}
	if m, _ := rundir.Read(dir); m.Format != 2 {
		t.Errorf("format %d after Create, want 2", m.Format)
	}
}

func TestRecordedConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, meta, want string }{
		{"other kind", `{"format": 1, "kind": "colt", "args": {}}`, "a colt run, not a bi-encoder run"},
		{"bad flag", `{"format": 1, "kind": "biencoder", "args": {"epochs": "many"}}`, `recorded -epochs "many"`},
		{"bad config", `{"format": 2, "kind": "biencoder", "config": {"training": {"epochs": "x"}}}`, "run.json config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, rundir.MetaFile), []byte(tc.meta), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := RecordedConfig(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckResume: a resumption names every field that differs from the recorded run; the
// operational fields and the auto fields left at zero do not count.
func TestCheckResume(t *testing.T) {
	rec := DefaultTrainConfig()
	rec.RunDir, rec.Training.LR, rec.Model.Pooling, rec.Model.Similarity, rec.Model.Arch, rec.Split.Dev = "runs/x", 2e-5, "cls", "cosine", "bert", 0.1
	rec.Training.Epochs = 4

	same := DefaultTrainConfig()
	same.RunDir, same.Resume, same.Quiet, same.Backend, same.Devices = "runs/x", true, true, "go", 2
	got, err := same.CheckResume(rec)
	if err != nil {
		t.Fatalf("auto and operational fields: %v", err)
	}
	if got.Training.LR != 2e-5 || got.Model.Pooling != "cls" || !got.Quiet || got.Backend != "go" || got.Devices != 2 || !got.Resume {
		t.Errorf("resumed config %+v: want the recorded one with the given operational fields", got)
	}

	diff := same
	diff.Training.Epochs, diff.Training.LR, diff.Model.Pooling, diff.Split.Test = 3, 1e-4, "mean", ""
	_, err = diff.CheckResume(rec)
	want := `resume runs/x: refused, the configuration differs from the run's: test "" != recorded "test", pooling "mean" != recorded "cls", epochs 3 != recorded 4, lr 0.0001 != recorded 2e-05`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
