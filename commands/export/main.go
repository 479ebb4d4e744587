// Package exportcmd is the `toolret export` command; it writes a trained run in a format other programs load.
//
//	export -run RUN -format hf|onnx|index -out DIR [-force] [-data DIR] [-refiner RUN] [-backend go]
//	export -model REF -data DIR -format index -out DIR [-query-prompt P] [-tool-prompt P]
//	export -format index -update -out DIR [-data DIR] [-backend go]
//	export -model REF -format hf -out DIR -hybrid zscore -hybrid-weight W [-selected-on TEXT]
//	export -model REF -format hf -out DIR -recipe-reranker CE [-recipe-rerank-depth 20] [-recipe-rerank-weight W]
//
// RUN is a run directory (its best checkpoint is exported) or one checkpoint directory, of
// any kind package export knows (bi-encoder, cross-encoder, classifier).
//
//	hf     HuggingFace directory with onnx/model.onnx (+ sentence-transformers files for
//	       bi-encoders, XxxForSequenceClassification for heads); separate towers go to query/
//	       and tool/. transformers.js, sentence-transformers (backend="onnx") and hugot load it.
//	onnx   the same ONNX graph alone: model.onnx (or query.onnx and tool.onnx), opset 17,
//	       dynamic batch and sequence axes, int64 inputs input_ids, attention_mask,
//	       token_type_ids; outputs last_hidden_state and sentence_embedding (pooled,
//	       normalised for cosine models), or a head's logits.
//	index  a bi-encoder's tool embeddings over the tools of -data (default: the embedded
//	       dataset): tools.safetensors, tools.jsonl and the towers in hf layout (query/; a
//	       separate tool tower in tool/), loadable with package retriever, served by cmd/serve.
//	       When -data is the run's training data and the run records its dev split (run.json),
//	       also the tools' Tool2Vec usage vectors (tools_usage.safetensors) from the run's
//	       training part, without its dev queries (toolindex.WithToolVectors("usage")).
//	       -run may also be an MLC classifier (train classifier -kind mlc): the index holds its
//	       head's rows as the tool vectors and its per-tool bias (tensor "bias"), its encoder
//	       as the query tower, and scores are the classifier's logits. -data must hold exactly
//	       its labels (the data it was trained on); its tools cannot be added to later (cmd/serve,
//	       -update), only removed; a DeBERTa head over the pooler is refused (train with
//	       -pooling cls).
//	       -refiner RUN packages a ToolRefiner run (train refiner over -candidates bi-encoder
//	       or usage of this -run, or -candidates mlc -candidates-run of this MLC -run; on
//	       -data) into refiner/: its best checkpoint without the optimizer state, and
//	       tool_ids.json (the tools of its Tool2Vec table, in order); toolindex.Load then
//	       serves the first stage and the refiner.
//
// -update brings an existing index up to date with the tools of -data offline, as cmd/serve's
// live updates do: new and changed tools are embedded with the index's own tool tower, tools
// missing from -data are deleted, and the index is rewritten in place (temporary files
// renamed; see package serve). It takes no -run. An MLC index can only lose tools.
//
// -model REF is -run for any model reference: a run, a HuggingFace or sentence-transformers
// directory, or a hub id org/name[@revision] (resolved in the Hugging Face hub cache,
// downloaded when missing; see package hub). A pre-trained model is exported as it is: with
// -format index that is a zero-shot index over -data, no training and no queries needed.
// -query-prompt and -tool-prompt set the prefixes put before queries and tool texts (default:
// the model's "query" and "document" prompts); they are recorded in the index.
//
// -hybrid rrf|minmax|zscore [-hybrid-weight W] [-selected-on TEXT] gives the model its recipe:
// an hf export writes toolret_recipe.json (docs/export.md, "The model's recipe"), whose BM25
// fusion eval -model, serve -library -model and export -format index (which records it in the
// index, for serve -index) apply without flags. A -model that has a recipe keeps it in its
// exports unless -hybrid replaces it or -no-recipe drops it. -clauses adds per-clause
// retrieval to the recipe (-hybrid's, else the model's own): eval -clauses as the model's
// default. -recipe-reranker CE adds a cross-encoder reranker to the recipe (-hybrid's, else
// the model's own) in place of its own: CE, an hf cross-encoder directory (or hub id) or a
// cross-encoder run (exported to hf first), is copied into DIR/reranker with the rest of the
// export, and reranks the top -recipe-rerank-depth tools after the fusion and the clauses,
// interpolated with them at -recipe-rerank-weight (eval -model DIR -reranker CE -weight dev
// picks it; default: the cross-encoder's order alone); an index exported from DIR copies it
// too. A model's own reranker is carried by its exports (re-export, -interpolate, lengths).
//
// -quantize int8 adds int8 weights (export.QuantizeONNX: onnxruntime's dynamic quantization,
// per output channel; int8-tensor: per matrix): hf and onnx write onnx/model_int8.onnx (and
// model_int8.onnx) beside the fp32 model; index embeds the tools with them (needs -backend
// onnx) and records it, so serve embeds the queries the same way (docs/export.md).
//
// Every export has a manifest.json (toolret version, source, kind, data fingerprint, sha256 of
// every file). DIR must be absent or empty unless -force; missing parents are created (0755,
// as mkdir -p); the export is written beside it and renamed into place, so a failure leaves
// nothing behind.
package exportcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
)

// Main runs `toolret export` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	run := fs.String("run", "", "run directory or checkpoint directory (required); -format index: a bi-encoder or an MLC classifier")
	format := fs.String("format", "hf", "hf, onnx or index")
	out := fs.String("out", "", "output directory (required)")
	force := fs.Bool("force", false, "replace a non-empty output directory")
	dataDir := fs.String("data", "", "dataset whose tools -format index embeds (default: the embedded dataset)")
	be := fs.String("backend", "", "compute backend: go (default), onnx, xla:cpu")
	refinerRun := fs.String("refiner", "", "with -format index: a refiner run (or checkpoint) over this -run's candidates (bi-encoder, usage, or mlc for an MLC -run), packaged into the index (refiner/) and served by toolindex.Load")
	update := fs.Bool("update", false, "with -format index: update the index in -out to the tools of -data (new and changed tools embedded with its tool tower, missing ones deleted) instead of exporting; no -run")
	ref := fs.String("model", "", "model to export: a run, a HuggingFace or sentence-transformers directory, or a hub id org/name[@revision] (instead of -run)")
	quant := cli.Quantize(fs, "also write the ONNX model quantized (model_int8.onnx beside model.onnx); -format index: embed the tools with int8 weights (-backend onnx) and record it")
	prec := fs.String("precision", "", "with -format index: the precision the tools are embedded at, recorded in the index so that serve and toolindex.Load embed queries alike: fp32 (default), bf16 (matrix multiplications in bfloat16, weights, LayerNorm and softmax in float32; -backend go or xla, not with -quantize int8) or auto (bf16 where the backend multiplies bfloat16 natively: xla:cuda, xla:cpu on an AMX CPU)")
	interp := fs.String("interpolate", "", "a second model (run, HF directory or hub id) of the same architecture: the export's weights are (1-W)·MODEL + W·this (WiSE-FT)")
	interpW := fs.Float64("interpolate-weight", 0.5, "W of -interpolate, in [0, 1]")
	var keep []int
	fs.Func("keep-layers", "keep only these transformer layers of the model, e.g. 0,2,4 (strictly increasing indices, renumbered from 0; after -interpolate): layer pruning, as distillation recipes start a smaller student", func(s string) (err error) {
		keep, err = export.ParseLayers(s)
		return err
	})
	var lengths export.Lengths
	fs.IntVar(&lengths.Query, "query-len", 0, "a bi-encoder's maximum tokens per query (0: the model's own: a pre-trained model's max_seq_length, a run's training length); recorded in the export")
	fs.IntVar(&lengths.Tool, "tool-len", 0, "a bi-encoder's maximum tokens per tool text (0: the model's own, as -query-len; e.g. tools embedded whole by a run trained on 64-token tools); recorded in the export")
	var prompts export.Prompts
	fs.Func("query-prompt", "prefix put before every query (default: the model's \"query\" prompt); recorded in the export", func(s string) error { prompts.Query = &s; return nil })
	fs.Func("tool-prompt", "prefix put before every tool text (default: the model's \"document\" prompt); recorded in the export", func(s string) error { prompts.Tool = &s; return nil })
	hybrid := fs.String("hybrid", "", "-format hf or index: the model's recipe fuses its dense ranking with BM25 over the library's tool texts as serve -hybrid does: rrf, minmax or zscore (written to toolret_recipe.json; eval -model, serve -library -model and an index exported from it apply it)")
	hybridW := fs.String("hybrid-weight", "", "with -hybrid minmax|zscore: the recipe's dense weight w in [0, 1] (w·dense + (1-w)·bm25; default 0.5), or adaptive:BASE,SLOPE for a weight per query, clamp(BASE + SLOPE·z1, 0, 1), z1 the top z-score of the query's dense ranking (eval -method fusion -weight adaptive learns one on a dev split and prints it)")
	selectedOn := fs.String("selected-on", "", "with -hybrid, -clauses or -recipe-reranker: free text recorded in the recipe, the dev split its choices were made on")
	var clauses cli.ClauseFlags
	clauses.Register(fs, "-format hf or index: the model's recipe ranks each query whole and clause by clause and merges the rankings (as eval -clauses, with the -clauses-* flags given; the others stay rerank's defaults), after its BM25 fusion: the fusion of -hybrid, else the model's own recipe's")
	rs := export.DefaultRerankerSettings()
	if _, err := flagcfg.Bind(fs, &rs); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		return 2
	}
	noRecipe := fs.Bool("no-recipe", false, "export without the recipe of -model (toolret_recipe.json)")
	loraExport := fs.String("lora-export", export.LoRAMerged, "a bi-encoder run trained with LoRA (train biencoder -lora-rank): merged (the adapters merged into the base weights, the layout of a full fine-tune) or adapter (-format hf: a PEFT adapter directory, adapter_config.json and adapter_model.safetensors, with the base model in base/)")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "export: %v\n", err)
		return 2
	}
	if err := clauses.Check(cli.Set(fs)); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "export: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *ref != "" {
		if *run != "" {
			fmt.Fprintln(os.Stderr, "export: give -run or -model, not both")
			return 2
		}
		*run = *ref
	}
	if *update {
		if *refinerRun != "" {
			fmt.Fprintln(os.Stderr, "export: -update keeps the index's refiner: -refiner does not apply (re-export with -run and -refiner)")
			return 2
		}
		if *prec != "" {
			fmt.Fprintln(os.Stderr, "export: -update embeds the tools at the index's own precision (its manifest's): -precision does not apply")
			return 2
		}
		msg, err := runUpdate(*run, *format, *out, *force, *dataDir, *be)
		if err != nil {
			fmt.Fprintln(os.Stderr, "export:", cli.Unprefixed("export", err))
			return 1
		}
		fmt.Fprintln(os.Stderr, msg)
		return 0
	}
	q, err := export.ParseQuantization(*quant)
	if err != nil {
		fmt.Fprintf(os.Stderr, "export: -%v\n", err)
		return 2
	}
	addsRecipe := clauses.On || rs.CrossEncoder != "" // -selected-on describes these too
	recipe, err := recipeFlags(*hybrid, *hybridW, *selectedOn, addsRecipe)
	if err != nil {
		fmt.Fprintf(os.Stderr, "export: %v\n", err)
		return 2
	}
	rr, err := rs.Reranker()
	if err != nil {
		fmt.Fprintf(os.Stderr, "export: %v\n", err)
		return 2
	}
	if (clauses.On || rr != nil) && *noRecipe {
		fmt.Fprintln(os.Stderr, "export: -clauses or -recipe-reranker, and -no-recipe: give one")
		return 2
	}
	if (clauses.On || rr != nil) && recipe == nil { // the model's own recipe, plus these
		if recipe, err = toolret.ModelRecipe(context.Background(), *run); err != nil {
			fmt.Fprintln(os.Stderr, "export:", err)
			return 1
		}
		if recipe == nil {
			recipe = &export.Recipe{Version: export.RecipeVersion}
		}
	}
	if clauses.On {
		o, err := clauses.Given()
		if err != nil {
			fmt.Fprintln(os.Stderr, "export:", err)
			return 2
		}
		recipe.Clauses = export.ClausesOf(*o)
	}
	if rr != nil {
		recipe.Reranker = rr
	}
	if *selectedOn != "" && recipe != nil {
		recipe.SelectedOn = *selectedOn
	}
	man, err := toolret.Export(context.Background(), toolret.ExportConfig{Model: *run, Format: *format, Out: *out, Force: *force,
		Data: *dataDir, Backend: *be, Refiner: *refinerRun, Prompts: prompts, Interpolate: *interp, InterpolateWeight: *interpW, KeepLayers: keep, Lengths: lengths,
		Quantize: q, Precision: *prec, Recipe: recipe, NoRecipe: *noRecipe, LoRA: *loraExport, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "export:", cli.Unprefixed("export", err))
		return 1
	}
	fmt.Fprintf(os.Stderr, "exported %s %s (%s) to %s: %d files\n", man.Kind, man.Source, man.Format, *out, len(man.Files)+1)
	for _, n := range man.Notes {
		fmt.Fprintln(os.Stderr, "export: note:", n)
	}
	return 0
}

// recipeFlags turns -hybrid, -hybrid-weight ("": not given; W, or adaptive:BASE,SLOPE) and
// -selected-on into the recipe the export carries; nil when -hybrid is not given. adds:
// -clauses or -recipe-reranker is given, which -selected-on may describe without -hybrid.
func recipeFlags(hybrid, weight, selectedOn string, adds bool) (*export.Recipe, error) {
	w := -1.0
	var a *fusion.Adaptive
	if rule, ok := strings.CutPrefix(weight, "adaptive:"); ok {
		if hybrid != "minmax" && hybrid != "zscore" {
			return nil, errors.New("-hybrid-weight adaptive:BASE,SLOPE needs -hybrid minmax or zscore")
		}
		r, err := fusion.ParseAdaptive(rule)
		if err != nil {
			return nil, fmt.Errorf("-hybrid-weight: %w", err)
		}
		a, w = &r, min(1, max(0, r.Base))
	} else if weight != "" {
		v, err := strconv.ParseFloat(weight, 64)
		if err != nil {
			return nil, fmt.Errorf("-hybrid-weight %q: want W in [0, 1] or adaptive:BASE,SLOPE", weight)
		}
		w = v
	}
	switch {
	case hybrid == "" && w != -1:
		return nil, errors.New("-hybrid-weight needs -hybrid")
	case hybrid == "" && selectedOn != "" && !adds:
		return nil, errors.New("-selected-on needs -hybrid, -clauses or -recipe-reranker")
	case hybrid == "":
		return nil, nil
	case hybrid == "rrf" && w != -1:
		return nil, errors.New("-hybrid-weight applies to -hybrid minmax or zscore; rrf has no weight")
	case hybrid == "rrf":
		w = 0
	case w == -1:
		w = 0.5
	}
	r := &export.Recipe{Version: export.RecipeVersion, Hybrid: &export.HybridRecipe{Fusion: hybrid, Weight: w, Adaptive: a}, SelectedOn: selectedOn}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("-%v", err)
	}
	return r, nil
}

func runExport(run, format, out string, force bool, dataDir, beName string) (*export.Manifest, error) {
	return exportModel(run, format, out, force, dataDir, beName, "", export.Prompts{})
}

// exportRun exports run with the model's own prompts.
func exportRun(run, format, out string, force bool, dataDir, beName, refinerRun string) (*export.Manifest, error) {
	return exportModel(run, format, out, force, dataDir, beName, refinerRun, export.Prompts{})
}

// exportModel exports the model run names (a run, an HF directory or a hub id) with
// toolret.Export; refinerRun, with -format index, is packaged with the index.
func exportModel(run, format, out string, force bool, dataDir, beName, refinerRun string, prompts export.Prompts) (*export.Manifest, error) {
	man, err := toolret.Export(context.Background(), toolret.ExportConfig{Model: run, Format: format, Out: out, Force: force,
		Data: dataDir, Backend: beName, Refiner: refinerRun, Prompts: prompts, Log: os.Stderr})
	return man, cli.Unprefixed("export", err) // main prints "export: " itself
}

// runUpdate syncs the index out to the tools of dataDir (default: the embedded dataset).
func runUpdate(run, format, out string, force bool, dataDir, beName string) (string, error) {
	switch {
	case format != export.FormatIndex:
		return "", fmt.Errorf("-update works on an index: give -format index (not %q)", format)
	case run != "":
		return "", fmt.Errorf("-update takes no -run: the index's own tool tower embeds the tools")
	case force:
		return "", fmt.Errorf("-update rewrites the index in place: -force does not apply")
	}
	u, err := toolret.UpdateIndex(context.Background(), out, dataDir, beName)
	if err != nil {
		return "", err
	}
	src := dataDir
	if src == "" {
		src = "default"
	}
	return fmt.Sprintf("updated index %s to the %d tools of %s: %d added, %d changed, %d deleted (library version %d)",
		out, u.Tools, src, u.Added, u.Changed, u.Deleted, u.Version), nil
}
