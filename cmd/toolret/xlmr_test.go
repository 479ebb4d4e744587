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
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/crossencoder"
)

// xlmrFixture is the tiny XLM-RoBERTa sentence-transformers directory of
// scripts/parity/make_xlmr_fixture.py, with its reference embeddings.
const xlmrFixture = "../../models/xlmroberta/testdata"

// TestXLMRobertaEndToEnd runs the commands on the tiny XLM-RoBERTa (issue 56): eval -model by
// directory and by hub id rank alike; train biencoder -init fine-tunes it (the run keeps
// model_type xlm-roberta and exports), train crossencoder -init too (one token type); export -model -format hf writes a directory whose
// embeddings are still sentence-transformers' (within 1e-5); a model_type still unsupported
// is refused naming it and the supported ones, xlm-roberta among them. With the reference venv,
// sentence-transformers loads the fine-tuned export and embeds as toolret does.
func TestXLMRobertaEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	src := filepath.Join(xlmrFixture, "tiny")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	id, _ := hub.ParseID("toolret-test/tiny-xlmr")
	if _, err := hub.Import(cache, id, "", "main", src); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
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

	// eval -model, by directory and by hub id: the same rankings.
	byDir, byID := filepath.Join(dir, "dir.trec"), filepath.Join(dir, "id.trec")
	toolret(0, "eval", "-model", src, "-save-run", byDir)
	toolret(0, "eval", "-model", "toolret-test/tiny-xlmr", "-save-run", byID)
	a, err := os.ReadFile(byDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(byID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("eval -model: the directory's rankings (%d bytes) differ from the hub id's (%d bytes)", len(a), len(b))
	}

	// export -model -format hf: the written model embeds as sentence-transformers does.
	out := filepath.Join(dir, "export")
	toolret(0, "export", "-model", src, "-format", "hf", "-out", out)
	var e struct {
		Texts []string    `json:"texts"`
		Emb   [][]float64 `json:"embeddings"`
	}
	raw, err := os.ReadFile(filepath.Join(xlmrFixture, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	embed := func(ref string, tower ...string) [][]float32 {
		t.Helper()
		m, err := export.Open(context.Background(), ref, be)
		if err != nil {
			t.Fatal(err)
		}
		if mt := m.Towers[0].Encoder.ModelType(); mt != "xlm-roberta" {
			t.Fatalf("%s: encoder %s, want xlm-roberta", ref, mt)
		}
		tw := biencoder.QueryTower
		if len(tower) > 0 {
			tw = tower[0]
		}
		v, err := m.Embed(tw, e.Texts)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	worst := 0.0
	for i, row := range embed(out) {
		for j, v := range row {
			worst = math.Max(worst, math.Abs(float64(v)-e.Emb[i][j]))
		}
	}
	t.Logf("export -format hf of the fixture: max |toolret - sentence-transformers| = %.2e", worst)
	if worst > 1e-5 {
		t.Errorf("the exported model's embeddings differ from sentence-transformers' by %.2e (> 1e-5)", worst)
	}

	// train biencoder -init: a few steps move the embeddings; the run exports.
	runDir := filepath.Join(dir, "run")
	toolret(0, "train", "biencoder", "-init", src, "-run", runDir, "-max-steps", "3", "-batch", "8", "-lr", "1e-3",
		"-query-len", "24", "-tool-len", "48", "-test", "", "-dev", "0.85", "-seed", "3", "-quiet")
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
	if c.Encoder["model_type"] != "xlm-roberta" || c.Encoder["type_vocab_size"] != 1.0 || c.Encoder["pad_token_id"] != 1.0 {
		t.Errorf("run encoder %v: want model_type xlm-roberta, type_vocab_size 1, pad_token_id 1", c.Encoder)
	}
	trained := filepath.Join(dir, "trained")
	toolret(0, "export", "-model", runDir, "-format", "hf", "-out", trained)
	before, after := embed(src), embed(trained)
	moved := false
	for i := range before {
		for j := range before[i] {
			moved = moved || before[i][j] != after[i][j]
		}
	}
	if !moved {
		t.Error("three steps at lr 1e-3 left every embedding where -init put it")
	}
	// sentence-transformers loads the fine-tuned export and embeds as toolret's tool tower
	// does (its one max_seq_length is the tool length), when the reference venv of
	// scripts/install-st.sh is installed.
	if py := stPython(); py == "" {
		t.Log("no python with sentence_transformers (scripts/install-st.sh): the trained export is not checked against it")
	} else {
		tools := embed(trained, biencoder.ToolTower)
		worst := 0.0
		for i, row := range stEmbed(t, py, trained, e.Texts) {
			for j, v := range row {
				worst = math.Max(worst, math.Abs(v-float64(tools[i][j])))
			}
		}
		t.Logf("trained export: max |toolret - SentenceTransformer(export)| = %.2e", worst)
		if worst > 1e-5 {
			t.Errorf("sentence-transformers embeds the trained export %.2e away from toolret (> 1e-5)", worst)
		}
	}

	// train crossencoder -init: XLM-RoBERTa's one token type takes pairs (<s> q </s></s> t </s>,
	// every token type 0), as bge-reranker-v2-m3's does.
	ce := filepath.Join(dir, "ce")
	toolret(0, "train", "crossencoder", "-init", src, "-first-stage", runDir, "-run", ce, "-depth", "10", "-max-len", "48",
		"-batch", "8", "-max-steps", "3", "-lr", "1e-3", "-dev-max", "10", "-test", "", "-quiet")
	raw, err = os.ReadFile(filepath.Join(ce, crossencoder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Encoder["model_type"] != "xlm-roberta" || c.Encoder["type_vocab_size"] != 1.0 {
		t.Errorf("cross-encoder run encoder %v: want model_type xlm-roberta, type_vocab_size 1", c.Encoder)
	}

	// A model_type toolret does not implement is refused, naming it and the supported ones.
	bad := filepath.Join(dir, "llama")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(bad, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(bad, "config.json"), []byte(`{"model_type": "llama", "hidden_size": 32}`), 0o644)
	msg := toolret(2, "eval", "-model", bad)
	if !strings.Contains(msg, `model_type "llama" not supported`) || !strings.Contains(msg, "xlm-roberta") {
		t.Errorf("eval -model of a llama checkpoint: %q, want it refused naming llama and the supported types (xlm-roberta among them)", msg)
	}
}

// stPython returns the python of the reference venv (scripts/install-st.sh; $TOOLRET_PYTHON
// first) when it imports sentence_transformers, else "".
func stPython() string {
	for _, py := range []string{os.Getenv("TOOLRET_PYTHON"), filepath.Join(os.Getenv("HOME"), ".cache", "toolret", "venv", "bin", "python")} {
		if py != "" && exec.Command(py, "-c", "import sentence_transformers").Run() == nil {
			return py
		}
	}
	return ""
}

// stEmbed encodes texts with SentenceTransformer(dir) on the CPU.
func stEmbed(t *testing.T, py, dir string, texts []string) [][]float64 {
	t.Helper()
	b, _ := json.Marshal(texts)
	code := `import json, sys
from sentence_transformers import SentenceTransformer
m = SentenceTransformer(sys.argv[1], device="cpu")
print(json.dumps(m.encode(json.loads(sys.argv[2]), convert_to_numpy=True).tolist()))`
	cmd := exec.Command(py, "-c", code, dir, string(b))
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
