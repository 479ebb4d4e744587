package candidates

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

func tinyData() *data.Dataset {
	return &data.Dataset{Name: "tiny",
		Tools:   []data.Tool{{ID: "w", Text: "weather forecast"}, {ID: "m", Text: "send mail"}, {ID: "p", Text: "map route"}},
		Queries: []data.Query{{ID: "q0", Text: "weather tomorrow"}, {ID: "q1", Text: "mail to bob"}, {ID: "q2", Text: "route to work map"}},
		Splits: map[string]*data.Split{"train": {Name: "train", Queries: []int{0, 1, 2},
			Relevant: map[int][]int{0: {0}, 1: {1}, 2: {2}}}},
	}
}

// counting counts Rank calls of a ranker.
type counting struct {
	r     rank.Ranker
	calls int
}

func (c *counting) Rank(ctx context.Context, q []string, k int) ([]rank.Ranking, error) {
	c.calls++
	return c.r.Rank(ctx, q, k)
}

func TestCache(t *testing.T) {
	d := tinyData()
	ctx := context.Background()
	bm, _, err := Open(Source{Kind: "bm25"}, d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{r: bm}
	open := func() (rank.Ranker, error) { return c, nil }
	path := filepath.Join(t.TempDir(), "candidates.json")
	src := Source{Kind: "bm25"}
	var reports [][2]int
	report := func(done, total int) { reports = append(reports, [2]int{done, total}) }
	l, computed, err := Cached(ctx, path, src, open, d, []int{0, 1}, 2, report)
	if err != nil || !computed {
		t.Fatalf("first call: computed %v, %v", computed, err)
	}
	if !reflect.DeepEqual(reports, [][2]int{{2, 2}}) {
		t.Fatalf("progress reports %v, want [[2 2]]", reports)
	}
	if l[0].Tools[0] != 0 || l[1].Tools[0] != 1 || len(l[0].Tools) != 2 || len(l[0].Scores) != 2 || l[0].Scores[0] < l[0].Scores[1] {
		t.Fatalf("lists %v", l)
	}
	// Cached queries are not recomputed; a new one is, and the cache holds the union.
	if _, computed, err := Cached(ctx, path, src, open, d, []int{1, 0}, 2, report); err != nil || computed || len(reports) != 1 {
		t.Fatalf("cached call: computed %v, progress %v, %v", computed, reports, err)
	}
	l2, computed, err := Cached(ctx, path, src, open, d, []int{2}, 2, nil)
	if err != nil || !computed || c.calls != 2 {
		t.Fatalf("new query: computed %v calls %d, %v", computed, c.calls, err)
	}
	if !reflect.DeepEqual(l2[0], l[0]) || l2[2].Tools[0] != 2 {
		t.Fatalf("union %v", l2)
	}
	for _, tc := range []struct {
		name  string
		src   Source
		depth int
		d     func() *data.Dataset
		want  string
	}{
		{"other source", Source{Kind: "bi-encoder", Run: "x"}, 2, tinyData, "computed by bm25"},
		{"deeper", src, 3, tinyData, "depth 2, want at least 3"},
		{"other data", src, 2, func() *data.Dataset { x := tinyData(); x.Tools[0].Text = "other"; return x }, "other data"},
	} {
		if _, err := Load(path, tc.src, tc.depth, tc.d()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := os.WriteFile(path, []byte(`{"source":{"kind":"bm25"},"depth":2,"data_fingerprint":"`+d.Fingerprint()+`","queries":{"q9":["w"]},"scores":{"q9":[1]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, src, 2, d); err == nil || !strings.Contains(err.Error(), `unknown query id "q9"`) {
		t.Errorf("unknown query: %v", err)
	}
}

func TestSourceCheck(t *testing.T) {
	for _, tc := range []struct {
		s  Source
		ok bool
	}{
		{Source{Kind: "bm25"}, true},
		{Source{Kind: "mlc", Run: "r"}, true},
		{Source{Kind: "mlc"}, false},
		{Source{Kind: "colt", Run: "r"}, false},
	} {
		if err := tc.s.Check(); (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.s, err)
		}
	}
}
