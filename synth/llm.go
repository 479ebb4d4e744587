package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/llm"
)

// Prompt is the instruction LLM sends for each tool; %d is the number of queries asked for.
const Prompt = `Here is a tool an AI assistant can call.

%s
Write %d different requests a user might make that this tool serves, phrased as users phrase
them: varied in wording and detail, each complete on its own, without naming the tool.
Answer with a JSON object {"queries": ["...", "..."]}.`

// describe writes a tool for the prompt.
func describe(t Tool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: %s\n", t.Name, strings.TrimSpace(t.Description))
	if len(t.Params) > 0 {
		b.WriteString("parameters:\n")
		for _, p := range t.Params {
			req := "optional"
			if p.Required {
				req = "required"
			}
			fmt.Fprintf(&b, "- %s (%s)", p.Name, req)
			if p.Description != "" {
				fmt.Fprintf(&b, ": %s", p.Description)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// LLM asks the client for n queries per tool (one request a tool, as many in flight as the
// client allows; the client's cache answers a request it has seen) and returns them as
// examples (Source "synthetic"), in tool order. A reply that holds no JSON object with a
// "queries" list is an error naming the tool; duplicate and empty queries are dropped, and
// at most n are kept.
func LLM(ctx context.Context, c *llm.Client, tools []Tool, n int) ([]data.Example, error) {
	if n <= 0 {
		return nil, fmt.Errorf("synthetic queries per tool %d: must be > 0", n)
	}
	got := make([][]string, len(tools))
	errs := make([]error, len(tools))
	sem := make(chan struct{}, max(c.Concurrency(), 1))
	var wg sync.WaitGroup
	for i, t := range tools {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			msgs := []llm.Message{{Role: "system", Content: "You write the requests users send to an AI assistant."},
				{Role: "user", Content: fmt.Sprintf(Prompt, describe(t), n)}}
			r, err := c.Chat(ctx, msgs, llm.Options{JSON: true, MaxTokens: 64 * n})
			if err != nil {
				errs[i] = fmt.Errorf("synthetic queries of tool %s: %w", t.ID, err)
				return
			}
			if got[i], err = parseQueries(r.Content, n); err != nil {
				errs[i] = fmt.Errorf("synthetic queries of tool %s: %w", t.ID, err)
			}
		})
	}
	wg.Wait()
	var out []data.Example
	for i, t := range tools {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, q := range got[i] {
			out = append(out, data.Example{Query: q, Positives: []string{t.ID}, Source: "synthetic"})
		}
	}
	return out, nil
}

// parseQueries reads {"queries": [...]} from a reply, also inside a Markdown code fence or
// after some prose.
func parseQueries(reply string, n int) ([]string, error) {
	s := reply
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return nil, fmt.Errorf("the reply holds no JSON object: %.200q", reply)
	}
	var v struct {
		Queries []string `json:"queries"`
	}
	if err := json.Unmarshal([]byte(s[i:j+1]), &v); err != nil {
		return nil, fmt.Errorf("the reply is not {\"queries\": [...]}: %v: %.200q", err, reply)
	}
	var out []string
	seen := map[string]bool{}
	for _, q := range v.Queries {
		q = strings.Join(strings.Fields(q), " ")
		if k := strings.ToLower(q); q != "" && !seen[k] {
			seen[k] = true
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the reply lists no query: %.200q", reply)
	}
	return out[:min(n, len(out))], nil
}
