package export_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
)

// TestOpen opens one model by each kind of reference (HF directory, run, hub id in the cache)
// and refuses what is neither.
func TestOpen(t *testing.T) {
	be := goBackend(t)
	tmp := t.TempDir()
	hf, cache, _, err := exporttest.HubModel(tmp, "toolret-test/tiny", exporttest.Options{}, be, 3)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(tmp, "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	texts := sampleTexts(t, 8)
	var ref [][]float32
	for _, c := range []struct{ ref, want string }{
		{hf, ""}, {"toolret-test/tiny", ""}, {"toolret-test/tiny@main", ""}, {run, ""},
		{"toolret-test/absent", "make models"},
		{"toolret-test/tiny@v2", "make models"},
		{filepath.Join(tmp, "nope"), "neither"},
	} {
		t.Run(c.ref, func(t *testing.T) {
			m, err := export.Open(context.Background(), c.ref, be)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != export.KindBiEncoder {
				t.Fatalf("kind %s", m.Kind)
			}
			emb, err := m.Embed(biencoder.QueryTower, texts)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = emb
			} else if d := maxDiff(t, ref, emb); d > 1e-6 {
				t.Errorf("embeddings differ from the HF directory's by %.2e", d)
			}
		})
	}
}

// TestPrompts checks that query and tool prompts are put before the texts, recorded in an
// index (manifest and the towers' sentence-transformers config) and read back by LoadHF.
func TestPrompts(t *testing.T) {
	be := goBackend(t)
	tmp := t.TempDir()
	hf := filepath.Join(tmp, "hf")
	if err := exporttest.WriteHF(hf, exporttest.Options{}, be, 5); err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadHF(hf, be)
	if err != nil {
		t.Fatal(err)
	}
	if m.QueryPrompt != "" || m.ToolPrompt != "" {
		t.Fatalf("prompts %q %q from a model without any", m.QueryPrompt, m.ToolPrompt)
	}
	q, d := "query: ", "passage: "
	if err := (export.Prompts{Query: &q, Tool: &d}).Apply(m); err != nil {
		t.Fatal(err)
	}
	ds, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "index")
	man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: out, Data: ds})
	if err != nil {
		t.Fatal(err)
	}
	if man.QueryPrompt != q || man.ToolPrompt != d {
		t.Errorf("manifest prompts %q %q", man.QueryPrompt, man.ToolPrompt)
	}
	qdir, err := man.TowerDir(out, biencoder.QueryTower)
	if err != nil {
		t.Fatal(err)
	}
	back, err := export.LoadHF(qdir, be)
	if err != nil {
		t.Fatal(err)
	}
	if back.QueryPrompt != q || back.ToolPrompt != d {
		t.Errorf("reloaded prompts %q %q", back.QueryPrompt, back.ToolPrompt)
	}
	plain, err := export.LoadHF(hf, be)
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct{ tower, prompt string }{{biencoder.QueryTower, q}, {biencoder.ToolTower, d}} {
		got, err := back.Embed(side.tower, []string{"find the weather"})
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Embed(side.tower, []string{side.prompt + "find the weather"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxDiff(t, got, want); diff > 1e-6 {
			t.Errorf("%s: prompted embedding differs from the prefixed text's by %.2e", side.tower, diff)
		}
		without, _ := plain.Embed(side.tower, []string{"find the weather"})
		if maxDiff(t, got, without) < 1e-4 {
			t.Errorf("%s: the prompt changed nothing", side.tower)
		}
	}
}

// TestOpenCorruptCache: a truncated safetensors blob in the hub cache is reported with the
// file's path, and a tokenizer of another model is refused.
func TestOpenCorruptCache(t *testing.T) {
	be := goBackend(t)
	tmp := t.TempDir()
	_, cache, snap, err := exporttest.HubModel(tmp, "toolret-test/corrupt", exporttest.Options{}, be, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	st := filepath.Join(snap, "model.safetensors")
	blob, err := filepath.EvalSymlinks(st)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blob, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err = export.Open(context.Background(), "toolret-test/corrupt", be)
	if err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("truncated weights: err = %v, want the file named", err)
	}

	other := filepath.Join(tmp, "other")
	if err := exporttest.WriteHF(other, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	// A vocabulary of another, smaller model: the last 150 tokens cut.
	b, err := os.ReadFile(filepath.Join(other, "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) < 200 {
		t.Skipf("test vocabulary has %d tokens: too small to cut", len(lines))
	}
	if err := os.WriteFile(filepath.Join(other, "vocab.txt"), []byte(strings.Join(lines[:len(lines)-150], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(other, "tokenizer.json"))
	if _, err := export.Open(context.Background(), other, be); err == nil || !strings.Contains(err.Error(), "not this model's") {
		t.Errorf("mismatched tokenizer: err = %v", err)
	}
}
