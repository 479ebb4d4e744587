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

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
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

// runFeedback evaluates the iterative retrieval: the metrics of each round 0..T.
func runFeedback(o *options, w io.Writer) error {
	d, err := loadData(o)
	if err != nil {
		return err
	}
	s, err := evalSplit(o, d)
	if err != nil {
		return err
	}
	qr, desc, err := buildRun(o, d)
	if err != nil {
		return err
	}
	marker := ""
	if m, ok := qr.(evaluate.Marked); ok {
		qr, marker = m.QueryRanker, m.Marker
	}
	depth := 0
	for _, k := range o.ks {
		depth = max(depth, k)
	}
	ctx := context.Background()
	rank := evaluate.RankOne(qr) // each instruction alone, as a collection ranks it
	var r *evaluate.Rounds
	if o.fb.file != "" {
		split := s.Name
		if isDevSplit(o, d) { // the recorded dev split: its queries were collected in the split it was carved from
			_, _, m, err := devSplit(o, d)
			if err != nil {
				return err
			}
			split = m.Split.From
		}
		r, err = evaluate.Replay(ctx, d, s, rank, evaluate.ReplayOptions{File: o.fb.file, Name: "-feedback " + o.fb.file,
			Iterations: o.fb.iterations, Split: split, Marker: marker, Depth: depth})
	} else {
		var be compute.Backend
		if be, err = backend.Open(backend.Name(o.backend)); err != nil {
			return err
		}
		r, err = evaluate.Live(ctx, d, s, rank, evaluate.LiveOptions{Judge: o.fb.prfModel, Backend: be,
			PRF:        feedback.PRFOptions{Threshold: o.fb.prfThreshold, MaxTools: o.fb.prfTools, MaxChars: o.fb.prfChars},
			Iterations: o.fb.iterations, K: o.fb.k, Marker: marker, Depth: depth})
	}
	if err != nil {
		return err
	}
	full, err := r.Evaluate(ctx, d, s, o.ks)
	if err != nil {
		return err
	}
	if o.saveRun != "" {
		qs, _ := fusion.SplitQueries(d, s)
		for t := range full {
			res, _ := evaluate.RunResults(d, qs, full[t], o.k)
			path := evaluate.RoundPath(o.saveRun, t)
			if err := fusion.WriteRunFile(path, runTag(o)+"-round"+strconv.Itoa(t), res); err != nil {
				return fmt.Errorf("-save-run: %w", err)
			}
			fmt.Fprintf(os.Stderr, "eval: wrote round %d's %d rankings to %s\n", t, len(res), path)
		}
	}
	stats := r.Stats
	if o.asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"method": desc, "iterative": r.Head, "dataset": d.Name, "split": s.Name, "rounds": stats})
	}
	fmt.Fprintf(w, "method %s; %s\n%s / %s\n", desc, r.Head, d.Name, s.Name)
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
