package data

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/toolret/toolret/internal/atomicfile"
)

// Example is a training example given by texts and tool IDs rather than dataset indices: a
// query, the tools that serve it and, optionally, tools shown for it that did not (hard
// negatives). A gateway's usage log (package usage) and synthetic queries made from tool
// definitions (package synth) both give examples; WithExamples makes them a training split.
type Example struct {
	Query     string   `json:"query"`
	Positives []string `json:"positives"`
	Negatives []string `json:"negatives,omitempty"`
	// Source says where the example came from ("usage", "synthetic"); it prefixes the
	// query's ID in the dataset ("usage:1").
	Source string `json:"source,omitempty"`
}

// ExamplesSplit is the name of the split WithExamples puts the examples in.
const ExamplesSplit = "train"

// WithExamples returns a view of d whose "train" split holds exactly the examples (d's own
// training queries are left out; its other splits are kept): each example is a new query,
// with ID Source:N (N counting from 1 in ex's order; Source "" is "example"), whose
// relevant tools are its positives. negatives maps a new query's index to its negatives'
// tool indices (hard negatives for biencoder.Task). A positive or negative that names no
// tool of d is dropped; an example left with no positive is skipped. skipped says what was
// dropped, one line per kind of problem. d is not modified.
func (d *Dataset) WithExamples(ex []Example) (v *Dataset, negatives map[int][]int, skipped []string, err error) {
	if len(ex) == 0 {
		return nil, nil, nil, fmt.Errorf("dataset %s: no training examples", d.Name)
	}
	c := *d
	c.Queries = slices.Clip(slices.Clone(d.Queries))
	c.QueryIndex = maps.Clone(d.QueryIndex)
	c.Splits = maps.Clone(d.Splits)
	train := &Split{Name: ExamplesSplit, Relevant: map[int][]int{}, Scene: map[int]int{}}
	negatives = map[int][]int{}
	var unknown []string
	seenUnknown := map[string]bool{}
	noPositive, n := 0, map[string]int{}
	lookup := func(ids []string) []int {
		var out []int
		for _, id := range ids {
			t, ok := d.ToolIndex[id]
			if !ok {
				if !seenUnknown[id] {
					seenUnknown[id] = true
					unknown = append(unknown, id)
				}
				continue
			}
			out = append(out, t)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, e := range ex {
		src := e.Source
		if src == "" {
			src = "example"
		}
		n[src]++
		id := fmt.Sprintf("%s:%d", src, n[src])
		pos := lookup(e.Positives)
		if len(pos) == 0 || strings.TrimSpace(e.Query) == "" {
			noPositive++
			continue
		}
		if _, dup := c.QueryIndex[id]; dup {
			return nil, nil, nil, fmt.Errorf("dataset %s: example query id %q is already a query of the dataset", d.Name, id)
		}
		q := len(c.Queries)
		c.Queries = append(c.Queries, Query{ID: id, Text: e.Query})
		c.QueryIndex[id] = q
		train.Queries = append(train.Queries, q)
		train.Relevant[q] = pos
		var neg []int
		for _, t := range lookup(e.Negatives) {
			if _, isPos := slices.BinarySearch(pos, t); !isPos {
				neg = append(neg, t)
			}
		}
		if len(neg) > 0 {
			negatives[q] = neg
		}
	}
	if len(unknown) > 0 {
		skipped = append(skipped, fmt.Sprintf("%d tool IDs not in %s dropped (e.g. %s)", len(unknown), d.Name, strings.Join(unknown[:min(3, len(unknown))], ", ")))
	}
	if noPositive > 0 {
		skipped = append(skipped, fmt.Sprintf("%d examples with no positive tool of %s (or an empty query) skipped", noPositive, d.Name))
	}
	if len(train.Queries) == 0 {
		return nil, nil, skipped, fmt.Errorf("dataset %s: none of the %d training examples names a positive tool of the dataset (%s)", d.Name, len(ex), strings.Join(skipped, "; "))
	}
	c.Splits[ExamplesSplit] = train
	return &c, negatives, skipped, nil
}

// WriteExamples writes examples as JSON Lines to path, atomically.
func WriteExamples(path string, ex []Example) error {
	var b strings.Builder
	for _, e := range ex {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return atomicfile.Write(path, []byte(b.String()))
}

// ReadExamples reads a file WriteExamples wrote; a malformed line is an error naming
// path:line.
func ReadExamples(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var e Example
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
