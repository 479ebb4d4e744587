// Package encodecmd is the `toolret encode` command; it embeds texts with an encoder model (any registered model_type: bert,
// deberta-v2).
//
//	encode -model DIR -in FILE [-pooling cls|mean|pooler|none] [-max-len N] [-backend go|onnx] [-quantize int8] [-precision fp32|bf16|auto] [-out FILE.jsonl]
//
// DIR is a HuggingFace-layout model directory (or a hub id org/name[@revision], resolved in
// the Hugging Face hub cache and downloaded when missing; see package hub): config.json with its model_type,
// model.safetensors or a sharded index, and a tokenizer (tokenizer.json, a SentencePiece
// spm.model as DeBERTa-v3 ships it, or vocab.txt; see tokenize.Load). The embedding table may
// have more rows than the tokenizer has tokens (deberta-v3: vocab_size 128100 for 128001
// tokens), not fewer. FILE holds one text per
// line, or JSONL objects with a "text" field. Each output line is {"ids": [...],
// "embedding": [...]}, or with -pooling none {"ids": [...], "hidden": [[...] per token]}.
// -quantize int8 (with -backend onnx) runs the encoder with int8 weights (export.QuantizeONNX).
// -precision bf16 runs its matrix multiplications in bfloat16, the weights, LayerNorm and
// softmax in float32 (hflayers.ComputeParam; the go and xla backends, not onnx); auto is bf16
// where the backend multiplies bfloat16 natively (backend.NativeBF16), else fp32.
package encodecmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/toolret/toolret/internal/cli"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// Main runs `toolret encode` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("encode", flag.ContinueOnError)
	dir := fs.String("model", "", "model: a directory (HF layout) or a hub id org/name[@revision] (Hugging Face hub cache, downloaded when missing)")
	in := fs.String("in", "", "input file: one text per line, or JSONL with a \"text\" field (- for stdin)")
	out := fs.String("out", "", "output JSONL file (default stdout)")
	pooling := fs.String("pooling", "cls", "cls, mean, pooler or none")
	maxLen := fs.Int("max-len", 128, "maximum tokens per text, [CLS] and [SEP] included")
	batch := fs.Int("batch", 32, "texts per batch")
	be := fs.String("backend", "", "compute backend: go (default), onnx, xla:cpu, xla:cuda")
	quant := cli.Quantize(fs, "the encoder's weights")
	prec := fs.String("precision", backend.FP32, "fp32, bf16 (matrix multiplications in bfloat16, weights, LayerNorm and softmax in float32; go and xla backends) or auto (bf16 where the backend multiplies bfloat16 natively: xla:cuda, xla:cpu on an AMX (amx_bf16) CPU; else fp32)")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "encode: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "encode: unexpected arguments %q\n", fs.Args())
		return 2
	}
	q, err := export.ParseQuantization(*quant)
	if err != nil {
		fmt.Fprintf(os.Stderr, "encode: -%v\n", err)
		return 2
	}
	if err := encode(*dir, *in, *out, *pooling, *maxLen, *batch, *be, q, *prec); err != nil {
		fmt.Fprintln(os.Stderr, "encode:", err)
		return 1
	}
	return 0
}

func readTexts(path string) ([]string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var texts []string
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line != "" || err == nil {
			if strings.HasPrefix(strings.TrimSpace(line), "{") {
				var obj struct {
					Text *string `json:"text"`
				}
				if jerr := json.Unmarshal([]byte(line), &obj); jerr != nil {
					return nil, fmt.Errorf("%s:%d: malformed JSON: %w", path, n, jerr)
				}
				if obj.Text == nil {
					return nil, fmt.Errorf("%s:%d: object has no \"text\" field", path, n)
				}
				line = *obj.Text
			}
			if strings.TrimSpace(line) == "" {
				return nil, fmt.Errorf("%s:%d: empty text (every line must hold a text to embed)", path, n)
			}
			texts = append(texts, line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return texts, nil
}

// run is encode in fp32.
func run(dir, in, out, pooling string, maxLen, batch int, beName string) error {
	return encode(dir, in, out, pooling, maxLen, batch, beName, export.QuantDefault, backend.FP32)
}

func encode(dir, in, out, pooling string, maxLen, batch int, beName string, q export.Quantization, precision string) error {
	if dir == "" || in == "" {
		return fmt.Errorf("-model and -in are required")
	}
	if maxLen < 2 {
		return fmt.Errorf("-max-len %d: must be >= 2 ([CLS] and [SEP])", maxLen)
	}
	if batch <= 0 {
		return fmt.Errorf("-batch %d: must be > 0", batch)
	}
	dir, err := hub.Resolve(context.Background(), dir)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	p, err := encoder.ParsePooling(pooling)
	if err != nil {
		return err
	}
	prec, compute, why, err := backend.ResolvePrecision("-precision", precision, beName)
	if err != nil {
		return err
	}
	if prec == backend.BF16 && q.Int8() {
		return fmt.Errorf("-precision %s and -quantize %s: one or the other (int8 runs on the onnx backend, bf16 on go or xla)", precision, q)
	}
	texts, err := readTexts(in)
	if err != nil {
		return err
	}
	be, err := backend.Open(backend.Name(beName))
	if err != nil {
		return err
	}
	if err := export.CheckQuantization(be, q); err != nil {
		return fmt.Errorf("-%w", err)
	}
	tok, err := tokenize.Load(dir)
	if err != nil {
		return err
	}
	store := model.NewStore()
	cfg, err := encoder.LoadHF(store.RootScope(), dir)
	if err != nil {
		return err
	}
	if err := encoder.FitVocab(tok, cfg); err != nil {
		return fmt.Errorf("model %s: %w (config.json)", dir, err)
	}
	if maxLen > cfg.MaxPositions() {
		maxLen = cfg.MaxPositions()
	}
	var call encoder.Call
	if _, isONNX := cfg.(encoder.ONNX); q.Int8() || isONNX && backend.RunsONNX(be) && os.Getenv("TOOLRET_ONNX_GRAPHS") != "gomlx" {
		call, err = export.NewONNXCall(be, store, "", cfg, p, q)
	} else {
		if prec != backend.FP32 || precision == backend.AutoPrecision {
			fmt.Fprintln(os.Stderr, why)
		}
		var r *encoder.Runner
		r, err = encoder.NewRunnerCompute(be, store, "", cfg, p, compute)
		if r != nil {
			call = r.Call
		}
	}
	if err != nil {
		return err
	}
	start := time.Now()
	ids := make([][]int32, len(texts))
	for i, s := range texts {
		ids[i] = tok.Single(s, maxLen)
	}
	rows, err := encoder.Map(tok, ids, nil, maxLen, batch, call)
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	h := cfg.Hidden()
	for i, row := range rows {
		obj := map[string]any{"ids": ids[i]}
		if p == encoder.PoolNone {
			// The row is the padded [len, hidden] states: keep the real tokens'.
			hidden := make([][]float32, len(ids[i]))
			for k := range hidden {
				hidden[k] = row[k*h : (k+1)*h]
			}
			obj["hidden"] = hidden
		} else {
			obj["embedding"] = row
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		bw.Write(append(b, '\n'))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(os.Stderr, "encoded %d texts in %v (%.1f texts/s)\n", len(texts), el.Round(time.Millisecond), float64(len(texts))/el.Seconds())
	return nil
}
