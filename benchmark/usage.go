package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
)

// Learning from use, simulated (bench usage-data, bench usage-agent;
// scripts/usage/simulate.sh): the queries of a held-out-tool view's test split, the queries
// of tools no model trained on, arrive over time at a gateway serving the whole tool library;
// the first part is "used" (searched through the gateway by a simulated agent, so that its
// usage log is written), a model is trained on that log, and the later part measures it.

// UsageSplits are the splits of a simulation dataset (UsageData): the queries used, and
// those that arrive after the training.
const (
	UsageEarly = "early"
	UsageLater = "later"
)

// UsageData writes the simulation dataset of the held-out-tool view h of d into out:
// out/data, a BEIR dataset with every tool of d and the view's test queries, split in two by
// their arrival: the queries are put in a fixed order (a permutation drawn with seed), each
// query is assigned to its first held-out relevant tool, and the first ⌊used·n⌋ of each
// tool's n queries in that order are "early", the rest "later"; and out/tools.jsonl, the
// same tools as a library (library.Tool named by the tool's ID, the tool's text as its
// description, template "{{.Description}}": the gateway embeds exactly the dataset's texts;
// source kind functions: the agent's runtime runs them). It returns the numbers of early
// and later queries.
func UsageData(d *data.Dataset, h *data.Holdout, used float64, seed uint64, out string) (early, later int, err error) {
	if !(used > 0 && used < 1) {
		return 0, 0, fmt.Errorf("-used %v: the fraction of each tool's queries used, must be in (0, 1)", used)
	}
	v, err := d.HoldoutTools(h.Fraction, h.Seed)
	if err != nil {
		return 0, 0, err
	}
	test := v.Splits["test"]
	held := map[int]bool{}
	for _, t := range v.HeldOut {
		held[t] = true
	}
	order := slices.Clone(test.Queries)
	r := rand.New(rand.NewPCG(seed, 0x7573616765))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	primary := func(q int) int {
		for _, t := range test.Relevant[q] {
			if held[t] {
				return t
			}
		}
		return -1
	}
	total := map[int]int{}
	for _, q := range order {
		total[primary(q)]++
	}
	seen := map[int]int{}
	sim := &data.Dataset{Name: fmt.Sprintf("%s, usage simulation (%s, used %g, seed %d)", d.Name, h.Flags(), used, seed),
		Tools: d.Tools, ToolIndex: d.ToolIndex, QueryIndex: map[string]int{}, Splits: map[string]*data.Split{}}
	splits := map[string]*data.Split{}
	for _, name := range []string{UsageEarly, UsageLater} {
		splits[name] = &data.Split{Name: name, Relevant: map[int][]int{}, Scene: map[int]int{}}
		sim.Splits[name] = splits[name]
	}
	for _, q := range order {
		p := primary(q)
		name := UsageLater
		if seen[p] < int(float64(total[p])*used) {
			name = UsageEarly
		}
		seen[p]++
		s := splits[name]
		i := len(sim.Queries)
		sim.Queries = append(sim.Queries, d.Queries[q])
		sim.QueryIndex[d.Queries[q].ID] = i
		s.Queries = append(s.Queries, i)
		s.Relevant[i] = test.Relevant[q]
	}
	if err := data.WriteBEIR(sim, filepath.Join(out, "data")); err != nil {
		return 0, 0, err
	}
	lib := &library.Library{Template: "{{.Description}}", Tools: make([]library.Tool, len(d.Tools))}
	for i, t := range d.Tools {
		lib.Tools[i] = library.Tool{Name: t.ID, Description: t.Text, InputSchema: json.RawMessage(`{"type":"object"}`),
			Source: library.Source{Kind: library.KindFunctions, Origin: d.Name}}
	}
	if err := library.Write(filepath.Join(out, "tools.jsonl"), lib); err != nil {
		return 0, 0, err
	}
	return len(splits[UsageEarly].Queries), len(splits[UsageLater].Queries), nil
}

// AgentStats are what a simulated agent did.
type AgentStats struct {
	Queries, Searches, Reports int
	// Found is the number of queries with at least one relevant tool among those shown,
	// Recall the mean share of a query's relevant tools shown (the served R@K).
	Found  int
	Recall float64
	Time   time.Duration
}

// Agent plays an agent against the gateway at url (serve -library): for each judged query
// of split, in order, it searches (POST /v1/search, k tools) and, for each relevant tool
// among those shown, runs it itself (a function-list tool: the agent's runtime runs it) and
// reports its success (POST /v1/feedback with the search's id). It calls nothing else: a
// query whose tools were not shown leaves a search with no positive. key, when set, is sent
// as the bearer key.
func Agent(ctx context.Context, url, key string, d *data.Dataset, split string, k int, progress io.Writer) (AgentStats, error) {
	var st AgentStats
	s, err := d.Split(split)
	if err != nil {
		return st, err
	}
	c := &http.Client{Timeout: time.Minute}
	post := func(path string, in, out any) error {
		b, _ := json.Marshal(in)
		req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(url, "/")+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
		}
		if out != nil {
			return json.Unmarshal(body, out)
		}
		return nil
	}
	start := time.Now()
	qs := s.Judged()
	for n, q := range qs {
		var res struct {
			SearchID string `json:"search_id"`
			Tools    []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := post("/v1/search", map[string]any{"query": d.Queries[q].Text, "k": k}, &res); err != nil {
			return st, fmt.Errorf("query %s: %w", d.Queries[q].ID, err)
		}
		st.Queries++
		st.Searches++
		hits := 0
		for _, t := range res.Tools {
			i, ok := d.ToolIndex[t.Name]
			if !ok || !slices.Contains(s.Relevant[q], i) {
				continue
			}
			hits++
			if err := post("/v1/feedback", map[string]any{"name": t.Name, "success": true, "search_id": res.SearchID}, nil); err != nil {
				return st, fmt.Errorf("query %s: %w", d.Queries[q].ID, err)
			}
			st.Reports++
		}
		if hits > 0 {
			st.Found++
		}
		st.Recall += float64(hits) / float64(len(s.Relevant[q]))
		if progress != nil && (n+1)%200 == 0 {
			fmt.Fprintf(progress, "agent: %d/%d queries, %d with a relevant tool shown\n", n+1, len(qs), st.Found)
		}
	}
	if st.Queries > 0 {
		st.Recall /= float64(st.Queries)
	}
	st.Time = time.Since(start)
	return st, nil
}
