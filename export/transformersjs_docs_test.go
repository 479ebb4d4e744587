package export_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// TestTransformersJSDocs runs docs/export.md's transformers.js snippet as written (its export
// directory pointed at a test one holding my-biencoder, a shared-tower mean-pooled cosine
// bi-encoder, and my-reranker, a one-logit cross-encoder) with node and the installed
// @huggingface/transformers, and checks what it computes (tools, query, scores) against
// toolret's own embeddings and scores. It skips without node and npm, like TestTransformersJS.
func TestTransformersJSDocs(t *testing.T) {
	modules := transformersJS(t)
	b, err := os.ReadFile("../docs/export.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```js\n(.*?)```").FindSubmatch(b)
	if m == nil || !strings.Contains(string(m[1]), "@huggingface/transformers") {
		t.Fatal("docs/export.md: no ```js block using @huggingface/transformers")
	}
	snippet := string(m[1])
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bi, err := exporttest.BiEncoder(exporttest.Options{}, be, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Export(bi, export.Options{Format: export.FormatHF, Out: filepath.Join(root, "my-biencoder")}); err != nil {
		t.Fatal(err)
	}
	ce := headModel(t, be, []string{"relevant"}, encoder.PoolCLS, "sigmoid")
	if _, err := export.Export(ce, export.Options{Format: export.FormatHF, Out: filepath.Join(root, "my-reranker")}); err != nil {
		t.Fatal(err)
	}
	const dirLit = "'/path/to/exports/'"
	if !strings.Contains(snippet, dirLit) {
		t.Fatalf("docs/export.md: the snippet no longer sets env.localModelPath = %s", dirLit)
	}
	snippet = strings.Replace(snippet, dirLit, strconv.Quote(root+string(filepath.Separator)), 1)
	snippet += "\nconsole.log(JSON.stringify({ tools: tools.tolist(), query: query.tolist(), scores: scores.tolist() }));\n"
	script := filepath.Join(root, "snippet.mjs")
	if err := os.WriteFile(script, []byte(snippet), 0o644); err != nil {
		t.Fatal(err)
	}
	// An ES module finds packages in the node_modules of its directory or above.
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(root, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node docs/export.md's snippet: %v\n%s", err, stderr.String())
	}
	var got struct{ Tools, Query, Scores [][]float64 }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("snippet output %q: %v", out, err)
	}
	tool, query := "Get the weather forecast", "weather in Lisbon?"
	wantTools, err := bi.Embed(biencoder.ToolTower, []string{tool})
	if err != nil {
		t.Fatal(err)
	}
	wantQuery, err := bi.Embed(biencoder.QueryTower, []string{query})
	if err != nil {
		t.Fatal(err)
	}
	logits, err := ce.Score([]string{query}, []string{tool})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  [][]float64
		want []float64
	}{
		{"tools", got.Tools, f64(wantTools)[0]},
		{"query", got.Query, f64(wantQuery)[0]},
		{"scores", got.Scores, probabilities(logits[0], true)},
	} {
		if len(c.got) != 1 || len(c.got[0]) != len(c.want) {
			t.Fatalf("%s: got %d rows of %v values, want 1 of %d", c.name, len(c.got), c.got, len(c.want))
		}
		d := 0.0
		for i, v := range c.want {
			d = max(d, math.Abs(c.got[0][i]-v))
		}
		t.Logf("%s: max abs diff %.3g", c.name, d)
		if d > tjsTol {
			t.Errorf("%s: the snippet's values differ from toolret's by %.3g > %g", c.name, d, tjsTol)
		}
	}
}
