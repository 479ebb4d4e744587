package metrics

import (
	"context"
	"slices"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/datatest"
	"github.com/toolret/toolret/internal/ranktest"
	"github.com/toolret/toolret/rank"
)

// TestEvaluateWithinLibraries ranks with a scorer that puts every tool of other libraries
// first: on a multi-source dataset each query is ranked among its own library's tools, so
// the relevant tool, scored above the rest of its library, is first.
func TestEvaluateWithinLibraries(t *testing.T) {
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	d, err := data.OpenSources("lens,mix")
	if err != nil {
		t.Fatal(err)
	}
	train, dev, err := d.CarveDev("train", 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	adversary := rank.ScoreFunc(func(_ context.Context, q rank.Query) ([]float32, error) {
		s := make([]float32, len(d.Tools))
		lib := d.QueryLibrary(train, q.Index)
		for _, s := range []*data.Split{dev, d.Splits["test"]} {
			if lib < 0 {
				lib = d.QueryLibrary(s, q.Index)
			}
		}
		for i := range s {
			switch {
			case d.LibraryOf(i) != lib:
				s[i] = 10
			case slices.Contains(dev.Relevant[q.Index], i) || slices.Contains(d.Splits["test"].Relevant[q.Index], i):
				s[i] = 1
			}
		}
		return s, nil
	})
	m, err := EvaluateDev(context.Background(), d, dev, adversary, DevKs)
	if err != nil {
		t.Fatal(err)
	}
	if m["recall@1"] != 100 || m["ndcg@5"] != 100 {
		t.Errorf("pooled dev metrics %v, want recall@1 and ndcg@5 100", m)
	}
	for _, lib := range d.Libraries {
		for _, k := range LibraryKeys {
			if v, ok := m["lib/"+lib.Name+"/"+k]; !ok || v != 100 {
				t.Errorf("lib/%s/%s = %v (reported %v), want 100", lib.Name, k, v, ok)
			}
		}
	}
	// Exported for stages that rank before the evaluation: each query's library is found
	// through d's splits when none is given.
	qs := []rank.Query{{Index: dev.Queries[0], Text: d.Queries[dev.Queries[0]].Text}}
	rs, err := WithinLibraries(d, nil, adversary).RankQueries(context.Background(), qs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := dev.Relevant[qs[0].Index][0]; len(rs[0].Tools) == 0 || rs[0].Tools[0] != want {
		t.Errorf("WithinLibraries ranked %v first, want %d", rs[0].Tools, want)
	}
	// The test split (lens only) likewise.
	rep, err := Run(context.Background(), d, "test", rankerOf(adversary, d), DevKs)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Map()["recall@3"]; r != 100 {
		t.Errorf("test recall@3 %v, want 100", r)
	}
	// Each library's dev queries are a subset of the split's report (eval -subsets).
	dr, err := EvaluateSplit(context.Background(), d, dev, within(d, dev, adversary), DevKs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, lib := range d.Libraries {
		r, ok := dr.Subsets["library="+lib.Name]
		if !ok {
			t.Errorf("no subset library=%s in %v", lib.Name, dr.Subsets)
			continue
		}
		n += r.N
	}
	if n != len(dev.Queries) {
		t.Errorf("library subsets hold %d queries, want the split's %d", n, len(dev.Queries))
	}
}

// rankerOf is a rank.Ranker of a QueryRanker over d's queries by text.
func rankerOf(r rank.QueryRanker, d *data.Dataset) rank.Ranker {
	return textRanker{r, d}
}

type textRanker struct {
	r rank.QueryRanker
	d *data.Dataset
}

func (t textRanker) Rank(ctx context.Context, texts []string, k int) ([]rank.Ranking, error) {
	qs := make([]rank.Query, len(texts))
	for i, s := range texts {
		for j, q := range t.d.Queries {
			if q.Text == s {
				qs[i] = rank.Query{Index: j, Text: s}
			}
		}
	}
	return t.r.RankQueries(ctx, qs, k)
}

// TestLibraryRankerAskedTopK: a LibraryRanker is evaluated on a multi-source dataset as a
// server is asked, for the top k (the largest cutoff), not for every tool as the
// within-library filter of other rankers asks; WithinLibraries returns it as it is.
func TestLibraryRankerAskedTopK(t *testing.T) {
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	d, err := data.OpenSources("lens,mix")
	if err != nil {
		t.Fatal(err)
	}
	f := &ranktest.Library{D: d}
	if _, err := EvaluateSplit(context.Background(), d, d.Splits["train"], f, []int{1, 3}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Asks, []int{3}) {
		t.Errorf("asked for %v tools, want [3]", f.Asks)
	}
	if r := WithinLibraries(d, nil, f); r != LibraryRanker(f) {
		t.Errorf("WithinLibraries wrapped a LibraryRanker: %T", r)
	}
	plain := rank.ScoreFunc(func(context.Context, rank.Query) ([]float32, error) { return make([]float32, len(d.Tools)), nil })
	if _, ok := WithinLibraries(d, nil, plain).(LibraryRanker); ok {
		t.Error("WithinLibraries of a plain ranker claims to rank within libraries")
	}
}
