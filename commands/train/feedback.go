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
	"github.com/toolret/toolret/internal/progress"
	"github.com/toolret/toolret/llm"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// feedbackCmd collects the iterative LLM feedback of Xu et al. (package feedback): for every
// judged query of -split, the -first-stage run's top -k tools and the refiner's three replies
// per iteration, up to -iterations refinements, into -out (JSONL). Restarted with the same
// flags it resumes; replies are cached in -llm-cache.
func feedbackCmd(args []string) error {
	fs := flag.NewFlagSet("train feedback", flag.ContinueOnError)
	cli.Data(fs)
	retr := cli.FirstStage(fs)
	be := cli.Backend(fs)
	quiet := cli.Quiet(fs)
	refiner := fs.String("rewriter", "llm", "what refines the instructions: llm (an OpenAI-compatible chat server) or prf (pseudo-relevance feedback: q^0 plus the retrieved tools a -prf-model run accepts; no LLM)")
	prfModel := fs.String("prf-model", "", "-rewriter prf: the run that judges the retrieved tools: an mlc classifier, a refiner or a cross-encoder run (kind read from the run)")
	prfThreshold := fs.Float64("prf-threshold", feedback.DefaultPRFThreshold, "-rewriter prf: a retrieved tool is accepted when the -prf-model's score of (q^0, tool) is at least this")
	prfTools := fs.Int("prf-tools", feedback.DefaultPRFTools, "-rewriter prf: most accepted tools written into the instruction, best scored first")
	prfChars := fs.Int("prf-chars", feedback.DefaultPRFChars, "-rewriter prf: characters of each accepted tool's description written (-1: names only)")
	llmURL := fs.String("llm-url", "", "base URL of an OpenAI-compatible chat-completions API, e.g. http://127.0.0.1:8080/v1 (llama-server) or http://127.0.0.1:11434/v1 (Ollama); the API key, if any, is read from $"+llm.KeyEnv)
	model := fs.String("llm-model", "", "model name sent with every request")
	timeout := fs.Duration("llm-timeout", 2*time.Minute, "timeout of one request")
	retries := fs.Int("llm-retries", 5, "retries of a request after 429, 5xx, a timeout or a connection error (exponential backoff from 1s, or the server's Retry-After)")
	conc := fs.Int("llm-concurrency", 4, "requests in flight at once (and queries refined at once)")
	cache := fs.String("llm-cache", "", "directory of the reply cache (default: llm-cache beside -out); a re-run or resumed run sends no request it has a reply for")
	jsonMode := fs.Bool("llm-json", true, "ask for a JSON object at the refinement step (response_format; dropped when the server refuses it)")
	maxTokens := fs.Int("llm-max-tokens", 512, "cap on each reply's tokens (0: the server's default)")
	prompts := fs.String("prompts", "", "directory holding comprehension.txt, assessment.txt and refinement.txt (text/template; default: the built-in prompts of package feedback)")
	iterations := fs.Int("iterations", 3, "most refinements per query (T); iteration T is retrieved and not refined")
	k := fs.Int("k", 10, "tools retrieved per instruction and shown to the refiner")
	splits := fs.String("split", "train,test", "comma-separated splits whose judged queries are collected")
	out := fs.String("out", "", "output JSONL file, one line per query and iteration (its settings and prompts go to FILE"+feedback.ConfigSuffix+")")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *refiner {
	case "llm":
	case "prf":
		if *prfModel == "" {
			return errors.New("-rewriter prf needs -prf-model RUN (an mlc classifier, refiner or cross-encoder run)")
		}
		if err := cli.First(cli.Positive("prf-tools", *prfTools), cli.Positive("prf-threshold", *prfThreshold)); err != nil {
			return err
		}
		if *prfThreshold > 1 || *prfChars == 0 || *prfChars < -1 {
			return fmt.Errorf("-prf-threshold %v, -prf-chars %d: want a threshold in (0, 1] and -1 or a positive number of characters", *prfThreshold, *prfChars)
		}
	default:
		return fmt.Errorf("-rewriter %q: want llm or prf", *refiner)
	}
	if *out == "" {
		return errors.New("-out FILE is required")
	}
	if *retr == "" {
		return errors.New("-first-stage RUN is required: the bi-encoder run that retrieves the tools of each instruction")
	}
	if *refiner == "llm" && (*llmURL == "" || *model == "") {
		return errors.New("-llm-url and -llm-model are required (an OpenAI-compatible server; none is reachable from a machine without network)")
	}
	if err := cli.First(cli.Positive("k", *k), cli.Positive("iterations", *iterations), cli.Positive("llm-concurrency", *conc),
		cli.NonNegative("llm-retries", *retries), cli.NonNegative("llm-max-tokens", *maxTokens)); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("-llm-timeout %s: must be > 0", *timeout)
	}
	var names []string
	for _, s := range strings.Split(*splits, ",") {
		if s = strings.TrimSpace(s); s != "" {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("-split %q: no split", *splits)
	}
	var (
		p      feedback.Prompts
		client *llm.Client
		ref    feedback.Rewriter
		err    error
	)
	if *refiner == "llm" {
		p = feedback.DefaultPrompts()
		if *prompts != "" {
			if p, err = feedback.LoadPrompts(*prompts); err != nil {
				return fmt.Errorf("-prompts: %w", err)
			}
		}
		if *cache == "" {
			*cache = filepath.Join(filepath.Dir(*out), "llm-cache")
		}
		client, err = llm.New(llm.Config{URL: *llmURL, Model: *model, Key: llm.FromEnv(), Timeout: *timeout, Retries: *retries,
			Concurrency: *conc, Cache: *cache})
		if err != nil {
			return fmt.Errorf("-llm-url/-llm-model: %w", err)
		}
		if ref, err = feedback.NewLLM(client, p, feedback.LLMOptions{JSON: *jsonMode, MaxTokens: *maxTokens}); err != nil {
			return err
		}
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	// The retriever's run.json, when it has one (a checkpoint directory has none), must name
	// this data.
	if m, err := rundir.Read(rundir.RunOf(*retr)); err == nil {
		if err := m.CheckData(d); err != nil {
			return fmt.Errorf("-first-stage %s: %w", *retr, err)
		}
	} else if !errors.Is(err, rundir.ErrNoMeta) {
		return fmt.Errorf("-first-stage: %w", err)
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	rk, _, err := candidates.Open(candidates.Source{Kind: "bi-encoder", Run: *retr}, d, nil, bk)
	if err != nil {
		return fmt.Errorf("-first-stage: %w", err)
	}
	if br, ok := rk.(*biencoder.Ranker); ok && br.Marker() != "" {
		return fmt.Errorf("-first-stage %s was trained iteration-aware (marker %q): the loop ranks unmarked instructions; collect with the retriever it was warmed up from", *retr, br.Marker())
	}
	absRetr, err := filepath.Abs(*retr)
	if err != nil {
		return err
	}
	u := *llmURL
	if pu, err := url.Parse(u); err == nil {
		u = pu.Redacted()
	}
	settings := map[string]string{"refiner": *refiner, "retriever": absRetr, "llm-model": *model, "llm-json": fmt.Sprint(*jsonMode), "llm-max-tokens": fmt.Sprint(*maxTokens)}
	info := map[string]string{"llm-url": u, "llm-cache": *cache, "backend": *be, "data": fs.Lookup("data").Value.String()}
	conc1, chunk := 1, 0
	extra := func() string { return "" }
	if *refiner == "prf" {
		prf, s, err := loadPRF(*prfModel, d, bk, feedback.PRFOptions{Threshold: *prfThreshold, MaxTools: *prfTools, MaxChars: *prfChars})
		if err != nil {
			return err
		}
		ref, settings, info = prf, s, map[string]string{"backend": *be, "data": fs.Lookup("data").Value.String()}
		chunk = 64 // fast steps: fsync every 64 queries
		settings["retriever"] = absRetr
	} else {
		conc1 = client.Concurrency()
		extra = func() string {
			st := client.Stats()
			return fmt.Sprintf("requests %d, cached %d", st.Requests, st.CacheHits)
		}
	}
	bar := progress.New("queries", *quiet, extra)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sum, err := feedback.Run(ctx, feedback.Config{Data: d, Ranker: rk, Rewriter: ref, Splits: names, K: *k, Iterations: *iterations, Out: *out,
		Settings: settings, Prompts: p, Info: info, Concurrency: conc1, Chunk: chunk, Progress: bar.Update})
	bar.Finish()
	if *refiner == "prf" {
		if err != nil {
			return fmt.Errorf("%w (rerun the same command to resume)", err)
		}
		fmt.Fprintf(os.Stderr, "feedback: %d queries (%d finished before), %d lines (%d new), %d refinements; loops stopped by n/a %d, unchanged %d, error %d, iterations %d; prf %s in %s -> %s\n",
			sum.Queries, sum.Resumed, sum.Lines, sum.Written, sum.Refinements,
			sum.Reasons[feedback.ReasonNA], sum.Reasons[feedback.ReasonUnchanged], sum.Reasons[feedback.ReasonError], sum.Reasons[feedback.ReasonIterations],
			settings["prf-kind"], time.Since(start).Round(time.Millisecond), *out)
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
		st.Requests, st.Retries, st.JSONFallbacks, st.CacheHits, took.Round(time.Millisecond), per, *out)
	return nil
}
