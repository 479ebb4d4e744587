package benchcmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// benchShape is a -shape preset.
type benchShape struct {
	layers, hidden, heads, inter, vocab, batch, qLen, tLen int
	lengths                                                string
}

// trainShapes are bench train's -shape presets: today's bi-encoder benchmark shape and the
// fine-tuning shapes of all-MiniLM-L6-v2, bge-small-en-v1.5 and BERT-base (their sizes and
// the bert-base-uncased vocabulary; batch 32, query 32 + tool 128 tokens, ToolLens lengths).
var trainShapes = map[string]benchShape{
	"today":     {layers: 4, hidden: 256, heads: 4, inter: 1024, vocab: 8000, batch: 32, qLen: 32, tLen: 64, lengths: "full"},
	"minilm":    {layers: 6, hidden: 384, heads: 12, inter: 1536, vocab: 30522, batch: 32, qLen: 32, tLen: 128, lengths: "toollens"},
	"bge-small": {layers: 12, hidden: 384, heads: 12, inter: 1536, vocab: 30522, batch: 32, qLen: 32, tLen: 128, lengths: "toollens"},
	"bert-base": {layers: 12, hidden: 768, heads: 12, inter: 3072, vocab: 30522, batch: 32, qLen: 32, tLen: 128, lengths: "toollens"},
}

func shapeNames(m map[string]benchShape) string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// trainBench measures bi-encoder training throughput: shared BERT tower, mean pooling,
// cosine InfoNCE with in-batch negatives, AdamW with clipping; random token ids, full-length
// or with ToolLens-like lengths padded as train biencoder -pad-multiple pads; on each toolret
// backend and, over the same batches, on sentence-transformers' own training step
// (scripts/bench/st_train.py, -vs st, the default) or Debian's PyTorch (torch_train.py, -vs
// torch). With -vs st each row also gives its peak RSS and encode texts/s.
func trainBench(args []string) error {
	fs := flag.NewFlagSet("bench train", flag.ContinueOnError)
	backends := fs.String("backends", "go,onnx", "toolret backends, comma-separated")
	one := fs.String("backend", "", "one toolret backend (instead of -backends), e.g. xla:cuda")
	precs := fs.String("precision", backend.AutoPrecision, "precisions timed on each backend, comma-separated: fp32, bf16 (mixed precision, train biencoder -precision bf16; rows toolret-BACKEND-bf16; not on onnx) or auto: fp32, and bf16 too on the xla backends (and any backend with native bfloat16 matmul)")
	shape := fs.String("shape", "today", "size preset: "+shapeNames(trainShapes)+" (the flags below override its values)")
	layers := fs.Int("layers", 4, "layers")
	hidden := fs.Int("hidden", 256, "hidden size")
	heads := fs.Int("heads", 4, "heads")
	inter := fs.Int("intermediate", 0, "intermediate size (default 4*hidden)")
	vocab := fs.Int("vocab-size", 8000, "vocabulary size")
	batch := fs.Int("batch", 32, "batch size")
	qLen := fs.Int("query-len", 32, "query length (max length with -lengths toollens)")
	tLen := fs.Int("tool-len", 64, "tool length (max length with -lengths toollens)")
	lengths := fs.String("lengths", "full", "token lengths (default: the -shape's; toollens for minilm, bge-small, bert-base): full (every text -query-len/-tool-len long) or toollens (drawn from ToolLens's texts, or built-in quantiles of them)")
	dataDir := fs.String("data", "../shared/datasets/toollens", "-lengths toollens: dataset whose text lengths are drawn")
	vocabPath := fs.String("vocab", "../shared/vocab/bert-base-uncased-vocab.txt", "-lengths toollens: vocab.txt tokenizing -data's texts")
	padMult := fs.Int("pad-multiple", biencoder.DefaultPadMultiple, "pad each batch to its longest text rounded up to a multiple of this (0: to -query-len/-tool-len), as train biencoder does")
	steps := fs.Int("steps", 10, "timed steps (each its own batch)")
	prof := fs.String("profile", "", "write a Go CPU profile of the timed steps to this file (one per backend, FILE-NAME.ext, with several)")
	python := fs.String("python", "/usr/bin/python3", "-vs torch: python with torch (empty: skip)")
	vs := fs.String("vs", "st", "reference: st (sentence-transformers in the venv of make install-st), torch (Debian PyTorch, -python) or none")
	stPy := fs.String("st-python", stPython(), "-vs st: the sentence-transformers venv's python")
	threads := fs.Int("threads", runtime.NumCPU(), "-vs st: torch threads (torch.set_num_threads); when set, also GOMAXPROCS")
	warmup := fs.Int("warmup", 2, "untimed steps after compilation (each side)")
	encN := fs.Int("encode-texts", 128, "-vs st: ToolLens tool texts encoded (texts/s at -tool-len tokens, -batch a batch; 0: skip)")
	blas := torchBLASFlag(fs)
	seed := cli.Seed(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	preset, ok := trainShapes[*shape]
	if !ok {
		return fmt.Errorf("-shape %q: want one of %s", *shape, shapeNames(trainShapes))
	}
	set := cli.Set(fs)
	if !set["lengths"] {
		*lengths = preset.lengths
	}
	if set["threads"] {
		runtime.GOMAXPROCS(*threads)
	}
	for name, v := range map[string]*int{"layers": layers, "hidden": hidden, "heads": heads, "intermediate": inter, "vocab-size": vocab,
		"batch": batch, "query-len": qLen, "tool-len": tLen} {
		if set[name] {
			continue
		}
		*v = map[string]int{"layers": preset.layers, "hidden": preset.hidden, "heads": preset.heads, "intermediate": preset.inter,
			"vocab-size": preset.vocab, "batch": preset.batch, "query-len": preset.qLen, "tool-len": preset.tLen}[name]
	}
	if !set["intermediate"] && set["hidden"] {
		*inter = 4 * *hidden
	}
	if err := cli.First(cli.Positive("layers", *layers), cli.Positive("hidden", *hidden), cli.Positive("heads", *heads),
		cli.Positive("intermediate", *inter), cli.Positive("batch", *batch), cli.Positive("steps", *steps),
		cli.Positive("threads", *threads), cli.Positive("warmup", *warmup)); err != nil {
		return err
	}
	if *batch < 2 {
		return fmt.Errorf("-batch %d: in-batch negatives need >= 2", *batch)
	}
	if *vocab <= 1000 {
		return fmt.Errorf("-vocab-size %d: must be > 1000 (the random token ids are drawn from [1000, vocab))", *vocab)
	}
	if *qLen < 2 || *tLen < 2 {
		return fmt.Errorf("-query-len %d, -tool-len %d: each must be >= 2 ([CLS] and [SEP])", *qLen, *tLen)
	}
	pad, err := biencoder.PadMultiple(*padMult)
	if err != nil {
		return err
	}
	cores, err := torchCores(*blas)
	if err != nil {
		return err
	}
	if *vs != "st" && *vs != "torch" && *vs != "none" {
		return fmt.Errorf("-vs %q: want st, torch or none", *vs)
	}
	if *one != "" {
		*backends = *one
	}
	precisions, err := splitPrecisions(*precs)
	if err != nil {
		return err
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: *vocab, Layers: *layers, Hidden: *hidden, Heads: *heads, Intermediate: *inter, MaxPositions: max(*qLen, *tLen)})
	if err != nil {
		return err
	}
	cfg := &biencoder.Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: *qLen, ToolMaxLen: *tLen, Similarity: "cosine", Temperature: 0.05}

	// The batches: a pure function of -seed, the same for every engine.
	r := rand.New(rand.NewPCG(*seed, 2))
	var qs, ts benchmark.LengthSampler
	source := "full length"
	switch *lengths {
	case "full":
		qs, ts = func(*rand.Rand) int { return *qLen }, func(*rand.Rand) int { return *tLen }
	case "toollens":
		qs, ts, source = benchmark.ToolLensLengths(*dataDir, *vocabPath)
	default:
		return fmt.Errorf("-lengths %q: want full or toollens", *lengths)
	}
	plan := benchmark.PlanTrain(r, benchmark.TrainSpec{Layers: *layers, Hidden: *hidden, Intermediate: *inter, Vocab: *vocab,
		Batch: *batch, QueryLen: *qLen, ToolLen: *tLen, Steps: *steps, Warmup: *warmup, Pad: pad, QueryLengths: qs, ToolLengths: ts})
	realTok, padTok, flops := plan.RealTokens, plan.PadTokens, plan.FLOPs
	fmt.Printf("train step: BERT %d layers, hidden %d, %d heads, intermediate %d, vocab %d, batch %d, query %d + tool %d tokens max\n",
		*layers, *hidden, *heads, *inter, *vocab, *batch, *qLen, *tLen)
	fmt.Printf("lengths: %s; padding: %s; %d steps, %d distinct shapes; %.0f real and %.0f padded tokens/step (%.1f%% real); %.1f GFLOP/step (forward+backward matmuls)\n",
		source, pad, *steps, plan.Shapes, float64(realTok)/float64(*steps), float64(padTok)/float64(*steps),
		100*float64(realTok)/float64(padTok), flops/float64(*steps)/1e9)
	fmt.Printf("cpu: %s\n", backend.CPUSummary())
	const w = 16
	withST := *vs == "st"
	head := fmt.Sprintf("%-*s %12s %10s %9s %12s %8s %10s", w, "engine", "tokens/s", "s/step", "GFLOP/s", "matmul peak", "of peak", "compile s")
	var texts []string
	var seqs [][]int32
	var encCfg encoder.Config
	var tok *tokenize.Tokenizer
	if withST {
		head += fmt.Sprintf(" %9s %10s %10s", "RSS MiB", "encode/s", "CPU s/step")
		var err error
		var why string
		if tok, err = tokenize.FromVocab(*vocabPath, true); err == nil {
			texts, seqs, why = encodeTexts(*dataDir, tok, *encN, *tLen)
			encCfg, err = encoder.Override(bc, map[string]any{"vocab_size": max(*vocab, tok.VocabSize()), "max_position_embeddings": max(512, *tLen)})
		}
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			texts, seqs = nil, nil
			fmt.Printf("encode: not measured (%s)\n", why)
		} else {
			fmt.Printf("encode: %d ToolLens tool texts (at most %d tokens), batch %d, best of 2 passes\n", len(texts), *tLen, *batch)
		}
	}
	fmt.Println(head)
	names, bes, skipped := openBackends(*backends, w, true)
	if len(names) == 0 {
		return fmt.Errorf("no toolret backend could be opened (%s): nothing measured", strings.Join(skipped, ", "))
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.Schedule = 1e-4, "constant"
	tps, enc, cpu := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var rows []string // the rows measured: a backend name, "-bf16" added for bf16
	for k, bname := range names {
		for _, prec := range backendPrecisions(precisions, bname) {
			name, be, compute := bname, bes[k], dtypes.Float32
			if prec == backend.BF16 {
				name, compute = bname+"-bf16", dtypes.BFloat16
				if err := backend.SupportsBF16(bname); err != nil {
					fmt.Printf("%-*s skipped: %v\n", w, "toolret-"+name, err)
					skipped = append(skipped, name)
					continue
				}
			}
			rc := *cfg
			rc.Compute = compute
			rssOK := withST && benchmark.ResetPeakRSS() == nil
			tt, err := benchmark.TimeTrain(be, &rc, opt, plan, func(f func() error) error {
				return profile(profilePath(*prof, name, len(names) > 1 || len(precisions) > 1), f)
			})
			if err != nil {
				return fmt.Errorf("toolret-%s: %w", name, err)
			}
			rows = append(rows, name)
			rss, _ := benchmark.PeakRSS()
			peak, err := benchmark.MatmulPeak(be, 1024)
			if err != nil {
				return fmt.Errorf("toolret-%s: matmul peak: %w", name, err)
			}
			sec := tt.Steps.Seconds()
			tps[name] = float64(realTok) / sec
			gf := flops / sec / 1e9
			line := fmt.Sprintf("%-*s %12.0f %10.3f %9.1f %12.1f %7.0f%% %10.1f", w, "toolret-"+name, tps[name], sec/float64(*steps), gf, peak, 100*gf/peak, tt.Compile.Seconds())
			if withST {
				enc[name], err = timeEncodeRow(func() (float64, error) {
					d, err := benchmark.TimeEncodeCompute(be, encCfg, tok, seqs, *tLen, *batch, 2, compute, nil)
					return d.Seconds(), err
				}, len(texts))
				if err != nil {
					return fmt.Errorf("toolret-%s: encode: %w", name, err)
				}
				rssS := "-"
				if rssOK {
					rssS = fmt.Sprintf("%.0f", float64(rss)/(1<<20))
				}
				cpu[name] = tt.CPU.Seconds() / float64(*steps)
				line += fmt.Sprintf(" %9s %10.1f %10.2f", rssS, enc[name], cpu[name])
			}
			fmt.Println(line)
		}
	}
	notMeasured := skippedError(skipped)
	spec := map[string]any{"config": bc, "batch": *batch, "query_len": *qLen, "tool_len": *tLen, "steps": *steps, "batches": plan.Batches, "seed": *seed}
	switch {
	case *vs == "none", *vs == "torch" && *python == "":
		return notMeasured
	case withST:
		spec["threads"], spec["vocab"], spec["warmup"] = *threads, *vocabPath, *warmup
		spec["encode"] = map[string]any{"texts": texts, "max_len": *tLen, "batch": *batch}
		return errors.Join(notMeasured, stRow(*stPy, spec, realTok, flops, *steps, rows, tps, enc, cpu, w))
	}
	skippedPT, err := torchRows(*python, "scripts/bench/torch_train.py", cores, spec, w, func(row string, pt torchResult) {
		ptTPS := float64(realTok) / pt.Seconds
		gf := flops / pt.Seconds / 1e9
		fmt.Printf("%-*s %12.0f %10.3f %9.1f %12.1f %7.0f%% %10s  %s\n", w, row, ptTPS, pt.Seconds/float64(*steps), gf, pt.MM, 100*gf/pt.MM, "-", pt.about())
		for _, name := range rows {
			fmt.Printf("toolret-%s / %s tokens/s: %.2fx\n", name, row, tps[name]/ptTPS)
		}
	})
	if err != nil {
		return err
	}
	return errors.Join(notMeasured, skippedPT)
}

// runTorch runs a PyTorch script (relative to the module root, run from it) on a JSON spec,
// with OpenBLAS core type core (torchEnv), and returns its last output line.
func runTorch(python, script, core string, spec any) ([]byte, error) {
	tmp, err := os.CreateTemp("", "bench-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := json.NewEncoder(tmp).Encode(spec); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(script)
	cmd := exec.Command(python, abs, tmp.Name())
	cmd.Env = torchEnv(core)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return []byte(lines[len(lines)-1]), nil
}

// splitPrecisions parses bench train's -precision list (fp32, bf16, auto).
func splitPrecisions(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if err := backend.CheckPrecision("-precision", p); err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// backendPrecisions are the precisions timed on the backend name: those listed, auto
// standing for fp32 and, on the xla backends (CPU and CUDA, where bf16 is compared with
// sentence-transformers' autocast) or where the backend multiplies bfloat16 natively
// (backend.NativeBF16), bf16.
func backendPrecisions(list []string, name string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range list {
		if p != backend.AutoPrecision {
			add(p)
			continue
		}
		add(backend.FP32)
		if native, _ := backend.NativeBF16(name); native || strings.HasPrefix(backend.Config(backend.Name(name)), "xla") {
			add(backend.BF16)
		}
	}
	return out
}
