package recipe

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
)

// TestBiEncoderPrompts fine-tunes a pre-trained stand-in whose sentence-transformers config
// has a query and a document prompt, and checks that the run trains and embeds with the
// prompts its -init model has unless told otherwise, records them, and that its hf export
// and its index embed as the run does.
func TestBiEncoderPrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	pre, err := exporttest.BiEncoder(exporttest.Options{Layers: 1}, be, 3)
	if err != nil {
		t.Fatal(err)
	}
	pre.QueryPrompt, pre.ToolPrompt = "search: ", "tool: "
	hf := filepath.Join(tmp, "hf")
	if _, err := export.Export(pre, export.Options{Format: export.FormatHF, Out: hf}); err != nil {
		t.Fatal(err)
	}
	none, other := "", "find: "
	for _, c := range []struct {
		name         string
		query, tool  *string
		wantQ, wantT string
	}{
		{"the init model's", nil, nil, "search: ", "tool: "},
		{"none for queries", &none, nil, "", "tool: "},
		{"given", &other, &none, "find: ", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := filepath.Join(tmp, strings.ReplaceAll(c.name, " ", "-"))
			cfg := tiny(run)
			cfg.Parent.Init = hf
			cfg.Model.QueryPrompt, cfg.Model.ToolPrompt = c.query, c.tool
			cfg.Training.MaxSteps = 2
			if _, err := BiEncoder(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			e, err := biencoder.LoadRun(run, be)
			if err != nil {
				t.Fatal(err)
			}
			if e.Cfg.QueryPrompt != c.wantQ || e.Cfg.ToolPrompt != c.wantT {
				t.Fatalf("run prompts %q %q, want %q %q", e.Cfg.QueryPrompt, e.Cfg.ToolPrompt, c.wantQ, c.wantT)
			}
			m, err := export.Open(context.Background(), run, be)
			if err != nil {
				t.Fatal(err)
			}
			if m.QueryPrompt != c.wantQ || m.ToolPrompt != c.wantT {
				t.Errorf("model prompts %q %q, want %q %q", m.QueryPrompt, m.ToolPrompt, c.wantQ, c.wantT)
			}
			// The run's embedding of a text is the unprompted model's of the prompted text.
			bare := *e.Cfg
			bare.QueryPrompt, bare.ToolPrompt = "", ""
			raw := &biencoder.Embedder{Cfg: &bare, Tok: e.Tok, Backend: be, Store: e.Store, Batch: 8}
			texts := []string{"book a flight to paris", "weather tomorrow"}
			out := filepath.Join(tmp, "hf-"+filepath.Base(run))
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			h, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if h.QueryPrompt != c.wantQ || h.ToolPrompt != c.wantT {
				t.Errorf("hf export prompts %q %q, want %q %q", h.QueryPrompt, h.ToolPrompt, c.wantQ, c.wantT)
			}
			ix := filepath.Join(tmp, "index-"+filepath.Base(run))
			man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: ix})
			if err != nil {
				t.Fatal(err)
			}
			if man.QueryPrompt != c.wantQ || man.ToolPrompt != c.wantT {
				t.Errorf("index manifest prompts %q %q, want %q %q", man.QueryPrompt, man.ToolPrompt, c.wantQ, c.wantT)
			}
			idx, err := toolindex.Load(ix, toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				got, err := m.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				prompted := make([]string, len(texts))
				for i, s := range texts {
					prompted[i] = e.Cfg.Prompt(tower) + s
				}
				want, err := raw.Embed(tower, prompted)
				if err != nil {
					t.Fatal(err)
				}
				fromHF, err := h.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				fromIndex, err := idx.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				for i := range texts {
					for j := range want[i] {
						if d := got[i][j] - want[i][j]; d > 1e-5 || d < -1e-5 {
							t.Fatalf("%s %q dim %d: run %v, unprompted model on the prompted text %v", tower, texts[i], j, got[i][j], want[i][j])
						}
						if d := fromHF[i][j] - want[i][j]; d > 1e-4 || d < -1e-4 {
							t.Fatalf("%s %q dim %d: hf export %v, run %v", tower, texts[i], j, fromHF[i][j], want[i][j])
						}
						if d := fromIndex[i][j] - want[i][j]; d > 1e-4 || d < -1e-4 {
							t.Fatalf("%s %q dim %d: index %v, run %v", tower, texts[i], j, fromIndex[i][j], want[i][j])
						}
					}
				}
			}
			// A trained run embeds with its own prompts: another one is refused.
			if err := (export.Prompts{Query: &other}).Apply(m); (err == nil) != (c.wantQ == other) {
				t.Errorf("Prompts.Apply(%q) on a run with query prompt %q: %v", other, c.wantQ, err)
			}
		})
	}
	// A feedback retriever's queries carry its marker: a query prompt is refused.
	cfg := tiny(filepath.Join(tmp, "feedback"))
	cfg.Parent.Init, cfg.Parent.Feedback = hf, filepath.Join(tmp, "absent.jsonl")
	if _, err := BiEncoder(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-query-prompt") {
		t.Errorf("feedback from a model with a query prompt: %v", err)
	}
}
