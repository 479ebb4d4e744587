package traincmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/internal/progress"
	"github.com/toolret/toolret/llm"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// feedbackOps are train feedback's flags that are not settings of the collection.
type feedbackOps struct {
	backend *string
	quiet   *bool
}

// feedbackFlags returns train feedback's flags and the settings they write: one flag per
// field of feedback.CollectConfig (flagcfg.Bind: its value in DefaultCollectConfig as the
// default), -data with its -holdout-tools and -holdout-seed, and the operational -backend and
// -quiet.
func feedbackFlags() (*flag.FlagSet, *feedback.CollectConfig, feedbackOps, error) {
	fs := flag.NewFlagSet("train feedback", flag.ContinueOnError)
	cfg := feedback.DefaultCollectConfig()
	cli.Data(fs)
	if _, err := flagcfg.Bind(fs, &cfg); err != nil {
		return nil, nil, feedbackOps{}, err
	}
	return fs, &cfg, feedbackOps{backend: cli.Backend(fs), quiet: cli.Quiet(fs)}, nil
}

// feedbackCmd collects the iterative LLM feedback of Xu et al. (package feedback): for every
// judged query of -split, the -first-stage run's top -k tools and the refiner's three replies
// per iteration, up to -iterations refinements, into -out (JSONL). Restarted with the same
// flags it resumes; replies are cached in -llm-cache.
func feedbackCmd(args []string) error {
	fs, c, op, err := feedbackFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch c.Rewriter {
	case "llm":
	case "prf":
		if c.PRFModel == "" {
			return errors.New("-rewriter prf needs -prf-model RUN (an mlc classifier, refiner or cross-encoder run)")
		}
		if err := cli.First(cli.Positive("prf-tools", c.PRFTools), cli.Positive("prf-threshold", c.PRFThreshold)); err != nil {
			return err
		}
		if c.PRFThreshold > 1 || c.PRFChars == 0 || c.PRFChars < -1 {
			return fmt.Errorf("-prf-threshold %v, -prf-chars %d: want a threshold in (0, 1] and -1 or a positive number of characters", c.PRFThreshold, c.PRFChars)
		}
	default:
		return fmt.Errorf("-rewriter %q: want llm or prf", c.Rewriter)
	}
	if c.Out == "" {
		return errors.New("-out FILE is required")
	}
	if c.Retriever == "" {
		return errors.New("-first-stage RUN is required: the bi-encoder run that retrieves the tools of each instruction")
	}
	if c.Rewriter == "llm" && (c.LLMURL == "" || c.LLMModel == "") {
		return errors.New("-llm-url and -llm-model are required (an OpenAI-compatible server; none is reachable from a machine without network)")
	}
	if err := cli.First(cli.Positive("k", c.K), cli.Positive("iterations", c.Iterations), cli.Positive("llm-concurrency", c.LLMConcurrency),
		cli.NonNegative("llm-retries", c.LLMRetries), cli.NonNegative("llm-max-tokens", c.LLMMaxTokens)); err != nil {
		return err
	}
	if c.LLMTimeout <= 0 {
		return fmt.Errorf("-llm-timeout %s: must be > 0", c.LLMTimeout)
	}
	var names []string
	for _, s := range strings.Split(c.Split, ",") {
		if s = strings.TrimSpace(s); s != "" {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("-split %q: no split", c.Split)
	}
	var (
		p      feedback.Prompts
		client *llm.Client
		ref    feedback.Rewriter
	)
	if c.Rewriter == "llm" {
		p = feedback.DefaultPrompts()
		if c.Prompts != "" {
			if p, err = feedback.LoadPrompts(c.Prompts); err != nil {
				return fmt.Errorf("-prompts: %w", err)
			}
		}
		if c.LLMCache == "" {
			c.LLMCache = filepath.Join(filepath.Dir(c.Out), "llm-cache")
		}
		client, err = llm.New(llm.Config{URL: c.LLMURL, Model: c.LLMModel, Key: llm.FromEnv(), Timeout: c.LLMTimeout, Retries: c.LLMRetries,
			Concurrency: c.LLMConcurrency, Cache: c.LLMCache})
		if err != nil {
			return fmt.Errorf("-llm-url/-llm-model: %w", err)
		}
		if ref, err = feedback.NewLLM(client, p, feedback.LLMOptions{JSON: c.LLMJSON, MaxTokens: c.LLMMaxTokens}); err != nil {
			return err
		}
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	// The retriever's run.json, when it has one (a checkpoint directory has none), must name
	// this data.
	if m, err := rundir.Read(rundir.RunOf(c.Retriever)); err == nil {
		if err := m.CheckData(d); err != nil {
			return fmt.Errorf("-first-stage %s: %w", c.Retriever, err)
		}
	} else if !errors.Is(err, rundir.ErrNoMeta) {
		return fmt.Errorf("-first-stage: %w", err)
	}
	bk, err := backend.Open(backend.Name(*op.backend))
	if err != nil {
		return err
	}
	rk, _, err := candidates.Open(candidates.Source{Kind: "bi-encoder", Run: c.Retriever}, d, nil, bk)
	if err != nil {
		return fmt.Errorf("-first-stage: %w", err)
	}
	if br, ok := rk.(*biencoder.Ranker); ok && br.Marker() != "" {
		return fmt.Errorf("-first-stage %s was trained iteration-aware (marker %q): the loop ranks unmarked instructions; collect with the retriever it was warmed up from", c.Retriever, br.Marker())
	}
	absRetr, err := filepath.Abs(c.Retriever)
	if err != nil {
		return err
	}
	u := c.LLMURL
	if pu, err := url.Parse(u); err == nil {
		u = pu.Redacted()
	}
	settings := map[string]string{"refiner": c.Rewriter, "retriever": absRetr, "llm-model": c.LLMModel, "llm-json": fmt.Sprint(c.LLMJSON), "llm-max-tokens": fmt.Sprint(c.LLMMaxTokens)}
	info := map[string]string{"llm-url": u, "llm-cache": c.LLMCache, "backend": *op.backend, "data": fs.Lookup("data").Value.String()}
	conc1, chunk := 1, 0
	extra := func() string { return "" }
	if c.Rewriter == "prf" {
		prf, s, err := loadPRF(c.PRFModel, d, bk, feedback.PRFOptions{Threshold: c.PRFThreshold, MaxTools: c.PRFTools, MaxChars: c.PRFChars})
		if err != nil {
			return err
		}
		ref, settings, info = prf, s, map[string]string{"backend": *op.backend, "data": fs.Lookup("data").Value.String()}
		chunk = 64 // fast steps: fsync every 64 queries
		settings["retriever"] = absRetr
	} else {
		conc1 = client.Concurrency()
		extra = func() string {
			st := client.Stats()
			return fmt.Sprintf("requests %d, cached %d", st.Requests, st.CacheHits)
		}
	}
	bar := progress.New("queries", *op.quiet, extra)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sum, err := feedback.Run(ctx, feedback.Config{Data: d, Ranker: rk, Rewriter: ref, Splits: names, K: c.K, Iterations: c.Iterations, Out: c.Out,
		Settings: settings, Prompts: p, Info: info, Concurrency: conc1, Chunk: chunk, Progress: bar.Update})
	bar.Finish()
	if c.Rewriter == "prf" {
		if err != nil {
			return fmt.Errorf("%w (rerun the same command to resume)", err)
		}
		fmt.Fprintf(os.Stderr, "feedback: %d queries (%d finished before), %d lines (%d new), %d refinements; loops stopped by n/a %d, unchanged %d, error %d, iterations %d; prf %s in %s -> %s\n",
			sum.Queries, sum.Resumed, sum.Lines, sum.Written, sum.Refinements,
			sum.Reasons[feedback.ReasonNA], sum.Reasons[feedback.ReasonUnchanged], sum.Reasons[feedback.ReasonError], sum.Reasons[feedback.ReasonIterations],
			settings["prf-kind"], time.Since(start).Round(time.Millisecond), c.Out)
		return nil
	}
	st := client.Stats()
	if err != nil {
		return fmt.Errorf("%w (rerun the same command to resume; %d requests sent, %d replies cached so far)", err, st.Requests, st.CacheHits)
	}
	took := time.Since(start)
	per := ""
	if sum.Steps > 0 {
		per = fmt.Sprintf(" (%d refinement rounds, %.2fs each at -llm-concurrency %d)", sum.Steps, took.Seconds()/float64(sum.Steps), client.Concurrency())
	}
	fmt.Fprintf(os.Stderr, "feedback: %d queries (%d finished before), %d lines (%d new), %d refinements; loops stopped by n/a %d, unchanged %d, error %d, iterations %d\n"+
		"llm: %d requests (%d retries, %d JSON fallbacks), %d cached replies; %s%s -> %s\n",
		sum.Queries, sum.Resumed, sum.Lines, sum.Written, sum.Refinements,
		sum.Reasons[feedback.ReasonNA], sum.Reasons[feedback.ReasonUnchanged], sum.Reasons[feedback.ReasonError], sum.Reasons[feedback.ReasonIterations],
		st.Requests, st.Retries, st.JSONFallbacks, st.CacheHits, took.Round(time.Millisecond), per, c.Out)
	return nil
}
