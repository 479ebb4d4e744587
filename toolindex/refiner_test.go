package toolindex_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

// firstStage is a retriever (loaded WithoutRefiner) as a rank.Ranker of index positions.
type firstStage struct{ r *toolindex.Index }

func (f firstStage) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	if k <= 0 {
		k = f.r.Len()
	}
	res, err := f.r.RetrieveBatch(ctx, queries, k)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(res))
	for i, rs := range res {
		for _, x := range rs {
			out[i].Tools = append(out[i].Tools, x.Index)
			out[i].Scores = append(out[i].Scores, x.Score)
		}
	}
	return out, nil
}

// refinerFixture is a tiny bi-encoder run, refiner runs over its candidates, and indexes.
type refinerFixture struct {
	be                compute.Backend
	d                 *data.Dataset
	beRun             string
	text, usage       string // refiner runs over bi-encoder / usage candidates
	index, usageIndex string // indexes of beRun packaging text / usage
	plain             string // index of beRun without a refiner (and without usage vectors)
	queries           []string
}

func newRefinerFixture(t *testing.T) *refinerFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("trains refiners")
	}
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	f := &refinerFixture{be: be, d: d, beRun: filepath.Join(tmp, "be"), text: filepath.Join(tmp, "ref-text"), usage: filepath.Join(tmp, "ref-usage"),
		index: filepath.Join(tmp, "index"), usageIndex: filepath.Join(tmp, "index-usage"), plain: filepath.Join(tmp, "index-plain")}
	if err := exporttest.WriteRecordedRun(f.beRun, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRefinerRun(f.text, f.beRun, exporttest.RefinerOptions{}, be, 5); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRefinerRun(f.usage, f.beRun, exporttest.RefinerOptions{Candidates: "usage", N: 5}, be, 6); err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadModel(f.beRun, be)
	if err != nil {
		t.Fatal(err)
	}
	train, _, _, err := rundir.Splits(f.beRun, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		out, ref string
		train    *data.Split
	}{{f.index, f.text, train}, {f.usageIndex, f.usage, train}, {f.plain, "", nil}} {
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: x.out, Data: d, DataSource: "default",
			Train: x.train, Refiner: x.ref}); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := d.Split("test")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range ts.Judged()[:80] {
		f.queries = append(f.queries, d.Queries[q].Text)
	}
	return f
}

// TestRefinerStage: an index packaging a refiner serves the first stage then the refiner,
// exactly as refiner.Pipeline over the same first stage ranks the same queries (bi-encoder
// and usage candidates, k below, at and above N), and differently from the first stage alone;
// WithRefiner on a refiner run gives the same results over an index exported without it.
// Then the refusals, and tools added after export.
func TestRefinerStage(t *testing.T) {
	f := newRefinerFixture(t)
	ctx := context.Background()
	load := func(dir string, opts ...toolindex.Option) *toolindex.Index {
		t.Helper()
		r, err := toolindex.Load(dir, append(opts, toolindex.WithBackend(f.be))...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		name, index, run, vectors string
		opts                      []toolindex.Option
	}{
		{"packaged bi-encoder", f.index, f.text, "text", nil},
		{"packaged usage", f.usageIndex, f.usage, "usage", nil},
		{"WithRefiner run", f.plain, f.text, "text", []toolindex.Option{toolindex.WithRefiner(f.text)}},
		{"WithRefiner packaged dir", f.plain, f.text, "text", []toolindex.Option{toolindex.WithRefiner(filepath.Join(f.index, export.IndexRefinerDir))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := load(c.index, c.opts...)
			if dir, kind, n := r.Refiner(); dir == "" || r.ToolVectors() != c.vectors || n == 0 {
				t.Fatalf("refiner %q (%s, N %d), vectors %s: want one, vectors %s", dir, kind, n, r.ToolVectors(), c.vectors)
			}
			first := load(c.index, toolindex.WithoutRefiner(), toolindex.WithToolVectors(c.vectors))
			if dir, _, _ := first.Refiner(); dir != "" {
				t.Fatalf("WithoutRefiner: refiner %s", dir)
			}
			m, err := refiner.LoadRun(c.run, f.be)
			if err != nil {
				t.Fatal(err)
			}
			p := &refiner.Pipeline{First: firstStage{first}, Refiner: m}
			changed := 0
			for _, k := range []int{3, m.Cfg.N, 20} {
				want, err := p.Rank(ctx, f.queries, k)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.RetrieveBatch(ctx, f.queries, k)
				if err != nil {
					t.Fatal(err)
				}
				plain, err := first.RetrieveBatch(ctx, f.queries, k)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					gi := indexes(got[i])
					if !slices.Equal(gi, want[i].Tools) {
						t.Fatalf("k %d, query %q: retriever %v, pipeline %v", k, f.queries[i], gi, want[i].Tools)
					}
					for j, x := range got[i] {
						if d := math.Abs(float64(x.Score - want[i].Scores[j])); d > 1e-4 {
							t.Errorf("k %d, query %d, result %d: score %v, pipeline %v", k, i, j, x.Score, want[i].Scores[j])
						}
						if x.ToolID != f.d.Tools[x.Index].ID {
							t.Errorf("result %d: id %s at index %d", j, x.ToolID, x.Index)
						}
					}
					if !slices.Equal(gi, indexes(plain[i])) {
						changed++
					}
				}
			}
			if changed == 0 {
				t.Errorf("the refiner changed no ranking of %d queries", len(f.queries))
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		tmp := t.TempDir()
		mlc, bm := filepath.Join(tmp, "ref-mlc"), filepath.Join(tmp, "ref-bm25")
		if err := exporttest.WriteRefinerRun(mlc, f.beRun, exporttest.RefinerOptions{Candidates: "mlc", N: 4}, f.be, 7); err != nil {
			t.Fatal(err)
		}
		if err := exporttest.WriteRefinerRun(bm, f.beRun, exporttest.RefinerOptions{Candidates: "bm25", N: 4}, f.be, 7); err != nil {
			t.Fatal(err)
		}
		// A refiner run on other data: its run.json fingerprint differs.
		other := filepath.Join(tmp, "ref-other")
		if err := os.CopyFS(other, os.DirFS(f.text)); err != nil {
			t.Fatal(err)
		}
		meta, err := rundir.Read(other)
		if err != nil {
			t.Fatal(err)
		}
		meta.Fingerprint = strings.Repeat("0", 64)
		if err := rundir.WriteJSON(other, rundir.MetaFile, meta); err != nil {
			t.Fatal(err)
		}
		// A packaged refiner whose tool ids are not the index's.
		ids := filepath.Join(tmp, "ref-ids")
		if err := os.CopyFS(ids, os.DirFS(filepath.Join(f.index, export.IndexRefinerDir))); err != nil {
			t.Fatal(err)
		}
		list, err := export.ReadRefinerToolIDs(ids)
		if err != nil {
			t.Fatal(err)
		}
		list[3] = "no-such-tool"
		b, _ := json.Marshal(list)
		if err := os.WriteFile(filepath.Join(ids, export.RefinerToolIDs), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// An index of another bi-encoder run.
		be2, idx2 := filepath.Join(tmp, "be2"), filepath.Join(tmp, "index2")
		if err := exporttest.WriteRecordedRun(be2, exporttest.Options{}, f.be, 11); err != nil {
			t.Fatal(err)
		}
		m2, err := export.LoadModel(be2, f.be)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := export.Export(m2, export.Options{Format: export.FormatIndex, Out: idx2, Data: f.d, DataSource: "default"}); err != nil {
			t.Fatal(err)
		}
		// A damaged packaged refiner: the manifest's check catches a changed tool list.
		damaged := filepath.Join(tmp, "index-damaged")
		if err := os.CopyFS(damaged, os.DirFS(f.index)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(damaged, export.IndexRefinerDir, export.RefinerToolIDs), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, index string
			opts        []toolindex.Option
			want        string
		}{
			{"mlc candidates", f.plain, []toolindex.Option{toolindex.WithRefiner(mlc)}, "re-orders mlc candidates"},
			{"bm25 candidates", f.plain, []toolindex.Option{toolindex.WithRefiner(bm)}, "re-orders bm25 candidates"},
			{"other data", f.plain, []toolindex.Option{toolindex.WithRefiner(other)}, "trained on other data"},
			{"other tools", f.plain, []toolindex.Option{toolindex.WithRefiner(ids)}, `other tools: 1 of the refiner's 70 tools are not in the index (e.g. "no-such-tool")`},
			{"other first stage", idx2, []toolindex.Option{toolindex.WithRefiner(f.text)}, "re-orders the candidates of " + f.beRun},
			{"text refiner, usage vectors", f.index, []toolindex.Option{toolindex.WithToolVectors("usage")}, "re-orders bi-encoder candidates (text vectors)"},
			{"usage refiner, text vectors", f.usageIndex, []toolindex.Option{toolindex.WithToolVectors("text")}, "re-orders usage candidates (usage vectors)"},
			{"usage refiner, index without usage", f.plain, []toolindex.Option{toolindex.WithRefiner(f.usage)}, "has no usage vectors"},
			{"reranker and refiner", f.index, []toolindex.Option{toolindex.WithReranker(f.plain, 10)}, "two second stages"},
			{"packaged tool ids changed", damaged, []toolindex.Option{toolindex.WithoutVerify()}, "does not match the manifest's refiner entry"},
			{"packaged files verified", damaged, nil, "does not match its sha256"},
		} {
			_, err := toolindex.Load(c.index, append(c.opts, toolindex.WithBackend(f.be))...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
		}
		// The refused index serves its first stage with WithoutRefiner.
		if _, err := toolindex.Load(damaged, toolindex.WithoutRefiner(), toolindex.WithoutVerify(), toolindex.WithBackend(f.be)); err != nil {
			t.Errorf("WithoutRefiner on an index with a damaged refiner: %v", err)
		}
	})

	// A tool added after export has no Tool2Vec vector: it is not refined, and keeps its
	// first-stage order among the results after the refined ones.
	t.Run("added tools", func(t *testing.T) {
		r := load(f.index)
		first := load(f.index, toolindex.WithoutRefiner())
		_, _, n := r.Refiner()
		q := f.queries[0]
		top, err := first.Retrieve(ctx, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		lib := r.Library()
		// A copy of the first stage's best tool under a new id: it ranks first or second.
		rec := lib.Tool(top[0].Index)
		rec.ID = "added-after-export"
		lib2, err := lib.With(1, []export.ToolRecord{rec}, [][]float32{lib.Embedding(top[0].Index)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []*toolindex.Index{r, first} {
			if err := x.SetLibrary(lib2); err != nil {
				t.Fatal(err)
			}
		}
		k := n + 5
		got, err := r.Retrieve(ctx, q, k)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := first.Retrieve(ctx, q, k+1)
		if err != nil {
			t.Fatal(err)
		}
		if fs[0].ToolID != rec.ID && fs[1].ToolID != rec.ID {
			t.Fatalf("first stage: the added tool is not in the top 2: %v", ids(fs))
		}
		// Refined: the first N known tools of the first stage, in some order; then the added
		// tool, then the rest of the first stage in order.
		var known, rest []string
		for _, x := range fs {
			if x.ToolID != rec.ID && len(known) < n {
				known = append(known, x.ToolID)
			} else {
				rest = append(rest, x.ToolID)
			}
		}
		g := ids(got)
		if len(g) != k {
			t.Fatalf("%d results, want %d", len(g), k)
		}
		if !sameSet(g[:n], known) {
			t.Errorf("refined part %v, want the first stage's first %d known tools %v", g[:n], n, known)
		}
		if !slices.Equal(g[n:], rest[:k-n]) || g[n] != rec.ID {
			t.Errorf("after the refined part %v, want the added tool then the first stage's order %v", g[n:], rest[:k-n])
		}
	})
}

func ids(res []toolindex.Result) []string {
	out := make([]string, len(res))
	for i, x := range res {
		out[i] = x.ToolID
	}
	return out
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
