package toolindex

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/synth"
)

func synthLib(t *testing.T, version uint64, prefix string, emb [][]float32) *Library {
	t.Helper()
	tools := make([]export.ToolRecord, len(emb))
	for i := range tools {
		tools[i] = export.ToolRecord{ID: fmt.Sprintf("%s%d", prefix, i)}
	}
	l, err := NewLibrary(version, tools, emb)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// recallAt returns the fraction of exact's top k that x finds for queries, and checks that
// every tool x returns is in lib with its exact score.
func recallAt(t *testing.T, x *ANNIndex, lib *Library, queries [][]float32, k int) float64 {
	t.Helper()
	hit := 0
	for _, q := range queries {
		exact := ExactSearch(lib, q, k)
		got, ok := x.Search(lib, q, k)
		if !ok {
			t.Fatal("Search: not ok on a synced library")
		}
		if len(got.Tools) != len(exact.Tools) {
			t.Fatalf("Search returned %d tools, want %d", len(got.Tools), len(exact.Tools))
		}
		want := map[int]bool{}
		for _, i := range exact.Tools {
			want[i] = true
		}
		for j, i := range got.Tools {
			if s := dot(q, lib.Vector(i)); s != got.Scores[j] {
				t.Fatalf("tool %d scored %v, exact %v", i, got.Scores[j], s)
			}
			if j > 0 && got.Scores[j] > got.Scores[j-1] {
				t.Fatalf("results not best first: %v", got.Scores)
			}
			if want[i] {
				hit++
			}
		}
	}
	return float64(hit) / float64(k*len(queries))
}

func TestANNRecall(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1000
	}
	g := synth.New(32, 1)
	lib := synthLib(t, 0, "t", g.Vectors(n))
	queries := g.Vectors(100)
	for _, tc := range []struct {
		cfg     ANNConfig
		atLeast float64
	}{
		{ANNConfig{}, 0.9},
		{ANNConfig{EfSearch: 200}, 0.95},
	} {
		x, err := BuildANN(lib, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if x.Len() != lib.Len() || x.Stale() != 0 {
			t.Fatalf("graph of %d nodes (%d stale), want %d (0)", x.Len(), x.Stale(), lib.Len())
		}
		r := recallAt(t, x, lib, queries, 10)
		t.Logf("%+v: recall@10 %.3f", tc.cfg, r)
		if r < tc.atLeast {
			t.Errorf("%+v: recall@10 %.3f, want >= %v", tc.cfg, r, tc.atLeast)
		}
	}
}

// TestANNUpdates: a tool removed is never returned, a tool added is found, a changed tool is
// scored by its new vector, and each version is answered with its own tools.
func TestANNUpdates(t *testing.T) {
	g := synth.New(16, 2)
	emb := g.Vectors(1000)
	v1 := synthLib(t, 1, "t", emb)
	x, err := BuildANN(v1, ANNConfig{})
	if err != nil {
		t.Fatal(err)
	}
	added := g.Vectors(50)
	put := make([]export.ToolRecord, len(added))
	for i := range put {
		put[i] = export.ToolRecord{ID: fmt.Sprintf("new%d", i)}
	}
	changed := g.Vectors(1)[0]
	put = append(put, export.ToolRecord{ID: "t7"})
	added = append(added, changed)
	var del []string
	for i := 100; i < 200; i++ {
		del = append(del, fmt.Sprintf("t%d", i))
	}
	v2, err := v1.With(2, put, added, del)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := x.Search(v2, emb[0], 5); ok {
		t.Fatal("Search answered a library not synced into the index")
	}
	if err := x.Sync(v2); err != nil {
		t.Fatal(err)
	}
	if got, want := x.Stale(), len(del)+1; got != want {
		t.Errorf("%d stale nodes, want %d (deleted + changed)", got, want)
	}
	for i := 100; i < 200; i++ { // a deleted tool's own vector: never found in v2
		got, _ := x.Search(v2, emb[i], 10)
		for _, j := range got.Tools {
			if id := v2.Tool(j).ID; id == fmt.Sprintf("t%d", i) {
				t.Fatalf("deleted tool %s returned", id)
			}
		}
	}
	for i, v := range added { // an added (or changed) tool's vector: it comes first
		got, _ := x.Search(v2, v, 1)
		if id := v2.Tool(got.Tools[0]).ID; id != put[i].ID {
			t.Errorf("query of %s's vector: first result %s", put[i].ID, id)
		}
	}
	got, _ := x.Search(v2, emb[7], 1000) // t7's old vector: t7 scored by its new one
	for j, i := range got.Tools {
		if v2.Tool(i).ID == "t7" && got.Scores[j] != dot(emb[7], changed) {
			t.Errorf("changed tool t7 scored %v, want its new vector's %v", got.Scores[j], dot(emb[7], changed))
		}
	}
	// The old version is still answered from its own tools.
	for i := 100; i < 110; i++ {
		got, ok := x.Search(v1, emb[i], 1)
		if !ok || v1.Tool(got.Tools[0]).ID != fmt.Sprintf("t%d", i) {
			t.Errorf("version 1: query of t%d's vector: %v, %v", i, got, ok)
		}
	}
	if r := recallAt(t, x, v2, g.Vectors(50), 10); r < 0.9 {
		t.Errorf("recall@10 after updates %.3f, want >= 0.9", r)
	}
}

// TestANNConcurrent sets library versions (adds, deletes, changes; rebuilds when stale)
// while queries run, under the race detector: every answer is its version's tools with their
// scores, and the index ends up built again and in sync.
func TestANNConcurrent(t *testing.T) {
	const d = 8
	g := synth.New(d, 3)
	r := &Index{dim: d}
	a, err := newANN(options{ann: &ANNConfig{Mode: ANNOn, Rebuild: 0.1}}, r)
	if err != nil {
		t.Fatal(err)
	}
	r.ann = a
	if err := r.SetLibrary(synthLib(t, 0, "t", g.Vectors(300))); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitANN(context.Background()); err != nil {
		t.Fatal(err)
	}
	queries := g.Vectors(20)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				lib := r.Library()
				q := queries[n%len(queries)]
				top, ok := r.annTop(lib, q, 5)
				if !ok {
					top = ExactSearch(lib, q, 5)
				}
				for j, i := range top.Tools {
					if s := dot(q, lib.Vector(i)); s != top.Scores[j] {
						errs <- fmt.Errorf("version %d: tool %s scored %v, its vector there %v", lib.Version, lib.Tool(i).ID, top.Scores[j], s)
						return
					}
				}
			}
		}()
	}
	for v := uint64(1); v <= 40; v++ {
		cur := r.Library()
		put := []export.ToolRecord{{ID: fmt.Sprintf("v%d", v)}, {ID: cur.Tool(int(v) % cur.Len()).ID}}
		del := []string{cur.Tool((int(v) + 50) % cur.Len()).ID}
		next, err := cur.With(v, put, g.Vectors(2), del)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetLibrary(next); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := r.WaitANN(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := r.ANN()
	if !st.Ready || st.Builds < 2 || st.Err != "" {
		t.Errorf("after 40 updates with rebuild at 10%% stale: %+v, want a ready index rebuilt at least once", st)
	}
	lib := r.Library()
	if lib.ann.Load() == nil {
		t.Fatal("newest library not in the graph")
	}
	for i := 0; i < lib.Len(); i++ { // every tool of the newest version is found by its vector
		top, ok := r.annTop(lib, lib.Vector(i), 1)
		if !ok || top.Tools[0] != i {
			t.Fatalf("tool %s not found by its own vector: %v %v", lib.Tool(i).ID, top, ok)
		}
	}
}

func TestANNConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    ANNConfig
		r      *Index
		active bool
		err    bool
	}{
		{"default", ANNConfig{}, &Index{}, true, false},
		{"off", ANNConfig{Mode: ANNOff}, &Index{}, false, false},
		{"bad mode", ANNConfig{Mode: "yes"}, &Index{}, false, true},
		{"bad M", ANNConfig{M: 1}, &Index{}, false, true},
		{"bad rebuild", ANNConfig{Rebuild: -1}, &Index{}, false, true},
		{"auto hybrid", ANNConfig{}, &Index{hyb: &hybridStage{}}, false, false},
		{"on hybrid", ANNConfig{Mode: ANNOn}, &Index{hyb: &hybridStage{}}, false, true},
		{"on refiner", ANNConfig{Mode: ANNOn}, &Index{ref: &refinerStage{dir: "r"}}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := newANN(options{ann: &tc.cfg}, tc.r)
			if (err != nil) != tc.err || (a != nil) != tc.active {
				t.Fatalf("newANN: %v, active %v; want error %v, active %v", err, a != nil, tc.err, tc.active)
			}
		})
	}
	c := DefaultANNConfig()
	if c.uses(c.Threshold-1) || !c.uses(c.Threshold) {
		t.Errorf("auto: threshold %d not where HNSW starts", c.Threshold)
	}
	if !(ANNConfig{Mode: ANNOn}).uses(1) {
		t.Error("on: a library of 1 tool not searched with HNSW")
	}
}
