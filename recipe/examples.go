package recipe

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/llm"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/synth"
	"github.com/toolret/toolret/usage"
)

// ExamplesFile is the snapshot of the training examples (usage log, synthetic queries) a
// run trained on, in its run directory (data.WriteExamples); a resumed run reads it.
const ExamplesFile = "examples.jsonl"

// checkExamples validates the Usage and Synthetic fields.
func checkExamples(cfg *biencoder.TrainConfig, q2q bool) error {
	sp, pa, t := cfg.Split, cfg.Parent, cfg.Training
	if sp.Synthetic < 0 {
		return fmt.Errorf("-synthetic %d: queries per tool, must be >= 0", sp.Synthetic)
	}
	if sp.Synthetic == 0 && (sp.SyntheticLLM != "" || sp.SyntheticLLMModel != "") {
		return fmt.Errorf("-synthetic-llm and -synthetic-llm-model need -synthetic N (queries per tool)")
	}
	if (sp.SyntheticLLM == "") != (sp.SyntheticLLMModel == "") {
		return fmt.Errorf("-synthetic-llm %q -synthetic-llm-model %q: give both (the endpoint and its model) or neither (templates)", sp.SyntheticLLM, sp.SyntheticLLMModel)
	}
	if sp.Usage == "" && sp.Synthetic == 0 {
		return nil
	}
	what := "-usage"
	if sp.Usage == "" {
		what = "-synthetic"
	}
	switch {
	case q2q:
		return fmt.Errorf("%s trains queries against tools: not with -objective %s", what, biencoder.ObjectiveQuery2Query)
	case pa.Feedback != "" || pa.Retriever != "":
		return fmt.Errorf("%s makes its own training split: not with -feedback or -first-stage", what)
	case t.Negatives != "":
		return fmt.Errorf("%s: not with -negatives (a usage log's hard negatives are the tools shown and not called; -hard-negatives N uses them)", what)
	}
	return nil
}

// withExamples returns the view of d whose training split holds the examples of cfg's
// usage log and synthetic queries (read from the run's snapshot when resuming, else made
// and snapshotted there), and their hard negatives.
func withExamples(ctx context.Context, cfg *biencoder.TrainConfig, d *data.Dataset, log io.Writer) (*data.Dataset, map[int][]int, error) {
	sp := &cfg.Split
	snap := filepath.Join(cfg.RunDir, ExamplesFile)
	var ex []data.Example
	if cfg.Resume {
		var err error
		if ex, err = data.ReadExamples(snap); err != nil {
			return nil, nil, fmt.Errorf("resume: the run's training examples: %w", err)
		}
	} else {
		if sp.Usage != "" {
			u, warn, st, err := usage.ReadExamples(sp.Usage)
			if err != nil {
				return nil, nil, fmt.Errorf("-usage: %w", err)
			}
			for _, w := range warn {
				fmt.Fprintln(log, "-usage:", w)
			}
			fmt.Fprintf(log, "usage log %s: %s\n", sp.Usage, st)
			if len(u) == 0 {
				return nil, nil, fmt.Errorf("-usage %s: no training example in the log (%s): a search needs a successful call or a reported success", sp.Usage, st)
			}
			ex = append(ex, u...)
		}
		if sp.Synthetic > 0 {
			s, err := syntheticExamples(ctx, cfg, d)
			if err != nil {
				return nil, nil, err
			}
			ex = append(ex, s...)
		}
		if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
			return nil, nil, err
		}
		if err := data.WriteExamples(snap, ex); err != nil {
			return nil, nil, fmt.Errorf("snapshotting the training examples: %w", err)
		}
	}
	v, negs, skipped, err := d.WithExamples(ex)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range skipped {
		fmt.Fprintln(log, "training examples:", s)
	}
	if sp.Test != "" {
		if _, ok := v.Splits[sp.Test]; !ok {
			fmt.Fprintf(log, "training examples: %s has no %q split: no test evaluation\n", d.Name, sp.Test)
			sp.Test = ""
		}
	}
	return v, negs, nil
}

// syntheticExamples makes Split.Synthetic queries per tool of d: from the library file's
// definitions when Data is one (its input schemas' parameters), else from d's tool texts.
func syntheticExamples(ctx context.Context, cfg *biencoder.TrainConfig, d *data.Dataset) ([]data.Example, error) {
	sp := cfg.Split
	var tools []synth.Tool
	if data.IsLibraryFile(sp.Data) {
		l, err := library.Read(sp.Data)
		if err != nil {
			return nil, err
		}
		tools = synth.FromLibrary(l)
	} else {
		tools = synth.FromDataset(d)
	}
	if sp.SyntheticLLM == "" {
		return synth.Templates(tools, sp.Synthetic, cfg.Training.Seed), nil
	}
	c, err := llm.New(llm.Config{URL: sp.SyntheticLLM, Model: sp.SyntheticLLMModel, Key: llm.FromEnv(), Retries: 5, Concurrency: 4,
		Cache: filepath.Join(cfg.RunDir, "synthetic-llm-cache")})
	if err != nil {
		return nil, fmt.Errorf("-synthetic-llm: %w", err)
	}
	ex, err := synth.LLM(ctx, c, tools, sp.Synthetic)
	if err != nil {
		return nil, fmt.Errorf("-synthetic-llm %s: %w", strings.TrimRight(sp.SyntheticLLM, "/"), err)
	}
	return ex, nil
}
