package metrics

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/retrieve"
)

// Report is the evaluation of one split: the overall result and named subsets (by number of
// relevant tools, and seen vs unseen tools).
type Report struct {
	Dataset string
	Split   string
	Overall Result
	Subsets map[string]Result
}

// EvaluateSplit evaluates rankings of the split's queries (rankings[i] for
// split.Queries[i]). A query is "unseen" when at least one of its relevant tools never
// appears in the training qrels ("train" split, if any).
func EvaluateSplit(d *data.Dataset, split string, rankings []retrieve.Ranking, ks []int) (Report, error) {
	s, err := d.Split(split)
	if err != nil {
		return Report{}, err
	}
	if len(rankings) != len(s.Queries) {
		return Report{}, fmt.Errorf("evaluate %s/%s: %d rankings for %d queries", d.Name, split, len(rankings), len(s.Queries))
	}
	rel := make([][]int, len(s.Queries))
	for i, q := range s.Queries {
		rel[i] = s.Relevant[q]
	}
	rep := Report{Dataset: d.Name, Split: split, Overall: Evaluate(rankings, rel, ks), Subsets: map[string]Result{}}

	groups := map[string][]int{}
	_, hasTrain := d.Splits["train"]
	seen := d.Seen("train")
	for i, r := range rel {
		if len(r) == 0 {
			continue
		}
		n := fmt.Sprintf("relevant=%d", len(r))
		if len(r) >= 4 {
			n = "relevant=4+"
		}
		groups[n] = append(groups[n], i)
		if hasTrain && split != "train" {
			unseen := false
			for _, t := range r {
				if !seen[t] {
					unseen = true
				}
			}
			if unseen {
				groups["unseen-tools"] = append(groups["unseen-tools"], i)
			} else {
				groups["seen-tools"] = append(groups["seen-tools"], i)
			}
		}
	}
	for name, idx := range groups {
		sr := make([]retrieve.Ranking, len(idx))
		sl := make([][]int, len(idx))
		for j, i := range idx {
			sr[j], sl[j] = rankings[i], rel[i]
		}
		rep.Subsets[name] = Evaluate(sr, sl, ks)
	}
	return rep, nil
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
	return b.String()
}
