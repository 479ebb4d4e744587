package data

import "testing"

func TestDefaultDataset(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cats := map[string]bool{}
	groups, _ := d.Groups()
	for i, tool := range d.Tools {
		if tool.Category == "" || tool.ToolName == "" || tool.APIName == "" {
			t.Errorf("tool %d has no hierarchy", i)
		}
		cats[tool.Category] = true
	}
	if len(groups) < 12 || len(d.Tools) < 60 || len(cats) < 4 || len(d.Queries) < 1500 {
		t.Fatalf("too small: %d tools, %d APIs, %d categories, %d queries", len(groups), len(d.Tools), len(cats), len(d.Queries))
	}
	used := make([]bool, len(d.Tools))
	sizes := map[int]int{}
	for _, name := range []string{"train", "test"} {
		s, err := d.Split(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range s.Queries {
			rel := s.Relevant[q]
			if len(rel) < 1 || len(rel) > 4 {
				t.Errorf("query %s has %d relevant APIs", d.Queries[q].ID, len(rel))
			}
			sizes[len(rel)]++
			for _, a := range rel {
				used[a] = true
			}
			if _, ok := s.Scene[q]; !ok {
				t.Errorf("query %s has no scene", d.Queries[q].ID)
			}
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("API %s is never used", d.Tools[i].ID)
		}
	}
	for n := 1; n <= 4; n++ {
		if sizes[n] < 100 {
			t.Errorf("only %d queries need %d APIs", sizes[n], n)
		}
	}
	seen := d.Seen("train")
	unseen := 0
	for _, s := range seen {
		if !s {
			unseen++
		}
	}
	if unseen == 0 || unseen > 10 {
		t.Errorf("%d APIs unseen in training; want a few", unseen)
	}
}
