package toolret

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
)

// ZeroShotSets are the zero-shot test sets Suite evaluates by default, in this order: tool
// libraries with test queries only (../shared/README.md), each at its path under
// SuiteConfig.Dir.
var ZeroShotSets = []string{"bfcl", "toolalpaca", "apibank", "restbench", "seal_tools", "gorilla_apibench", "tau_bench"}

// zeroShotPaths are the sets' directories relative to SuiteConfig.Dir.
var zeroShotPaths = map[string]string{
	"bfcl":             "bfcl",
	"toolalpaca":       "zeroshot/toolalpaca",
	"apibank":          "zeroshot/apibank",
	"restbench":        "zeroshot/restbench",
	"seal_tools":       "zeroshot/seal_tools",
	"gorilla_apibench": "zeroshot/gorilla_apibench",
	"tau_bench":        "zeroshot/tau_bench",
}

// DefaultSuiteCutoffs are the K of the suite's Recall/NDCG/COMP@K by default.
var DefaultSuiteCutoffs = []int{1, 5, 10}

// SuiteConfig configures Suite: BM25 and the Systems on every test set of Sets.
type SuiteConfig struct {
	// Dir holds the sets: bfcl/ and zeroshot/NAME/ ("": $TOOLRET_DATASETS, else
	// ../shared/datasets).
	Dir string
	// Sets are the names of the sets evaluated, in the table's order (nil: ZeroShotSets).
	Sets []string
	// Systems are evaluated after BM25, which every suite evaluates first as the baseline.
	Systems []SuiteSystem
	// NoStart leaves out the start models: without it, a bi-encoder Run among Systems (or a
	// run:RUN of a Fuse) adds the pre-trained model its training started from (-init, recorded
	// in its run.json) when that is a pre-trained model, evaluated before the run.
	NoStart bool
	// Backend names the compute backend (backend.Open).
	Backend string
	// Lengths replace the token limits of the dense models (EvalConfig.Lengths).
	Lengths export.Lengths
	// NoRecipe evaluates every Model and Index without its recipe's BM25 fusion, clauses and
	// reranker (EvalConfig.NoRecipe); without it, a system with a recipe is named with what it
	// applies, "model:DIR (+bm25 zscore 0.3, +rerank 20 w0.4)".
	NoRecipe bool
	// Cutoffs are the K of Recall/NDCG/COMP@K (nil: DefaultSuiteCutoffs).
	Cutoffs []int
	// Log receives a line per evaluation (set, system, time; nil: none).
	Log io.Writer
}

// SuiteSystem is one system of a suite: at most one of Run, Model, Index and Fuse (with
// Fusion, FusionWeights), as EvalConfig's; none is BM25. Fuse's entries are bm25, run:RUN,
// model:REF or index:DIR (a TREC run file ranks one dataset's queries).
type SuiteSystem struct {
	Run, Model, Index string
	Fuse              []string
	Fusion            string
	FusionWeights     []float64
	// Clauses ranks with the system's queries split into clauses and merged
	// (EvalConfig.Clauses); the name gets " +clauses".
	Clauses *rerank.ClauseOptions
}

// Name labels the system in the suite's tables: "bm25", "run:RUN", "model:REF", "index:DIR",
// or "rrf(bm25 + run:RUN)" for a Fuse (minmax or zscore with its weights). A suite's table
// adds the BM25 fusion, clauses and reranker of a Model's or Index's recipe when it applies
// them: "model:DIR (+bm25 zscore 0.3, +clauses max zscore, +rerank 20 w0.4)".
func (s SuiteSystem) Name() string {
	if s.Clauses != nil {
		c := s
		c.Clauses = nil
		return c.Name() + " +" + s.Clauses.String()
	}
	switch {
	case s.Run != "":
		return "run:" + s.Run
	case s.Model != "":
		return "model:" + s.Model
	case s.Index != "":
		return "index:" + s.Index
	case len(s.Fuse) > 0:
		f := s.Fusion
		if f == "" {
			f = "rrf"
		}
		if len(s.FusionWeights) > 0 {
			w := make([]string, len(s.FusionWeights))
			for i, x := range s.FusionWeights {
				w[i] = fmt.Sprintf("%g", x)
			}
			f += " " + strings.Join(w, ",")
		}
		return f + "(" + strings.Join(s.Fuse, " + ") + ")"
	}
	return "bm25"
}

// evalConfig is the system's EvalConfig in suite cfg, without its Data.
func (s SuiteSystem) evalConfig(cfg *SuiteConfig) EvalConfig {
	c := EvalConfig{Run: s.Run, Model: s.Model, Index: s.Index, Fuse: s.Fuse, Fusion: s.Fusion, FusionWeights: s.FusionWeights,
		Split: "test", Backend: cfg.Backend, Cutoffs: cfg.Cutoffs, Clauses: s.Clauses}
	if s.Run != "" || s.Model != "" || len(s.Fuse) > 0 {
		c.Lengths = cfg.Lengths // BM25 and an Index have none
	}
	c.NoRecipe = cfg.NoRecipe && (s.Model != "" || s.Index != "")
	return c
}

// recipeName is the system's Name with, when cfg applies a recipe's BM25 fusion, clauses or
// reranker to its Model or Index, those: "model:DIR (+bm25 zscore 0.3, +clauses max zscore,
// +rerank 20 w0.4)". A recipe that does not read is an error.
func (s SuiteSystem) recipeName(ctx context.Context, cfg *SuiteConfig) (string, error) {
	name := s.Name()
	if cfg.NoRecipe {
		return name, nil
	}
	var h *export.HybridRecipe
	var c *export.ClausesRecipe
	var rr *export.RerankerRecipe
	switch {
	case s.Model != "":
		r, err := ModelRecipe(ctx, s.Model)
		if err != nil {
			return "", err
		}
		if r != nil {
			h, c, rr = r.Hybrid, r.Clauses, r.Reranker
		}
	case s.Index != "":
		man, err := export.ReadManifest(s.Index)
		if err != nil {
			return "", err
		}
		h, c, rr = man.Hybrid, man.Clauses, man.Reranker
	}
	var parts []string
	if h != nil {
		parts = append(parts, h.String())
	}
	if c != nil && s.Clauses == nil { // explicit Clauses replace the recipe's
		parts = append(parts, "+"+c.String())
	}
	if rr != nil {
		parts = append(parts, rr.String())
	}
	if len(parts) > 0 {
		name += " (" + strings.Join(parts, ", ") + ")"
	}
	return name, nil
}

// SuiteResult is a suite's figures: per system, a row per set and their mean.
type SuiteResult struct {
	Dir     string         `json:"dir"`
	Sets    []string       `json:"sets"`
	Cutoffs []int          `json:"cutoffs"`
	Systems []SystemResult `json:"systems"`
}

// SystemResult is one system's figures on every set of a suite.
type SystemResult struct {
	Name string `json:"name"`
	// Note says why the system is in the suite when the config did not name it ("start
	// model of run:RUN").
	Note string `json:"note,omitempty"`
	// Rows are its figures per set, in SuiteResult.Sets's order.
	Rows []SuiteRow `json:"rows"`
	// Mean is the unweighted mean of the rows' metrics (each set counts once); its N is the
	// rows' queries in all.
	Mean metrics.Result `json:"mean"`
}

// SuiteRow is one system's evaluation on one set.
type SuiteRow struct {
	Set     string         `json:"set"`
	Tools   int            `json:"tools"`
	Result  metrics.Result `json:"metrics"`
	Seconds float64        `json:"seconds"`
}

// Suite evaluates BM25 and cfg.Systems on the test split of every set of cfg.Sets, each as
// Evaluate evaluates it on the set's own splits. A set that does not load, and an unknown set
// name, is an error naming it.
func Suite(ctx context.Context, cfg SuiteConfig) (*SuiteResult, error) {
	if cfg.Dir == "" {
		cfg.Dir = DefaultSuiteDir()
	}
	if len(cfg.Sets) == 0 {
		cfg.Sets = ZeroShotSets
	}
	if len(cfg.Cutoffs) == 0 {
		cfg.Cutoffs = DefaultSuiteCutoffs
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	for _, s := range cfg.Sets {
		if _, ok := zeroShotPaths[s]; !ok {
			return nil, fmt.Errorf("suite: unknown set %q (known: %s)", s, strings.Join(ZeroShotSets, ", "))
		}
	}
	systems, notes, err := suiteSystems(ctx, cfg)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(systems))
	for i, s := range systems {
		c := s.evalConfig(&cfg)
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("suite: system %s: %w", s.Name(), err)
		}
		for _, it := range s.Fuse {
			if _, file, _ := fuseEntry(it); file != "" { // a run file ranks one dataset's queries
				return nil, fmt.Errorf("suite: system %s: Fuse entry %q: want bm25, run:RUN, model:REF or index:DIR", s.Name(), it)
			}
		}
		if names[i], err = s.recipeName(ctx, &cfg); err != nil {
			return nil, fmt.Errorf("suite: system %s: %w", s.Name(), err)
		}
	}
	sets := make([]*data.Dataset, len(cfg.Sets))
	for i, s := range cfg.Sets {
		dir := filepath.Join(cfg.Dir, zeroShotPaths[s])
		d, err := data.Open(dir, nil)
		if err != nil {
			return nil, fmt.Errorf("suite: set %s (%s): %w", s, dir, err)
		}
		if _, err := d.Split("test"); err != nil {
			return nil, fmt.Errorf("suite: set %s (%s): %w", s, dir, err)
		}
		sets[i] = d
	}
	res := &SuiteResult{Dir: cfg.Dir, Sets: cfg.Sets, Cutoffs: cfg.Cutoffs}
	mid := res.middleCutoff()
	for i, sys := range systems {
		sr := SystemResult{Name: names[i], Note: notes[i]}
		for j, d := range sets {
			c := sys.evalConfig(&cfg)
			c.Data = filepath.Join(cfg.Dir, zeroShotPaths[cfg.Sets[j]])
			start := time.Now()
			rep, err := evaluateOn(ctx, c, d)
			if err != nil {
				return nil, fmt.Errorf("suite: %s on %s: %w", sr.Name, cfg.Sets[j], err)
			}
			row := SuiteRow{Set: cfg.Sets[j], Tools: len(d.Tools), Result: rep.Overall, Seconds: time.Since(start).Seconds()}
			fmt.Fprintf(log, "suite: %s on %s: %d queries, %d tools, R@%d %.2f (%v)\n", sr.Name, row.Set, row.Result.N, row.Tools,
				mid, row.Result.Recall[mid], time.Since(start).Round(time.Millisecond))
			sr.Rows = append(sr.Rows, row)
		}
		sr.Mean = meanResult(sr.Rows, cfg.Cutoffs)
		res.Systems = append(res.Systems, sr)
	}
	return res, nil
}

// DefaultSuiteDir is the directory Suite reads its sets from by default: $TOOLRET_DATASETS,
// else ../shared/datasets.
func DefaultSuiteDir() string {
	if d := os.Getenv("TOOLRET_DATASETS"); d != "" {
		return d
	}
	return filepath.Join("..", "shared", "datasets")
}

// suiteSystems returns the systems of cfg in evaluation order (BM25, then each of Systems,
// preceded by its start models), each once, and their notes.
func suiteSystems(ctx context.Context, cfg SuiteConfig) ([]SuiteSystem, []string, error) {
	systems, notes := []SuiteSystem{{}}, []string{""}
	have := map[string]bool{"bm25": true}
	add := func(s SuiteSystem, note string) {
		if !have[s.Name()] {
			have[s.Name()] = true
			systems, notes = append(systems, s), append(notes, note)
		}
	}
	for _, s := range cfg.Systems {
		if !cfg.NoStart {
			runs := []string{s.Run}
			for _, it := range s.Fuse {
				if dir, ok := strings.CutPrefix(it, "run:"); ok {
					runs = append(runs, dir)
				}
			}
			for _, run := range runs {
				if run == "" {
					continue
				}
				init, err := StartModel(ctx, run)
				if err != nil {
					return nil, nil, fmt.Errorf("suite: start model of run %s (SuiteConfig.NoStart leaves it out): %w", run, err)
				}
				if init != "" {
					add(SuiteSystem{Model: init}, "start model of run:"+run)
				}
			}
		}
		add(s, "")
	}
	return systems, notes, nil
}

// StartModel returns the pre-trained model the bi-encoder run at dir (or one of its
// checkpoints) started from: its recorded -init (biencoder.TrainParent.Init) when that is a
// pre-trained HF or sentence-transformers model, as recorded (a hub id or a directory); ""
// for a run of another kind, a run trained from scratch, and one initialised from another
// run.
func StartModel(ctx context.Context, dir string) (string, error) {
	run := rundir.RunOf(dir)
	m, err := rundir.Read(run)
	if errors.Is(err, rundir.ErrNoMeta) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if m.Kind != biencoder.Kind {
		return "", nil
	}
	c, err := biencoder.RecordedConfigOf(run, m)
	if err != nil {
		return "", err
	}
	init := c.Parent.Init
	if init == "" {
		return "", nil
	}
	path, err := hub.Resolve(ctx, init)
	if err != nil {
		return "", fmt.Errorf("its -init %s: %w", init, err)
	}
	if !export.IsHFDir(path) {
		return "", nil
	}
	return init, nil
}

// meanResult is the unweighted mean of the rows' metrics; its N is their queries in all.
func meanResult(rows []SuiteRow, ks []int) metrics.Result {
	m := metrics.Result{Ks: slices.Clone(ks), Recall: map[int]float64{}, NDCG: map[int]float64{}, Comp: map[int]float64{}}
	if len(rows) == 0 {
		return m
	}
	for _, r := range rows {
		m.N += r.Result.N
		m.Skipped += r.Result.Skipped
		for _, k := range ks {
			m.Recall[k] += r.Result.Recall[k] / float64(len(rows))
			m.NDCG[k] += r.Result.NDCG[k] / float64(len(rows))
			m.Comp[k] += r.Result.Comp[k] / float64(len(rows))
		}
	}
	return m
}

// middleCutoff is the cutoff the overview and N@K show: 5 when a cutoff, else the middle one.
func (r *SuiteResult) middleCutoff() int {
	if slices.Contains(r.Cutoffs, 5) {
		return 5
	}
	return r.Cutoffs[len(r.Cutoffs)/2]
}

// String formats the result as Markdown: an overview of R@5 (or the middle cutoff) with a
// row per set and a column per system, then a table per system with a row per set and
// the mean, columns R@K for every cutoff and N@5 (or the middle cutoff).
func (r *SuiteResult) String() string {
	if len(r.Cutoffs) == 0 || len(r.Systems) == 0 {
		return ""
	}
	mid := r.middleCutoff()
	var b strings.Builder
	fmt.Fprintf(&b, "R@%d (%%) on the test split of each set of %s:\n\n| set | queries | tools |", mid, r.Dir)
	for _, s := range r.Systems {
		fmt.Fprintf(&b, " %s |", s.Name)
	}
	b.WriteString("\n|---|---:|---:|" + strings.Repeat("---:|", len(r.Systems)) + "\n")
	first := r.Systems[0]
	for i, row := range first.Rows {
		fmt.Fprintf(&b, "| %s | %d | %d |", row.Set, row.Result.N, row.Tools)
		for _, s := range r.Systems {
			fmt.Fprintf(&b, " %.2f |", s.Rows[i].Result.Recall[mid])
		}
		b.WriteByte('\n')
	}
	b.WriteString("| mean | | |")
	for _, s := range r.Systems {
		fmt.Fprintf(&b, " %.2f |", s.Mean.Recall[mid])
	}
	b.WriteString("\n")
	for _, s := range r.Systems {
		fmt.Fprintf(&b, "\n%s", s.Name)
		if s.Note != "" {
			fmt.Fprintf(&b, " (%s)", s.Note)
		}
		b.WriteString(":\n\n| set |")
		for _, k := range r.Cutoffs {
			fmt.Fprintf(&b, " R@%d |", k)
		}
		fmt.Fprintf(&b, " N@%d |\n|---|%s\n", mid, strings.Repeat("---:|", len(r.Cutoffs)+1))
		row := func(name string, m metrics.Result) {
			fmt.Fprintf(&b, "| %s |", name)
			for _, k := range r.Cutoffs {
				fmt.Fprintf(&b, " %.2f |", m.Recall[k])
			}
			fmt.Fprintf(&b, " %.2f |\n", m.NDCG[mid])
		}
		for _, x := range s.Rows {
			row(x.Set, x.Result)
		}
		row("mean", s.Mean)
	}
	return b.String()
}
