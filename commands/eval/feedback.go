package evalcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
)

// feedbackOptions are the flags of the iterative retrieval (Xu et al.): a replay of a
// collection's refinements (-feedback FILE) or a live loop (-rewriter prf).
type feedbackOptions struct {
	file, refiner, prfModel string
	prfThreshold            float64
	prfTools, prfChars      int
	iterations, k           int
}

func (f *feedbackOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "feedback", "", "iterative retrieval, replayed: the recorded refinements of -split in a collection (train feedback -out FILE), each round's instructions ranked by -run (marked when it was trained iteration-aware); metrics after each round 0..T")
	fs.StringVar(&f.refiner, "rewriter", "", "iterative retrieval, live: prf (pseudo-relevance feedback with -prf-model) refines each query of -split, ranked by -run; metrics after each round 0..-iterations")
	fs.StringVar(&f.prfModel, "prf-model", "", "-rewriter prf: the run that judges the retrieved tools (an mlc classifier, refiner or cross-encoder run)")
	fs.Float64Var(&f.prfThreshold, "prf-threshold", feedback.DefaultPRFThreshold, "-rewriter prf: accept a tool when the -prf-model's score of (q^0, tool) is at least this")
	fs.IntVar(&f.prfTools, "prf-tools", feedback.DefaultPRFTools, "-rewriter prf: most accepted tools written into the instruction")
	fs.IntVar(&f.prfChars, "prf-chars", feedback.DefaultPRFChars, "-rewriter prf: characters of each accepted tool's description written (-1: names only)")
	fs.IntVar(&f.iterations, "iterations", 0, "iterative retrieval: the last round T (-feedback: 0 is the collection's; -rewriter: 0 is 3)")
	fs.IntVar(&f.k, "rewriter-k", 10, "-rewriter: tools shown to the rewriter each round (train feedback's -k)")
}

func (f *feedbackOptions) active() bool { return f.file != "" || f.refiner != "" }

// check validates the flags once parsed.
func (f *feedbackOptions) check(o *options) error {
	if !f.active() {
		return nil
	}
	switch {
	case f.file != "" && f.refiner != "":
		return errors.New("-feedback replays a collection, -rewriter runs the loop live: give one")
	case f.refiner != "" && f.refiner != "prf":
		return fmt.Errorf("-rewriter %q: eval runs prf live (an LLM's refinements: collect them with train feedback and replay them with -feedback)", f.refiner)
	case f.refiner == "prf" && f.prfModel == "":
		return errors.New("-rewriter prf needs -prf-model RUN")
	case o.run == "":
		return errors.New("the iterative retrieval ranks with a trained run: give -run")
	case o.ablations:
		return errors.New("-feedback and -rewriter print rounds: not with -ablations")
	case f.iterations < 0:
		return fmt.Errorf("-iterations %d: must be >= 0", f.iterations)
	case f.k < 1:
		return fmt.Errorf("-rewriter-k %d: must be > 0", f.k)
	}
	return nil
}

// feedbackConfig turns the flags of the iterative retrieval into the library's configuration
// (toolret.EvalConfig's Run with Feedback or Rewriter).
func feedbackConfig(o *options) toolret.EvalConfig {
	cfg := baseConfig(o)
	cfg.Run, cfg.Vectors, cfg.Lengths, cfg.SplitRun = o.run, o.vectors, o.lengths, o.rr.retriever
	cfg.Feedback, cfg.Iterations = o.fb.file, o.fb.iterations
	if o.fb.refiner != "" {
		cfg.Rewriter = &toolret.Rewriter{Judge: o.fb.prfModel, K: o.fb.k,
			PRF: feedback.PRFOptions{Threshold: o.fb.prfThreshold, MaxTools: o.fb.prfTools, MaxChars: o.fb.prfChars}}
	}
	return cfg
}

// runFeedback evaluates the iterative retrieval (toolret.EvaluateRounds) and prints the
// metrics of each round 0..T.
func runFeedback(o *options, w io.Writer) error {
	r, err := toolret.EvaluateRounds(context.Background(), feedbackConfig(o))
	if err != nil {
		return err
	}
	d, s := r.Data, r.Split
	if o.saveRun != "" {
		qs, _ := fusion.SplitQueries(d, s)
		for t := range r.Rankings {
			res, _ := evaluate.RunResults(d, qs, r.Rankings[t], o.k)
			path := evaluate.RoundPath(o.saveRun, t)
			if err := fusion.WriteRunFile(path, runTag(o)+"-round"+strconv.Itoa(t), res); err != nil {
				return fmt.Errorf("-save-run: %w", err)
			}
			fmt.Fprintf(os.Stderr, "eval: wrote round %d's %d rankings to %s\n", t, len(res), path)
		}
	}
	stats := r.Rounds
	if o.asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "iterative": r.Head, "dataset": d.Name, "split": s.Name, "rounds": stats})
	}
	fmt.Fprintf(w, "method %s; %s\n%s / %s\n", r.Method, r.Head, d.Name, s.Name)
	names := make([]string, len(stats))
	res := make([]metrics.Result, len(stats))
	for t, st := range stats {
		names[t], res[t] = fmt.Sprintf("round %d", t), st.Metrics
	}
	fmt.Fprint(w, metrics.Table(names, res))
	fmt.Fprintf(w, "%-8s %7s %8s %12s %12s\n", "", "active", "refined", "retrieve ms", "refine ms")
	for _, st := range stats {
		fmt.Fprintf(w, "round %-2d %7d %8d %12.2f %12.2f\n", st.Round, st.Active, st.Refined, st.RetrieveMS, st.RefineMS)
	}
	fmt.Fprintln(w, "(active: queries whose loop reached the round, the others keep their last ranking; times: mean per active query)")
	return nil
}
