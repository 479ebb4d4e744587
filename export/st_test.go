package export_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// stTol bounds the max abs difference between toolret's embeddings and those of the
// sentence-transformers reference (README, "Export"). Measured: 1.37e-6 (cls, relu, separate
// towers), 3.7e-7 (pooler), 1.7e-7 (mean).
const stTol = 2e-6

// torchPython returns a python3 that imports torch and numpy ($TOOLRET_PYTHON, then
// /usr/bin/python3, then python3 on $PATH), or skips the test.
func torchPython(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, py := range []string{os.Getenv("TOOLRET_PYTHON"), "/usr/bin/python3", "python3"} {
		if py == "" {
			continue
		}
		cmd := exec.Command(py, "-c", "import torch, numpy")
		cmd.Env = pythonEnv()
		if err := cmd.Run(); err == nil {
			return py
		}
		tried = append(tried, py)
	}
	t.Skipf("no python3 with torch and numpy (tried %s; apt-get install python3-torch)", strings.Join(tried, ", "))
	return ""
}

// pythonEnv is the environment without OPENBLAS_CORETYPE, which Debian's OpenBLAS rejects
// on some CPUs.
func pythonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
			env = append(env, kv)
		}
	}
	return env
}

// stEncode runs scripts/export/st_reference.py on dir; maxSeqLength > 0 sets
// model.max_seq_length first.
func stEncode(t *testing.T, py, dir string, texts []string, maxSeqLength int) [][]float32 {
	t.Helper()
	req := map[string]any{"texts": texts, "batch_size": 7}
	if maxSeqLength > 0 {
		req["max_seq_length"] = maxSeqLength
	}
	b, _ := json.Marshal(req)
	rp := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(rp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "../scripts/export/st_reference.py", dir, rp)
	cmd.Env = pythonEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("st_reference.py %s: %v\n%s", dir, err, stderr.String())
	}
	var res struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res.Embeddings
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestSentenceTransformersReference loads exported bi-encoders the way
// SentenceTransformer(DIR) does (scripts/export/st_reference.py: modules.json, Pooling, Dense,
// Normalize, max_seq_length, the WordPiece tokenizer and BertModel in PyTorch) and checks its
// embeddings against toolret's, with texts longer than the query and tool limits. A shared
// tower's max_seq_length is the tool length; queries reproduce toolret's with
// model.max_seq_length set to the query length recorded in config_sentence_transformers.json.
func TestSentenceTransformersReference(t *testing.T) {
	py := torchPython(t)
	be := goBackend(t)
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := sampleTexts(t, 30)
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	// Long texts: a query of 41-64 tokens (specials included) and tools of more than 64.
	var long string
	for _, w := range strings.Fields(d.Queries[0].Text + " " + d.Queries[1].Text + " " + d.Queries[2].Text) {
		if len(tok.Encode(long))+2 > 40 {
			break
		}
		long = strings.TrimSpace(long + " " + w)
	}
	if n := len(tok.Encode(long)) + 2; n <= 40 || n > 64 {
		t.Fatalf("the long query %q has %d tokens, want 41..64", long, n)
	}
	texts = append(texts, long, strings.Repeat(d.Tools[0].Text+" ", 4), strings.Repeat(d.Tools[5].Text+" ", 3))
	for _, tc := range []struct {
		name string
		o    exporttest.Options
	}{
		{"shared-mean-cosine", exporttest.Options{}},
		{"shared-pooler-cosine-gelunew", exporttest.Options{Pooling: encoder.PoolPooler, Act: "gelu_new"}},
		{"separate-cls-dot-relu", exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true, Act: "relu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(tc.o, be, 11)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "hf")
			man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				dir, err := man.TowerDir(out, tower)
				if err != nil {
					t.Fatal(err)
				}
				var sb struct {
					MaxSeqLength int `json:"max_seq_length"`
				}
				readJSON(t, filepath.Join(dir, "sentence_bert_config.json"), &sb)
				var cst struct {
					Toolret *struct {
						Query int `json:"query_max_seq_length"`
						Tool  int `json:"tool_max_seq_length"`
					} `json:"toolret"`
				}
				readJSON(t, filepath.Join(dir, "config_sentence_transformers.json"), &cst)
				wantLen := map[string]int{biencoder.QueryTower: 32, biencoder.ToolTower: 64}[tower]
				maxSeq := 0 // sentence_bert_config.json's
				if tc.o.Separate {
					if sb.MaxSeqLength != wantLen || cst.Toolret != nil {
						t.Fatalf("%s tower: max_seq_length %d, toolret lengths %v: want %d and none", tower, sb.MaxSeqLength, cst.Toolret, wantLen)
					}
				} else {
					if sb.MaxSeqLength != 64 || cst.Toolret == nil || cst.Toolret.Query != 32 || cst.Toolret.Tool != 64 {
						t.Fatalf("shared tower: max_seq_length %d, toolret lengths %+v: want 64, query 32 and tool 64", sb.MaxSeqLength, cst.Toolret)
					}
					if tower == biencoder.QueryTower {
						maxSeq = cst.Toolret.Query
					}
				}
				want, err := m.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				got := stEncode(t, py, dir, texts, maxSeq)
				d := maxDiff(t, want, got)
				t.Logf("%s tower: sentence-transformers reference vs toolret max abs diff %.3g", tower, d)
				if d > stTol {
					t.Errorf("%s tower: sentence-transformers embeddings differ by %g (> %g)", tower, d, stTol)
				}
				if maxSeq > 0 {
					// Without the recorded query length, the long query is cut at 64 tokens,
					// not 32: its embedding differs.
					def := stEncode(t, py, dir, texts[len(texts)-3:len(texts)-2], 0)
					if d := maxDiff(t, want[len(want)-3:len(want)-2], def); d < 1e-3 {
						t.Errorf("query embedded at max_seq_length %d equals toolret's (diff %g): the test's long query is not long enough", sb.MaxSeqLength, d)
					}
				}
				// export.LoadHF reads the recorded lengths: the same embeddings per side.
				hm, err := export.LoadHF(dir, be)
				if err != nil {
					t.Fatal(err)
				}
				lg, err := hm.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff(t, want, lg); d > 1e-6 {
					t.Errorf("%s tower: export.LoadHF embeddings differ by %g", tower, d)
				}
			}
		})
	}
}

// TestSentenceTransformersPrompts: an iteration-aware bi-encoder's HF export gives
// sentence-transformers its marker as prompts ("query" = round 0's, "iteration_t"), the
// default on a separate query tower only; the manifest records the marker; a model without
// one has no prompts.
func TestSentenceTransformersPrompts(t *testing.T) {
	be := goBackend(t)
	for _, tc := range []struct {
		name     string
		o        exporttest.Options
		marker   string
		defaults map[string]any // tower -> default_prompt_name
	}{
		{"shared", exporttest.Options{}, "Iteration %d: ", map[string]any{biencoder.QueryTower: nil}},
		{"separate", exporttest.Options{Separate: true}, "Round %d. ", map[string]any{biencoder.QueryTower: "query", biencoder.ToolTower: nil}},
		{"no marker", exporttest.Options{}, "", map[string]any{biencoder.QueryTower: nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(tc.o, be, 2)
			if err != nil {
				t.Fatal(err)
			}
			m.Marker = tc.marker
			out := filepath.Join(t.TempDir(), "hf")
			man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if man.Marker != tc.marker {
				t.Errorf("manifest marker %q, want %q", man.Marker, tc.marker)
			}
			for tower, def := range tc.defaults {
				dir, err := man.TowerDir(out, tower)
				if err != nil {
					t.Fatal(err)
				}
				var cst struct {
					Prompts map[string]string `json:"prompts"`
					Default any               `json:"default_prompt_name"`
				}
				readJSON(t, filepath.Join(dir, "config_sentence_transformers.json"), &cst)
				if cst.Default != def {
					t.Errorf("%s tower: default_prompt_name %v, want %v", tower, cst.Default, def)
				}
				switch {
				case tc.marker == "" || tower == biencoder.ToolTower:
					if len(cst.Prompts) != 0 {
						t.Errorf("%s tower: prompts %v, want none", tower, cst.Prompts)
					}
				case cst.Prompts["query"] != fmt.Sprintf(tc.marker, 0) || cst.Prompts["iteration_2"] != fmt.Sprintf(tc.marker, 2):
					t.Errorf("%s tower: prompts %v for marker %q", tower, cst.Prompts, tc.marker)
				}
			}
		})
	}
}
