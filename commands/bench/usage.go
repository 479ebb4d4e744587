package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
)

// usageDataBench writes a learning-from-use simulation's dataset and library
// (benchmark.UsageData; scripts/usage/simulate.sh runs the whole simulation).
//
//	bench usage-data -data DIR -holdout-tools 0.2 [-holdout-seed 1] [-used 0.5] [-seed 1] -out DIR
func usageDataBench(args []string) error {
	fs := flag.NewFlagSet("bench usage-data", flag.ContinueOnError)
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose held-out tools' queries are simulated")
	frac, hseed := cli.Holdout(fs)
	used := fs.Float64("used", 0.5, "fraction of each held-out tool's queries (in arrival order) that are used before training: the early split; the rest is the later split")
	seed := cli.Seed(fs)
	out := fs.String("out", "", "output directory: OUT/data (BEIR: splits early and later) and OUT/tools.jsonl (the library)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("-out DIR is required")
	}
	h, err := cli.MakeHoldout(*frac, *hseed)
	if err != nil {
		return err
	}
	if h == nil {
		return errors.New("-holdout-tools F is required: the simulated queries are those of held-out tools")
	}
	d, err := data.Open(*dataDir, nil)
	if err != nil {
		return err
	}
	early, later, err := benchmark.UsageData(d, h, *used, *seed, *out)
	if err != nil {
		return err
	}
	fmt.Printf("usage simulation data in %s: %d tools, %d early and %d later queries of the held-out tools (%s)\n", *out, len(d.Tools), early, later, h.Flags())
	return nil
}

// usageAgentBench plays the simulated agent against a running gateway (benchmark.Agent).
//
//	bench usage-agent -addr http://HOST:PORT -data DIR [-split early] [-k 5]
func usageAgentBench(args []string) error {
	fs := flag.NewFlagSet("bench usage-agent", flag.ContinueOnError)
	addr := fs.String("addr", "http://127.0.0.1:8080", "the gateway's base URL (serve -library)")
	dataDir := fs.String("data", "", "the simulation dataset (bench usage-data's OUT/data)")
	split := fs.String("split", benchmark.UsageEarly, "split whose queries the agent sends, in order")
	k := fs.Int("k", 5, "tools asked for per search")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.Positive("k", *k); err != nil {
		return err
	}
	d, err := data.Open(*dataDir, nil)
	if err != nil {
		return err
	}
	st, err := benchmark.Agent(context.Background(), *addr, os.Getenv("TOOLRET_KEY"), d, *split, *k, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("agent: %d queries searched (k=%d) in %.1fs; %d with a relevant tool shown (served R@%d %.2f); %d successes reported\n",
		st.Queries, *k, st.Time.Seconds(), st.Found, *k, 100*st.Recall, st.Reports)
	return nil
}
