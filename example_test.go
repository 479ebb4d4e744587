package toolret_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/library/importer"
)

// tinyModel writes a tiny pre-trained stand-in (HF layout, random weights) into a temporary
// directory; with real weights, use a hub id such as "sentence-transformers/all-MiniLM-L6-v2".
func tinyModel() (dir string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "toolret-example")
	if err != nil {
		return "", nil, err
	}
	be, err := backend.Open("go")
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(tmp, "model")
	return dir, func() { os.RemoveAll(tmp) }, exporttest.WriteHF(dir, exporttest.Options{}, be, 1)
}

// ExampleExport builds a zero-shot index from a pre-trained model over the embedded default
// tool library, then retrieves tools with it.
func ExampleExport() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	ctx := context.Background()
	index := filepath.Join(filepath.Dir(model), "index")
	man, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Out: index})
	if err != nil {
		log.Fatal(err)
	}
	r, err := toolret.OpenIndex(index, "go")
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Retrieve(ctx, "what is the weather in Paris", 3)
	fmt.Println(man.Format, man.Tools, len(res), err)
	// Output: index 70 3 <nil>
}

// ExampleOpenModel embeds texts with a model.
func ExampleOpenModel() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	m, err := toolret.OpenModel(context.Background(), model, "go")
	if err != nil {
		log.Fatal(err)
	}
	emb, err := m.Embed("query", []string{"book a flight", "convert 10 USD to EUR"})
	fmt.Println(len(emb), len(emb[0]), err)
	// Output: 2 32 <nil>
}

// ExampleImportModel installs a model directory into the Hugging Face hub cache under a hub
// id; every model reference then resolves the id offline.
func ExampleImportModel() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	os.Setenv("HF_HUB_CACHE", filepath.Join(filepath.Dir(model), "hub"))
	os.Setenv("HF_HUB_OFFLINE", "1")
	defer os.Unsetenv("HF_HUB_CACHE")
	defer os.Unsetenv("HF_HUB_OFFLINE")
	if _, err := toolret.ImportModel("my-org/tiny-tools", model); err != nil {
		fmt.Println(err)
		return
	}
	m, err := toolret.OpenModel(context.Background(), "my-org/tiny-tools", "go")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Kind)
	// Output: biencoder
}

// ExampleServe serves an index over HTTP and asks it for tools.
func ExampleServe() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	index := filepath.Join(filepath.Dir(model), "index")
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Out: index}); err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := toolret.DefaultServeConfig()
	cfg.Index, cfg.Addr, cfg.Log = index, addr, quietLog()
	done := make(chan error, 1)
	go func() { done <- toolret.Serve(ctx, cfg) }()
	var res struct {
		Tools []struct {
			ID string `json:"id"`
		} `json:"tools"`
	}
	for range 200 { // wait until it is ready: it listens from the start, /readyz says when it answers
		r, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r, err := http.Post("http://"+addr+"/v1/retrieve", "application/json", strings.NewReader(`{"query":"weather in Paris","k":2}`)); err == nil {
		json.NewDecoder(r.Body).Decode(&res)
		r.Body.Close()
	}
	cancel()
	fmt.Println(len(res.Tools), <-done)
	// Output: 2 <nil>
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ExampleEvaluate scores BM25 and a pre-trained model zero-shot on the embedded default
// dataset's test split.
func ExampleEvaluate() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	ctx := context.Background()
	bm, err := toolret.Evaluate(ctx, toolret.EvalConfig{})
	if err != nil {
		log.Fatal(err)
	}
	zs, err := toolret.Evaluate(ctx, toolret.EvalConfig{Model: model})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(bm.Overall.N == zs.Overall.N, bm.Overall.Recall[5] > zs.Overall.Recall[5])
	// Output: true true
}

// ExampleImportLibrary imports a function-tool list into a tool library file, then builds a
// zero-shot index over it: a library needs no queries.
func ExampleImportLibrary() {
	model, cleanup, err := tinyModel()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	dir := filepath.Dir(model)
	fns := filepath.Join(dir, "functions.json")
	os.WriteFile(fns, []byte(`[{"name": "get_weather", "description": "Current weather of a city.",
		"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
		{"name": "convert_currency", "description": "Convert an amount between currencies.",
		"parameters": {"type": "dict", "properties": {"amount": {"type": "float"}, "to": {"type": "string"}}}}]`), 0o644)
	lib := filepath.Join(dir, "tools.jsonl")
	ctx := context.Background()
	changes, _, err := toolret.ImportLibrary(ctx, importer.Sources{Functions: []string{"demo=" + fns}}, lib)
	if err != nil {
		log.Fatal(err)
	}
	man, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Data: lib, Out: filepath.Join(dir, "index")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(changes.Added), man.Tools)
	// Output: 2 2
}
