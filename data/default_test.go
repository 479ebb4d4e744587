package data

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// TestDefaultDataset checks the embedded dataset against its specification
// (data/default/README.md): sizes, hierarchy, splits, scenes and unseen APIs.
func TestDefaultDataset(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "toolret-default" {
		t.Errorf("name %q, want toolret-default", d.Name)
	}

	// Hierarchy: from metadata, and the same when parsed back from the ToolBench-style text.
	cats := map[string]bool{}
	for i, tool := range d.Tools {
		if tool.Category == "" || tool.ToolName == "" || tool.APIName == "" {
			t.Errorf("tool %s (%d) has no hierarchy", tool.ID, i)
		}
		f := ParseToolBenchText(tool.Text)
		if f["category_name"] != tool.Category || f["tool_name"] != tool.ToolName || f["api_name"] != tool.APIName {
			t.Errorf("tool %s: text hierarchy %q/%q/%q != metadata %q/%q/%q", tool.ID,
				f["category_name"], f["tool_name"], f["api_name"], tool.Category, tool.ToolName, tool.APIName)
		}
		if len(f["api_description"]) < 10 || !strings.Contains(tool.Text, "required_params: [") {
			t.Errorf("tool %s: no description or parameters in %q", tool.ID, tool.Text)
		}
		cats[tool.Category] = true
	}
	groups, _ := d.Groups()
	counts := []struct {
		what    string
		got, lo int
	}{
		{"tools", len(groups), 12},
		{"APIs", len(d.Tools), 60},
		{"categories", len(cats), 4},
		{"queries", len(d.Queries), 1500},
	}
	for _, c := range counts {
		if c.got < c.lo {
			t.Errorf("%d %s, want >= %d", c.got, c.what, c.lo)
		}
	}

	// Splits: every query judged in exactly one split, 1-4 relevant APIs, scene = relevant set.
	used := make([]bool, len(d.Tools))
	sizes := map[int]int{}
	split := map[int]string{}
	n := map[string]int{}
	for _, name := range []string{"train", "test"} {
		s, err := d.Split(name)
		if err != nil {
			t.Fatal(err)
		}
		n[name] = len(s.Queries)
		for _, q := range s.Queries {
			id := d.Queries[q].ID
			if prev, ok := split[q]; ok {
				t.Errorf("query %s is in %s and %s", id, prev, name)
			}
			split[q] = name
			rel := s.Relevant[q]
			if len(rel) < 1 || len(rel) > 4 {
				t.Errorf("query %s has %d relevant APIs", id, len(rel))
			}
			sizes[len(rel)]++
			for _, a := range rel {
				used[a] = true
			}
			sc, ok := s.Scene[q]
			if !ok {
				t.Errorf("query %s has no scene", id)
			} else if !slices.Equal(d.Scenes[sc], rel) {
				t.Errorf("query %s: scene %s = %v, relevant %v", id, d.SceneIDs[sc], d.Scenes[sc], rel)
			}
		}
	}
	if len(split) != len(d.Queries) {
		t.Errorf("%d of %d queries are judged", len(split), len(d.Queries))
	}
	if f := float64(n["test"]) / float64(len(split)); f < 0.1 || f > 0.25 {
		t.Errorf("test split holds %.1f%% of the queries, want ~15%%", 100*f)
	}
	for i, u := range used {
		if !u {
			t.Errorf("API %s is never used", d.Tools[i].ID)
		}
	}
	for k := 1; k <= 4; k++ {
		if sizes[k] < 100 {
			t.Errorf("only %d queries need %d APIs", sizes[k], k)
		}
	}
	distinct := map[string]bool{}
	for _, s := range d.Scenes {
		key := fmt.Sprint(s)
		if distinct[key] {
			t.Errorf("scene %v listed twice", s)
		}
		distinct[key] = true
	}

	unseen := 0
	for _, s := range d.Seen("train") {
		if !s {
			unseen++
		}
	}
	if unseen < 2 || unseen > 10 {
		t.Errorf("%d APIs unseen in training; want a few", unseen)
	}

	size := 0
	err = fs.WalkDir(defaultFS, "default", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		size += int(info.Size())
		return err
	})
	if err != nil || size > 1_500_000 {
		t.Errorf("embedded size %d bytes (%v), want < 1.5 MB", size, err)
	}
}

// TestDefaultLexicalBaseline checks that the dataset is neither trivial nor hopeless for a
// lexical retriever: ranking APIs by the number of query words found in their text must reach
// a Recall@5 well above chance but far from perfect.
func TestDefaultLexicalBaseline(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Split("test")
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]map[string]bool, len(d.Tools))
	for i, tool := range d.Tools {
		f := ParseToolBenchText(tool.Text)
		docs[i] = map[string]bool{}
		for _, w := range words(f["tool_name"] + " " + f["api_name"] + " " + f["api_description"]) {
			docs[i][w] = true
		}
	}
	const k = 5
	var recall float64
	for _, q := range s.Queries {
		qw := words(d.Queries[q].Text)
		score := make([]int, len(docs))
		order := make([]int, len(docs))
		for i, doc := range docs {
			order[i] = i
			for _, w := range qw {
				if doc[w] {
					score[i]++
				}
			}
		}
		sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
		rel := s.Relevant[q]
		hit := 0
		for _, i := range order[:k] {
			if slices.Contains(rel, i) {
				hit++
			}
		}
		recall += float64(hit) / float64(len(rel))
	}
	recall /= float64(len(s.Queries))
	t.Logf("word-overlap Recall@%d on %d test queries: %.3f", k, len(s.Queries), recall)
	if recall < 0.2 || recall > 0.9 {
		t.Errorf("word-overlap Recall@%d = %.3f, want between 0.2 and 0.9", k, recall)
	}
}

// words returns the distinct lower-case words of s longer than two letters, minus a few
// function words.
func words(s string) []string {
	stop := map[string]bool{"the": true, "and": true, "for": true, "you": true, "can": true, "what": true,
		"with": true, "how": true, "me": true, "my": true, "is": true, "are": true, "get": true, "of": true}
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > 2 && !stop[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
