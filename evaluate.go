package toolret

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	// Holdout evaluates on a held-out-tool view of Data (eval -holdout-tools, -holdout-seed);
	// nil: the view the first trained run named was trained on (recorded in its run.json: Run,
	// Rerank's FirstStage, SplitRun, Fuse's run:RUN entries), else the dataset's own splits
	// (Log says which view it took); a zero Holdout (Fraction 0): the dataset's own splits
	// whatever the runs recorded.
	Holdout *data.Holdout
	// Split is the split evaluated (default "test"); "dev", when the dataset has no split of
	// that name, is the dev split the first trained run recorded (Run, else Rerank's
	// FirstStage, else SplitRun, else Fuse's first run:RUN; eval -split dev).
	Split string
	// SplitRun is a trained run whose recorded dev split and held-out-tool view the
	// evaluation takes as it takes Run's, when it evaluates something else (eval -first-stage
	// with -method bm25: BM25 on a bi-encoder's dev split).
	SplitRun string
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
	// Index is an exported index over Data's tools, evaluated as toolindex.Load serves it.
	Index string
	// NoRefiner evaluates an Index's (or a Model's) first stage alone, without the refiner
	// packaged in it (eval -no-refiner).
	NoRefiner bool
	// Hybrid fuses an Index's (or a Model's) first stage with BM25 as serve -hybrid serves it:
	// "rrf", "minmax" or "zscore" (eval -hybrid), the dense side weighted HybridWeight with
	// minmax and zscore (nil: 0.5; eval -hybrid-weight). "": the fusion its recipe gives,
	// unless NoRecipe.
	Hybrid       string
	HybridWeight *float64
	// Fuse evaluates the fusion of several rankings (eval -method fusion -runs): each entry
	// "bm25", "run:RUN", "model:REF" or "index:DIR", ranked as BM25, Run, Model or Index rank
	// it (with this configuration's BM25, Vectors, Backend, Lengths and Quantize where they
	// apply; on a multi-source dataset within each query's library), or a TREC run file (eval
	// -save-run; fusion.ReadInput: a query of the split missing from it is an error).
	Fuse []string
	// Fusion is how Fuse's rankings are fused: "rrf" (the default: reciprocal rank fusion
	// with constant FusionK, 0: fusion.DefaultK), or "minmax" or "zscore" (interpolation of
	// per-query normalised scores with FusionWeights, one non-negative weight per Fuse entry).
	// FusionDepth is how many tools of each entry's ranking are fused (0: DefaultFusionDepth,
	// eval -k).
	Fusion        string
	FusionWeights []float64
	FusionK       float64
	FusionDepth   int
	// FusionDev picks the weights of Fusion minmax or zscore, in place of FusionWeights, on
	// the dev split the first trained run recorded (eval -weight dev): the weights in steps of
	// 1/FusionSteps (0: DefaultFusionSteps) summing to 1 that maximise FusionMetric ("": ndcg@5; recall@K,
	// ndcg@K or comp@K) on its queries. FusionNewTools also picks a second set of weights, and
	// an offset, for the new tools: those no query of that run's training part needs
	// (eval -new-tool-weights).
	FusionDev      bool
	FusionSteps    int
	FusionMetric   string
	FusionNewTools bool
	// FusionAdaptive learns an adaptive dense weight (fusion.Adaptive: per query,
	// clamp(base + slope·z1) with z1 the top z-score of the dense ranking) for two Fuse
	// entries, the dense one first, on the dev split FusionDev uses (eval -weight adaptive):
	// the rule of fusion.AdaptiveGrid whose FusionMetric averaged over the split's libraries,
	// each counting once, is best. FusionAdapt fuses at a given rule instead (eval -weight
	// adaptive:BASE,SLOPE; export -hybrid-weight adaptive:BASE,SLOPE records one in a model's recipe).
	FusionAdaptive bool
	FusionAdapt    *fusion.Adaptive
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
	// NoRecipe evaluates a Model's dense ranking alone, without the BM25 fusion, clauses and
	// reranker of its recipe (export.Recipe, the model directory's toolret_recipe.json), and an
	// Index without those it records (toolindex.WithoutRecipe). Without it a Model or an Index
	// with a recipe is evaluated as its recipe says: the fusion, then the clauses, then the
	// reranker over the top tools of each query's ranking within its library (on a
	// multi-source dataset, metrics.WithinLibraries), as evaluate.StageRerank reranks. Fuse's
	// entries are always ranked without their recipes: the fusion is Fuse's.
	NoRecipe bool
	// Reranker, when set, reranks a Model's or an Index's ranking with a cross-encoder in
	// place of its recipe's reranker, also with NoRecipe (eval -model DIR -reranker CE -depth K
	// -weight W|dev): with Reranker.Dev its weight is picked on the dev split first
	// (Evaluation.Rerank reports it).
	Reranker *ModelRerank
	// Clauses, when set, ranks each query whole and clause by clause and merges the rankings
	// (rerank.Clauses; eval -clauses), in place of the clauses a Model's or Index's recipe
	// gives.
	Clauses *rerank.ClauseOptions
	// Rerank evaluates a cross-encoder's reranking of a bi-encoder's first stage: ToolRerank
	// (eval -method rerank) or, with Rerank.Depth, Rerank-m (eval -method rerank-m), with its
	// interpolation weight and, with Rerank.Grid, its parameters tuned on the first stage's
	// recorded dev split. Its Backend and Vectors default to this configuration's.
	Rerank *evaluate.RerankConfig
	// Feedback and Rewriter evaluate Run in the iterative retrieval (Xu et al.), round by round
	// (EvaluateRounds; Evaluate refuses them): Feedback replays the refinements of Split's
	// queries recorded in a collection (train feedback -out FILE; eval -feedback), each round's
	// instruction ranked by Run alone; Rewriter refines them live (eval -rewriter prf).
	// Iterations is the last round T (0: the collection's, or 3 live; eval -iterations).
	Feedback   string
	Rewriter   *Rewriter
	Iterations int
	// Log receives progress lines: the held-out-tool view taken from a run, a run's loading,
	// the reranking's scoring and tuning (nil: none).
	Log io.Writer
}

// The defaults of EvalConfig's zero values (and of eval's -k and -fusion-steps).
const (
	DefaultFusionDepth = 100 // FusionDepth: tools of each ranking fused
	DefaultFusionSteps = 10  // FusionSteps: weights tried in steps of 1/10
)

// Evaluate ranks the queries of cfg.Split with what cfg names and returns the metrics: overall,
// by number of relevant tools, and tool-level recall of seen and unseen tools.
func Evaluate(ctx context.Context, cfg EvalConfig) (metrics.Report, error) {
	e, err := NewEvaluation(ctx, cfg)
	if err != nil {
		return metrics.Report{}, err
	}
	defer e.Close()
	return e.Run(ctx)
}

// An Evaluation is an evaluation set up by NewEvaluation: the dataset view, the split and the
// ranker of its queries, described. Run evaluates it; Close removes what it built on disk.
type Evaluation struct {
	// Data is the dataset view evaluated and Split its split.
	Data  *data.Dataset
	Split *data.Split
	// Ranker ranks the split's queries; a caller may wrap it before Run (an evaluate.Recorder
	// that keeps the rankings, as eval -save-run does).
	Ranker rank.QueryRanker
	// Method describes what ranks, as eval prints it: "bm25", "run DIR (...)", "index DIR (...)",
	// "DIR zero-shot, index ...", "Rerank-30 + minmax interpolation with the retriever (w=0.3
	// on dev)", with ", clauses ..." when Clauses merge the clauses' rankings and ", rerank 20
	// w0.4 ..." when a cross-encoder reranks them (Rerank).
	Method string
	// Rerank is the cross-encoder stage reranking a Model's or an Index's ranking (its
	// recipe's reranker, or EvalConfig.Reranker, with the weight picked on dev); nil: none.
	Rerank *RerankStage
	// Loaded is how long loading the dataset took (the ranker's set-up not included).
	Loaded time.Duration

	cutoffs []int
	dev     *rundir.Meta // the run whose recorded dev split Split is (nil: a split of Data)
	cleanup func()
}

// NewEvaluation loads the dataset view cfg names and sets up the ranker of its split's
// queries. Close the Evaluation once done with it, also after Run fails.
func NewEvaluation(ctx context.Context, cfg EvalConfig) (*Evaluation, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	d, err := cfg.openView()
	if err != nil {
		return nil, err
	}
	loaded := time.Since(start)
	e, err := NewEvaluationOn(ctx, cfg, d)
	if err != nil {
		return nil, err
	}
	e.Loaded = loaded
	return e, nil
}

// openView loads cfg.Data as the held-out-tool view cfg.Holdout gives (nil: the view the
// first of cfg's runs recorded) and checks that every run of cfg was trained on it.
func (cfg *EvalConfig) openView() (*data.Dataset, error) {
	h := cfg.Holdout
	if h == nil {
		for _, dir := range cfg.runs() {
			if rh := rundir.RecordedHoldout(dir); rh != nil {
				h = rh
				if cfg.Log != nil {
					fmt.Fprintf(cfg.Log, "eval: %s was trained on the held-out-tool view %s: evaluating on that view\n", dir, rh.Flags())
				}
				break
			}
		}
	} else if h.Fraction == 0 {
		h = nil
	}
	d, err := data.OpenView(cfg.Data, h)
	if err != nil {
		if h != nil {
			return nil, fmt.Errorf("%s: %w", h.Flags(), err)
		}
		return nil, err
	}
	for _, dir := range cfg.runs() {
		m, err := rundir.Read(rundir.RunOf(dir))
		if err != nil {
			continue // loading the run reports it
		}
		if err := m.CheckView(d); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return d, nil
}

// Run ranks the split's queries with the Ranker and returns the metrics at the configuration's
// Cutoffs (an Evaluation not made by NewEvaluation: 1, 3, 5, 10).
func (e *Evaluation) Run(ctx context.Context) (metrics.Report, error) {
	ks := e.cutoffs
	if len(ks) == 0 {
		ks = []int{1, 3, 5, 10}
	}
	return metrics.EvaluateSplit(ctx, e.Data, e.Split, e.Ranker, ks)
}

// Close removes what the evaluation built on disk (a Model's index).
func (e *Evaluation) Close() {
	if e.cleanup != nil {
		e.cleanup()
		e.cleanup = nil
	}
}

// check refuses a configuration whose fields do not go together.
func (cfg *EvalConfig) check() error {
	if cfg.Feedback != "" || cfg.Rewriter != nil || cfg.Iterations != 0 {
		return errors.New("evaluate: Feedback, Rewriter and Iterations are evaluated round by round: call EvaluateRounds")
	}
	if n := count(cfg.Run != "", cfg.Model != "", cfg.Index != "", len(cfg.Fuse) > 0, cfg.Rerank != nil); n > 1 {
		return errors.New("evaluate: give one of Run, Model, Index and Fuse, or Rerank")
	}
	if cfg.BM25 != nil && count(cfg.Run != "", cfg.Model != "", cfg.Index != "", cfg.Rerank != nil) > 0 {
		return errors.New("evaluate: BM25 applies to BM25, alone or a Fuse entry")
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
	if cfg.Vectors != "" && cfg.Run == "" && cfg.Rerank == nil && len(cfg.Fuse) == 0 {
		return errors.New("evaluate: Vectors apply to a Run, a Rerank's first stage or Fuse's run:RUN entries")
	}
	if (cfg.NoRefiner || cfg.Hybrid != "" || cfg.HybridWeight != nil) && cfg.Model == "" && cfg.Index == "" {
		return errors.New("evaluate: NoRefiner, Hybrid and HybridWeight apply to a Model or an Index")
	}
	if _, err := cfg.hybridWeight(); err != nil {
		return err
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
	if cfg.Reranker != nil {
		if cfg.Model == "" && cfg.Index == "" {
			return errors.New("evaluate: Reranker applies to a Model or an Index (Rerank, eval -method rerank-m, reranks a trained run)")
		}
		if len(cfg.Ensemble) > 0 {
			return errors.New("evaluate: Reranker and Ensemble: a reranker over an ensemble's candidates is not supported; give one")
		}
		if err := cfg.Reranker.check(); err != nil {
			return err
		}
	}
	if len(cfg.Fuse) == 0 && (cfg.Fusion != "" || len(cfg.FusionWeights) > 0 || cfg.FusionK != 0 || cfg.FusionDepth != 0 ||
		cfg.FusionDev || cfg.FusionSteps != 0 || cfg.FusionMetric != "" || cfg.FusionNewTools || cfg.FusionAdaptive || cfg.FusionAdapt != nil) {
		return errors.New("evaluate: Fusion, FusionWeights, FusionK, FusionDepth, FusionDev and FusionAdaptive apply to Fuse")
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
			if _, _, err := fuseEntry(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// hybridWeight returns the dense weight of Hybrid: 0 for rrf, HybridWeight (default 0.5) for
// minmax and zscore.
func (cfg *EvalConfig) hybridWeight() (float64, error) {
	switch cfg.Hybrid {
	case "":
		if cfg.HybridWeight != nil {
			return 0, errors.New("evaluate: HybridWeight applies to Hybrid minmax or zscore")
		}
		return 0, nil
	case toolindex.HybridRRF:
		if cfg.HybridWeight != nil {
			return 0, errors.New("evaluate: HybridWeight applies to Hybrid minmax or zscore; rrf has no weight")
		}
		return 0, nil
	case toolindex.HybridMinMax, toolindex.HybridZScore:
		if cfg.HybridWeight == nil {
			return 0.5, nil
		}
		if w := *cfg.HybridWeight; !(w >= 0 && w <= 1) {
			return 0, fmt.Errorf("evaluate: HybridWeight %g: want a weight in [0, 1]", w)
		}
		return *cfg.HybridWeight, nil
	}
	return 0, fmt.Errorf("evaluate: Hybrid %q: want rrf, minmax or zscore", cfg.Hybrid)
}

// runs are the trained runs cfg names, in the order that picks the dev split and the
// held-out-tool view: Run, Rerank's FirstStage, SplitRun, then Fuse's run:RUN entries.
func (cfg *EvalConfig) runs() []string {
	var out []string
	if cfg.Run != "" {
		out = append(out, cfg.Run)
	}
	if cfg.Rerank != nil && cfg.Rerank.FirstStage != "" {
		out = append(out, cfg.Rerank.FirstStage)
	}
	if cfg.SplitRun != "" {
		out = append(out, cfg.SplitRun)
	}
	for _, it := range cfg.Fuse {
		if dir, ok := strings.CutPrefix(it, "run:"); ok && dir != "" {
			out = append(out, dir)
		}
	}
	return out
}

// firstRun is the first of runs ("" when none).
func (cfg *EvalConfig) firstRun() string {
	if r := cfg.runs(); len(r) > 0 {
		return r[0]
	}
	return ""
}

// evaluateOn is Evaluate on d, the dataset loaded (cfg.Data only names it, and cfg.Holdout is
// not read).
func evaluateOn(ctx context.Context, cfg EvalConfig, d *data.Dataset) (metrics.Report, error) {
	e, err := NewEvaluationOn(ctx, cfg, d)
	if err != nil {
		return metrics.Report{}, err
	}
	defer e.Close()
	return e.Run(ctx)
}

// NewEvaluationOn is NewEvaluation on d, a dataset already loaded: cfg.Data only names it
// (the source an index built for a Model records), cfg.Holdout is not read and the runs'
// views are not checked. Its Loaded is 0.
func NewEvaluationOn(ctx context.Context, cfg EvalConfig, d *data.Dataset) (*Evaluation, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Split == "" {
		cfg.Split = "test"
	}
	if len(cfg.Cutoffs) == 0 {
		cfg.Cutoffs = []int{1, 3, 5, 10}
	}
	s, train, dev, err := cfg.split(d)
	if err != nil {
		return nil, err
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return nil, err
	}
	rr, fromRecipe, err := cfg.reranker(ctx)
	if err != nil {
		return nil, err
	}
	r, desc, cleanup, err := newRanker(ctx, cfg, d, s, train, be)
	if err == nil && cfg.Clauses != nil {
		if r, err = rerank.WithClauses(r, *cfg.Clauses); err == nil {
			desc += ", " + cfg.Clauses.String()
		}
	}
	var st *RerankStage
	if err == nil && rr != nil {
		if r, st, err = withReranker(ctx, cfg, d, s, r, rr, fromRecipe, be); err == nil {
			desc += ", " + st.String()
		}
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	return &Evaluation{Data: d, Split: s, Ranker: r, Method: desc, Rerank: st, cutoffs: cfg.Cutoffs, dev: dev, cleanup: cleanup}, nil
}

// split returns the split cfg.Split names (cfg.Split set): a split of d, or, for "dev" when d
// has none of that name, the dev split the first of cfg's runs recorded, with its training
// part and the run's description (nil otherwise).
func (cfg *EvalConfig) split(d *data.Dataset) (s, train *data.Split, dev *rundir.Meta, err error) {
	if _, named := d.Splits[cfg.Split]; cfg.Split == "dev" && !named {
		run := cfg.firstRun()
		if run == "" {
			return nil, nil, nil, errors.New("evaluate: Split dev: the dev split is the one a trained run recorded: give Run, Rerank, SplitRun or a run:RUN in Fuse (eval -run, -first-stage, -runs run:RUN)")
		}
		if train, s, dev, err = rundir.Splits(rundir.RunOf(run), d); err != nil {
			return nil, nil, nil, fmt.Errorf("evaluate: dev split of %s: %w", run, err)
		}
		return s, train, dev, nil
	}
	s, err = d.Split(cfg.Split)
	return s, nil, nil, err
}

// newRanker returns the ranker of d's queries cfg names, its description, and a cleanup that
// removes what it built on disk (call it, also after an error, once the ranker is no longer
// used). s is the split evaluated; train, when not nil, the training part whose queries give
// a Run's usage vectors (on a recorded dev split).
func newRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, s, train *data.Split, be compute.Backend) (r rank.QueryRanker, desc string, cleanup func(), err error) {
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
		if rc.Log == nil {
			rc.Log = cfg.Log
		}
		r, desc, err = rc.Ranker(ctx, d, s)
		return r, desc, cleanup, err
	case cfg.Run != "":
		o := evaluate.RunOptions{Backend: be, Vectors: cmp.Or(cfg.Vectors, "text"), Train: train, Log: cfg.Log, QueryLen: cfg.Lengths.Query, ToolLen: cfg.Lengths.Tool}
		r, desc, err = evaluate.LoadRun(cfg.Run, d, o)
		return r, desc, cleanup, err
	case cfg.Model != "":
		m, err := export.Open(ctx, cfg.Model, be)
		if err != nil {
			return nil, "", cleanup, err
		}
		if err := cfg.Prompts.Apply(m); err != nil {
			return nil, "", cleanup, fmt.Errorf("evaluate: Prompts: %w", err)
		}
		if err := cfg.Lengths.Apply(m); err != nil {
			return nil, "", cleanup, err
		}
		if cfg.NoRecipe {
			m.Recipe = nil
		}
		if m.Recipe != nil && m.Recipe.Reranker != nil {
			// The evaluation reranks the index's ranking itself (withReranker), within each
			// query's library: the index does not carry the cross-encoder.
			c := *m.Recipe
			c.Reranker, m.Recipe = nil, &c
		}
		if err := m.Quantize(cfg.Quantize); err != nil {
			return nil, "", cleanup, err
		}
		tmp, err := os.MkdirTemp("", "toolret-eval-")
		if err != nil {
			return nil, "", cleanup, err
		}
		tmps = append(tmps, tmp)
		model := cfg.Model
		cfg.Index = filepath.Join(tmp, "index")
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: cfg.Index, Data: d, DataSource: cmp.Or(cfg.Data, "default"), Source: model}); err != nil {
			return nil, "", cleanup, err
		}
		r, desc, err := indexRanker(cfg, d, be)
		if err != nil {
			return nil, "", cleanup, err
		}
		desc = fmt.Sprintf("%s zero-shot, %s", model, desc)
		if m.QueryPrompt != "" || m.ToolPrompt != "" {
			desc += fmt.Sprintf(", prompts query %q tool %q", m.QueryPrompt, m.ToolPrompt)
		}
		return r, desc, cleanup, nil
	case cfg.Index != "":
		r, desc, err = indexRanker(cfg, d, be)
		return r, desc, cleanup, err
	default:
		docs := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			docs[i] = t.Text
		}
		p := bm25.DefaultParams
		if cfg.BM25 != nil {
			p = *cfg.BM25
		}
		return rank.Texts(bm25.New(docs, p)), "bm25", cleanup, nil
	}
}

// indexRanker ranks with the exported index cfg.Index as toolindex.Load serves it (its first
// stage, its packaged refiner unless NoRefiner, its recipe's fusion and clauses unless
// NoRecipe or Hybrid and Clauses, its Ensemble), so the figures are those of what a server
// answers, and describes it. A reranker is not the index's to apply: NewEvaluationOn reranks
// its rankings within each query's library (withReranker).
func indexRanker(cfg EvalConfig, d *data.Dataset, be compute.Backend) (rank.QueryRanker, string, error) {
	opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithQuantization(cfg.Quantize), toolindex.WithReranker("", 0)}
	if cfg.NoRefiner {
		opts = append(opts, toolindex.WithoutRefiner())
	}
	if cfg.Hybrid != "" {
		w, err := cfg.hybridWeight()
		if err != nil {
			return nil, "", err
		}
		opts = append(opts, toolindex.WithHybrid(cfg.Hybrid, w))
	}
	if cfg.NoRecipe {
		opts = append(opts, toolindex.WithoutRecipe())
	}
	if cfg.Clauses != nil {
		// The evaluation wraps the ranker in cfg.Clauses: the index's own would split twice.
		opts = append(opts, toolindex.WithClauses(nil))
	}
	if len(cfg.Ensemble) > 0 || cfg.EnsembleFusion != "" {
		opts = append(opts, toolindex.WithEnsemble(cfg.EnsembleFusion, cfg.Ensemble, cfg.EnsembleWeights))
	}
	idx, err := toolindex.Load(cfg.Index, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("evaluate: Index (-index) %s: %w", cfg.Index, err)
	}
	if dir, _, _ := idx.Refiner(); dir != "" && cfg.Reranker != nil {
		return nil, "", fmt.Errorf("evaluate: Reranker and the refiner %s of index %s are two second stages: give NoRefiner (-no-refiner)", dir, cfg.Index)
	}
	desc := fmt.Sprintf("index %s (%s first stage", cfg.Index, idx.FirstStage())
	if q := idx.Quantization(); q != "" {
		desc += ", " + string(q) + " weights"
	}
	if dir, cands, n := idx.Refiner(); dir != "" {
		desc += fmt.Sprintf(", refiner N %d over %s candidates", n, cands)
	}
	if h, w := idx.Hybrid(); h == toolindex.HybridRRF {
		desc += ", hybrid rrf with bm25"
	} else if a := idx.HybridAdaptive(); a != nil {
		desc += fmt.Sprintf(", hybrid %s with bm25, adaptive dense weight %s", h, a.Describe())
	} else if h != "" {
		desc += fmt.Sprintf(", hybrid %s with bm25, dense weight %g", h, w)
	}
	if h, _ := idx.Hybrid(); h != "" && cfg.Hybrid == "" {
		desc += " (the model's recipe; -no-recipe: dense only)"
	}
	if c := idx.Clauses(); c != nil {
		desc += ", " + c.String() + " (the model's recipe)"
	}
	if m, mem, w := idx.Ensemble(); m != "" {
		desc += fmt.Sprintf(", ensemble %s with %s", m, strings.Join(mem, ", "))
		if len(w) > 0 {
			desc += ", weights " + joinWeights(w)
		}
	}
	return evaluate.IndexRanker(idx, d), desc + ")", nil
}

// joinWeights formats weights as 0.3,0.2,0.5.
func joinWeights(w []float64) string {
	ws := make([]string, len(w))
	for i, x := range w {
		ws[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return strings.Join(ws, ",")
}

// fusionRanker returns the fusion.Ranker cfg's Fusion, FusionWeights, FusionK and FusionDepth
// describe, without inputs.
func fusionRanker(cfg *EvalConfig) (*fusion.Ranker, error) {
	f := &fusion.Ranker{Depth: cfg.FusionDepth, K: cfg.FusionK}
	if f.Depth == 0 {
		f.Depth = DefaultFusionDepth
	}
	if f.K == 0 {
		f.K = fusion.DefaultK
	}
	if f.Depth < 0 || f.K < 0 {
		return nil, fmt.Errorf("evaluate: FusionDepth %d, FusionK %g: want values >= 0", cfg.FusionDepth, cfg.FusionK)
	}
	if cfg.FusionSteps < 0 {
		return nil, fmt.Errorf("evaluate: FusionSteps %d: want a positive number", cfg.FusionSteps)
	}
	adaptive := cfg.FusionAdaptive || cfg.FusionAdapt != nil
	if adaptive {
		switch {
		case cfg.FusionAdaptive && cfg.FusionAdapt != nil:
			return nil, errors.New("evaluate: FusionAdaptive learns the rule: not with FusionAdapt")
		case cfg.Fusion != "minmax" && cfg.Fusion != "zscore":
			return nil, fmt.Errorf("evaluate: an adaptive weight interpolates normalised scores: Fusion minmax or zscore, not %q", cmp.Or(cfg.Fusion, "rrf"))
		case len(cfg.Fuse) != 2:
			return nil, fmt.Errorf("evaluate: an adaptive weight fuses two Fuse entries (the dense ranking, then the lexical one), not %d", len(cfg.Fuse))
		case cfg.FusionDev || len(cfg.FusionWeights) > 0 || cfg.FusionNewTools || cfg.FusionSteps != 0:
			return nil, errors.New("evaluate: an adaptive weight replaces FusionDev, FusionWeights, FusionNewTools and FusionSteps")
		case cfg.FusionMetric != "" && !cfg.FusionAdaptive:
			return nil, errors.New("evaluate: FusionMetric applies to FusionDev or FusionAdaptive")
		}
		if cfg.FusionAdapt != nil {
			if err := cfg.FusionAdapt.Check(); err != nil {
				return nil, fmt.Errorf("evaluate: FusionAdapt: %w", err)
			}
			a := *cfg.FusionAdapt
			f.A = &a
		}
		if _, err := metrics.ParseMetric(cmp.Or(cfg.FusionMetric, evaluate.DefaultRerankMetric)); err != nil {
			return nil, fmt.Errorf("evaluate: FusionMetric: %w", err)
		}
		f.Norm = rerank.Norm(cfg.Fusion)
		return f, nil
	}
	if (cfg.FusionSteps != 0 || cfg.FusionMetric != "" || cfg.FusionNewTools) && !cfg.FusionDev {
		return nil, errors.New("evaluate: FusionSteps, FusionMetric and FusionNewTools apply to FusionDev")
	}
	switch cfg.Fusion {
	case "", "rrf":
		if len(cfg.FusionWeights) > 0 || cfg.FusionDev {
			return nil, errors.New("evaluate: FusionWeights and FusionDev apply to Fusion minmax or zscore, not rrf")
		}
	case "minmax", "zscore":
		if cfg.FusionDev {
			if len(cfg.FusionWeights) > 0 {
				return nil, errors.New("evaluate: FusionDev picks the weights: not with FusionWeights")
			}
			if _, err := metrics.ParseMetric(cmp.Or(cfg.FusionMetric, evaluate.DefaultRerankMetric)); err != nil {
				return nil, fmt.Errorf("evaluate: FusionMetric: %w", err)
			}
			f.Norm = rerank.Norm(cfg.Fusion)
			break
		}
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
// "model:REF" or "index:DIR"; any other entry is a TREC run file, returned as file.
func fuseEntry(it string) (cfg EvalConfig, file string, err error) {
	switch it {
	case "bm25":
		return EvalConfig{}, "", nil
	case "":
		return cfg, "", errors.New("evaluate: Fuse: empty entry")
	case "fusion", "rerank", "rerank-m":
		return cfg, "", fmt.Errorf("evaluate: Fuse entry %q: fuse its saved rankings instead (-method %s -save-run FILE, then FILE in -runs)", it, it)
	}
	kind, ref, _ := strings.Cut(it, ":")
	switch kind {
	case "run", "model", "index":
		if ref == "" {
			return cfg, "", fmt.Errorf("evaluate: Fuse entry %q: want bm25, run:RUN, model:REF, index:DIR or a TREC run file", it)
		}
	}
	switch kind {
	case "run":
		return EvalConfig{Run: ref}, "", nil
	case "model":
		return EvalConfig{Model: ref}, "", nil
	case "index":
		return EvalConfig{Index: ref}, "", nil
	}
	return cfg, it, nil
}

// fusedRanker is newRanker of a configuration with Fuse. On a recorded dev split (train not
// nil), or to pick the weights on it (FusionDev), a run:RUN entry must have held out every
// query of that dev split, and a bi-encoder's usage vectors come from its own recorded
// training part.
func fusedRanker(ctx context.Context, cfg EvalConfig, d *data.Dataset, s, train *data.Split, be compute.Backend) (rank.QueryRanker, string, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	f, err := fusionRanker(&cfg)
	if err != nil {
		return nil, "", cleanup, err
	}
	var devMeta *rundir.Meta
	var trainPart, devPart *data.Split
	if cfg.FusionDev || cfg.FusionAdaptive || train != nil {
		run := cfg.firstRun()
		if run == "" {
			return nil, "", cleanup, errors.New("evaluate: Fuse: the dev split is the one a trained run recorded: give -run, -first-stage, or a run:RUN in -runs (SplitRun, or a run:RUN in Fuse)")
		}
		if trainPart, devPart, devMeta, err = rundir.Splits(rundir.RunOf(run), d); err != nil {
			return nil, "", cleanup, fmt.Errorf("evaluate: Fuse: dev split of %s: %w", run, err)
		}
	}
	for _, it := range cfg.Fuse {
		in, c, err := fuseInput(ctx, cfg, d, s, devMeta, it, "Fuse entry", be)
		cleanups = append(cleanups, c)
		if err != nil {
			return nil, "", cleanup, err
		}
		if in.Live != nil {
			// On a multi-source dataset each entry ranks within the query's library.
			in.Live = metrics.WithinLibraries(d, nil, in.Live)
		}
		f.Inputs = append(f.Inputs, in)
	}
	items := strings.Join(cfg.Fuse, ", ")
	desc := fmt.Sprintf("fusion rrf (k=%g) of %s", f.K, items)
	if f.A != nil {
		return f, fmt.Sprintf("fusion %s of %s, adaptive dense weight %s", f.Norm, items, f.A.Describe()), cleanup, nil
	}
	if cfg.FusionAdaptive {
		metric := cmp.Or(cfg.FusionMetric, evaluate.DefaultRerankMetric)
		score, err := metrics.ParseMetric(metric)
		if err != nil {
			return nil, "", cleanup, fmt.Errorf("evaluate: FusionMetric: %w", err)
		}
		qs, rel := fusion.SplitQueries(d, devPart)
		groups := make([]int, len(qs))
		for i, q := range qs {
			groups[i] = d.QueryLibrary(devPart, q.Index)
		}
		names := make([]string, len(d.Libraries))
		for i, l := range d.Libraries {
			names[i] = l.Name
		}
		c, err := f.TuneAdaptive(ctx, qs, rel, groups, names, fusion.TuneOptions{Metric: metric, Score: score, Log: cfg.Log})
		if err != nil {
			return nil, "", cleanup, err
		}
		a := c.Adaptive
		f.A = &a
		return f, fmt.Sprintf("fusion %s of %s, adaptive dense weight %s on dev (-weight adaptive:%s)", f.Norm, items, a.Describe(), a), cleanup, nil
	}
	if cfg.FusionDev {
		metric := cmp.Or(cfg.FusionMetric, evaluate.DefaultRerankMetric)
		score, err := metrics.ParseMetric(metric)
		if err != nil {
			return nil, "", cleanup, fmt.Errorf("evaluate: FusionMetric: %w", err)
		}
		o := fusion.TuneOptions{Steps: cmp.Or(cfg.FusionSteps, DefaultFusionSteps), Metric: metric, Score: score, Log: cfg.Log}
		qs, rel := fusion.SplitQueries(d, devPart)
		if cfg.FusionNewTools {
			isNew, n := fusion.NewTools(d, trainPart)
			if n == 0 {
				return nil, "", cleanup, fmt.Errorf("evaluate: FusionNewTools (-new-tool-weights): every tool of %s has a query in the dev run's training part: no new tools to weigh apart", d.Name)
			}
			c, err := f.TuneGrouped(ctx, qs, rel, isNew, metricDepth(metric), o)
			if err != nil {
				return nil, "", cleanup, err
			}
			f.G = &c.Grouped
			desc = fmt.Sprintf("fusion %s of %s, weights on dev: trained tools %s, the %d new tools %s %+g", f.Norm, items, joinWeights(c.W), n, joinWeights(c.NewW), c.Offset)
			return f, desc, cleanup, nil
		}
		if f.W, err = f.Tune(ctx, qs, rel, o); err != nil {
			return nil, "", cleanup, err
		}
	}
	if f.W != nil {
		how := ""
		if cfg.FusionDev {
			how = " on dev"
		}
		desc = fmt.Sprintf("fusion %s of %s, weights %s%s", f.Norm, items, joinWeights(f.W), how)
	}
	return f, desc, cleanup, nil
}

// fuseInput returns the ranking one entry it of Fuse (or of Compare: label says which, in
// errors) names, as cfg ranks it, and a cleanup (call it, also after an error): a TREC run
// file read, or a live ranker of d's queries (s is the split evaluated). With dev (a recorded
// dev split evaluated, or weights picked on it) a run:RUN entry must have held out every
// query of that dev split, and a bi-encoder's usage vectors come from its own recorded
// training part.
func fuseInput(ctx context.Context, cfg EvalConfig, d *data.Dataset, s *data.Split, dev *rundir.Meta, it, label string, be compute.Backend) (*fusion.Input, func(), error) {
	cleanup := func() {}
	sub, file, err := fuseEntry(it)
	if err != nil {
		return nil, cleanup, err
	}
	if file != "" {
		in, err := fusion.ReadInput(file, d)
		if err != nil {
			return nil, cleanup, fmt.Errorf("evaluate: %s %q: %w", label, it, err)
		}
		in.Name = it
		return in, cleanup, nil
	}
	sub.Data, sub.Backend, sub.Log = cfg.Data, cfg.Backend, cfg.Log
	var subTrain *data.Split
	switch {
	case sub.Run != "":
		sub.Lengths, sub.Vectors = cfg.Lengths, cfg.Vectors
		if dev != nil {
			if err := rundir.CheckDev(label+" "+it, sub.Run, d, dev.Split); err != nil {
				return nil, cleanup, fmt.Errorf("evaluate: %w", err)
			}
			if subTrain, _, _, err = rundir.Splits(rundir.RunOf(sub.Run), d); err != nil {
				return nil, cleanup, fmt.Errorf("evaluate: %s %s: %w", label, it, err)
			}
		}
	case sub.Model != "":
		sub.Lengths = cfg.Lengths
		sub.Quantize, sub.NoRecipe = cfg.Quantize, true
	case sub.Index != "":
		sub.Quantize, sub.NoRecipe = cfg.Quantize, true
	default:
		sub.BM25 = cfg.BM25
	}
	r, _, cleanup, err := newRanker(ctx, sub, d, s, subTrain, be)
	if err != nil {
		return nil, cleanup, fmt.Errorf("evaluate: %s %s: %w", label, it, err)
	}
	return &fusion.Input{Name: it, Live: r}, cleanup, nil
}

// metricDepth is the cutoff K of a metric named like "ndcg@5" (0, all, when it has none).
func metricDepth(metric string) int {
	_, k, ok := strings.Cut(metric, "@")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(k)
	if err != nil || n < 1 {
		return 0
	}
	return n
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

// AblationReport is what EvaluateAblations returns.
type AblationReport struct {
	// Dataset and Split name what was evaluated; Metric is the dev metric each variant was
	// tuned on, over DevQueries queries of the first stage's recorded dev split.
	Dataset, Split string
	Metric         string
	DevQueries     int
	// Rows are the bi-encoder alone, then one row per evaluate.Variants entry: its name, the
	// parameters tuned on dev, and its metrics at Cutoffs.
	Rows []evaluate.AblationRow
}

// EvaluateAblations evaluates the ablations of ToolRerank (eval -method rerank -ablations):
// the first stage alone, Rerank-10/30/50, ToolRerank and its variants (evaluate.Variants),
// with the cross-encoder's scores computed once, each tuned on the first stage's recorded dev
// split with cfg.Rerank's Metric and MinT. cfg.Rerank names the runs (FirstStage, Reranker,
// Classifier) and the grid; it runs every mode itself, so Depth, Mode and OracleType are
// refused. Split is a split of the dataset (default "test"), not the dev split.
func EvaluateAblations(ctx context.Context, cfg EvalConfig) (*AblationReport, error) {
	switch {
	case cfg.Rerank == nil:
		return nil, errors.New("evaluate: EvaluateAblations: give Rerank (the first stage, cross-encoder and classifier runs)")
	case cfg.Rerank.Depth != 0 || cfg.Rerank.Mode != rerank.ModeAuto || cfg.Rerank.OracleType:
		return nil, errors.New("evaluate: EvaluateAblations runs every variant: not with Rerank's Depth, Mode or OracleType")
	case cfg.Clauses != nil:
		return nil, errors.New("evaluate: EvaluateAblations: Clauses apply to one ranking evaluated")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rc := *cfg.Rerank
	rc.Ablations = true
	if rc.Vectors == "" {
		rc.Vectors = cfg.Vectors
	}
	if rc.Log == nil {
		rc.Log = cfg.Log
	}
	t, err := rc.TuneOptions()
	if err != nil {
		return nil, err
	}
	d, err := cfg.openView()
	if err != nil {
		return nil, err
	}
	if rc.Backend == nil {
		if rc.Backend, err = backend.Open(backend.Name(cfg.Backend)); err != nil {
			return nil, err
		}
	}
	s, err := d.Split(cmp.Or(cfg.Split, "test"))
	if err != nil {
		return nil, fmt.Errorf("evaluate: Split: %w", err)
	}
	env, err := rc.Setup(d, s)
	if err != nil {
		return nil, err
	}
	ks := cfg.Cutoffs
	if len(ks) == 0 {
		ks = metrics.DefaultKs
	}
	rows, devQueries, err := env.Ablations(ctx, ks, t)
	if err != nil {
		return nil, err
	}
	return &AblationReport{Dataset: d.Name, Split: env.Eval.Name, Metric: t.Metric, DevQueries: devQueries, Rows: rows}, nil
}
