package export_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// onnxRunner returns the path of scripts/onnxcheck/run.js inside a cache directory where
// onnxruntime-node (pinned in package.json) is installed, installing it with
// `npm install --ignore-scripts` when missing (its tarball ships the CPU binaries). It skips
// the test when node or npm are absent or the install fails.
func onnxRunner(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: ONNX Runtime parity needs node and npm (onnxruntime-node)", tool)
		}
	}
	src := "../scripts/onnxcheck"
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(src, "run.js"))
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("TOOLRET_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skipf("no cache directory: %v", err)
		}
		cache = filepath.Join(home, ".cache", "toolret")
	}
	dir := filepath.Join(cache, "onnxcheck-ort1.30.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cache %s: %v", dir, err)
	}
	old, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", "onnxruntime-node", "package.json"))
	if string(old) != string(pkg) || statErr != nil {
		os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644)
		cmd := exec.Command("npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--silent")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm install onnxruntime-node in %s failed (no registry access?): %v\n%s", dir, err, out)
		}
	}
	runJS := filepath.Join(dir, "run.js")
	if err := os.WriteFile(runJS, script, 0o644); err != nil {
		t.Fatal(err)
	}
	return runJS
}

// onnxTol bounds the max abs difference between ONNX Runtime and toolret on exported models
// (README, "Export"). Measured with onnxruntime-node 1.30.0: embeddings 1.2e-6, head logits
// 6.7e-6.
const onnxTol = 1e-5

type ortOutput struct {
	Dims []int     `json:"dims"`
	Data []float64 `json:"data"`
}

// runORT runs model on batches of texts (padded per batch) and returns outputs per batch.
func runORT(t *testing.T, runJS, modelPath string, batches []map[string][][]int32) []map[string]ortOutput {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"model": modelPath, "batches": batches})
	rp := filepath.Join(t.TempDir(), "request.json")
	os.WriteFile(rp, req, 0o644)
	cmd := exec.Command("node", runJS, rp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("onnxruntime: %v\n%s", err, stderr.String())
	}
	var res struct {
		Batches []map[string]ortOutput `json:"batches"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res.Batches
}

// encodeBatches tokenizes texts into ONNX input batches of the given sizes (each padded to
// its longest text, so batches differ in both axes).
func encodeBatches(m *export.Model, maxLen int, a, b []string, sizes ...int) []map[string][][]int32 {
	var out []map[string][][]int32
	start := 0
	for _, n := range sizes {
		var ids, types [][]int32
		for i := start; i < start+n; i++ {
			if b == nil {
				s := m.Tok.Single(a[i], maxLen)
				ids, types = append(ids, s), append(types, make([]int32, len(s)))
			} else {
				s, ty := m.Tok.Pair(a[i], b[i], maxLen)
				ids, types = append(ids, s), append(types, ty)
			}
		}
		// Pad to the longest sequence plus 3 per batch index: lengths differ between batches
		// and padding must not change the outputs.
		l := 0
		for _, s := range ids {
			l = max(l, len(s))
		}
		l += 3 * len(out)
		pi, pt, pm := make([][]int32, n), make([][]int32, n), make([][]int32, n)
		for i := range ids {
			pi[i], pt[i], pm[i] = make([]int32, l), make([]int32, l), make([]int32, l)
			for j := range pi[i] {
				pi[i][j] = m.Tok.PadID()
			}
			copy(pi[i], ids[i])
			copy(pt[i], types[i])
			for j := range ids[i] {
				pm[i][j] = 1
			}
		}
		out = append(out, map[string][][]int32{export.InputIDs: pi, export.AttentionMask: pm, export.TokenTypeIDs: pt})
		start += n
	}
	return out
}

// TestONNXParity exports bi-encoders (mean/cosine, pooler, cls/dot with separate towers) and
// cross-encoder-style heads to ONNX and runs them with ONNX Runtime (onnxruntime-node 1.30.0)
// on 50 ToolLens queries (the embedded default dataset's texts without ../shared), in two
// batches of different sizes and lengths; outputs must match toolret's within onnxTol.
func TestONNXParity(t *testing.T) {
	runJS := onnxRunner(t)
	be := goBackend(t)
	texts := sampleTexts(t, 50)
	sizes := []int{17, len(texts) - 17}
	worst := 0.0
	for _, tc := range []struct {
		name string
		o    exporttest.Options
	}{
		{"mean-cosine", exporttest.Options{}},
		{"pooler-cosine-gelunew", exporttest.Options{Pooling: encoder.PoolPooler, Act: "gelu_new"}},
		{"cls-dot-separate", exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true, Act: "relu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(tc.o, be, 21)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "onnx")
			man, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				rel := man.Towers["model"]
				if rel == "" {
					rel = man.Towers[tower]
				}
				maxLen := map[string]int{biencoder.QueryTower: 32, biencoder.ToolTower: 64}[tower]
				want, err := m.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				res := runORT(t, runJS, filepath.Join(out, rel), encodeBatches(m, maxLen, texts, nil, sizes...))
				var got [][]float32
				for bi, r := range res {
					e, ok := r[export.OutEmbedding]
					if !ok || len(e.Dims) != 2 || e.Dims[0] != sizes[bi] || e.Dims[1] != 32 {
						t.Fatalf("batch %d: output %v", bi, r)
					}
					for i := 0; i < e.Dims[0]; i++ {
						row := make([]float32, e.Dims[1])
						for k := range row {
							row[k] = float32(e.Data[i*e.Dims[1]+k])
						}
						got = append(got, row)
					}
				}
				d := maxDiff(t, want, got)
				worst = max(worst, d)
				t.Logf("%s tower: ONNX Runtime vs toolret max abs diff %.3g", tower, d)
				if d > onnxTol {
					t.Errorf("%s tower: ONNX Runtime embeddings differ by %g (> %g)", tower, d, onnxTol)
				}
			}
		})
	}
	for _, tc := range []struct {
		labels []string
		pool   encoder.Pooling
		act    string
	}{{[]string{"relevant"}, encoder.PoolCLS, "sigmoid"}, {[]string{"a", "b", "c"}, encoder.PoolPooler, "softmax"}} {
		t.Run(fmt.Sprintf("head-%d-%s", len(tc.labels), tc.pool), func(t *testing.T) {
			m := headModel(t, be, tc.labels, tc.pool, tc.act)
			out := filepath.Join(t.TempDir(), "onnx")
			if _, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: out}); err != nil {
				t.Fatal(err)
			}
			docs := make([]string, len(texts))
			for i := range docs {
				docs[i] = texts[(i*7+3)%len(texts)]
			}
			logits, err := m.Score(texts, docs)
			if err != nil {
				t.Fatal(err)
			}
			res := runORT(t, runJS, filepath.Join(out, "model.onnx"), encodeBatches(m, 96, texts, docs, sizes...))
			d := 0.0
			i0 := 0
			for _, r := range res {
				lg := r[export.OutLogits]
				n := len(tc.labels)
				for i := 0; i < lg.Dims[0]; i++ {
					want := logits[i0+i]
					for l := 0; l < n; l++ {
						d = max(d, abs(lg.Data[i*n+l]-float64(want[l])))
					}
					if n == 1 {
						sc := r[export.OutScore]
						if len(sc.Dims) != 1 {
							t.Fatalf("score dims %v", sc.Dims)
						}
						d = max(d, abs(sc.Data[i]-float64(export.Sigmoid(want[0]))))
					} else if len(r[export.OutProbs].Data) != lg.Dims[0]*n {
						t.Fatalf("probabilities missing: %v", r)
					}
				}
				i0 += lg.Dims[0]
			}
			worst = max(worst, d)
			t.Logf("head: ONNX Runtime vs toolret max abs diff %.3g", d)
			if d > onnxTol {
				t.Errorf("head outputs differ by %g (> %g)", d, onnxTol)
			}
		})
	}
	t.Logf("worst ONNX Runtime vs toolret max abs diff: %.3g", worst)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
