package export_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
)

// loraTol bounds the max abs difference between a LoRA model's embeddings (adapters applied
// in the graph) and those of its merged export, or of PEFT applying the exported adapter.
const loraTol = 1e-5

var loraTexts = []string{"get the weather forecast for a city", "send an email", "book a flight and a hotel in Paris",
	"translate text into french", "list the files in a folder"}

// loraModel returns a tiny bi-encoder trained with LoRA on targets as export loads a run
// (adapters merged, Model.Adapter set), its adapters given random values, and the embeddings
// of loraTexts by each tower (query, tool) with the adapters applied in the graph.
func loraModel(t *testing.T, be compute.Backend, separate bool, targets []string, seed uint64) (*export.Model, [2][][]float32) {
	t.Helper()
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := exporttest.Config(exporttest.Options{Separate: separate}, tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Encoder = cfg.Encoder.WithPooler(false)
	cfg.LoRA = &encoder.LoRA{Rank: 4, Alpha: 12, Targets: targets}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(seed))
	for i, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
		if err := cfg.Encoder.Init(encoder.In(store.RootScope(), cfg.TowerBase(tower)), seed+uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	e := &biencoder.Embedder{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 4}
	for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
		if _, err := e.Embed(tower, loraTexts[:1]); err != nil { // creates the adapters: A random, B zeros
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(seed, 2))
	for v := range store.IterVariables() {
		if strings.HasSuffix(v.Path(), "/lora_B/weight") {
			d := make([]float32, v.Shape().Size())
			for i := range d {
				d[i] = float32(r.NormFloat64() * 0.3)
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(d, v.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var adapted [2][][]float32
	for i, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
		if adapted[i], err = e.Embed(tower, loraTexts); err != nil {
			t.Fatal(err)
		}
	}
	if e.Adapter, err = e.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	return export.FromEmbedder(e), adapted
}

func maxAbsDiff(t *testing.T, a, b [][]float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d embeddings, want %d", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		if len(a[i]) != len(b[i]) {
			t.Fatalf("embedding %d: dimension %d, want %d", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// tensorNames lists the tensors (name and shape) of every safetensors file under dir, by
// path relative to dir.
func tensorNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".safetensors") {
			return err
		}
		f, err := safetensors.Open(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, n := range f.Names() {
			_, dims, err := f.Float32(n)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(dims)
			out = append(out, rel+":"+n+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestLoRAExportMerged: a LoRA bi-encoder exported merged (the default) has the layout of a
// full fine-tune (the same files and tensors as the export of the model without LoRA), and the
// export, loaded back, embeds within loraTol of the model with its adapters applied.
func TestLoRAExportMerged(t *testing.T) {
	be := goBackend(t)
	for _, c := range []struct {
		name     string
		separate bool
		targets  []string
	}{
		{"shared query,value", false, []string{"query", "value"}},
		{"shared all", false, []string{"query", "key", "value", "dense"}},
		{"separate towers", true, []string{"value", "dense"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, adapted := loraModel(t, be, c.separate, c.targets, 11)
			out := filepath.Join(t.TempDir(), "merged")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			plain, err := exporttest.BiEncoder(exporttest.Options{Separate: c.separate}, be, 3)
			if err != nil {
				t.Fatal(err)
			}
			ref := filepath.Join(t.TempDir(), "plain")
			if _, err := export.Export(plain, export.Options{Format: export.FormatHF, Out: ref}); err != nil {
				t.Fatal(err)
			}
			if got, want := files(t, out), files(t, ref); !slices.Equal(got, want) {
				t.Errorf("merged export files %v, a full fine-tune's %v", got, want)
			}
			if got, want := tensorNames(t, out), tensorNames(t, ref); !slices.Equal(got, want) {
				t.Errorf("merged export tensors\n%v\nwant a full fine-tune's\n%v", got, want)
			}
			for i, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				dir := out
				if c.separate {
					dir = filepath.Join(out, tower)
				}
				back, err := export.Open(context.Background(), dir, be)
				if err != nil {
					t.Fatal(err)
				}
				got, err := back.Embed(tower, loraTexts)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(t, got, adapted[i]); d > loraTol {
					t.Errorf("%s tower: the merged export embeds %g (max abs) from the adapted model, want <= %g", tower, d, loraTol)
				}
			}
		})
	}
}

// files lists the files under dir (relative paths), manifest.json left out.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != export.ManifestFile {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestLoRAExportErrors: what an adapter export refuses.
func TestLoRAExportErrors(t *testing.T) {
	be := goBackend(t)
	shared, _ := loraModel(t, be, false, []string{"query"}, 5)
	separate, _ := loraModel(t, be, true, []string{"query"}, 5)
	plain, err := exporttest.BiEncoder(exporttest.Options{}, be, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		m      *export.Model
		format string
		mode   string
		want   string
	}{
		{"unknown mode", shared, export.FormatHF, "peft", `lora "peft": want merged or adapter`},
		{"onnx", shared, export.FormatONNX, export.LoRAAdapter, "-format hf"},
		{"separate towers", separate, export.FormatHF, export.LoRAAdapter, "separate query and tool towers"},
		{"no LoRA", plain, export.FormatHF, export.LoRAAdapter, "not trained with LoRA"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := export.Export(c.m, export.Options{Format: c.format, Out: out, LoRA: c.mode})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused export left %s", out)
			}
		})
	}
}

// peftPython returns a python3 with torch, sentence-transformers and peft ($TOOLRET_PYTHON,
// then toolret's venv), or skips the test.
func peftPython(t *testing.T) string {
	t.Helper()
	var tried []string
	home, _ := os.UserHomeDir()
	for _, py := range []string{os.Getenv("TOOLRET_PYTHON"), filepath.Join(home, ".cache/toolret/venv/bin/python")} {
		if py == "" {
			continue
		}
		cmd := exec.Command(py, "-c", "import torch, peft, sentence_transformers")
		cmd.Env = pythonEnv()
		if err := cmd.Run(); err == nil {
			return py
		}
		tried = append(tried, py)
	}
	t.Skipf("no python with torch, peft and sentence-transformers (tried %s; pip install peft sentence-transformers)", strings.Join(tried, ", "))
	return ""
}

// TestLoRAExportPEFT: an adapter export is a PEFT adapter directory (adapter_config.json,
// adapter_model.safetensors with PEFT's names) beside the base model in base/ (the weights
// before the merge, as an hf export); PEFT (PeftModel.from_pretrained) and
// sentence-transformers (load_adapter) load it, every adapted module gets its weights, and
// both embed within loraTol of toolret's model with its adapters applied.
func TestLoRAExportPEFT(t *testing.T) {
	py := peftPython(t)
	be := goBackend(t)
	m, adapted := loraModel(t, be, false, []string{"query", "value", "dense"}, 7)
	out := filepath.Join(t.TempDir(), "adapter")
	man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out, LoRA: export.LoRAAdapter})
	if err != nil {
		t.Fatal(err)
	}
	if got := man.Towers["model"]; got != export.LoRABaseDir {
		t.Errorf("manifest towers %v, want the model in %s", man.Towers, export.LoRABaseDir)
	}
	var cfg map[string]any
	readJSON(t, filepath.Join(out, export.AdapterConfigFile), &cfg)
	if cfg["peft_type"] != "LORA" || cfg["r"] != 4.0 || cfg["lora_alpha"] != 12.0 || cfg["base_model_name_or_path"] != filepath.Join(out, export.LoRABaseDir) {
		t.Errorf("adapter_config.json %v", cfg)
	}
	names := tensorNames(t, out)
	wantName := export.AdapterWeightsFile + ":base_model.model.encoder.layer.0.attention.self.query.lora_A.weight[4,32]"
	if !slices.Contains(names, wantName) {
		t.Errorf("adapter tensors %v lack %s", names, wantName)
	}
	nAdapted := 0
	for _, n := range names {
		if strings.HasPrefix(n, export.AdapterWeightsFile+":") && strings.Contains(n, ".lora_B.") {
			nAdapted++
		}
	}
	if want := 2 * (2 + 3); nAdapted != want { // 2 layers × (query, value + 3 dense)
		t.Errorf("%d adapted modules in the adapter, want %d", nAdapted, want)
	}

	b, _ := json.Marshal(map[string]any{"texts": loraTexts})
	rp := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(rp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "../scripts/export/peft_reference.py", out, rp)
	cmd.Env = append(pythonEnv(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("peft_reference.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		PEFT    [][]float32 `json:"peft"`
		ST      [][]float32 `json:"st"`
		Adapted int         `json:"adapted_modules"`
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if got.Adapted != nAdapted {
		t.Errorf("PEFT loaded weights into %d LoRA modules, want %d\n%s", got.Adapted, nAdapted, stderr.String())
	}
	// The shared tower as sentence-transformers runs it: the tool length (64), no prompt.
	for name, e := range map[string][][]float32{"peft": got.PEFT, "sentence-transformers": got.ST} {
		d := maxAbsDiff(t, e, adapted[1])
		t.Logf("%s: max abs diff %g", name, d)
		if d > loraTol {
			t.Errorf("%s with the adapter embeds %g (max abs) from toolret's adapted model, want <= %g", name, d, loraTol)
		}
	}
}
