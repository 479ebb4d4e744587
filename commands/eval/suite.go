package evalcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
)

// suiteOptions are the flags of -suite: the zero-shot suite (toolret.Suite).
type suiteOptions struct {
	sets, dir, models string // -suite, -suite-dir, -suite-models
	noStart           bool   // -no-start
	modelRef          string // -model as given (a hub id stays one in the table)
	cutoffsGiven      bool
}

func (s *suiteOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.sets, "suite", "", "evaluate on every zero-shot test set at once, one table: zeroshot (the seven: "+strings.Join(toolret.ZeroShotSets, ", ")+") or a comma list of their names; "+
		"BM25 always, the -model, -run, -index or -method fusion -runs given (rrf, or -fusion minmax|zscore with -weight W1,W2,...), the pre-trained model a -run started from (-init; -no-start: not), and -suite-models; with -clauses each of these also with clauses")
	fs.StringVar(&s.dir, "suite-dir", "", "-suite: the directory holding bfcl/ and zeroshot/NAME/ (default: $TOOLRET_DATASETS, else ../shared/datasets)")
	fs.StringVar(&s.models, "suite-models", "", "-suite: more models evaluated beside, comma-separated: pre-trained models (directory or hub id) or runs")
	fs.BoolVar(&s.noStart, "no-start", false, "-suite: leave out the pre-trained model a -run (or -runs' run:RUN) started from")
}

// suiteFlags are the flags that apply with -suite; any other given is refused.
var suiteFlags = map[string]bool{
	"suite": true, "suite-dir": true, "suite-models": true, "no-start": true,
	"model": true, "run": true, "index": true, "method": true, "runs": true, "fusion": true, "weight": true,
	"backend": true, "query-len": true, "tool-len": true, "cutoffs": true, "json": true,
	"clauses": true, "clauses-merge": true, "clauses-norm": true, "clauses-whole": true, "clauses-min-words": true, "clauses-depth": true,
}

// check refuses with -suite the flags given that do not apply to it; without it, its own.
func (s *suiteOptions) check(given map[string]bool) error {
	if s.sets == "" {
		for _, name := range []string{"suite-dir", "suite-models", "no-start"} {
			if given[name] {
				return fmt.Errorf("-%s applies to -suite", name)
			}
		}
		return nil
	}
	var bad []string
	for name := range given {
		if !suiteFlags[name] {
			bad = append(bad, "-"+name)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("-suite evaluates the test split of every set, each with its own data: %s do not apply to it", strings.Join(bad, ", "))
	}
	s.cutoffsGiven = given["cutoffs"]
	return nil
}

// suiteConfig turns the options into the suite's configuration.
func suiteConfig(o *options) (toolret.SuiteConfig, error) {
	s := &o.suite
	cfg := toolret.SuiteConfig{Dir: s.dir, NoStart: s.noStart, Backend: o.backend, Lengths: o.lengths, NoRecipe: o.noRecipe, Log: os.Stderr}
	if s.sets != "zeroshot" {
		cfg.Sets = splitRuns(s.sets)
	}
	if s.cutoffsGiven {
		cfg.Cutoffs = o.ks
	}
	switch o.method {
	case "bm25":
		if o.fu.method != "" || o.fu.weightGiven {
			return cfg, fmt.Errorf("-fusion and -weight are for -method fusion")
		}
	case "fusion":
		sys := toolret.SuiteSystem{Fuse: splitRuns(o.fu.runs), Fusion: o.fu.method}
		if len(sys.Fuse) == 0 {
			return cfg, fmt.Errorf("-suite -method fusion needs -runs A,B[,...]: bm25, run:RUN, model:REF or index:DIR")
		}
		switch {
		case sys.Fusion == "" || sys.Fusion == "rrf":
			if o.fu.weightGiven {
				return cfg, fmt.Errorf("-weight applies to -fusion minmax or zscore, not rrf")
			}
		case o.rr.weight == "dev":
			return cfg, fmt.Errorf("-suite -fusion %s: the zero-shot sets have no dev split to pick weights on: give -weight W (two -runs) or W1,W2,...", sys.Fusion)
		default:
			w, err := parseFusionWeights(o.rr.weight, len(sys.Fuse))
			if err != nil {
				return cfg, err
			}
			sys.FusionWeights = w
		}
		cfg.Systems = append(cfg.Systems, sys)
	default:
		return cfg, fmt.Errorf("-suite evaluates bm25, -model, -run, -index or -method fusion, not -method %s", o.method)
	}
	switch {
	case o.model != "":
		cfg.Systems = append(cfg.Systems, toolret.SuiteSystem{Model: s.modelRef})
	case o.run != "":
		cfg.Systems = append(cfg.Systems, toolret.SuiteSystem{Run: o.run})
	case o.index != "":
		cfg.Systems = append(cfg.Systems, toolret.SuiteSystem{Index: o.index})
	}
	for _, ref := range splitRuns(s.models) {
		if ref == "" {
			return cfg, fmt.Errorf("-suite-models %q: empty entry", s.models)
		}
		dir, err := hub.Resolve(context.Background(), ref)
		if err != nil {
			return cfg, fmt.Errorf("-suite-models %s: %w", ref, err)
		}
		if export.IsHFDir(dir) {
			cfg.Systems = append(cfg.Systems, toolret.SuiteSystem{Model: ref})
		} else {
			cfg.Systems = append(cfg.Systems, toolret.SuiteSystem{Run: dir})
		}
	}
	co, err := o.clauses.Options()
	if err != nil {
		return cfg, err
	}
	if co != nil { // each system first alone, then with clauses: the first stage beside
		if len(cfg.Systems) == 0 {
			cfg.Systems = []toolret.SuiteSystem{{}} // BM25 with clauses, after BM25 alone
		}
		var both []toolret.SuiteSystem
		for _, sys := range cfg.Systems {
			c := sys
			c.Clauses = co
			both = append(both, sys, c)
		}
		cfg.Systems = both
	}
	return cfg, nil
}

// runSuite is -suite: toolret.Suite's table (Markdown), or its JSON with -json.
func runSuite(o *options, w io.Writer) error {
	if n := countTrue(o.run != "" || o.model != "", o.index != "", o.method == "fusion"); n > 1 {
		return fmt.Errorf("-suite: give one of -model, -run, -index and -method fusion (more models: -suite-models)")
	}
	cfg, err := suiteConfig(o)
	if err != nil {
		return err
	}
	res, err := toolret.Suite(context.Background(), cfg)
	if err != nil {
		return err
	}
	if o.asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprint(w, res)
	return err
}

func countTrue(b ...bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
