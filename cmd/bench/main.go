// Command bench measures toolret against PyTorch on the same shapes, in one run.
//
//	bench encode [-arch bert,deberta] [-backends go,onnx] [-queries 1000] [-layers 6 -hidden 384 -heads 6] [-batch 32]
//	bench train [-backends go,onnx] [-layers 4 -hidden 256] [-batch 32 -query-len 32 -tool-len 64]
//	bench colt [-data DIR] [-scale 10] [-dim 192]
//	bench retrieve [-run RUN [-refiner RUN]] [-data DIR] [-n 200] [-synthetic 100000]
//	bench rerank -retriever RUN -reranker RUN [-classifier RUN] [-backends go,onnx] [-m 50] [-n 200]
//	bench serve [-run RUN | -index DIR] [-data DIR] [-requests 20000] [-concurrency 32] [-k 5]
//
// encode: texts/second encoding n ToolLens queries (../shared/datasets/toollens, or -data)
// with a randomly initialised encoder of each -arch (bert; deberta: DeBERTa-v3 with the same
// sizes, 256 relative-position buckets over 512 positions) on each toolret backend, every
// architecture on the same padded batches (the WordPiece -vocab tokenizes for both); for BERT
// next to PyTorch 1.13 (Debian's python3-torch, run as `env -u OPENBLAS_CORETYPE
// /usr/bin/python3 scripts/bench/torch_encode.py`, a BERT-only script) on those batches.
// Build with -tags onnx for the onnx backend (make bench-encode does).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

func main() {
	if len(os.Args) >= 2 && (os.Args[1] == "train" || os.Args[1] == "colt" || os.Args[1] == "retrieve" || os.Args[1] == "rerank" || os.Args[1] == "serve") {
		run := trainBench
		if os.Args[1] == "colt" {
			run = coltBench
		}
		if os.Args[1] == "serve" {
			run = serveBench
		}
		if os.Args[1] == "retrieve" {
			run = retrieveBench
		}
		if os.Args[1] == "rerank" {
			run = rerankBench
		}
		if err := run(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "encode" {
		fmt.Fprintln(os.Stderr, "usage: bench encode|train|colt|retrieve|rerank|serve [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("encode", flag.ExitOnError)
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose queries are encoded")
	vocab := fs.String("vocab", "../shared/vocab/bert-base-uncased-vocab.txt", "vocab.txt")
	backends := fs.String("backends", "go,onnx", "toolret backends to measure")
	arch := fs.String("arch", "bert", "encoder architectures to measure, comma-separated: bert, deberta")
	n := fs.Int("queries", 1000, "number of queries")
	layers := fs.Int("layers", 6, "layers")
	hidden := fs.Int("hidden", 384, "hidden size")
	heads := fs.Int("heads", 6, "attention heads")
	batch := fs.Int("batch", 32, "batch size")
	python := fs.String("python", "/usr/bin/python3", "python with torch (empty: skip PyTorch)")
	fs.Parse(os.Args[2:])
	err := cli.First(cli.Positive("queries", *n), cli.Positive("layers", *layers), cli.Positive("hidden", *hidden),
		cli.Positive("heads", *heads), cli.Positive("batch", *batch))
	if fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err == nil {
		err = encode(*dataDir, *vocab, *arch, *backends, *n, *layers, *hidden, *heads, *batch, *python)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type batchJSON struct {
	IDs  [][]int32 `json:"ids"`
	Mask [][]int32 `json:"mask"`
}

// archs maps -arch names to model types.
var archs = map[string]string{"bert": "bert", "deberta": "deberta-v2"}

func encode(dataDir, vocab, arch, backends string, n, layers, hidden, heads, batch int, python string) error {
	var cfgs []encoder.Config
	for _, a := range strings.Split(arch, ",") {
		mt, ok := archs[strings.TrimSpace(a)]
		if !ok {
			return fmt.Errorf("-arch %q: want bert or deberta (comma-separated)", a)
		}
		cfg, err := encoder.New(mt, encoder.Sizes{Vocab: 1, Layers: layers, Hidden: hidden, Heads: heads, Intermediate: 4 * hidden})
		if err != nil {
			return fmt.Errorf("-arch %s: %w", a, err)
		}
		cfgs = append(cfgs, cfg)
	}
	d, err := data.Load(dataDir)
	if err != nil {
		return err
	}
	tok, err := tokenize.FromVocab(vocab, true)
	if err != nil {
		return err
	}
	texts := make([]string, 0, n)
	for _, q := range d.Queries[:min(n, len(d.Queries))] {
		texts = append(texts, q.Text)
	}
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Single(s, 64)
	}
	// The exact batches (length-sorted, bucketed: encoder.Map's) both sides run, recorded by
	// a dry run.
	var batches []batchJSON
	tokens := 0
	if _, err := encoder.Map(tok, seqs, nil, 64, batch, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		rows, l := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
		fi, fm := tensors.MustCopyFlatData[int32](ids), tensors.MustCopyFlatData[int32](mask)
		var b batchJSON
		for r := 0; r < rows; r++ {
			b.IDs, b.Mask = append(b.IDs, fi[r*l:(r+1)*l]), append(b.Mask, fm[r*l:(r+1)*l])
		}
		batches = append(batches, b)
		tokens += rows * l
		return tensors.FromShape(shapes.Make(dtypes.Float32, rows)), nil
	}); err != nil {
		return err
	}
	for _, cfg := range cfgs {
		cfg, err := encoder.Override(cfg, map[string]any{"vocab_size": tok.VocabSize()})
		if err != nil {
			return err
		}
		if err := encodeArch(cfg, tok, seqs, batches, len(texts), tokens, backends, batch, python); err != nil {
			return err
		}
	}
	return nil
}

// encodeArch times one architecture on every backend (and PyTorch for BERT).
func encodeArch(cfg encoder.Config, tok *tokenize.Tokenizer, seqs [][]int32, batches []batchJSON, texts, tokens int, backends string, batch int, python string) error {
	fmt.Printf("encode %d ToolLens queries: %s %d layers, hidden %d, batch %d, %d padded tokens, %d parameters\n",
		texts, cfg.ModelType(), cfg.Layers(), cfg.Hidden(), batch, tokens, numParams(cfg))
	fmt.Printf("%-16s %12s %10s\n", "engine", "texts/s", "seconds")
	for _, name := range strings.Split(backends, ",") {
		be, err := backend.Open(name)
		if err != nil {
			fmt.Printf("%-16s %12s (%v)\n", name, "-", err)
			continue
		}
		store := model.NewStore()
		store.SetParam(model.ParamInitialSeed, int64(1))
		r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolMean)
		if err != nil {
			return err
		}
		pass := func() (time.Duration, error) {
			start := time.Now()
			_, err := encoder.Map(tok, seqs, nil, 64, batch, r.Call)
			return time.Since(start), err
		}
		if _, err := pass(); err != nil { // compiles every bucket
			return err
		}
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			el, err := pass()
			if err != nil {
				return err
			}
			best = min(best, el)
		}
		fmt.Printf("%-16s %12.1f %10.3f\n", "toolret-"+name, float64(texts)/best.Seconds(), best.Seconds())
	}
	if python == "" {
		return nil
	}
	if cfg.ModelType() != "bert" {
		fmt.Printf("%-16s %12s (scripts/bench/torch_encode.py runs BERT only)\n", "pytorch", "-")
		return nil
	}
	spec := map[string]any{"config": cfg, "repeats": 3, "batches": batches}
	tmp, err := os.CreateTemp("", "bench-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	json.NewEncoder(tmp).Encode(spec)
	tmp.Close()
	script, _ := filepath.Abs("scripts/bench/torch_encode.py")
	cmd := exec.Command(python, script, tmp.Name())
	cmd.Env = withoutEnv(os.Environ(), "OPENBLAS_CORETYPE")
	outB, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Printf("%-16s %12s (%v: %s)\n", "pytorch", "-", err, strings.TrimSpace(string(outB)))
		return nil
	}
	var res struct {
		TextsPerSec float64 `json:"texts_per_sec"`
		Seconds     float64 `json:"seconds"`
		Threads     int     `json:"threads"`
		Torch       string  `json:"torch"`
	}
	lines := strings.Split(strings.TrimSpace(string(outB)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return fmt.Errorf("pytorch output %q: %w", outB, err)
	}
	fmt.Printf("%-16s %12.1f %10.3f  (torch %s, %d threads)\n", "pytorch", res.TextsPerSec, res.Seconds, res.Torch, res.Threads)
	return nil
}

func numParams(cfg encoder.Config) int {
	n := 0
	for _, p := range cfg.Params() {
		k := 1
		for _, d := range p.Shape {
			k *= d
		}
		n += k
	}
	return n
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return out
}
