package toolret

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/toolindex"
)

// TestServeRecipe: serving a library with a pre-trained model whose recipe fuses with BM25,
// ranks by clause or reranks sets Hybrid and HybridWeight, Clauses, and Reranker with Depth
// and RerankWeight from it, each unless given or NoRecipe; a Reranker given reranks the
// recipe's hybrid; a corrupt recipe, or one whose reranker is missing, is an error naming
// the file.
func TestServeRecipe(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model, plain, bad, clauses := filepath.Join(dir, "model"), filepath.Join(dir, "plain"), filepath.Join(dir, "bad"), filepath.Join(dir, "clauses")
	reranks, lost := filepath.Join(dir, "reranks"), filepath.Join(dir, "lost")
	for _, m := range []string{model, plain, bad, clauses, reranks, lost} {
		if err := exporttest.WriteHF(m, exporttest.Options{}, be, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := export.WriteRecipe(model, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}}); err != nil {
		t.Fatal(err)
	}
	if err := export.WriteRecipe(clauses, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}, Clauses: &export.ClausesRecipe{Merge: "mix"}}); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteCrossEncoderHF(filepath.Join(reranks, "reranker"), be, 3); err != nil {
		t.Fatal(err)
	}
	w := 0.4
	for _, m := range []string{reranks, lost} {
		r := &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}, Reranker: &export.RerankerRecipe{Path: "reranker", Depth: 7, Weight: &w}}
		if err := export.WriteRecipe(m, r); err != nil {
			t.Fatal(err)
		}
	}
	adaptive := filepath.Join(dir, "adaptive")
	if err := exporttest.WriteHF(adaptive, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	rule := &fusion.Adaptive{Base: 1, Slope: -0.1}
	if err := export.WriteRecipe(adaptive, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 1, Adaptive: rule}}); err != nil {
		t.Fatal(err)
	}
	mine := &rerank.ClauseOptions{Merge: rerank.MergeRRF}
	badFile := filepath.Join(bad, export.RecipeFile)
	if err := os.WriteFile(badFile, []byte(`{"version": 1, "hybrid": {"fusion": "sum"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.jsonl")
	ce := filepath.Join(reranks, "reranker")
	type reranker struct {
		dir   string
		depth int
		w     float64
	}
	none := reranker{"", 20, -1} // DefaultServeConfig's
	for _, c := range []struct {
		name     string
		cfg      ServeConfig
		hybrid   string
		w        float64
		wantErr  string
		clauses  string   // the Clauses served, "" for none
		reranker reranker // zero: none (Reranker "", Depth and RerankWeight unset)
	}{
		{"recipe", ServeConfig{Library: lib, Pretrained: model, HybridWeight: 0.5}, "zscore", 0.3, "", "", reranker{}},
		{"explicit -hybrid", ServeConfig{Library: lib, Pretrained: model, Hybrid: "minmax", HybridWeight: 0.9}, "minmax", 0.9, "", "", reranker{}},
		{"NoRecipe", ServeConfig{Library: lib, Pretrained: model, NoRecipe: true, HybridWeight: 0.5}, "", 0.5, "", "", reranker{}},
		{"no recipe", ServeConfig{Library: lib, Pretrained: plain, HybridWeight: 0.5}, "", 0.5, "", "", reranker{}},
		{"index given", ServeConfig{Library: lib, Index: filepath.Join(dir, "index"), Pretrained: model, HybridWeight: 0.5}, "", 0.5, "", "", reranker{}},
		{"reranker over the recipe's hybrid", ServeConfig{Library: lib, Pretrained: model, Reranker: "ce", Depth: 20, RerankWeight: -1}, "zscore", 0.3, "", "", reranker{"ce", 20, -1}},
		{"recipe reranker", ServeConfig{Library: lib, Pretrained: reranks, Depth: 20, RerankWeight: -1}, "zscore", 0.7, "", "", reranker{ce, 7, 0.4}},
		{"recipe reranker, -reranker", ServeConfig{Library: lib, Pretrained: reranks, Reranker: "other", Depth: 20, RerankWeight: 0.9}, "zscore", 0.7, "", "", reranker{"other", 20, 0.9}},
		{"recipe reranker, NoRecipe", ServeConfig{Library: lib, Pretrained: reranks, NoRecipe: true, Depth: 20, RerankWeight: -1}, "", 0, "", "", none},
		{"recipe reranker missing", ServeConfig{Library: lib, Pretrained: lost}, "", 0, `reranker.path "reranker"`, "", reranker{}},
		{"corrupt", ServeConfig{Library: lib, Pretrained: bad}, "", 0, badFile, "", reranker{}},
		{"recipe with clauses", ServeConfig{Library: lib, Pretrained: clauses, HybridWeight: 0.5}, "zscore", 0.7, "", "clauses mix zscore whole 0.5", reranker{}},
		{"clauses, explicit -hybrid", ServeConfig{Library: lib, Pretrained: clauses, Hybrid: "rrf"}, "rrf", 0, "", "clauses mix zscore whole 0.5", reranker{}},
		{"explicit clauses", ServeConfig{Library: lib, Pretrained: clauses, Clauses: mine, HybridWeight: 0.5}, "zscore", 0.7, "", "clauses rrf whole 0.5", reranker{}},
		{"clauses, NoRecipe", ServeConfig{Library: lib, Pretrained: clauses, NoRecipe: true}, "", 0, "", "", reranker{}},
		{"recipe adaptive", ServeConfig{Library: lib, Pretrained: adaptive, HybridWeight: 0.5}, "zscore", 1, "", "", reranker{}},
		{"adaptive, explicit -hybrid", ServeConfig{Library: lib, Pretrained: adaptive, Hybrid: "zscore", HybridWeight: 0.4}, "zscore", 0.4, "", "", reranker{}},
	} {
		cfg := c.cfg
		err := applyRecipe(context.Background(), &cfg)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cfg.Hybrid != c.hybrid || cfg.HybridWeight != c.w {
			t.Errorf("%s: hybrid %q %g, want %q %g", c.name, cfg.Hybrid, cfg.HybridWeight, c.hybrid, c.w)
		}
		if wantA := c.name == "recipe adaptive"; (cfg.HybridAdaptive != nil) != wantA || (wantA && *cfg.HybridAdaptive != *rule) {
			t.Errorf("%s: adaptive weight %v", c.name, cfg.HybridAdaptive)
		}
		got := ""
		if cfg.Clauses != nil {
			got = cfg.Clauses.String()
		}
		if got != c.clauses {
			t.Errorf("%s: clauses %q, want %q", c.name, got, c.clauses)
		}
		if rr := (reranker{cfg.Reranker, cfg.Depth, cfg.RerankWeight}); c.reranker != (reranker{}) && rr != c.reranker {
			t.Errorf("%s: reranker %+v, want %+v", c.name, rr, c.reranker)
		}
	}
}

// TestServeLibraryRecipeReranker: serve -library LIB -model DIR, DIR's recipe fusing with BM25
// and reranking, answers /v1/retrieve as toolindex serves the library's index with the
// recipe's hybrid and its reranker (the cross-encoder in DIR/reranker, its depth and weight),
// names the reranker in its "index loaded" log line, and leaves no copy of the cross-encoder
// in its state directory.
func TestServeLibraryRecipeReranker(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib := &library.Library{}
	for i, tool := range d.Tools[:16] {
		lib.Tools = append(lib.Tools, library.Tool{Name: fmt.Sprintf("t%d", i), Description: tool.Text,
			InputSchema: json.RawMessage(`{"type":"object"}`), Source: library.Source{Kind: library.KindFunctions}})
	}
	libPath := filepath.Join(dir, "tools.jsonl")
	if err := library.Write(libPath, lib); err != nil {
		t.Fatal(err)
	}
	model, ce := filepath.Join(dir, "model"), filepath.Join(dir, "ce")
	if err := exporttest.WriteHF(filepath.Join(dir, "plain"), exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteCrossEncoderHF(ce, be, 3); err != nil {
		t.Fatal(err)
	}
	w := 0.5
	r := &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6}, Reranker: &export.RerankerRecipe{Path: "reranker", Depth: 4, Weight: &w, Dir: ce}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := Export(ctx, ExportConfig{Model: filepath.Join(dir, "plain"), Out: model, Recipe: r, Backend: "go"}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	cfg := DefaultServeConfig()
	cfg.Library, cfg.Pretrained, cfg.State, cfg.Addr, cfg.Backend, cfg.IndexBackend = libPath, model, filepath.Join(dir, "state"), addr, "go", ""
	cfg.Log = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg) }()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve: %v", err)
		default:
		}
		if time.Since(start) > time.Minute {
			t.Fatal("serve not ready in a minute")
		}
	}
	var queries []string
	for _, q := range d.Splits["test"].Judged()[:6] {
		queries = append(queries, d.Queries[q].Text)
	}
	body, _ := json.Marshal(map[string]any{"queries": queries, "k": 6})
	resp, err := http.Post("http://"+addr+"/v1/retrieve", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []struct {
			Tools []struct {
				ID string `json:"id"`
			} `json:"tools"`
		} `json:"results"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Results) != len(queries) {
		t.Fatalf("/v1/retrieve: %d results, %v", len(got.Results), err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if want := fmt.Sprintf(`"reranker":%q,"rerank_depth":4,"rerank_weight":0.5`, filepath.Join(model, "reranker")); !strings.Contains(log, want) {
		t.Errorf("log %s: want %s", log, want)
	}
	index := gateway.IndexDir(cfg.State, model)
	if _, err := os.Stat(filepath.Join(index, "reranker")); !os.IsNotExist(err) {
		t.Errorf("the state's index holds a copy of the cross-encoder (%v)", err)
	}
	idx, err := toolindex.Load(index, toolindex.WithBackend(be), toolindex.WithHybrid("zscore", 0.6),
		toolindex.WithReranker(filepath.Join(model, "reranker"), 4), toolindex.WithInterpolation(0.5))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := toolindex.Load(index, toolindex.WithBackend(be), toolindex.WithHybrid("zscore", 0.6))
	if err != nil {
		t.Fatal(err)
	}
	want, err := idx.RetrieveBatch(context.Background(), queries, 6)
	if err != nil {
		t.Fatal(err)
	}
	first, err := plain.RetrieveBatch(context.Background(), queries, 6)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for i := range queries {
		var ids, hybrid []string
		for j, x := range want[i] {
			ids, hybrid = append(ids, x.ToolID), append(hybrid, first[i][j].ToolID)
		}
		var served []string
		for _, x := range got.Results[i].Tools {
			served = append(served, x.ID)
		}
		if !slices.Equal(served, ids) {
			t.Errorf("query %q: served %v, want %v", queries[i], served, ids)
		}
		changed = changed || !slices.Equal(ids, hybrid)
	}
	if !changed {
		t.Error("the reranker reorders no query's top: the test cannot tell it from the hybrid alone")
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
