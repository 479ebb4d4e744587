package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/train"
)

// trainBench measures bi-encoder training throughput (tokens/s): shared BERT tower, mean
// pooling, cosine InfoNCE with in-batch negatives, AdamW with clipping; random token ids of
// the given shapes; on each toolret backend and on PyTorch (scripts/bench/torch_train.py).
func trainBench(args []string) error {
	fs := flag.NewFlagSet("train", flag.ExitOnError)
	backends := fs.String("backends", "go,onnx", "toolret backends")
	layers := fs.Int("layers", 4, "layers")
	hidden := fs.Int("hidden", 256, "hidden size")
	heads := fs.Int("heads", 4, "heads")
	vocab := fs.Int("vocab-size", 8000, "vocabulary size")
	batch := fs.Int("batch", 32, "batch size")
	qLen := fs.Int("query-len", 32, "query length")
	tLen := fs.Int("tool-len", 64, "tool length")
	steps := fs.Int("steps", 10, "timed steps")
	python := fs.String("python", "/usr/bin/python3", "python with torch (empty: skip)")
	fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.Positive("layers", *layers), cli.Positive("hidden", *hidden), cli.Positive("heads", *heads),
		cli.Positive("batch", *batch), cli.Positive("steps", *steps)); err != nil {
		return err
	}
	if *vocab <= 1000 {
		return fmt.Errorf("-vocab-size %d: must be > 1000 (the random token ids are drawn from [1000, vocab))", *vocab)
	}
	if *qLen < 2 || *tLen < 2 {
		return fmt.Errorf("-query-len %d, -tool-len %d: each must be >= 2 ([CLS] and [SEP])", *qLen, *tLen)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: *vocab, Layers: *layers, Hidden: *hidden, Heads: *heads, Intermediate: 4 * *hidden, MaxPositions: max(*qLen, *tLen)})
	if err != nil {
		return err
	}
	cfg := &biencoder.Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: *qLen, ToolMaxLen: *tLen, Similarity: "cosine", Temperature: 0.05}
	tokens := *batch * (*qLen + *tLen)
	fmt.Printf("train step: BERT %d layers, hidden %d, %d heads, batch %d, query %d + tool %d tokens (%d tokens/step)\n",
		*layers, *hidden, *heads, *batch, *qLen, *tLen, tokens)
	fmt.Printf("%-14s %12s %10s\n", "engine", "tokens/s", "s/step")
	r := rand.New(rand.NewPCG(1, 2))
	ids := func(n, l int) *tensors.Tensor {
		x := make([]int32, n*l)
		for i := range x {
			x[i] = int32(1000 + r.IntN(*vocab-1000))
		}
		return tensors.FromFlatDataAndDimensions(x, n, l)
	}
	ones := func(n, l int) *tensors.Tensor {
		x := make([]int32, n*l)
		for i := range x {
			x[i] = 1
		}
		return tensors.FromFlatDataAndDimensions(x, n, l)
	}
	fm := tensors.FromFlatDataAndDimensions(make([]bool, *batch**batch), *batch, *batch)
	host := []*tensors.Tensor{ids(*batch, *qLen), ones(*batch, *qLen), ids(*batch, *tLen), ones(*batch, *tLen), fm}
	opt := train.DefaultOptimizer()
	opt.LR, opt.Schedule = 1e-4, "constant"
	for _, name := range strings.Split(*backends, ",") {
		be, err := backend.Open(name)
		if err != nil {
			fmt.Printf("%-14s %12s (%v)\n", "toolret-"+name, "-", err)
			continue
		}
		// A tensor is bound to the first backend that uses it: each backend gets its own copies.
		inputs := make([]any, len(host))
		for i, t := range host {
			c, err := t.LocalClone()
			if err != nil {
				return err
			}
			inputs[i] = c
		}
		store := model.NewStore()
		store.SetParam(model.ParamInitialSeed, int64(1))
		exec, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) *Node {
			s.SetTraining(in[0].Graph(), true)
			loss := cfg.Loss(s, in)
			opt.Update(s, loss)
			return loss
		})
		if err != nil {
			return err
		}
		for i := 0; i < 2; i++ { // compile + warm up
			if _, err := exec.Call(inputs...); err != nil {
				return err
			}
		}
		start := time.Now()
		for i := 0; i < *steps; i++ {
			if _, err := exec.Call(inputs...); err != nil {
				return err
			}
		}
		per := time.Since(start).Seconds() / float64(*steps)
		fmt.Printf("%-14s %12.0f %10.3f\n", "toolret-"+name, float64(tokens)/per, per)
	}
	if *python == "" {
		return nil
	}
	spec := map[string]any{"config": bc, "batch": *batch, "query_len": *qLen, "tool_len": *tLen, "steps": *steps}
	tmp, err := os.CreateTemp("", "bench-train-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	json.NewEncoder(tmp).Encode(spec)
	tmp.Close()
	script, _ := filepath.Abs("scripts/bench/torch_train.py")
	cmd := exec.Command(*python, script, tmp.Name())
	cmd.Env = withoutEnv(os.Environ(), "OPENBLAS_CORETYPE")
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Printf("%-14s %12s (%v: %s)\n", "pytorch", "-", err, strings.TrimSpace(string(out)))
		return nil
	}
	var res struct {
		TPS     float64 `json:"tokens_per_sec"`
		Per     float64 `json:"sec_per_step"`
		Threads int     `json:"threads"`
		Torch   string  `json:"torch"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return fmt.Errorf("pytorch output %q: %w", out, err)
	}
	fmt.Printf("%-14s %12.0f %10.3f  (torch %s, %d threads)\n", "pytorch", res.TPS, res.Per, res.Torch, res.Threads)
	return nil
}
