package toolret

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

// EvalConfig configures Evaluate. Give at most one of Run, Model, Index and Fuse; with none,
// BM25 over the tool texts is evaluated.
type EvalConfig struct {
	// Data is the dataset directory (BEIR or Parquet layout; "": the embedded default dataset).
	Data string
	// Holdout evaluates on a held-out-tool view of Data; nil: the view Run (or Fuse's first
	// run:RUN) was trained on (recorded in its run.json), else the dataset's own splits.
	Holdout *data.Holdout
	// Split is the split evaluated (default "test").
	Split string
	// Run is a trained run (any kind the evaluate package loads) or one of its checkpoints.
	Run string
	// Model is a pre-trained model (HF or sentence-transformers directory, or hub id),
	// evaluated zero-shot: its index over Data's tools is built in a temporary directory.
	Model string
	// Index is an exported index over Data's tools.
	Index string
	// Fuse evaluates the fusion of several rankings (eval -method fusion -runs, without its
	// TREC run files and dev-tuned weights): each entry "bm25", "run:RUN", "model:REF" or
	// "index:DIR", ranked as BM25, Run, Model or Index rank it (with this configuration's
	// Backend, Lengths and Quantize where they apply).
	Fuse []string
	// Fusion is how Fuse's rankings are fused: "rrf" (the default: reciprocal rank fusion
	// with constant FusionK, 0: fusion.DefaultK), or "minmax" or "zscore" (interpolation of
	// per-query normalised scores with FusionWeights, one non-negative weight per Fuse entry).
	// FusionDepth is how many tools of each entry's ranking are fused (0: 100, eval -k).
	Fusion        string
	FusionWeights []float64
	FusionK       float64
	FusionDepth   int
	// Backend names the compute backend (backend.Open).
	Backend string
	// Quantize runs Model's or Index's encoder with int8 weights (export.QuantInt8, on Backend
	// onnx; toolindex.WithQuantization); a trained Run is refused (export it with -format hf).
	Quantize export.Quantization
	// Ensemble fuses Index with more exported indexes over the same tools, as ServeConfig's
	// Ensemble, EnsembleFusion and EnsembleWeights serve them (toolindex.WithEnsemble).
	Ensemble        []string
	EnsembleFusion  string
	EnsembleWeights []float64
	// Cutoffs are the K of Recall/NDCG/COMP@K (default 1, 3, 5, 10).
	Cutoffs []int
	// Lengths replace a bi-encoder Run's training lengths or a Model's max_seq_length (0: keep;
	// eval -query-len, -tool-len); an Index embeds with the lengths it was exported with.
	Lengths export.Lengths
	// NoRecipe evaluates a Model's dense ranking alone, without the BM25 fusion and clauses
	// of its recipe (export.Recipe, the model directory's toolret_recipe.json), and an Index
	// without those it records (toolindex.WithoutRecipe). Without it a Model or an Index with a
	// recipe is evaluated as its recipe says. Fuse's entries are always ranked without their
	// recipes: the fusion is Fuse's.
	NoRecipe bool
	// Clauses, when set, ranks each query whole and clause by clause and merges the rankings
	// (rerank.Clauses; eval -clauses), in place of the clauses a Model's or Index's recipe
	// gives.
	Clauses *rerank.ClauseOptions
}

// Evaluate ranks the queries of cfg.Split with what cfg names and returns the metrics: overall,
// by number of relevant tools, and tool-level recall of seen and unseen tools.
func Evaluate(ctx context.Context, cfg EvalConfig) (metrics.Report, error) {
	if err := cfg.check(); err != nil {
		return metrics.Report{}, err
	}
	h := cfg.Holdout
	if run := cfg.firstRun(); h == nil && run != "" {
		if m, err := rundir.Read(rundir.RunOf(run)); err == nil {
			h = m.Split.Holdout
		}
	}
	d, err := data.OpenView(cfg.Data, h)
	if err != nil {
		return metrics.Report{}, err
	}
	return evaluateOn(ctx, cfg, d)
}

// check refuses a configuration whose fields do not go together.
func (cfg *EvalConfig) check() error {
	if n := count(cfg.Run != "", cfg.Model != "", cfg.Index != "", len(cfg.Fuse) > 0); n > 1 {
		return errors.New("evaluate: give one of Run, Model, Index and Fuse")
	}
	if _, err := export.ParseQuantization(string(cfg.Quantize)); err != nil {
		return err
	}
	if len(cfg.Ensemble) > 0 && cfg.Index == "" {
		return errors.New("evaluate: Ensemble fuses an Index with more indexes: give Index")
	}
	if cfg.Quantize != export.QuantDefault && cfg.Model == "" && cfg.Index == "" && len(cfg.Fuse) == 0 {
		return fmt.Errorf("evaluate: Quantize applies to a Model or an Index (export a run with -format hf first)")
	}
	if (cfg.Lengths != export.Lengths{}) && cfg.Run == "" && cfg.Model == "" && len(cfg.Fuse) == 0 {
		return errors.New("evaluate: Lengths apply to a Run or a Model (export an Index with them)")
	}
	if cfg.NoRecipe && cfg.Model == "" && cfg.Index == "" {
		return errors.New("evaluate: NoRecipe applies to a Model or an Index")
	}
	if len(cfg.Fuse) == 0 && (cfg.Fusion != "" || len(cfg.FusionWeights) > 0 || cfg.FusionK != 0 || cfg.FusionDepth != 0) {
		return errors.New("evaluate: Fusion, FusionWeights, FusionK and FusionDepth apply to Fuse")
	}
	if cfg.Clauses != nil {
		if err := cfg.Clauses.Check(); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	if len(cfg.Fuse) > 0 {
		if _, err := fusionRanker(cfg); err != nil {
			return err
		}
		for _, it := range cfg.Fuse {
			if _, err := fuseEntry(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// firstRun is the trained run whose held-out-tool view Evaluate takes by default: Run, else
// Fuse's first run:RUN.
func (cfg *EvalConfig) firstRun() string {
	if cfg.Run != "" {
		return cfg.Run
	}
	for _, it := range cfg.Fuse {
		if dir, ok := strings.CutPrefix(it, "run:"); ok {
			return dir
		}
	}
	return ""
}

// evaluateOn is Evaluate on d, the dataset loaded (cfg.Data only names it, and cfg.Holdout is
// not read).
func evaluateOn(ctx context.Context, cfg EvalConfig, d *data.Dataset) (metrics.Report, error) {
	var none metrics.Report
	if err := cfg.check(); err != nil {
		return none, err
	}
	if cfg.Split == "" {
		cfg.Split = "test"
	}
	if len(cfg.Cutoffs) == 0 {
		cfg.Cutoffs = []int{1, 3, 5, 10}
	}
	s, err := d.Split(cfg.Split)
	if err != nil {
		return none, err
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return none, err
	}
	r, cleanup, err := newRanker(ctx, cfg, d, be)
	defer cleanup()
	if err == nil && cfg.Clauses != nil {
		r, err = rerank.WithClauses(r, *cfg.Clauses)
	}
	if err != nil {
		return none, err
	}
	return metrics.EvaluateSplit(ctx, d, s, r, cfg.Cutoffs)
}

// newRanker returns the ranker of d's queries cfg names, and a cleanup that removes what it
// built on disk (call it, also after an error, once the ranker is no longer used).
func newRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, be compute.Backend) (r rank.QueryRanker, cleanup func(), err error) {
	var tmps []string
	cleanup = func() {
		for _, t := range tmps {
			os.RemoveAll(t)
		}
	}
	switch {
	case len(cfg.Fuse) > 0:
		return fusedRanker(ctx, cfg, d, be)
	case cfg.Run != "":
		o := evaluate.RunOptions{Backend: be, Vectors: "text", QueryLen: cfg.Lengths.Query, ToolLen: cfg.Lengths.Tool}
		r, _, err = evaluate.LoadRun(cfg.Run, d, o)
		return r, cleanup, err
	case cfg.Model != "":
		m, err := export.Open(ctx, cfg.Model, be)
		if err != nil {
			return nil, cleanup, err
		}
		if err := cfg.Lengths.Apply(m); err != nil {
			return nil, cleanup, err
		}
		if cfg.NoRecipe {
			m.Recipe = nil
		}
		if err := m.Quantize(cfg.Quantize); err != nil {
			return nil, cleanup, err
		}
		tmp, err := os.MkdirTemp("", "toolret-eval-")
		if err != nil {
			return nil, cleanup, err
		}
		tmps = append(tmps, tmp)
		cfg.Index = filepath.Join(tmp, "index")
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: cfg.Index, Data: d, DataSource: cfg.Data, Source: cfg.Model}); err != nil {
			return nil, cleanup, err
		}
		fallthrough
	case cfg.Index != "":
		opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithQuantization(cfg.Quantize)}
		if cfg.NoRecipe {
			opts = append(opts, toolindex.WithoutRecipe())
		}
		if cfg.Clauses != nil {
			// Evaluate wraps the ranker in cfg.Clauses: the index's own would split twice.
			opts = append(opts, toolindex.WithClauses(nil))
		}
		if len(cfg.Ensemble) > 0 || cfg.EnsembleFusion != "" {
			opts = append(opts, toolindex.WithEnsemble(cfg.EnsembleFusion, cfg.Ensemble, cfg.EnsembleWeights))
		}
		idx, err := toolindex.Load(cfg.Index, opts...)
		if err != nil {
			return nil, cleanup, fmt.Errorf("index %s: %w", cfg.Index, err)
		}
		return evaluate.IndexRanker(idx, d), cleanup, nil
	default:
		docs := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			docs[i] = t.Text
		}
		return rank.Texts(bm25.New(docs, bm25.DefaultParams)), cleanup, nil
	}
}

// fusionRanker returns the fusion.Ranker cfg's Fusion, FusionWeights, FusionK and FusionDepth
// describe, without inputs.
func fusionRanker(cfg *EvalConfig) (*fusion.Ranker, error) {
	f := &fusion.Ranker{Depth: cfg.FusionDepth, K: cfg.FusionK}
	if f.Depth == 0 {
		f.Depth = 100
	}
	if f.K == 0 {
		f.K = fusion.DefaultK
	}
	if f.Depth < 0 || f.K < 0 {
		return nil, fmt.Errorf("evaluate: FusionDepth %d, FusionK %g: want values >= 0", cfg.FusionDepth, cfg.FusionK)
	}
	switch cfg.Fusion {
	case "", "rrf":
		if len(cfg.FusionWeights) > 0 {
			return nil, errors.New("evaluate: FusionWeights apply to Fusion minmax or zscore, not rrf")
		}
	case "minmax", "zscore":
		if len(cfg.FusionWeights) != len(cfg.Fuse) {
			return nil, fmt.Errorf("evaluate: Fusion %s: %d FusionWeights for %d Fuse entries (one each)", cfg.Fusion, len(cfg.FusionWeights), len(cfg.Fuse))
		}
		sum := 0.0
		for _, w := range cfg.FusionWeights {
			if !(w >= 0) {
				return nil, fmt.Errorf("evaluate: FusionWeights %v: want weights >= 0", cfg.FusionWeights)
			}
			sum += w
		}
		if sum == 0 {
			return nil, fmt.Errorf("evaluate: FusionWeights %v: all 0", cfg.FusionWeights)
		}
		f.Norm, f.W = rerank.Norm(cfg.Fusion), cfg.FusionWeights
	default:
		return nil, fmt.Errorf("evaluate: Fusion %q: want rrf, minmax or zscore", cfg.Fusion)
	}
	return f, nil
}

// fuseEntry returns the configuration that ranks one Fuse entry: "bm25", "run:RUN",
// "model:REF" or "index:DIR".
func fuseEntry(it string) (EvalConfig, error) {
	if it == "bm25" {
		return EvalConfig{}, nil
	}
	kind, ref, ok := strings.Cut(it, ":")
	if ok && ref != "" {
		switch kind {
		case "run":
			return EvalConfig{Run: ref}, nil
		case "model":
			return EvalConfig{Model: ref}, nil
		case "index":
			return EvalConfig{Index: ref}, nil
		}
	}
	return EvalConfig{}, fmt.Errorf("evaluate: Fuse entry %q: want bm25, run:RUN, model:REF or index:DIR", it)
}

// fusedRanker is newRanker of a configuration with Fuse.
func fusedRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, be compute.Backend) (rank.QueryRanker, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	f, err := fusionRanker(&cfg)
	if err != nil {
		return nil, cleanup, err
	}
	for _, it := range cfg.Fuse {
		sub, err := fuseEntry(it)
		if err != nil {
			return nil, cleanup, err
		}
		sub.Data, sub.Backend = cfg.Data, cfg.Backend
		if sub.Run != "" || sub.Model != "" {
			sub.Lengths = cfg.Lengths
		}
		if sub.Model != "" || sub.Index != "" {
			sub.Quantize, sub.NoRecipe = cfg.Quantize, true
		}
		r, c, err := newRanker(ctx, sub, d, be)
		cleanups = append(cleanups, c)
		if err != nil {
			return nil, cleanup, fmt.Errorf("evaluate: Fuse entry %s: %w", it, err)
		}
		f.Inputs = append(f.Inputs, &fusion.Input{Name: it, Live: r})
	}
	return f, cleanup, nil
}

func count(b ...bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
