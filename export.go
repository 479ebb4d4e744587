package toolret

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// ExportConfig configures Export.
type ExportConfig struct {
	// Model is what to export: a run (or one of its checkpoints), a HuggingFace or
	// sentence-transformers directory, or a hub id org/name[@revision].
	Model string
	// Format is export.FormatHF (default), export.FormatONNX or export.FormatIndex.
	Format string
	// Out is the output directory; Force replaces a non-empty one.
	Out   string
	Force bool
	// Data is the dataset directory whose tools an index embeds (empty: the embedded default
	// dataset). Only for FormatIndex.
	Data string
	// Backend names the compute backend (backend.Open): "" or "go", "onnx", "xla:cpu".
	Backend string
	// Refiner, with FormatIndex, is a refiner run packaged with the index.
	Refiner string
	// Quantize adds int8 ONNX models beside the fp32 ones (hf, onnx) or embeds an index's
	// tools with int8 weights, which needs Backend onnx (export.Options.Quantize).
	Quantize export.Quantization
	// Precision, with FormatIndex, is the precision the tools are embedded at and which the
	// index records, so that its queries are embedded alike (export.Options.Precision):
	// backend.FP32 (""), backend.BF16 (needs Backend go or xla; not with int8 Quantize) or
	// backend.AutoPrecision.
	Precision string
	// Prompts override the model's query and tool prompts; they are recorded in the export.
	Prompts export.Prompts
	// Lengths override a bi-encoder's maximum tokens per query and per tool text (a
	// pre-trained model's or a trained run's); they are recorded in the export.
	Lengths export.Lengths
	// Interpolate is a second model (same reference forms as Model, same architecture): the
	// export's weights are (1-InterpolateWeight)·Model +
	// InterpolateWeight·Interpolate, tensor by tensor (export.InterpolateHF: WiSE-FT, a
	// fine-tuned run interpolated with its pre-trained start).
	Interpolate       string
	InterpolateWeight float64
	// KeepLayers, when set, keeps only these transformer layers of the model (indices,
	// strictly increasing), renumbered from 0 (export.KeepLayersHF: layer pruning, e.g.
	// every other layer for a smaller student, or fewer layers to measure what depth buys).
	// Applied after Interpolate.
	KeepLayers []int
	// Recipe, when set, is the retrieval recipe the export carries instead of the model's own
	// (export.Recipe: an hf export writes it as toolret_recipe.json, an index records its
	// hybrid, clauses and reranker; export -hybrid, -hybrid-weight, -selected-on, -clauses,
	// -recipe-reranker). Its reranker's Dir names the cross-encoder copied into the export
	// (at its Path; an index's at export.RerankerDir): an hf cross-encoder directory, a hub id,
	// or a cross-encoder run, exported with FormatHF first. NoRecipe drops the model's own.
	// A model's own recipe is carried, its reranker's cross-encoder with it, unless replaced.
	Recipe   *export.Recipe
	NoRecipe bool
	// LoRA is how a bi-encoder run trained with LoRA is written: export.LoRAMerged ("", the
	// adapters merged into the base weights) or export.LoRAAdapter (a PEFT adapter directory
	// with its base model; FormatHF).
	LoRA string
	// Source overrides the source the export records (default: Model).
	Source string
	// Log receives notes (usage vectors, packaged refiner); nil: none.
	Log io.Writer
}

// Export writes cfg.Model in cfg.Format to cfg.Out and returns the export's manifest.
func Export(ctx context.Context, cfg ExportConfig) (*export.Manifest, error) {
	if cfg.Format == "" {
		cfg.Format = export.FormatHF
	}
	note := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	if cfg.Model == "" || cfg.Out == "" {
		return nil, fmt.Errorf("-run and -out are required (or -model for -run)")
	}
	if cfg.Refiner != "" && cfg.Format != export.FormatIndex {
		return nil, fmt.Errorf("-refiner is packaged with an index: give -format index (not %q)", cfg.Format)
	}
	switch cfg.Format {
	case export.FormatHF, export.FormatONNX, export.FormatIndex:
	default:
		return nil, fmt.Errorf("unknown -format %q (hf, onnx, index)", cfg.Format)
	}
	if cfg.Data != "" && cfg.Format != export.FormatIndex {
		return nil, fmt.Errorf("-data is only used by -format index")
	}
	if cfg.LoRA == export.LoRAAdapter && (cfg.Interpolate != "" || len(cfg.KeepLayers) > 0) {
		return nil, fmt.Errorf("-lora-export %s: a PEFT adapter applies to its base model as trained; -interpolate and -keep-layers export merged models", cfg.LoRA)
	}
	if cfg.Interpolate != "" {
		return interpolate(ctx, cfg)
	}
	if len(cfg.KeepLayers) > 0 {
		return keepLayers(ctx, cfg)
	}
	if _, err := export.ParseQuantization(string(cfg.Quantize)); err != nil {
		return nil, fmt.Errorf("-quantize: %w", err)
	}
	if cfg.Quantize.Int8() && cfg.Interpolate != "" {
		return nil, fmt.Errorf("-quantize %s: export the interpolated model with -format hf first, then quantize that", cfg.Quantize)
	}
	if cfg.Recipe != nil && cfg.NoRecipe {
		return nil, errors.New("give a recipe (-hybrid) or -no-recipe, not both")
	}
	if cfg.Recipe != nil && cfg.Format == export.FormatONNX {
		return nil, errors.New("a recipe (-hybrid) is carried by -format hf (toolret_recipe.json) or index, not onnx")
	}
	if cfg.Precision != "" {
		if err := backend.CheckPrecision("-precision", cfg.Precision); err != nil {
			return nil, err
		}
		if cfg.Format != export.FormatIndex && cfg.Precision == backend.BF16 {
			return nil, fmt.Errorf("-precision %s is for -format index (the precision its tools are embedded at); -format %s writes float32 weights", cfg.Precision, cfg.Format)
		}
		if cfg.Precision == backend.BF16 && cfg.Quantize.Int8() {
			return nil, fmt.Errorf("-precision %s and -quantize %s: one or the other (int8 runs on the onnx backend, bf16 on go or xla)", cfg.Precision, cfg.Quantize)
		}
	}
	if rr := cfg.Recipe; rr != nil && rr.Reranker != nil {
		tmp, err := os.MkdirTemp("", "toolret-reranker-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		r, c := *cfg.Recipe, *cfg.Recipe.Reranker
		if c.Dir, err = hfDir(ctx, c.Dir, filepath.Join(tmp, "reranker"), cfg.Backend); err != nil {
			return nil, fmt.Errorf("recipe reranker: %w", err)
		}
		r.Reranker, cfg.Recipe = &c, &r
	}
	opts := export.Options{Format: cfg.Format, Out: cfg.Out, Force: cfg.Force, Refiner: cfg.Refiner, Quantize: cfg.Quantize, Precision: cfg.Precision,
		Recipe: cfg.Recipe, NoRecipe: cfg.NoRecipe, LoRA: cfg.LoRA}
	if cfg.Data != "" {
		d, err := data.Load(cfg.Data)
		if err != nil {
			return nil, err
		}
		opts.Data, opts.DataSource = d, cfg.Data
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return nil, err
	}
	if cfg.Precision != "" && cfg.Format == export.FormatIndex {
		_, _, why, err := backend.ResolvePrecision("-precision", cfg.Precision, backend.NameOf(be))
		if err != nil {
			return nil, err
		}
		note("%s", why)
	}
	m, err := export.Open(ctx, cfg.Model, be)
	if err != nil {
		return nil, err
	}
	if err := cfg.Prompts.Apply(m); err != nil {
		return nil, err
	}
	if err := cfg.Lengths.Apply(m); err != nil {
		return nil, err
	}
	opts.Source = cfg.Model
	if cfg.Source != "" {
		opts.Source = cfg.Source
	}
	pretrained := export.IsHFDir(m.Source)
	if pretrained && cfg.Refiner != "" {
		return nil, fmt.Errorf("-refiner packages a refiner trained over a run's candidates: %s is a pre-trained model, not a run", cfg.Model)
	}
	if cfg.Format == export.FormatIndex {
		if opts.Data == nil {
			if opts.Data, err = data.Default(); err != nil {
				return nil, err
			}
			opts.DataSource = "default"
		}
		if m.Kind == export.KindBiEncoder && !pretrained { // usage vectors are a trained bi-encoder's
			var why string
			if opts.Train, why, err = rundir.TrainingPart(cfg.Model, opts.Data); err != nil {
				return nil, err
			}
			if why != "" {
				note("export: note: %s", why)
			}
		}
	}
	man, err := export.Export(m, opts)
	if err == nil && man.Usage != nil {
		note("%s", biencoder.UsageNote(man.Usage.Fallbacks, man.Tools))
	}
	if err == nil && man.Files[export.RecipeFile] != "" {
		note("export: the model carries its recipe (%s)", export.RecipeFile)
	}
	if err == nil && man.Hybrid != nil {
		note("export: index records its model's recipe: hybrid %s (serve and eval apply it; -no-recipe there: dense only)", man.Hybrid)
	}
	if err == nil && man.Reranker != nil {
		note("export: index records its model's recipe: reranker %s, the cross-encoder in %s/ (serve and eval apply it; -no-recipe there: none)", man.Reranker, man.Reranker.Path)
	}
	if err == nil && man.Refiner != nil {
		note("export: refiner %s (N %d over %s candidates) packaged in %s/", man.Refiner.Source, man.Refiner.N, man.Refiner.Candidates, man.Refiner.Dir)
	}
	return man, err
}

// IndexUpdate is what UpdateIndex changed.
type IndexUpdate struct {
	Added, Changed, Deleted int
	// Tools and Version are the index's tool count and library version after the update.
	Tools   int
	Version uint64
}

// UpdateIndex brings the exported index in dir to the tools of the dataset in dataDir (empty:
// the embedded default dataset): new and changed tools are embedded with the index's own tool
// tower, missing ones deleted, through the index's fsynced update log.
func UpdateIndex(ctx context.Context, dir, dataDir, backendName string) (*IndexUpdate, error) {
	if dir == "" {
		return nil, errors.New("-out (the index to update) is required")
	}
	var d *data.Dataset
	var err error
	src := dataDir
	if dataDir != "" {
		d, err = data.Load(dataDir)
	} else {
		d, err = data.Default()
		src = "default"
	}
	if err != nil {
		return nil, err
	}
	be, err := backend.Open(backend.Name(backendName))
	if err != nil {
		return nil, err
	}
	st, err := store.Open(dir, 0, toolindex.WithBackend(be))
	if err != nil {
		return nil, err
	}
	added, changed, deleted, err := st.Sync(export.ToolRecords(d), d.Fingerprint(), src)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	lib := st.R.Library()
	return &IndexUpdate{Added: added, Changed: changed, Deleted: deleted, Tools: lib.Len(), Version: lib.Version}, nil
}

// interpolate exports cfg.Model and cfg.Interpolate as HF directories (pre-trained models are
// used in place), interpolates them into a temporary directory and exports that as cfg asks.
func interpolate(ctx context.Context, cfg ExportConfig) (*export.Manifest, error) {
	if cfg.Refiner != "" {
		return nil, fmt.Errorf("-interpolate: a refiner was trained over a run's candidates, not over an interpolation")
	}
	tmp, err := os.MkdirTemp("", "toolret-interpolate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var dirs [2]string
	for i, ref := range []string{cfg.Model, cfg.Interpolate} {
		if dirs[i], err = hfDir(ctx, ref, filepath.Join(tmp, fmt.Sprint(i)), cfg.Backend); err != nil {
			return nil, err
		}
	}
	merged := filepath.Join(tmp, "interpolated")
	if err := export.InterpolateHF(merged, dirs[0], dirs[1], cfg.InterpolateWeight); err != nil {
		return nil, err
	}
	cfg.Source = fmt.Sprintf("(1-%g)·%s + %g·%s", cfg.InterpolateWeight, cfg.Model, cfg.InterpolateWeight, cfg.Interpolate)
	cfg.Model, cfg.Interpolate = merged, ""
	return Export(ctx, cfg)
}

// keepLayers exports cfg.Model as an HF directory (a pre-trained model is used in place),
// keeps cfg.KeepLayers of its layers in a temporary directory and exports that as cfg asks.
func keepLayers(ctx context.Context, cfg ExportConfig) (*export.Manifest, error) {
	if cfg.Refiner != "" {
		return nil, fmt.Errorf("-keep-layers: a refiner was trained over a run's candidates, not over a pruned model")
	}
	tmp, err := os.MkdirTemp("", "toolret-keep-layers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir, err := hfDir(ctx, cfg.Model, filepath.Join(tmp, "model"), cfg.Backend)
	if err != nil {
		return nil, err
	}
	pruned := filepath.Join(tmp, "pruned")
	if err := export.KeepLayersHF(pruned, dir, cfg.KeepLayers); err != nil {
		return nil, err
	}
	src := cfg.Model
	if cfg.Source != "" {
		src = cfg.Source
	}
	cfg.Source = fmt.Sprintf("%s, layers %s", src, export.FormatLayers(cfg.KeepLayers))
	cfg.Model, cfg.KeepLayers = pruned, nil
	return Export(ctx, cfg)
}

// hfDir resolves ref to a HuggingFace directory: a pre-trained model (directory or hub id) as
// it is, a run exported with -format hf into out.
func hfDir(ctx context.Context, ref, out, be string) (string, error) {
	dir, err := hub.Resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	if export.IsHFDir(dir) {
		return dir, nil
	}
	sub := ExportConfig{Model: ref, Format: export.FormatHF, Out: out, Backend: be}
	if _, err := Export(ctx, sub); err != nil {
		return "", err
	}
	if !export.IsHFDir(out) { // separate towers: query/ and tool/
		return "", fmt.Errorf("%s has separate query and tool towers: -interpolate and -keep-layers take a model with one encoder", ref)
	}
	return out, nil
}
