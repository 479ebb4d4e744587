package metrics

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// Report is the evaluation of one split: the overall result and named subsets (by number of
// relevant tools, and seen vs unseen tools).
type Report struct {
	Dataset string
	Split   string
	Overall Result
	Subsets map[string]Result
	// ToolRecall is the tool-level recall by whether the tool appears in the training qrels
	// ("seen", "unseen"); empty when the dataset has no train split or split is "train".
	ToolRecall map[string]PairRecall
}

// PairRecall is the share (percent) of (query, relevant tool) pairs whose tool is ranked in
// the top K, for one group of tools.
type PairRecall struct {
	Pairs  int
	Recall map[int]float64
}

// MarshalJSON writes {"pairs": n, "recall@3": ...}.
func (p PairRecall) MarshalJSON() ([]byte, error) {
	m := map[string]any{"pairs": p.Pairs}
	for k, v := range p.Recall {
		m[fmt.Sprintf("recall@%d", k)] = round2(v)
	}
	return json.Marshal(m)
}

// report evaluates rankings[i] of query qs[i] of split s (the judged queries). A query is
// "unseen" when at least one of its relevant tools never appears in the training qrels (d's
// "train" split); the seen/unseen subsets and ToolRecall are left out when d has no train
// split or when every query of s is a training query (the train split itself, or a dev
// split carved from it).
//
// With tokens (one count per query, and the encoder's budget limit > 0) two more subsets split
// the queries by whether the encoder truncates them: "query<=LIMIT tokens", "query>LIMIT tokens".
// On a dataset of several libraries (OpenSources) each library's queries are one more subset,
// "library=NAME" (a query's library is its first relevant tool's).
func report(d *data.Dataset, s *data.Split, qs []int, rankings []rank.Ranking, ks []int, tokens []int, limit int) Report {
	rel := make([][]int, len(qs))
	for i, q := range qs {
		rel[i] = s.Relevant[q]
	}
	rep := Report{Dataset: d.Name, Split: s.Name, Overall: Evaluate(rankings, rel, ks), Subsets: map[string]Result{}}

	train, byTool := d.Splits["train"], false
	if train != nil {
		for _, q := range qs {
			if len(train.Relevant[q]) == 0 {
				byTool = true // s has queries outside the training split
				break
			}
		}
	}
	seen := d.Seen("train")
	groups := map[string][]int{}
	for i, r := range rel {
		n := fmt.Sprintf("relevant=%d", len(r))
		if len(r) >= 4 {
			n = "relevant=4+"
		}
		groups[n] = append(groups[n], i)
		if limit > 0 && i < len(tokens) {
			g := fmt.Sprintf("query<=%d tokens", limit)
			if tokens[i] > limit {
				g = fmt.Sprintf("query>%d tokens", limit)
			}
			groups[g] = append(groups[g], i)
		}
		if len(d.Libraries) > 1 {
			if l := d.QueryLibrary(s, qs[i]); l >= 0 && l < len(d.Libraries) {
				g := "library=" + d.Libraries[l].Name
				groups[g] = append(groups[g], i)
			}
		}
		if byTool {
			g := "seen-tools"
			for _, t := range r {
				if t >= len(seen) || !seen[t] {
					g = "unseen-tools"
				}
			}
			groups[g] = append(groups[g], i)
		}
	}
	if byTool {
		rep.ToolRecall = toolRecall(rankings, rel, seen, rep.Overall.Ks)
	}
	for name, idx := range groups {
		sr := make([]rank.Ranking, len(idx))
		sl := make([][]int, len(idx))
		for j, i := range idx {
			sr[j], sl[j] = rankings[i], rel[i]
		}
		rep.Subsets[name] = Evaluate(sr, sl, ks)
	}
	return rep
}

// Map returns the overall metrics keyed "recall@3", "ndcg@5", "comp@3", ... (percent): what
// training's dev evaluation records.
func (r Report) Map() map[string]float64 { return r.Overall.Map() }

// toolRecall counts, per seen/unseen group, the (query, relevant tool) pairs found in the top K.
// Duplicates in a ranking are counted once.
func toolRecall(rankings []rank.Ranking, rel [][]int, seen []bool, ks []int) map[string]PairRecall {
	out := map[string]PairRecall{}
	for _, g := range []string{"seen", "unseen"} {
		out[g] = PairRecall{Recall: map[int]float64{}}
	}
	for i, r := range rel {
		pos := map[int]int{} // tool -> best 0-based rank
		for j, t := range rankings[i].Tools {
			if _, ok := pos[t]; !ok {
				pos[t] = j
			}
		}
		for _, t := range r {
			g := "unseen"
			if t < len(seen) && seen[t] {
				g = "seen"
			}
			p := out[g]
			p.Pairs++
			if j, ok := pos[t]; ok {
				for _, k := range ks {
					if j < k {
						p.Recall[k]++
					}
				}
			}
			out[g] = p
		}
	}
	for g, p := range out {
		for _, k := range ks {
			if p.Pairs > 0 {
				p.Recall[k] *= 100 / float64(p.Pairs)
			} else {
				p.Recall[k] = 0
			}
		}
		out[g] = p
	}
	return out
}

// MarshalJSON writes one object: the overall metrics at top level ("recall@3": 21.5, ...),
// plus "dataset", "split" and "subsets".
func (r Report) MarshalJSON() ([]byte, error) {
	m := map[string]any{"dataset": r.Dataset, "split": r.Split, "queries": r.Overall.N}
	for k, v := range r.Overall.Map() {
		m[k] = round2(v)
	}
	if len(r.Subsets) > 0 {
		m["subsets"] = r.Subsets
	}
	if len(r.ToolRecall) > 0 {
		m["tool_recall"] = r.ToolRecall
	}
	return json.Marshal(m)
}

// String formats the report as a table: the overall row, then each subset.
func (r Report) String() string {
	names := []string{"all"}
	results := []Result{r.Overall}
	for _, k := range sortedKeys(r.Subsets) {
		names = append(names, k)
		results = append(results, r.Subsets[k])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s / %s\n", r.Dataset, r.Split)
	b.WriteString(Table(names, results))
	if len(r.ToolRecall) > 0 {
		b.WriteString("tool-level recall over (query, relevant tool) pairs:\n")
		for _, g := range sortedKeys(r.ToolRecall) {
			p := r.ToolRecall[g]
			fmt.Fprintf(&b, "  %-7s %6d pairs", g, p.Pairs)
			for _, k := range r.Overall.Ks {
				fmt.Fprintf(&b, "  R@%d %6.2f", k, p.Recall[k])
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
