package export_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
)

// pretrainedTol bounds max |toolret - sentence-transformers| over the embeddings of a
// pre-trained model (issue 27: 1e-5).
const pretrainedTol = 1e-5

// pretrainedModels are the models `make models` installs; the parity runs on each one cached.
var pretrainedModels = []string{"sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2", "BAAI/bge-small-en-v1.5", "intfloat/e5-small-v2"}

// toolretCache is the toolret cache ($TOOLRET_CACHE, else ~/.cache/toolret): the venv, the
// sentence-transformers references, the Java packages make models fetched.
func toolretCache() string {
	if c := os.Getenv("TOOLRET_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "toolret")
}

// stPython returns a python with sentence-transformers ($TOOLRET_PYTHON, then the toolret
// cache's venv, then python3), or skips.
func stPython(t *testing.T) string {
	t.Helper()
	cache := toolretCache()
	for _, py := range []string{os.Getenv("TOOLRET_PYTHON"), filepath.Join(cache, "venv", "bin", "python"), "python3"} {
		if py == "" {
			continue
		}
		cmd := exec.Command(py, "-c", "import sentence_transformers")
		cmd.Env = pythonEnv()
		if err := cmd.Run(); err == nil {
			return py
		}
	}
	t.Skip("no python with sentence-transformers (TOOLRET_PYTHON, $TOOLRET_CACHE/venv: scripts/install-st.sh)")
	return ""
}

type stRow struct {
	IDs       []int32   `json:"ids"`
	Embedding []float32 `json:"embedding"`
}

// parityTexts are ToolLens's tool texts and its first 500 test queries.
func parityTexts(t testing.TB) (tools, queries []string) {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets", "toollens")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("ToolLens not found at %s", dir)
	}
	d, err := data.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range d.Tools {
		tools = append(tools, tool.Text)
	}
	for _, q := range d.Splits["test"].Queries[:500] {
		queries = append(queries, d.Queries[q].Text)
	}
	return tools, queries
}

// stReference embeds the texts with sentence-transformers (scripts/pretrained/st_embed.py).
// The result is kept on disk under $TOOLRET_CACHE/st-reference, keyed by the model's snapshot
// directory (its hub commit), the python, its sentence-transformers, transformers and torch
// versions and the texts, so that the go and ONNX Runtime parity
// runs (two test processes) and later runs compare against one reference: all-mpnet-base-v2
// takes minutes on 2 cores. The file is written atomically; TOOLRET_ST_FRESH=1 recomputes it.
func stReference(t *testing.T, py, ref, dir string, tools, queries []string) (tr, qr []stRow) {
	t.Helper()
	// The reference's versions belong to the key: an upgraded venv recomputes it.
	cmd := exec.Command(py, "-c", "import importlib.metadata as m; print(*(m.version(p) for p in ('sentence-transformers', 'transformers', 'torch')))")
	cmd.Env = pythonEnv()
	versions, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: versions of sentence-transformers, transformers, torch: %v", py, err)
	}
	h := sha256.New()
	for _, s := range append([]string{dir, py, string(versions), "tools"}, append(append(tools, "queries"), queries...)...) {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	cache := toolretCache()
	path := filepath.Join(cache, "st-reference", fmt.Sprintf("%x.json", h.Sum(nil)[:12]))
	var saved struct{ Tools, Queries []stRow }
	if os.Getenv("TOOLRET_ST_FRESH") == "" {
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &saved) == nil && len(saved.Tools) == len(tools) && len(saved.Queries) == len(queries) {
			t.Logf("sentence-transformers reference of %s from %s", ref, path)
			return saved.Tools, saved.Queries
		}
	}
	tr, qr = stEmbed(t, py, ref, tools, queries)
	saved.Tools, saved.Queries = tr, qr
	if b, err := json.Marshal(saved); err == nil && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
		if os.WriteFile(tmp, b, 0o644) == nil {
			os.Rename(tmp, path)
		}
	}
	return tr, qr
}

func stEmbed(t *testing.T, py, ref string, tools, queries []string) (tr, qr []stRow) {
	t.Helper()
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for side, texts := range map[string][]string{"tool": tools, "query": queries} {
		for _, s := range texts {
			if err := enc.Encode(map[string]string{"side": side, "text": s}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The map's order is random: record it.
	f.Close()
	b, _ := os.ReadFile(in)
	var sides []string
	for _, line := range splitLines(b) {
		var r struct{ Side string }
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		sides = append(sides, r.Side)
	}
	out := filepath.Join(tmp, "out.json")
	start := time.Now()
	cmd := exec.Command(py, filepath.Join("..", "scripts", "pretrained", "st_embed.py"), ref, in, out)
	cmd.Env = append(pythonEnv(), "HF_HUB_OFFLINE=1", "TOKENIZERS_PARALLELISM=false")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("st_embed.py: %v\n%s", err, msg)
	}
	t.Logf("sentence-transformers: %d texts in %v", len(sides), time.Since(start).Round(time.Millisecond))
	var res struct {
		Rows []stRow `json:"rows"`
	}
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for i, s := range sides {
		if s == "tool" {
			tr = append(tr, res.Rows[i])
		} else {
			qr = append(qr, res.Rows[i])
		}
	}
	return tr, qr
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := slices.Index(b, '\n')
		if i < 0 {
			i = len(b)
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		b = b[min(i+1, len(b)):]
	}
	return out
}

// TestPretrainedParity checks, on every model `make models` cached, that toolret gives the
// token ids and (within pretrainedTol) the embeddings sentence-transformers gives for
// ToolLens's tool texts and 500 test queries, on the go backend (pretrained_onnx_test.go:
// ONNX Runtime).
// loadPretrained loads the model directory dir on the named backend, with its tool tower.
func loadPretrained(t *testing.T, dir, beName string) (*export.Model, *export.Tower) {
	t.Helper()
	be, err := backend.Open(backend.Name(beName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	tw, err := m.Tower(biencoder.ToolTower)
	if err != nil {
		t.Fatal(err)
	}
	return m, tw
}

func TestPretrainedParity(t *testing.T) { pretrainedParity(t, "go") }

func pretrainedParity(t *testing.T, beName string) {
	if testing.Short() {
		t.Skip("-short")
	}
	tools, queries := parityTexts(t)
	py := stPython(t)
	ran := false
	for _, ref := range pretrainedModels {
		id, _ := hub.ParseID(ref)
		c := hub.NewClient()
		c.Offline = true
		dir, err := c.Local(id)
		if err != nil {
			t.Logf("%s not cached (make models): %v", ref, err)
			continue
		}
		ran = true
		t.Run(id.Repo, func(t *testing.T) {
			tr, qr := stReference(t, py, ref, dir, tools, queries)
			m, tw := loadPretrained(t, dir, beName)
			for _, side := range []struct {
				tower string
				texts []string
				ref   []stRow
				p     string
			}{{biencoder.ToolTower, tools, tr, m.ToolPrompt}, {biencoder.QueryTower, queries, qr, m.QueryPrompt}} {
				for i, s := range side.texts {
					if ids := m.Tok.Single(side.p+s, tw.MaxLen); !slices.Equal(ids, side.ref[i].IDs) {
						t.Fatalf("%s text %d %q: token ids differ\n toolret %v\n     st %v", side.tower, i, s, ids, side.ref[i].IDs)
					}
				}
				start := time.Now()
				emb, err := m.Embed(side.tower, side.texts)
				if err != nil {
					t.Fatal(err)
				}
				worst, at := 0.0, 0
				for i, v := range emb {
					if len(v) != len(side.ref[i].Embedding) {
						t.Fatalf("%s text %d: dim %d vs %d", side.tower, i, len(v), len(side.ref[i].Embedding))
					}
					for j := range v {
						if d := float64(v[j] - side.ref[i].Embedding[j]); max(d, -d) > worst {
							worst, at = max(d, -d), i
						}
					}
				}
				t.Logf("%s on %s: %d %s texts in %v, max |toolret - st| = %.2e (text %d)", ref, beName, len(emb), side.tower, time.Since(start).Round(time.Millisecond), worst, at)
				if worst > pretrainedTol {
					t.Errorf("%s: %s embeddings differ from sentence-transformers by %.2e (> %.0e) at text %d", ref, side.tower, worst, pretrainedTol, at)
				}
			}
		})
	}
	if !ran {
		t.Skip("no pre-trained model in the hub cache: run `make models`")
	}
}
