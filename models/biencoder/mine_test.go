package biencoder_test

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
)

func TestHardNegatives(t *testing.T) {
	rk := []rank.Ranking{{Tools: []int{5, 1, 6, 7, 2, 8}}, {Tools: []int{3, 4}}}
	rel := map[int][]int{10: {1, 2}, 11: {3, 4}}
	for _, c := range []struct {
		per, skip int
		want      map[int][]int
	}{
		{2, 0, map[int][]int{10: {5, 6}}},
		{2, 1, map[int][]int{10: {6, 7}}},
		{9, 3, map[int][]int{10: {8}}},
		{1, 4, map[int][]int{}},
	} {
		got := biencoder.HardNegatives(rk, []int{10, 11}, rel, c.per, c.skip)
		if len(got) != len(c.want) || !slices.Equal(got[10], c.want[10]) {
			t.Errorf("per %d skip %d: %v, want %v", c.per, c.skip, got, c.want)
		}
	}
}

// TestMine mines hard negatives with a random bi-encoder run on a small dataset and reads them
// back; bad settings are refused naming their flag.
func TestMine(t *testing.T) {
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 30, 10)
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "be")
	if err := exporttest.WriteRecordedRunOn(run, d, 0.2, 7, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		t.Fatal(err)
	}
	cfg := biencoder.DefaultMineConfig()
	var log bytes.Buffer
	cfg.Run, cfg.Data, cfg.PerQuery, cfg.Skip, cfg.Backend, cfg.Stderr = run, d, 4, 1, "go", &log
	res, err := biencoder.Mine(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Out != filepath.Join(run, "negatives-train.jsonl") || len(res.Queries) != 30 || !strings.Contains(log.String(), "mined up to 4 negatives for each of 30 queries") {
		t.Fatalf("result %+v, stderr %q", res, log.String())
	}
	back, err := biencoder.ReadNegatives(res.Out, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range res.Queries {
		if !slices.Equal(back[q], res.Negatives[q]) || len(back[q]) != 4 {
			t.Fatalf("query %d: read %v, mined %v", q, back[q], res.Negatives[q])
		}
		for _, tool := range back[q] {
			if slices.Contains(d.Splits["train"].Relevant[q], tool) {
				t.Errorf("query %d: relevant tool %d mined as a negative", q, tool)
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(*biencoder.MineConfig)
		want string
	}{
		{"no run", func(c *biencoder.MineConfig) { c.Run = "" }, "-run is required"},
		{"per-query", func(c *biencoder.MineConfig) { c.PerQuery = 0 }, "per-query 0: must be > 0"}, // the library names the setting, train mine its flag
		{"skip", func(c *biencoder.MineConfig) { c.Skip = -1 }, "skip -1: must be >= 0"},
		{"split", func(c *biencoder.MineConfig) { c.Split = "nope" }, "nope"},
	} {
		bad := cfg
		c.edit(&bad)
		if _, err := biencoder.Mine(context.Background(), bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
