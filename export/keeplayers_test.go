package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/safetensors"
)

func TestParseLayers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  string
	}{
		{"0,2,4", []int{0, 2, 4}, ""},
		{" 1, 3", []int{1, 3}, ""},
		{"5", []int{5}, ""},
		{"", nil, "want a layer index"},
		{"a", nil, "want a layer index"},
		{"-1", nil, "want a layer index"},
		{"2,2", nil, "strictly increasing"},
		{"3,1", nil, "strictly increasing"},
	} {
		got, err := export.ParseLayers(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseLayers(%q): %v, want an error containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseLayers(%q) = %v, %v, want %v", c.in, got, err, c.want)
		}
		if s := export.FormatLayers(got); s != strings.ReplaceAll(strings.TrimSpace(c.in), " ", "") {
			t.Errorf("FormatLayers(%v) = %q", got, s)
		}
	}
}

var testLayer = regexp.MustCompile(`encoder\.layer\.(\d+)\.`)

// TestKeepLayersHF prunes tiny BERT, MPNet, DeBERTa-v2 and XLM-RoBERTa checkpoints: layer j of the output
// is byte for byte layer keep[j] of the input, every other tensor is kept, config.json says
// the new depth, the result loads and embeds, and keeping every layer changes no embedding.
func TestKeepLayersHF(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"book a flight to Paris", "what is the weather"}
	for _, arch := range []string{"bert", "mpnet", "deberta-v2", "xlm-roberta"} {
		t.Run(arch, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			if err := exporttest.WriteHF(src, exporttest.Options{Layers: 4, Arch: arch}, be, 7); err != nil {
				t.Fatal(err)
			}
			fs, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			keep := []int{1, 3}
			out := filepath.Join(dir, "out")
			if err := export.KeepLayersHF(out, src, keep); err != nil {
				t.Fatal(err)
			}
			fo, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, name := range fs.Names() {
				m := testLayer.FindStringSubmatch(name)
				if m == nil {
					want++
					continue
				}
				l, _ := strconv.Atoi(m[1])
				j := slices.Index(keep, l)
				if j < 0 {
					continue
				}
				want++
				renamed := strings.Replace(name, m[0], fmt.Sprintf("encoder.layer.%d.", j), 1)
				a, _, err := fs.Raw(name)
				if err != nil {
					t.Fatal(err)
				}
				b, _, err := fo.Raw(renamed)
				if err != nil {
					t.Fatalf("layer %d -> %d: %v", l, j, err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s: not the bytes of %s", renamed, name)
				}
			}
			for _, name := range fs.Names() {
				if testLayer.FindStringSubmatch(name) == nil {
					a, _, _ := fs.Raw(name)
					if b, _, err := fo.Raw(name); err != nil || !bytes.Equal(a, b) {
						t.Errorf("%s: not kept as it was (%v)", name, err)
					}
				}
			}
			if got := len(fo.Names()); got != want {
				t.Errorf("%d tensors, want %d", got, want)
			}
			var cfg map[string]any
			raw, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &cfg); err != nil || cfg["num_hidden_layers"] != float64(2) {
				t.Errorf("config.json num_hidden_layers %v (%v)", cfg["num_hidden_layers"], err)
			}
			m, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Embed("query", texts); err != nil {
				t.Fatal(err)
			}

			all := filepath.Join(dir, "all")
			if err := export.KeepLayersHF(all, src, []int{0, 1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			ms, err := export.LoadHF(src, be)
			if err != nil {
				t.Fatal(err)
			}
			ma, err := export.LoadHF(all, be)
			if err != nil {
				t.Fatal(err)
			}
			es, err := ms.Embed("query", texts)
			if err != nil {
				t.Fatal(err)
			}
			ea, err := ma.Embed("query", texts)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := m.Embed("query", texts)
			if err != nil {
				t.Fatal(err)
			}
			diff := 0.0
			for i := range es {
				for k := range es[i] {
					if d := math.Abs(float64(es[i][k] - ea[i][k])); d != 0 {
						t.Fatalf("every layer kept: embedding %d differs by %g", i, d)
					}
					diff = max(diff, math.Abs(float64(es[i][k]-ep[i][k])))
				}
			}
			if diff == 0 {
				t.Error("two of four layers kept: the embeddings did not change")
			}
		})
	}
}

func TestKeepLayersHFErrors(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 2}, be, 1); err != nil {
		t.Fatal(err)
	}
	noDepth := filepath.Join(dir, "nodepth")
	if err := os.MkdirAll(noDepth, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noDepth, "config.json"), []byte(`{"model_type": "bert"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt")
	if err := os.MkdirAll(corrupt, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, "model.safetensors"), []byte("not a safetensors file"), 0o644); err != nil {
		t.Fatal(err)
	}
	deeper := filepath.Join(dir, "deeper") // config says 3 layers, the weights have 2
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deeper, "model.safetensors"), w, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deeper, "config.json"), bytes.Replace(cfg, []byte(`"num_hidden_layers": 2`), []byte(`"num_hidden_layers": 3`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		src  string
		keep []int
		out  string
		want string
	}{
		{src, nil, "", "no layer given"},
		{src, []int{2}, "", "layer 2: " + src + " has layers 0-1"},
		{src, []int{1, 0}, "", "strictly increasing"},
		{src, []int{0}, src, "exists"},
		{filepath.Join(dir, "missing"), []int{0}, "", "config.json"},
		{noDepth, []int{0}, "", "no num_hidden_layers"},
		{corrupt, []int{0}, "", "model.safetensors"},
		{deeper, []int{0, 2}, "", "no tensor of layer 2"},
	} {
		out := c.out
		if out == "" {
			out = filepath.Join(dir, fmt.Sprintf("out%d", i))
		}
		err := export.KeepLayersHF(out, c.src, c.keep)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: KeepLayersHF(%s, %v): %v, want an error containing %q", i, c.src, c.keep, err, c.want)
		}
		if c.out == "" {
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%d: %s written after an error", i, out)
			}
		}
	}
}
