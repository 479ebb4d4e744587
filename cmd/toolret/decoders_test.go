package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/crossencoder"
)

// decoderE2E are the tiny decoder-based sentence-transformers directories of
// scripts/parity/make_qwen3_fixture.py (byte-level BPE, last-token pooling, an instruction
// query prompt, left padding) and make_gemma3_fixture.py (byte-fallback BPE, mean pooling, two
// Dense modules, query and document prompts), with their reference embeddings.
var decoderE2E = []struct {
	modelType, fixture string
	// modules are the module directories an hf export of it lists in modules.json after the
	// Transformer, in order.
	modules []string
	// queryLen and toolLen are the train biencoder lengths: the Qwen3 query prompt alone is 17
	// tokens.
	queryLen, toolLen string
	// causal: the model attends causally (a cross-encoder head over its first token is
	// refused).
	causal bool
}{
	{"qwen3", "../../models/qwen3/testdata", []string{"1_Pooling", "2_Normalize"}, "40", "48", true},
	{"gemma3_text", "../../models/gemma3/testdata", []string{"1_Pooling", "2_Dense", "3_Dense", "4_Normalize"}, "32", "48", false},
}

// TestDecoderEndToEnd runs the commands on the tiny Qwen3 and EmbeddingGemma models (issue 56):
// eval -model ranks with them; export -model -format hf writes a directory (tokenizer.json,
// prompts, pooling, EmbeddingGemma's Dense modules) whose embeddings, from toolret's own
// tokenization of the queries and documents with the model's prompts, are
// sentence-transformers' within 1e-5; train biencoder -init fine-tunes each (the run keeps the
// model_type, the embeddings move, the export embeds as toolret does under
// sentence-transformers when the reference venv is present); train crossencoder -init refuses
// the default pooling (no pooler layer), then trains EmbeddingGemma (bidirectional) with
// -pooling cls and refuses it for Qwen3 (causal: its first token sees itself alone).
func TestDecoderEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	py := stPython()
	for _, fx := range decoderE2E {
		t.Run(fx.modelType, func(t *testing.T) {
			src := filepath.Join(fx.fixture, "tiny")
			dir := t.TempDir()
			toolret := func(want int, args ...string) string {
				t.Helper()
				var buf bytes.Buffer
				var code int
				out := capture(t, func() { code = run(args, &buf) })
				out += buf.String()
				if code != want {
					t.Fatalf("toolret %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
				}
				return out
			}
			var e struct {
				Queries []string    `json:"queries"`
				Docs    []string    `json:"documents"`
				Emb     [][]float64 `json:"embeddings"`
			}
			raw, err := os.ReadFile(filepath.Join(fx.fixture, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if len(e.Emb) != len(e.Queries)+len(e.Docs) {
				t.Fatalf("expected.json: %d embeddings for %d queries and %d documents", len(e.Emb), len(e.Queries), len(e.Docs))
			}
			// embed returns the embeddings of the queries (query tower, query prompt) then of
			// the documents (tool tower, document prompt), batched as the commands batch.
			embed := func(ref string) [][]float32 {
				t.Helper()
				m, err := export.Open(context.Background(), ref, be)
				if err != nil {
					t.Fatal(err)
				}
				if mt := m.Towers[0].Encoder.ModelType(); mt != fx.modelType {
					t.Fatalf("%s: encoder %s, want %s", ref, mt, fx.modelType)
				}
				q, err := m.Embed(biencoder.QueryTower, e.Queries)
				if err != nil {
					t.Fatal(err)
				}
				d, err := m.Embed(biencoder.ToolTower, e.Docs)
				if err != nil {
					t.Fatal(err)
				}
				return append(q, d...)
			}
			maxDiff := func(a [][]float32, b [][]float64) float64 {
				t.Helper()
				if len(a) != len(b) {
					t.Fatalf("%d embeddings, want %d", len(a), len(b))
				}
				worst := 0.0
				for i := range a {
					if len(a[i]) != len(b[i]) {
						t.Fatalf("embedding %d: dimension %d, want %d", i, len(a[i]), len(b[i]))
					}
					for j, v := range a[i] {
						worst = math.Max(worst, math.Abs(float64(v)-b[i][j]))
					}
				}
				return worst
			}

			trec := filepath.Join(dir, "eval.trec")
			toolret(0, "eval", "-model", src, "-save-run", trec)
			if b, err := os.ReadFile(trec); err != nil || len(b) == 0 {
				t.Fatalf("eval -model wrote no run: %v", err)
			}

			if worst := maxDiff(embed(src), e.Emb); worst > 1e-5 {
				t.Errorf("the fixture's embeddings differ from sentence-transformers' by %.2e (> 1e-5)", worst)
			} else {
				t.Logf("the fixture, Go tokenization with prompts: max |toolret - sentence-transformers| = %.2e", worst)
			}
			out := filepath.Join(dir, "export")
			toolret(0, "export", "-model", src, "-format", "hf", "-out", out)
			worst := maxDiff(embed(out), e.Emb)
			t.Logf("export -format hf of the fixture: max |toolret - sentence-transformers| = %.2e", worst)
			if worst > 1e-5 {
				t.Errorf("the exported model's embeddings differ from sentence-transformers' by %.2e (> 1e-5)", worst)
			}
			checkDecoderExport(t, out, src, fx.modules)

			runDir := filepath.Join(dir, "run")
			toolret(0, "train", "biencoder", "-init", src, "-run", runDir, "-max-steps", "3", "-batch", "8", "-lr", "1e-3",
				"-query-len", fx.queryLen, "-tool-len", fx.toolLen, "-test", "", "-dev", "0.85", "-seed", "3", "-quiet")
			var c struct {
				Encoder map[string]any `json:"encoder"`
			}
			raw, err = os.ReadFile(filepath.Join(runDir, biencoder.ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			if c.Encoder["model_type"] != fx.modelType {
				t.Errorf("run encoder %v: want model_type %s", c.Encoder, fx.modelType)
			}
			trained := filepath.Join(dir, "trained")
			toolret(0, "export", "-model", runDir, "-format", "hf", "-out", trained)
			checkDecoderExport(t, trained, src, fx.modules)
			after := embed(trained)
			if moved := maxDiff(after, e.Emb); moved == 0 {
				t.Error("three steps at lr 1e-3 left every embedding where -init put it")
			} else {
				t.Logf("train biencoder -init, 3 steps: embeddings moved by up to %.2e", moved)
			}
			if py == "" {
				t.Log("no python with sentence_transformers (scripts/install-st.sh): the trained export is not checked against it")
			} else {
				worst := maxDiff(after, stEmbedPrompts(t, py, trained, e.Queries, e.Docs))
				t.Logf("trained export: max |toolret - SentenceTransformer(export) with its prompts| = %.2e", worst)
				if worst > 1e-5 {
					t.Errorf("sentence-transformers embeds the trained export %.2e away from toolret (> 1e-5)", worst)
				}
			}

			// No pooler layer: the cross-encoder's default pooling is refused. EmbeddingGemma
			// attends bidirectionally and trains with -pooling cls (its <bos> state); Qwen3
			// attends causally, its first token's state is of that token alone, and -pooling cls
			// is refused too (toolret has no head over the last token).
			ce := filepath.Join(dir, "ce")
			args := []string{"train", "crossencoder", "-init", src, "-first-stage", runDir, "-run", ce, "-depth", "10", "-max-len", "48",
				"-batch", "8", "-max-steps", "3", "-lr", "1e-3", "-dev-max", "10", "-test", "", "-quiet"}
			want := "-pooling cls"
			if fx.causal {
				want = "attends causally"
			}
			if msg := toolret(1, args...); !strings.Contains(msg, "no pooler layer") || !strings.Contains(msg, want) {
				t.Errorf("train crossencoder with the pooler: %q, want refused saying there is no pooler layer and %q", msg, want)
			}
			os.RemoveAll(ce)
			args = append(args, "-pooling", "cls")
			if fx.causal {
				if msg := toolret(1, args...); !strings.Contains(msg, "attends causally") || !strings.Contains(msg, "last token") {
					t.Errorf("train crossencoder -pooling cls: %q, want refused saying the encoder attends causally", msg)
				}
				return
			}
			toolret(0, args...)
			raw, err = os.ReadFile(filepath.Join(ce, crossencoder.ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			if c.Encoder["model_type"] != fx.modelType {
				t.Errorf("cross-encoder run encoder %v: want model_type %s", c.Encoder, fx.modelType)
			}
		})
	}
}

// checkDecoderExport checks an hf export of a decoder: modules.json lists the Transformer
// then modules (the Dense modules with their weights), and tokenizer.json,
// tokenizer_config.json and the prompts of config_sentence_transformers.json are src's.
func checkDecoderExport(t *testing.T, out, src string, modules []string) {
	t.Helper()
	var mods []struct {
		Path string `json:"path"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &mods); err != nil {
		t.Fatalf("%s/modules.json: %v", out, err)
	}
	var paths []string
	for _, m := range mods {
		paths = append(paths, m.Path)
	}
	if want := append([]string{""}, modules...); strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("%s/modules.json paths %q, want %q", out, paths, want)
	}
	for _, m := range modules {
		if strings.HasSuffix(m, "_Dense") {
			if _, err := os.Stat(filepath.Join(out, m, "model.safetensors")); err != nil {
				t.Errorf("dense module without weights: %v", err)
			}
		}
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("export wrote no %s: %v", f, err)
		}
	}
	prompts := func(dir string) map[string]string {
		var c struct {
			Prompts map[string]string `json:"prompts"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "config_sentence_transformers.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s/config_sentence_transformers.json: %v", dir, err)
		}
		return c.Prompts
	}
	got, want := prompts(out), prompts(src)
	for _, k := range []string{"query", "document"} {
		if got[k] != want[k] {
			t.Errorf("%s: prompt %q = %q, want %q", out, k, got[k], want[k])
		}
	}
}

// stEmbedPrompts encodes queries with the prompt named "query" and documents with the one
// named "document" (when the model has them) with SentenceTransformer(dir) on the CPU, in one
// batch each: the queries' embeddings then the documents'.
func stEmbedPrompts(t *testing.T, py, dir string, queries, docs []string) [][]float64 {
	t.Helper()
	q, _ := json.Marshal(queries)
	d, _ := json.Marshal(docs)
	code := `import json, sys
from sentence_transformers import SentenceTransformer
m = SentenceTransformer(sys.argv[1], device="cpu")
def enc(arg, name):
    texts = json.loads(arg)
    kw = {"prompt_name": name} if name in m.prompts else {}
    return m.encode(texts, batch_size=len(texts), convert_to_numpy=True, **kw).tolist()
print(json.dumps(enc(sys.argv[2], "query") + enc(sys.argv[3], "document")))`
	cmd := exec.Command(py, "-c", code, dir, string(q), string(d))
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SentenceTransformer(%s): %v\n%s", dir, err, stderr.String())
	}
	var v [][]float64
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("SentenceTransformer(%s): %v", dir, err)
	}
	return v
}
