package traincmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
)

// TestBiencoderInitMPNet fine-tunes a bi-encoder from an MPNet checkpoint (a tiny one written as
// sentence-transformers lays out all-mpnet-base-v2): the run keeps model_type mpnet, and the
// trained model loads and embeds differently from where it started.
func TestBiencoderInitMPNet(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hf := filepath.Join(dir, "mpnet")
	if err := exporttest.WriteHF(hf, exporttest.Options{Arch: "mpnet"}, be, 5); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := biencoderCmd([]string{"-init", hf, "-run", run, "-max-steps", "3", "-batch", "8", "-lr", "1e-3", "-test", "", "-dev", "0.85",
		"-seed", "3", "-quiet"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(run, biencoder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Encoder map[string]any `json:"encoder"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Encoder["model_type"] != "mpnet" {
		t.Errorf("stored encoder model_type %v, want mpnet", c.Encoder["model_type"])
	}
	texts := []string{"find the weather in Paris", "send an email to Bob"}
	embed := func(ref string) [][]float32 {
		m, err := export.Open(context.Background(), ref, be)
		if err != nil {
			t.Fatal(err)
		}
		if mt := m.Towers[0].Encoder.ModelType(); mt != "mpnet" {
			t.Fatalf("%s: encoder %s, want mpnet", ref, mt)
		}
		e, err := m.Embed(biencoder.QueryTower, texts)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	before, after := embed(hf), embed(run)
	moved := false
	for i := range before {
		for j := range before[i] {
			moved = moved || before[i][j] != after[i][j]
		}
	}
	if !moved {
		t.Error("three steps at lr 1e-3 left every query embedding where -init put it")
	}
}
