package colt

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/backend"
	tgraph "github.com/toolret/toolret/graph"
)

func flat(rows [][]float32) *tensors.Tensor {
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return tensors.FromFlatDataAndDimensions(out, len(rows), len(rows[0]))
}

// TestHoldOut checks that holdOut zeroes exactly the edges of the batch's queries, so that a
// held-out query propagates to its own input (as a test query does) and its tools no longer
// receive it.
func TestHoldOut(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	// 4 queries × 3 tools.
	b, err := tgraph.New(4, 3, [][2]int{{0, 0}, {0, 1}, {1, 1}, {2, 2}, {3, 0}, {3, 2}}, tgraph.NormSymmetric)
	if err != nil {
		t.Fatal(err)
	}
	l, r, w := b.Tensors()
	batch := tensors.FromFlatDataAndDimensions([]int32{3, 0, 3}, 3) // a repeated query too
	out, err := ExecOnce(be, func(l, r, w, bq *Node) *Node {
		e := holdOut(tgraph.Edges{NLeft: 4, NRight: 3, Left: l, Right: r, Weight: w}, bq)
		return e.Weight
	}, l, r, w, batch)
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out)
	for e := range b.Left {
		want := b.Weight[e]
		if b.Left[e] == 0 || b.Left[e] == 3 {
			want = 0
		}
		if got[e] != want {
			t.Errorf("edge %d (%d, %d): weight %v, want %v", e, b.Left[e], b.Right[e], got[e], want)
		}
	}
}

// TestAttachMatchesScorer checks that the training graph's attachment of held-out queries
// (Config.Attach) and the host-side Scorer used for dev, test and new queries compute the
// same scores, and that the scene weights follow the formula on a hand-checked case.
func TestAttachMatchesScorer(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 5))
	const d, nt, ns, nb = 8, 6, 5, 4
	queries, tools := randomRows(r, nb, d), randomRows(r, nt, d)
	keys, vals := randomRows(r, ns, d), randomRows(r, ns, d)
	for _, v := range vals {
		for k := range v {
			v[k] *= 0.5 + r.Float32() // scene inputs need not have unit norm
		}
	}
	known := []bool{true, false, true, true, false}
	for _, cfg := range []Config{
		{AttachTemp: 0.05, SceneWeight: 1, Views: "both"},
		{AttachTemp: 0.5, SceneWeight: 3, Views: "both"},
		{AttachTemp: 0.1, SceneWeight: 2, Views: "scene"},
	} {
		out, err := ExecOnce(be, func(q, tl, ss, s0, kn *Node) *Node {
			qs := cfg.Attach(q, ss, s0, kn)
			sS := cos(InsertAxes(qs, 1), InsertAxes(tl, 0)) // [B, T]
			if cfg.Views == "scene" {
				return MulScalar(sS, 2)
			}
			return Add(sS, cos(InsertAxes(q, 1), InsertAxes(tl, 0)))
		}, flat(queries), flat(tools), flat(keys), flat(vals), tensors.FromValue(known))
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](out)
		sc := &Scorer{Tools: tools, Temp: cfg.AttachTemp, Weight: cfg.SceneWeight, Views: cfg.Views}
		for s := range known {
			if known[s] {
				sc.SceneKeys = append(sc.SceneKeys, keys[s])
				sc.SceneVals = append(sc.SceneVals, vals[s])
			}
		}
		for i, q := range queries {
			want := sc.Scores(q)
			for j := range want {
				if d := math.Abs(float64(got[i*nt+j] - want[j])); d > 1e-5 {
					t.Errorf("%+v query %d tool %d: graph %v, scorer %v", cfg, i, j, got[i*nt+j], want[j])
				}
			}
		}
	}
	// Hand-checked: one known scene with value v: e_q^S = q + normalize(v), whatever the keys.
	q := []float32{1, 0}
	sc := &Scorer{Tools: [][]float32{{1, 0}, {0, 1}}, SceneKeys: [][]float32{{0, 1}}, SceneVals: [][]float32{{0, 2}}, Temp: 0.1, Weight: 1}
	got := sc.Scores(q)
	// e_q^S = (1, 1)/√2: tool 0 scores 1/√2 + 1, tool 1 scores 1/√2 + 0.
	for j, want := range []float64{1/math.Sqrt2 + 1, 1 / math.Sqrt2} {
		if math.Abs(float64(got[j])-want) > 1e-6 {
			t.Errorf("hand case tool %d: %v, want %v", j, got[j], want)
		}
	}
	// Without scenes the score is 2 cos(e_q, e_t).
	plain := (&Scorer{Tools: sc.Tools}).Scores(q)
	if plain[0] != 2 || plain[1] != 0 {
		t.Errorf("no scenes: %v, want [2 0]", plain)
	}
}

// TestBatchLists checks the list-wise batches: each row holds the query's positives first
// (label 1), then distinct non-relevant tools (label 0), for short lists (rejection sampling)
// and lists as long as the catalogue (permutation).
func TestBatchLists(t *testing.T) {
	d, tr, dev, graphs := embedded(t)
	nt := len(d.Tools)
	for _, L := range []int{10, nt / 2, nt - 5, nt + 3} {
		cfg := Default()
		cfg.ListLen = L
		task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: make([][]float32, len(d.Queries)), Dim: 4, BatchSize: 64, Seed: 1}
		if err := task.Prepare(); err != nil {
			t.Fatal(err)
		}
		in, n, err := task.Batch(0, 1)
		if err != nil {
			t.Fatalf("L=%d: %v", L, err)
		}
		bq := tensors.MustCopyFlatData[int32](in[6])
		list := tensors.MustCopyFlatData[int32](in[7])
		labels := tensors.MustCopyFlatData[float32](in[8])
		width := in[7].Shape().Dim(1)
		if width != min(L, nt) {
			t.Fatalf("L=%d: list width %d", L, width)
		}
		for j := range n {
			rel := map[int32]bool{}
			for _, x := range tr.Relevant[int(bq[j])] {
				rel[int32(x)] = true
			}
			seen := map[int32]bool{}
			npos := 0
			for k := range width {
				tool, lab := list[j*width+k], labels[j*width+k]
				if seen[tool] {
					t.Errorf("L=%d query %d: tool %d twice", L, bq[j], tool)
				}
				seen[tool] = true
				if (lab == 1) != rel[tool] {
					t.Errorf("L=%d query %d: tool %d label %v, relevant %v", L, bq[j], tool, lab, rel[tool])
				}
				if lab == 1 {
					if k != npos {
						t.Errorf("L=%d query %d: positive at %d after a negative", L, bq[j], k)
					}
					npos++
				}
			}
			if want := min(len(rel), width-1); npos != want {
				t.Errorf("L=%d query %d: %d positives, want %d", L, bq[j], npos, want)
			}
		}
	}
}
