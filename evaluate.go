package toolret

import (
	"cmp"
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

// EvalConfig configures Evaluate: what eval evaluates, as typed fields. Give at most one of
// Run, Model, Index, Fuse and Rerank; with none, BM25 over the tool texts is evaluated (eval
// -method bm25, with BM25's parameters).
type EvalConfig struct {
	// Data is the dataset directory (BEIR or Parquet layout; "": the embedded default dataset).
	Data string
	// Holdout evaluates on a held-out-tool view of Data; nil: the view Run (or Fuse's first
	// run:RUN) was trained on (recorded in its run.json), else the dataset's own splits.
	Holdout *data.Holdout
	// Split is the split evaluated (default "test"); "dev", when the dataset has no split of
	// that name, is the dev split the first trained run recorded (Run, else Rerank's
	// FirstStage, else Fuse's first run:RUN; eval -split dev).
	Split string
	// BM25 are BM25's parameters (eval -bm25-k1, -bm25-b, -bm25-stopwords; nil:
	// bm25.DefaultParams), for BM25 evaluated alone.
	BM25 *bm25.Params
	// Run is a trained run (any kind the evaluate package loads) or one of its checkpoints.
	Run string
	// Vectors are the tool vectors of a bi-encoder Run or of Rerank's first stage, when its
	// own Vectors are "": "text" (its tool tower; "": text) or "usage" (Tool2Vec: the mean
	// embedding of the training queries using each tool; eval -tool-vectors).
	Vectors string
	// Model is a pre-trained model (HF or sentence-transformers directory, or hub id),
	// evaluated zero-shot: its index over Data's tools is built in a temporary directory.
	Model string
	// Prompts replace the prefixes Model puts before every query and every tool text (eval
	// -query-prompt, -tool-prompt; a nil field: the model's own "query" and "document"
	// prompts).
	Prompts export.Prompts
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
	// Rerank evaluates a cross-encoder's reranking of a bi-encoder's first stage: ToolRerank
	// (eval -method rerank) or, with Rerank.Depth, Rerank-m (eval -method rerank-m), with its
	// interpolation weight and, with Rerank.Grid, its parameters tuned on the first stage's
	// recorded dev split. Its Backend and Vectors default to this configuration's.
	Rerank *evaluate.RerankConfig
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
	if n := count(cfg.Run != "", cfg.Model != "", cfg.Index != "", len(cfg.Fuse) > 0, cfg.Rerank != nil); n > 1 {
		return errors.New("evaluate: give one of Run, Model, Index, Fuse and Rerank")
	}
	if cfg.BM25 != nil && count(cfg.Run != "", cfg.Model != "", cfg.Index != "", len(cfg.Fuse) > 0, cfg.Rerank != nil) > 0 {
		return errors.New("evaluate: BM25 applies to BM25 evaluated alone")
	}
	if cfg.BM25 != nil && (!(cfg.BM25.K1 > 0) || !(cfg.BM25.B >= 0 && cfg.BM25.B <= 1)) {
		return fmt.Errorf("evaluate: BM25 k1 %v, b %v: want k1 > 0 and b in [0, 1]", cfg.BM25.K1, cfg.BM25.B)
	}
	if (cfg.Prompts.Query != nil || cfg.Prompts.Tool != nil) && cfg.Model == "" {
		return errors.New("evaluate: Prompts apply to a Model")
	}
	switch cfg.Vectors {
	case "", "text", "usage":
	default:
		return fmt.Errorf("evaluate: Vectors %q: want text or usage", cfg.Vectors)
	}
	if cfg.Vectors != "" && cfg.Run == "" && cfg.Rerank == nil {
		return errors.New("evaluate: Vectors apply to a Run or a Rerank's first stage")
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
	if cfg.Rerank != nil && cfg.Rerank.FirstStage != "" {
		return cfg.Rerank.FirstStage
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
	var s, train *data.Split
	var err error
	if _, named := d.Splits[cfg.Split]; cfg.Split == "dev" && !named {
		run := cfg.firstRun()
		if run == "" {
			return none, errors.New("evaluate: Split dev is the dev split a trained run recorded: give Run, Rerank or a run:RUN in Fuse")
		}
		if train, s, _, err = rundir.Splits(rundir.RunOf(run), d); err != nil {
			return none, fmt.Errorf("evaluate: dev split of %s: %w", run, err)
		}
	} else if s, err = d.Split(cfg.Split); err != nil {
		return none, err
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return none, err
	}
	r, cleanup, err := newRanker(ctx, cfg, d, s, train, be)
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
// built on disk (call it, also after an error, once the ranker is no longer used). s is the
// split evaluated; train, when not nil, the training part whose queries give a Run's usage
// vectors (on a recorded dev split).
func newRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, s, train *data.Split, be compute.Backend) (r rank.QueryRanker, cleanup func(), err error) {
	var tmps []string
	cleanup = func() {
		for _, t := range tmps {
			os.RemoveAll(t)
		}
	}
	switch {
	case len(cfg.Fuse) > 0:
		return fusedRanker(ctx, cfg, d, s, train, be)
	case cfg.Rerank != nil:
		rc := *cfg.Rerank
		if rc.Backend == nil {
			rc.Backend = be
		}
		if rc.Vectors == "" {
			rc.Vectors = cfg.Vectors
		}
		r, _, err = rc.Ranker(ctx, d, s)
		if err != nil {
			err = fmt.Errorf("evaluate: Rerank: %w", err)
		}
		return r, cleanup, err
	case cfg.Run != "":
		o := evaluate.RunOptions{Backend: be, Vectors: cmp.Or(cfg.Vectors, "text"), Train: train, QueryLen: cfg.Lengths.Query, ToolLen: cfg.Lengths.Tool}
		r, _, err = evaluate.LoadRun(cfg.Run, d, o)
		return r, cleanup, err
	case cfg.Model != "":
		m, err := export.Open(ctx, cfg.Model, be)
		if err != nil {
			return nil, cleanup, err
		}
		if err := cfg.Prompts.Apply(m); err != nil {
			return nil, cleanup, fmt.Errorf("evaluate: Prompts: %w", err)
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
		p := bm25.DefaultParams
		if cfg.BM25 != nil {
			p = *cfg.BM25
		}
		return rank.Texts(bm25.New(docs, p)), cleanup, nil
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
func fusedRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, s, train *data.Split, be compute.Backend) (rank.QueryRanker, func(), error) {
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
		r, c, err := newRanker(ctx, sub, d, s, train, be)
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
