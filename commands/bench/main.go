// Package benchcmd is the `toolret bench` command; it measures toolret against PyTorch on the same shapes, in one run.
//
//	bench encode [-arch bert,deberta] [-backends go,onnx | -backend NAME] [-queries 1000] [-shape today|bert-base] [-layers 6 -hidden 384 -heads 6] [-batch 32] [-profile FILE]
//	bench train [-backends go,onnx | -backend NAME] [-shape today|minilm|bge-small|bert-base] [-layers 4 -hidden 256] [-batch 32 -query-len 32 -tool-len 64]
//	            [-lengths full|toollens] [-pad-multiple 16] [-steps 10] [-warmup 2] [-profile FILE] [-vs st|torch|none] [-threads N] [-encode-texts 128]
//	bench matmul [-backends go,onnx] [-dtypes float32,bfloat16] [-n 1024]
//	bench colt [-data DIR] [-scale 10] [-dim 192]
//	bench retrieve [-run RUN [-refiner RUN]] [-data DIR] [-n 200] [-synthetic 100000]
//	bench rerank -first-stage RUN -reranker RUN [-classifier RUN] [-backends go,onnx] [-m 50] [-n 200]
//	bench serve [-run RUN | -index DIR] [-data DIR] [-requests 20000] [-concurrency 32] [-k 5]
//	bench ann [-sizes 100000,1000000] [-dim 384] [-queries 200] [-k 10] [-versions 20 -batch 100]
//	bench http -embeddings NAME=URL ... [-search NAME=URL ...] [-concurrency 1,8,32] [-requests 1000] [-long]
//	bench usage-data -data DIR -holdout-tools 0.2 [-used 0.5] -out DIR; bench usage-agent -addr URL -data DIR [-k 5]
//	bench load -url http://127.0.0.1:8080 [-first 4,12,28] [-requests 20000] [-concurrency 32] [-soak 10m -sample 10s]
//
// encode: texts/second encoding n ToolLens queries (../shared/datasets/toollens, or -data)
// with a randomly initialised encoder of each -arch (bert; deberta: DeBERTa-v3 with the same
// sizes, 256 relative-position buckets over 512 positions) on each toolret backend, every
// architecture on the same padded batches (the WordPiece -vocab tokenizes for both); for BERT
// next to PyTorch 1.13 (Debian's python3-torch, run as `env -u OPENBLAS_CORETYPE
// /usr/bin/python3 scripts/bench/torch_encode.py`, a BERT-only script) on those batches.
// Build with -tags onnx for the onnx backend (make bench-encode does).
//
// train compares with sentence-transformers' own training step by default (-vs st:
// scripts/bench/st_train.py in the venv of make install-st), adding each row's peak RSS,
// encode texts/s and CPU seconds per step; -vs torch is the Debian PyTorch comparison.
//
// train and encode print, per engine, tokens/s (texts/s), the achieved GFLOP/s of the
// model's matmuls (perf.go has the formula) next to the fp32 matmul peak measured on the same
// backend (and torch.mm's for PyTorch), and toolret's ratio to PyTorch measured in the same
// run; -profile writes a Go CPU profile of the timed section. A backend that cannot be opened
// (xla:cuda without a GPU, onnx without -tags onnx) prints a "skipped" line, and the command
// then exits with status 1.
package benchcmd

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// Main runs `toolret bench` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	subs := map[string]func([]string) error{"train": trainBench, "colt": coltBench, "serve": serveBench, "retrieve": retrieveBench,
		"rerank": rerankBench, "matmul": matmulBench, "ann": annBench, "http": httpBench, "usage-data": usageDataBench, "usage-agent": usageAgentBench,
		"load": loadBench}
	if run, ok := subs[firstArg(args)]; ok {
		if err := run(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if len(args) < 1 || args[0] != "encode" {
		fmt.Fprintln(os.Stderr, "usage: bench encode|train|matmul|colt|retrieve|rerank|serve|ann|http|usage-data|usage-agent|load [flags]")
		return 2
	}
	fs := flag.NewFlagSet("bench encode", flag.ContinueOnError)
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose queries are encoded")
	vocab := fs.String("vocab", "../shared/vocab/bert-base-uncased-vocab.txt", "vocab.txt")
	backends := fs.String("backends", "go,onnx", "toolret backends to measure")
	one := fs.String("backend", "", "one toolret backend (instead of -backends), e.g. xla:cuda")
	arch := fs.String("arch", "bert", "encoder architectures to measure, comma-separated: bert, deberta")
	n := fs.Int("queries", 1000, "number of queries")
	shape := fs.String("shape", "today", "size preset: today (6 layers, hidden 384, 6 heads) or bert-base (12, 768, 12, intermediate 3072); the flags below override it")
	layers := fs.Int("layers", 6, "layers")
	hidden := fs.Int("hidden", 384, "hidden size")
	heads := fs.Int("heads", 6, "attention heads")
	inter := fs.Int("intermediate", 0, "intermediate size (default 4*hidden)")
	batch := fs.Int("batch", 32, "batch size")
	prof := fs.String("profile", "", "write a Go CPU profile of the timed passes to this file (one per backend and architecture, FILE-NAME.ext, with several)")
	python := fs.String("python", "/usr/bin/python3", "python with torch (empty: skip PyTorch)")
	blas := torchBLASFlag(fs)
	if err := cli.Parse(fs, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	var err error
	if preset, ok := encodeShapes[*shape]; !ok {
		err = fmt.Errorf("-shape %q: want today or bert-base", *shape)
	} else {
		set := cli.Set(fs)
		for name, v := range map[string]*int{"layers": layers, "hidden": hidden, "heads": heads, "intermediate": inter} {
			if !set[name] {
				*v = map[string]int{"layers": preset.layers, "hidden": preset.hidden, "heads": preset.heads, "intermediate": preset.inter}[name]
			}
		}
		if !set["intermediate"] && set["hidden"] {
			*inter = 4 * *hidden
		}
	}
	if err == nil {
		err = cli.First(cli.Positive("queries", *n), cli.Positive("layers", *layers), cli.Positive("hidden", *hidden),
			cli.Positive("heads", *heads), cli.Positive("intermediate", *inter), cli.Positive("batch", *batch))
	}
	if fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *one != "" {
		*backends = *one
	}
	var cores []string
	if err == nil {
		cores, err = torchCores(*blas)
	}
	if err == nil {
		err = encode(*dataDir, *vocab, *arch, *backends, *n, *layers, *hidden, *heads, *inter, *batch, *python, cores, *prof)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// archs maps -arch names to model types.
var archs = map[string]string{"bert": "bert", "deberta": "deberta-v2"}

// encodeShapes are bench encode's -shape presets (vocab and batch are not part of them).
var encodeShapes = map[string]benchShape{
	"today":     {layers: 6, hidden: 384, heads: 6, inter: 1536},
	"bert-base": {layers: 12, hidden: 768, heads: 12, inter: 3072},
}

func encode(dataDir, vocab, arch, backends string, n, layers, hidden, heads, inter, batch int, python string, cores []string, prof string) error {
	var cfgs []encoder.Config
	for _, a := range strings.Split(arch, ",") {
		mt, ok := archs[strings.TrimSpace(a)]
		if !ok {
			return fmt.Errorf("-arch %q: want bert or deberta (comma-separated)", a)
		}
		cfg, err := encoder.New(mt, encoder.Sizes{Vocab: 1, Layers: layers, Hidden: hidden, Heads: heads, Intermediate: inter})
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
	batches, tokens, flops, err := benchmark.RecordEncodeBatches(tok, seqs, 64, batch, benchmark.EncodeSizes{Layers: layers, Hidden: hidden, Intermediate: inter})
	if err != nil {
		return err
	}
	var notMeasured []error
	for _, cfg := range cfgs {
		cfg, err := encoder.Override(cfg, map[string]any{"vocab_size": tok.VocabSize()})
		if err != nil {
			return err
		}
		err = encodeArch(cfg, tok, seqs, batches, len(texts), tokens, flops, backends, batch, python, cores, prof, len(cfgs) > 1)
		if errors.Is(err, errNotMeasured) { // the other architectures still run
			notMeasured = append(notMeasured, err)
			continue
		}
		if err != nil {
			return err
		}
	}
	return errors.Join(notMeasured...)
}

// encodeArch times one architecture on every backend (and PyTorch for BERT).
func encodeArch(cfg encoder.Config, tok *tokenize.Tokenizer, seqs [][]int32, batches []benchmark.EncodeBatch, texts, tokens int, flops float64,
	backends string, batch int, python string, cores []string, prof string, several bool) error {
	fmt.Printf("encode %d ToolLens queries: %s %d layers, hidden %d, batch %d, %d padded tokens, %d parameters, %.2f GFLOP (forward matmuls)\n",
		texts, cfg.ModelType(), cfg.Layers(), cfg.Hidden(), batch, tokens, benchmark.NumParams(cfg), flops/1e9)
	const w = 16
	fmt.Printf("%-*s %12s %10s %9s %12s %8s\n", w, "engine", "texts/s", "seconds", "GFLOP/s", "matmul peak", "of peak")
	names, bes, skipped := openBackends(backends, w, false)
	if len(names) == 0 {
		return fmt.Errorf("no toolret backend could be opened (%s): nothing measured", strings.Join(skipped, ", "))
	}
	notMeasured := skippedError(skipped)
	tps := map[string]float64{}
	for k, name := range names {
		be := bes[k]
		best, err := benchmark.TimeEncode(be, cfg, tok, seqs, 64, batch, func(f func() error) error {
			return profile(profilePath(prof, cfg.ModelType()+"-"+name, several || len(names) > 1), f)
		})
		if err != nil {
			return fmt.Errorf("toolret-%s: %w", name, err)
		}
		peak, err := benchmark.MatmulPeak(be, 1024)
		if err != nil {
			return fmt.Errorf("toolret-%s: matmul peak: %w", name, err)
		}
		tps[name] = float64(texts) / best.Seconds()
		gf := flops / best.Seconds() / 1e9
		fmt.Printf("%-*s %12.1f %10.3f %9.1f %12.1f %7.0f%%\n", w, "toolret-"+name, tps[name], best.Seconds(), gf, peak, 100*gf/peak)
	}
	if python == "" {
		return notMeasured
	}
	if cfg.ModelType() != "bert" {
		fmt.Printf("%-*s %12s (scripts/bench/torch_encode.py runs BERT only)\n", w, "pytorch", "-")
		return notMeasured
	}
	spec := map[string]any{"config": cfg, "repeats": 3, "batches": batches}
	skippedPT, err := torchRows(python, "scripts/bench/torch_encode.py", cores, spec, w, func(row string, res torchResult) {
		pt := float64(texts) / res.Seconds
		gf := flops / res.Seconds / 1e9
		fmt.Printf("%-*s %12.1f %10.3f %9.1f %12.1f %7.0f%%  %s\n", w, row, pt, res.Seconds, gf, res.MM, 100*gf/res.MM, res.about())
		for _, name := range names {
			fmt.Printf("toolret-%s / %s texts/s: %.2fx\n", name, row, tps[name]/pt)
		}
	})
	if err != nil {
		return err
	}
	return errors.Join(notMeasured, skippedPT)
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

// firstArg is args[0], or "" without arguments.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
