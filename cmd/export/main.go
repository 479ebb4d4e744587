// Command export writes a trained run in a format other programs load.
//
//	export -run RUN -format hf|onnx|index -out DIR [-force] [-data DIR] [-refiner RUN] [-backend go]
//	export -model REF -data DIR -format index -out DIR [-query-prompt P] [-tool-prompt P]
//	export -format index -update -out DIR [-data DIR] [-backend go]
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
//	       training part, without its dev queries (retriever.WithToolVectors("usage")).
//	       -run may also be an MLC classifier (train classifier -kind mlc): the index holds its
//	       head's rows as the tool vectors and its per-tool bias (tensor "bias"), its encoder
//	       as the query tower, and scores are the classifier's logits. -data must hold exactly
//	       its labels (the data it was trained on); its tools cannot be added to later (cmd/serve,
//	       -update), only removed; a DeBERTa head over the pooler is refused (train with
//	       -pooling cls).
//	       -refiner RUN packages a ToolRefiner run (train refiner over -candidates bi-encoder
//	       or usage of this -run, or -candidates mlc -candidates-run of this MLC -run; on
//	       -data) into refiner/: its best checkpoint without the optimizer state, and
//	       tool_ids.json (the tools of its Tool2Vec table, in order); retriever.Load then
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
// Every export has a manifest.json (toolret version, source, kind, data fingerprint, sha256 of
// every file). DIR must be absent or empty unless -force; missing parents are created (0755,
// as mkdir -p); the export is written beside it and renamed into place, so a failure leaves
// nothing behind.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retriever"
	"github.com/toolret/toolret/serve"
)

func main() {
	run := flag.String("run", "", "run directory or checkpoint directory (required); -format index: a bi-encoder or an MLC classifier")
	format := flag.String("format", "hf", "hf, onnx or index")
	out := flag.String("out", "", "output directory (required)")
	force := flag.Bool("force", false, "replace a non-empty output directory")
	dataDir := flag.String("data", "", "dataset whose tools -format index embeds (default: the embedded dataset)")
	be := flag.String("backend", "", "compute backend: go (default), onnx, xla:cpu")
	refinerRun := flag.String("refiner", "", "with -format index: a refiner run (or checkpoint) over this -run's candidates (bi-encoder, usage, or mlc for an MLC -run), packaged into the index (refiner/) and served by retriever.Load")
	update := flag.Bool("update", false, "with -format index: update the index in -out to the tools of -data (new and changed tools embedded with its tool tower, missing ones deleted) instead of exporting; no -run")
	ref := flag.String("model", "", "model to export: a run, a HuggingFace or sentence-transformers directory, or a hub id org/name[@revision] (instead of -run)")
	var prompts export.Prompts
	flag.Func("query-prompt", "prefix put before every query (default: the model's \"query\" prompt); recorded in the export", func(s string) error { prompts.Query = &s; return nil })
	flag.Func("tool-prompt", "prefix put before every tool text (default: the model's \"document\" prompt); recorded in the export", func(s string) error { prompts.Tool = &s; return nil })
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "export: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *ref != "" {
		if *run != "" {
			fmt.Fprintln(os.Stderr, "export: give -run or -model, not both")
			os.Exit(2)
		}
		*run = *ref
	}
	if *update {
		if *refinerRun != "" {
			fmt.Fprintln(os.Stderr, "export: -update keeps the index's refiner: -refiner does not apply (re-export with -run and -refiner)")
			os.Exit(2)
		}
		msg, err := runUpdate(*run, *format, *out, *force, *dataDir, *be)
		if err != nil {
			fmt.Fprintln(os.Stderr, "export:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, msg)
		return
	}
	man, err := exportModel(*run, *format, *out, *force, *dataDir, *be, *refinerRun, prompts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "exported %s %s (%s) to %s: %d files\n", man.Kind, man.Source, man.Format, *out, len(man.Files)+1)
	for _, n := range man.Notes {
		fmt.Fprintln(os.Stderr, "export: note:", n)
	}
}

func runExport(run, format, out string, force bool, dataDir, beName string) (*export.Manifest, error) {
	return exportModel(run, format, out, force, dataDir, beName, "", export.Prompts{})
}

// exportRun exports run with the model's own prompts.
func exportRun(run, format, out string, force bool, dataDir, beName, refinerRun string) (*export.Manifest, error) {
	return exportModel(run, format, out, force, dataDir, beName, refinerRun, export.Prompts{})
}

// exportModel exports the model run names (a run, an HF directory or a hub id); refinerRun,
// with -format index, is packaged with the index. Its errors do not repeat the "export: "
// main prints.
func exportModel(run, format, out string, force bool, dataDir, beName, refinerRun string, prompts export.Prompts) (man *export.Manifest, err error) {
	defer func() { err = cli.Unprefixed("export", err) }()
	if run == "" || out == "" {
		return nil, fmt.Errorf("-run and -out are required (or -model for -run)")
	}
	if refinerRun != "" && format != export.FormatIndex {
		return nil, fmt.Errorf("-refiner is packaged with an index: give -format index (not %q)", format)
	}
	switch format {
	case export.FormatHF, export.FormatONNX, export.FormatIndex:
	default:
		return nil, fmt.Errorf("unknown -format %q (hf, onnx, index)", format)
	}
	if dataDir != "" && format != export.FormatIndex {
		return nil, fmt.Errorf("-data is only used by -format index")
	}
	opts := export.Options{Format: format, Out: out, Force: force, Refiner: refinerRun}
	if dataDir != "" {
		d, err := data.Load(dataDir)
		if err != nil {
			return nil, err
		}
		opts.Data, opts.DataSource = d, dataDir
	}
	be, err := backend.Open(backend.Name(beName))
	if err != nil {
		return nil, err
	}
	m, err := export.Open(context.Background(), run, be)
	if err != nil {
		return nil, err
	}
	if err := prompts.Apply(m); err != nil {
		return nil, err
	}
	opts.Source = run
	pretrained := export.IsHFDir(m.Source)
	if pretrained && refinerRun != "" {
		return nil, fmt.Errorf("-refiner packages a refiner trained over a run's candidates: %s is a pre-trained model, not a run", run)
	}
	if format == export.FormatIndex {
		if opts.Data == nil {
			if opts.Data, err = data.Default(); err != nil {
				return nil, err
			}
			opts.DataSource = "default"
		}
		if m.Kind == export.KindBiEncoder && !pretrained { // usage vectors are a trained bi-encoder's
			var note string
			if opts.Train, note, err = trainingPart(run, opts.Data); err != nil {
				return nil, err
			}
			if note != "" {
				fmt.Fprintln(os.Stderr, "export: note:", note)
			}
		}
	}
	man, err = export.Export(m, opts)
	if err == nil && man.Usage != nil {
		fmt.Fprintln(os.Stderr, biencoder.UsageNote(man.Usage.Fallbacks, man.Tools))
	}
	if err == nil && man.Refiner != nil {
		fmt.Fprintf(os.Stderr, "export: refiner %s (N %d over %s candidates) packaged in %s/\n", man.Refiner.Source, man.Refiner.N, man.Refiner.Candidates, man.Refiner.Dir)
	}
	return man, err
}

// runUpdate syncs the index out to the tools of dataDir (default: the embedded dataset).
func runUpdate(run, format, out string, force bool, dataDir, beName string) (msg string, err error) {
	defer func() { err = cli.Unprefixed("export", err) }()
	switch {
	case format != export.FormatIndex:
		return "", fmt.Errorf("-update works on an index: give -format index (not %q)", format)
	case run != "":
		return "", fmt.Errorf("-update takes no -run: the index's own tool tower embeds the tools")
	case force:
		return "", fmt.Errorf("-update rewrites the index in place: -force does not apply")
	case out == "":
		return "", fmt.Errorf("-out (the index to update) is required")
	}
	var d *data.Dataset
	src := dataDir
	if dataDir != "" {
		d, err = data.Load(dataDir)
	} else {
		d, err = data.Default()
		src = "default"
	}
	if err != nil {
		return "", err
	}
	be, err := backend.Open(backend.Name(beName))
	if err != nil {
		return "", err
	}
	st, err := serve.Open(out, 0, retriever.WithBackend(be))
	if err != nil {
		return "", err
	}
	added, changed, deleted, err := st.Sync(export.ToolRecords(d), d.Fingerprint(), src)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	lib := st.R.Library()
	return fmt.Sprintf("updated index %s to the %d tools of %s: %d added, %d changed, %d deleted (library version %d)",
		out, lib.Len(), src, added, changed, deleted, lib.Version), nil
}
