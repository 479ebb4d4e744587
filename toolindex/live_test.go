package toolindex_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
)

func maxAbsDiff(a, b [][]float32) float64 {
	d := 0.0
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// TestToolTower checks that an index carries its tool tower (written once for a shared
// tower, in tool/ for separate towers) and that Embed reproduces both sides of the model.
func TestToolTower(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := data.Default()
	tools := []string{d.Tools[0].Text, d.Tools[7].Text, d.Tools[len(d.Tools)-1].Text}
	queries := []string{d.Queries[0].Text, d.Queries[5].Text}
	for _, tc := range []struct {
		name     string
		separate bool
		toolDir  string
	}{{"shared", false, export.IndexQueryDir}, {"separate", true, export.IndexToolDir}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(exporttest.Options{Separate: tc.separate}, be, 3)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "index")
			man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir})
			if err != nil {
				t.Fatal(err)
			}
			if man.Towers[biencoder.QueryTower] != export.IndexQueryDir || man.Towers[biencoder.ToolTower] != tc.toolDir {
				t.Fatalf("manifest towers %v", man.Towers)
			}
			r, err := toolindex.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CanEmbedTools(); err != nil {
				t.Fatal(err)
			}
			for _, side := range []struct {
				tower string
				texts []string
			}{{biencoder.ToolTower, tools}, {biencoder.QueryTower, queries}} {
				want, err := m.Embed(side.tower, side.texts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Embed(side.tower, side.texts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := maxAbsDiff(want, got); diff > 1e-5 {
					t.Errorf("%s tower differs from the model by %g", side.tower, diff)
				}
			}
			// A long tool text is cut at the tool length, not the query length.
			long := strings.Repeat(d.Tools[3].Text+" ", 8)
			want, _ := m.Embed(biencoder.ToolTower, []string{long})
			got, _ := r.Embed(biencoder.ToolTower, []string{long})
			if diff := maxAbsDiff(want, got); diff > 1e-5 {
				t.Errorf("long tool text differs by %g", diff)
			}
			nq, _ := r.Tokens(biencoder.QueryTower, long)
			nt, _ := r.Tokens(biencoder.ToolTower, long)
			if nq != 32 || nt != 64 {
				t.Errorf("tokens of a long text: query %d, tool %d; want the lengths 32 and 64", nq, nt)
			}
			// Before truncation, as evaluation counts queries the query tower cuts short.
			if n, limit := r.QueryTokens(long); limit != 32 || n != len(m.Tok.Single(long, 0)) || n <= 32 {
				t.Errorf("QueryTokens of a long text = %d, %d; want %d, 32", n, limit, len(m.Tok.Single(long, 0)))
			}
			if n, limit := r.QueryTokens(queries[0]); limit != 32 || n != len(m.Tok.Single(queries[0], 0)) {
				t.Errorf("QueryTokens(%q) = %d, %d; want %d, 32", queries[0], n, limit, len(m.Tok.Single(queries[0], 0)))
			}
			// The tool tower reproduces the indexed rows.
			lib := r.Library()
			i, ok := lib.Lookup(d.Tools[7].ID)
			if !ok {
				t.Fatalf("tool %s not in the library", d.Tools[7].ID)
			}
			row, _ := r.Embed(biencoder.ToolTower, []string{lib.Tool(i).Text})
			if diff := maxAbsDiff(row, [][]float32{lib.Embedding(i)}); diff > 1e-5 {
				t.Errorf("indexed row of %s differs from the tool tower by %g", lib.Tool(i).ID, diff)
			}
		})
	}
}

func TestLibrary(t *testing.T) {
	rec := func(id, title string) export.ToolRecord {
		return export.ToolRecord{ID: id, Title: title, Text: "t " + id}
	}
	v := func(x float32) []float32 { return []float32{x, 0} }
	base, err := toolindex.NewLibrary(3, []export.ToolRecord{rec("a", "A"), rec("b", "B"), rec("c", "C")}, [][]float32{v(1), v(2), v(3)})
	if err != nil {
		t.Fatal(err)
	}
	next, err := base.With(4, []export.ToolRecord{rec("b", "B2"), rec("d", "D")}, [][]float32{v(20), v(4)}, []string{"a", "zz"})
	if err != nil {
		t.Fatal(err)
	}
	var ids, titles []string
	var firsts []float32
	for i := 0; i < next.Len(); i++ {
		ids, titles, firsts = append(ids, next.Tool(i).ID), append(titles, next.Tool(i).Title), append(firsts, next.Embedding(i)[0])
	}
	if next.Version != 4 || !slices.Equal(ids, []string{"b", "c", "d"}) || !slices.Equal(titles, []string{"B2", "C", "D"}) || !slices.Equal(firsts, []float32{20, 3, 4}) {
		t.Fatalf("after the update: version %d, ids %v, titles %v, rows %v", next.Version, ids, titles, firsts)
	}
	if i, ok := next.Lookup("d"); !ok || i != 2 {
		t.Fatalf("Lookup(d) = %d, %v", i, ok)
	}
	if _, ok := next.Lookup("a"); ok {
		t.Fatal("deleted tool a still found")
	}
	// The old version is unchanged.
	if base.Len() != 3 || base.Tool(1).Title != "B" || base.Embedding(1)[0] != 2 || base.Version != 3 {
		t.Fatalf("base changed: %d tools, %+v", base.Len(), base.Tool(1))
	}
	for _, tc := range []struct {
		name string
		put  []export.ToolRecord
		emb  [][]float32
		del  []string
		want string
	}{
		{"put and delete one id", []export.ToolRecord{rec("a", "")}, [][]float32{v(1)}, []string{"a"}, "both put and deleted"},
		{"put twice", []export.ToolRecord{rec("x", ""), rec("x", "")}, [][]float32{v(1), v(2)}, nil, "put twice"},
		{"wrong dimension", []export.ToolRecord{rec("x", "")}, [][]float32{{1, 2, 3}}, nil, "3-dimensional"},
		{"embeddings missing", []export.ToolRecord{rec("x", "")}, nil, nil, "1 tools for 0 embeddings"},
	} {
		if _, err := base.With(4, tc.put, tc.emb, tc.del); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := toolindex.NewLibrary(0, []export.ToolRecord{rec("a", ""), rec("a", "")}, [][]float32{v(1), v(2)}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate ids: %v", err)
	}
}

// TestSetLibrary checks that queries see a new library only after SetLibrary, and
// RetrieveFrom an old one as it was.
func TestSetLibrary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := "book a table for two at an italian restaurant tonight"
	old := r.Library()
	// A tool whose text is the query (short: within both lengths) has the query's embedding
	// (cosine 1): it must come first.
	emb, err := r.Embed(biencoder.ToolTower, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	next, err := old.With(old.Version+1, []export.ToolRecord{{ID: "new-tool", Text: q}}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := r.Retrieve(context.Background(), q, 3)
	if before[0].ToolID == "new-tool" {
		t.Fatal("new tool found before SetLibrary")
	}
	if err := r.SetLibrary(next); err != nil {
		t.Fatal(err)
	}
	after, _ := r.Retrieve(context.Background(), q, 3)
	if after[0].ToolID != "new-tool" || after[0].Score < 0.9999 || r.Len() != old.Len()+1 {
		t.Fatalf("after SetLibrary: %+v (%d tools)", after[0], r.Len())
	}
	res, _ := r.RetrieveFrom(context.Background(), old, []string{q}, 3)
	for i := range res[0] {
		if res[0][i].ToolID != before[i].ToolID {
			t.Fatalf("RetrieveFrom the old library: %v, before %v", res[0], before)
		}
	}
	bad, _ := toolindex.NewLibrary(9, []export.ToolRecord{{ID: "x", Text: "x"}}, [][]float32{{1, 2}})
	if err := r.SetLibrary(bad); err == nil {
		t.Fatal("SetLibrary of 2-dimensional rows accepted")
	}
}
