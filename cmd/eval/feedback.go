package evalcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/retriever"
)

// feedbackOptions are the flags of the iterative retrieval (Xu et al.): a replay of a
// collection's refinements (-feedback FILE) or a live loop (-refiner prf).
type feedbackOptions struct {
	file, refiner, prfModel string
	prfThreshold            float64
	prfTools, prfChars      int
	iterations, k           int
}

func (f *feedbackOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "feedback", "", "iterative retrieval, replayed: the recorded refinements of -split in a collection (train feedback -out FILE), each round's instructions ranked by -run (marked when it was trained iteration-aware); metrics after each round 0..T")
	fs.StringVar(&f.refiner, "refiner", "", "iterative retrieval, live: prf (pseudo-relevance feedback with -prf-model) refines each query of -split, ranked by -run; metrics after each round 0..-iterations")
	fs.StringVar(&f.prfModel, "prf-model", "", "-refiner prf: the run that judges the retrieved tools (an mlc classifier, refiner or cross-encoder run)")
	fs.Float64Var(&f.prfThreshold, "prf-threshold", feedback.DefaultPRFThreshold, "-refiner prf: accept a tool when the -prf-model's score of (q^0, tool) is at least this")
	fs.IntVar(&f.prfTools, "prf-tools", feedback.DefaultPRFTools, "-refiner prf: most accepted tools written into the instruction")
	fs.IntVar(&f.prfChars, "prf-chars", feedback.DefaultPRFChars, "-refiner prf: characters of each accepted tool's description written (-1: names only)")
	fs.IntVar(&f.iterations, "iterations", 0, "iterative retrieval: the last round T (-feedback: 0 is the collection's; -refiner: 0 is 3)")
	fs.IntVar(&f.k, "refiner-k", 10, "-refiner: tools shown to the refiner each round (train feedback's -k)")
}

func (f *feedbackOptions) active() bool { return f.file != "" || f.refiner != "" }

// check validates the flags once parsed.
func (f *feedbackOptions) check(o *options) error {
	if !f.active() {
		return nil
	}
	switch {
	case f.file != "" && f.refiner != "":
		return errors.New("-feedback replays a collection, -refiner runs the loop live: give one")
	case f.refiner != "" && f.refiner != "prf":
		return fmt.Errorf("-refiner %q: eval runs prf live (an LLM's refinements: collect them with train feedback and replay them with -feedback)", f.refiner)
	case f.refiner == "prf" && f.prfModel == "":
		return errors.New("-refiner prf needs -prf-model RUN")
	case o.run == "":
		return errors.New("the iterative retrieval ranks with a trained run: give -run")
	case o.ablations:
		return errors.New("-feedback and -refiner print rounds: not with -ablations")
	case f.iterations < 0:
		return fmt.Errorf("-iterations %d: must be >= 0", f.iterations)
	case f.k < 1:
		return fmt.Errorf("-refiner-k %d: must be > 0", f.k)
	}
	return nil
}

// roundPath is the file -save-run writes round t's rankings to: FILE.round<t>, before FILE's
// extension (runs/x.trec: runs/x.round1.trec).
func roundPath(path string, t int) string {
	ext := filepath.Ext(path)
	if strings.ContainsAny(ext, `/\`) {
		ext = ""
	}
	return fmt.Sprintf("%s.round%d%s", strings.TrimSuffix(path, ext), t, ext)
}

// markedRanker is an iteration-aware bi-encoder run's ranker for eval -run: every query is
// ranked as round 0's instruction (marked with iteration 0). The iterative retrieval unwraps
// it and marks each round's instruction itself.
type markedRanker struct {
	retrieve.QueryRanker
	marker string
}

func (m markedRanker) RankQueries(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	marked := make([]retrieve.Query, len(qs))
	for i, q := range qs {
		marked[i] = retrieve.Query{Index: q.Index, Text: biencoder.Mark(m.marker, 0, q.Text)}
	}
	return m.QueryRanker.RankQueries(ctx, marked, k)
}

// roundReport is one round of the iterative retrieval.
type roundReport struct {
	Round int `json:"round"`
	// Active is the number of queries whose loop reached this round (the others keep their
	// last ranking); Refined those refined at this round.
	Active  int `json:"active"`
	Refined int `json:"refined"`
	// Metrics are over every query of the split, each with its ranking of this round.
	Metrics metrics.Result `json:"metrics"`
	// RetrieveMS and RefineMS are the mean times per active query, in milliseconds.
	RetrieveMS float64 `json:"retrieve_ms_per_query"`
	RefineMS   float64 `json:"refine_ms_per_query"`
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
	if m, ok := qr.(markedRanker); ok {
		qr, marker = m.QueryRanker, m.marker
	}
	depth := 0
	for _, k := range o.ks {
		depth = max(depth, k)
	}
	// Each instruction is ranked alone, as a collection ranks it.
	rank := func(ctx context.Context, q int, text string, k int) (retrieve.Ranking, error) {
		rk, err := qr.RankQueries(ctx, []retrieve.Query{{Index: q, Text: text}}, k)
		if err != nil {
			return retrieve.Ranking{}, err
		}
		if len(rk) != 1 {
			return retrieve.Ranking{}, fmt.Errorf("%d rankings for one query", len(rk))
		}
		return rk[0], nil
	}
	var (
		rounds [][]retrieve.Ranking // rounds[t][i]: query i's ranking at round t (nil: stopped before)
		stats  []roundReport
		head   string
	)
	if o.fb.file != "" {
		rounds, stats, head, err = replay(o, d, s, rank, marker, depth)
	} else {
		rounds, stats, head, err = live(o, d, s, rank, marker, depth)
	}
	if err != nil {
		return err
	}
	judged := s.Judged()
	qs := make([]retrieve.Query, len(judged))
	for i, q := range judged {
		qs[i] = retrieve.Query{Index: q, Text: d.Queries[q].Text}
	}
	for t := range rounds {
		rk := make(retrieve.Fixed, len(judged))
		full := make([]retrieve.Ranking, len(judged))
		for i, q := range judged {
			for u := t; u >= 0; u-- { // a stopped query keeps its last ranking
				if rounds[u][i].Tools != nil {
					rk[q], full[i] = rounds[u][i].Tools, rounds[u][i]
					break
				}
			}
		}
		rep, err := metrics.EvaluateSplit(context.Background(), d, s, rk, o.ks)
		if err != nil {
			return err
		}
		stats[t].Metrics = rep.Overall
		if o.saveRun != "" {
			res, _ := runResults(d, qs, full, o.k)
			path := roundPath(o.saveRun, t)
			if err := fusion.WriteRunFile(path, runTag(o)+"-round"+strconv.Itoa(t), res); err != nil {
				return fmt.Errorf("-save-run: %w", err)
			}
			fmt.Fprintf(os.Stderr, "eval: wrote round %d's %d rankings to %s\n", t, len(res), path)
		}
	}
	if o.asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"method": desc, "iterative": head, "dataset": d.Name, "split": s.Name, "rounds": stats})
	}
	fmt.Fprintf(w, "method %s; %s\n%s / %s\n", desc, head, d.Name, s.Name)
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

type rankFunc func(ctx context.Context, q int, text string, k int) (retrieve.Ranking, error)

// replay ranks the recorded instructions of the split's judged queries in -feedback with the
// run, round by round.
func replay(o *options, d *data.Dataset, s *data.Split, rank rankFunc, marker string, depth int) ([][]retrieve.Ranking, []roundReport, string, error) {
	h, loops, err := feedback.Read(o.fb.file)
	if err != nil {
		return nil, nil, "", err
	}
	if fp := d.Fingerprint(); h.Fingerprint != fp {
		return nil, nil, "", fmt.Errorf("-feedback %s: collected on other data (dataset %s, fingerprint %.12s; this data: %s, %.12s)", o.fb.file, h.Dataset, h.Fingerprint, d.Name, fp)
	}
	T := h.Iterations
	if o.fb.iterations > 0 {
		if o.fb.iterations > T {
			return nil, nil, "", fmt.Errorf("-iterations %d: the collection has %d", o.fb.iterations, T)
		}
		T = o.fb.iterations
	}
	split := s.Name
	if isDevSplit(o, d) { // the recorded dev split: its queries were collected in the split it was carved from
		_, _, m, err := devSplit(o, d)
		if err != nil {
			return nil, nil, "", err
		}
		split = m.Split.From
	}
	byID := map[string]feedback.Loop{}
	for _, lp := range loops {
		if lp.Split == split {
			byID[lp.QueryID] = lp
		}
	}
	judged := s.Judged()
	instr := make([][]string, len(judged))
	for i, q := range judged {
		id := d.Queries[q].ID
		lp, ok := byID[id]
		switch {
		case !ok:
			return nil, nil, "", fmt.Errorf("-feedback %s: query %q of split %s has no recorded loop (collect -split %s)", o.fb.file, id, s.Name, split)
		case !lp.Done() && len(lp.Lines) <= T:
			return nil, nil, "", fmt.Errorf("-feedback %s: query %q: the collection stopped at iteration %d of %d (resume train feedback to finish it)", o.fb.file, id, len(lp.Lines)-1, T)
		case oneLine(lp.Lines[0].Query) != oneLine(d.Queries[q].Text):
			return nil, nil, "", fmt.Errorf("-feedback %s: query %q: recorded instruction %q, the dataset's %q", o.fb.file, id, lp.Lines[0].Query, d.Queries[q].Text)
		}
		instr[i] = lp.Instructions()[:min(len(lp.Lines), T+1)]
	}
	rounds := make([][]retrieve.Ranking, T+1)
	stats := make([]roundReport, T+1)
	ctx := context.Background()
	for t := range rounds {
		rounds[t] = make([]retrieve.Ranking, len(judged))
		stats[t].Round = t
		var took time.Duration
		for i, q := range judged {
			if t >= len(instr[i]) {
				continue
			}
			stats[t].Active++
			if t+1 < len(instr[i]) {
				stats[t].Refined++
			}
			start := time.Now()
			rk, err := rank(ctx, q, biencoder.Mark(marker, t, instr[i][t]), depth)
			if err != nil {
				return nil, nil, "", fmt.Errorf("round %d: query %s: %w", t, d.Queries[q].ID, err)
			}
			took += time.Since(start)
			rounds[t][i] = rk
		}
		if stats[t].Active > 0 {
			stats[t].RetrieveMS = float64(took.Microseconds()) / 1000 / float64(stats[t].Active)
		}
	}
	head := fmt.Sprintf("replay of %s (refiner %s, T = %d): %d queries", o.fb.file, h.Settings["refiner"], T, len(judged))
	return rounds, stats, head, nil
}

// live runs the loop with the prf refiner for each judged query of the split.
func live(o *options, d *data.Dataset, s *data.Split, rank rankFunc, marker string, depth int) ([][]retrieve.Ranking, []roundReport, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, nil, "", err
	}
	j, kind, err := feedback.LoadJudge(o.fb.prfModel, d, be)
	if err != nil {
		return nil, nil, "", err
	}
	ref, err := feedback.NewPRF(j, feedback.PRFOptions{Threshold: o.fb.prfThreshold, MaxTools: o.fb.prfTools, MaxChars: o.fb.prfChars})
	if err != nil {
		return nil, nil, "", err
	}
	T := o.fb.iterations
	if T == 0 {
		T = 3
	}
	tools := feedback.Tools(d)
	judged := s.Judged()
	rounds := make([][]retrieve.Ranking, T+1)
	stats := make([]roundReport, T+1)
	for t := range rounds {
		rounds[t] = make([]retrieve.Ranking, len(judged))
		stats[t].Round = t
	}
	retr := make([]time.Duration, T+1)
	refine := make([]time.Duration, T+1)
	ctx := context.Background()
	for i, q := range judged {
		l := retriever.Loop{
			Rank: func(ctx context.Context, text string, k int) (retrieve.Ranking, error) { return rank(ctx, q, text, k) },
			Tool: func(ti int) (feedback.Tool, error) {
				if ti < 0 || ti >= len(tools) {
					return feedback.Tool{}, fmt.Errorf("tool index %d of %d", ti, len(tools))
				}
				return tools[ti], nil
			},
			K: o.fb.k, Depth: max(depth, o.fb.k), Marker: marker, QueryID: d.Queries[q].ID,
		}
		rs, err := l.Iterate(ctx, d.Queries[q].Text, ref, T)
		if err != nil {
			return nil, nil, "", fmt.Errorf("query %s: %w", d.Queries[q].ID, err)
		}
		for _, r := range rs {
			t := r.Iteration
			rounds[t][i] = r.Ranking
			stats[t].Active++
			if r.Refined != "" {
				stats[t].Refined++
			}
			retr[t] += r.RetrieveTime
			refine[t] += r.RefineTime
		}
	}
	for t := range stats {
		if n := stats[t].Active; n > 0 {
			stats[t].RetrieveMS = float64(retr[t].Microseconds()) / 1000 / float64(n)
			stats[t].RefineMS = float64(refine[t].Microseconds()) / 1000 / float64(n)
		}
	}
	head := fmt.Sprintf("live prf (judge %s %s, threshold %g, %d tools, %d chars; refiner sees the top %d), T = %d: %d queries",
		kind, o.fb.prfModel, ref.Options().Threshold, ref.Options().MaxTools, ref.Options().MaxChars, o.fb.k, T, len(judged))
	return rounds, stats, head, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
