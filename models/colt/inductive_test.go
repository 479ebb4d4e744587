package colt

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
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
				return sS
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
		task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: randomRows(rand.New(rand.NewPCG(1, 1)), len(d.Queries), 4), Dim: 4, BatchSize: 64, Seed: 1}
		if err := task.Prepare(); err != nil {
			t.Fatal(err)
		}
		in, n, err := task.Batch(0, 1)
		if err != nil {
			t.Fatalf("L=%d: %v", L, err)
		}
		if len(in) != NumInputs {
			t.Fatalf("L=%d: %d batch inputs, want %d", L, len(in), NumInputs)
		}
		bq := tensors.MustCopyFlatData[int32](in[InQueries])
		list := tensors.MustCopyFlatData[int32](in[InList])
		labels := tensors.MustCopyFlatData[float32](in[InLabels])
		bs := tensors.MustCopyFlatData[int32](in[InScenes])
		emb := tensors.MustCopyFlatData[float32](in[InEmbeddings])
		width := in[InList].Shape().Dim(1)
		if width != min(L, nt) {
			t.Fatalf("L=%d: list width %d", L, width)
		}
		for j := range n {
			q := int(bq[j])
			if int(bs[j]) != tr.Scene[q] {
				t.Errorf("L=%d query %d: scene %d, want %d", L, q, bs[j], tr.Scene[q])
			}
			for k, x := range task.Queries[q] {
				if emb[j*4+k] != x {
					t.Fatalf("L=%d query %d: batch embedding %v, want its stage-1 embedding %v", L, q, emb[j*4:j*4+4], task.Queries[q])
				}
			}
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

// TestTrainingScoresMatchScorer checks that the training graph scores a batch query exactly as
// the Scorer of dev, test and new queries does for the same weights: from the query's stage-1
// embedding, not its trainable node input. The node inputs are set apart from the stage-1
// embeddings (as training moves them); the batch holds dev queries, which have no edges, so
// holding the batch out leaves the graphs the scorer propagates over unchanged.
func TestTrainingScoresMatchScorer(t *testing.T) {
	d, tr, dev, graphs := embedded(t)
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	const dim = 8
	r := rand.New(rand.NewPCG(6, 7))
	queries, tools, scenes := weakStage1(r, d, dim, 0.7, 1.5)
	nodes := randomRows(r, len(d.Queries), dim) // trained query node inputs, not the stage-1 ones
	nq, nt, ns := len(d.Queries), len(d.Tools), len(d.Scenes)
	batch := dev.Queries[:12]
	bq, bs := make([]int32, len(batch)), make([]int32, len(batch))
	list := make([]int32, 0, len(batch)*nt)
	var emb []float32
	for j, q := range batch {
		bq[j], bs[j] = int32(q), int32(dev.Scene[q])
		for tool := range nt {
			list = append(list, int32(tool))
		}
		emb = append(emb, queries[q]...)
	}
	ql, qr, qw := graphs.QueryTool.Tensors()
	sl, sr, sw := graphs.QueryScene.Tensors()
	in := []any{ql, qr, qw, sl, sr, sw,
		tensors.FromFlatDataAndDimensions(bq, len(batch)),
		tensors.FromFlatDataAndDimensions(list, len(batch), nt),
		tensors.FromFlatDataAndDimensions(make([]float32, len(batch)*nt), len(batch), nt),
		tensors.FromFlatDataAndDimensions(bs, len(batch)),
		tensors.FromFlatDataAndDimensions(emb, len(batch), dim)}
	for _, v := range []struct {
		name string
		mod  func(*Config)
	}{
		{"full", func(*Config) {}},
		{"layer-weights", func(c *Config) { c.ToolWeight, c.SceneWeight, c.AttachTemp = 0, 4, 0.02 }},
		{"two-layers", func(c *Config) { c.Layers = 2 }},
		{"scene-only", func(c *Config) { c.Views = "scene" }},
		{"tool-only", func(c *Config) { c.Views = "tool" }},
		{"hold-out", func(c *Config) { c.Inductive, c.HoldOut = false, true }},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := Default()
			v.mod(&cfg)
			store := model.NewStore()
			if err := InitVariables(store, be, nodes, tools, scenes); err != nil {
				t.Fatal(err)
			}
			task := &Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim, BatchSize: 64, Backend: be}
			if err := task.Prepare(); err != nil {
				t.Fatal(err)
			}
			out, err := model.CallOnce(be, store, func(s *model.Scope, in []*Node) *Node {
				g := in[0].Graph()
				return cfg.batch(s, in, nq, nt, ns, dim, graphs.SceneTool.Const(g), Const(g, KnownScenes(graphs))).scores
			}, in...)
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float32](out)
			sc, err := task.Scorer(store)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for j, q := range batch {
				want := sc.Scores(queries[q])
				for tool := range nt {
					if diff := math.Abs(float64(got[j*nt+tool] - want[tool])); diff > 1e-5 && bad < 5 {
						bad++
						t.Errorf("query %s tool %d: training graph %v, scorer %v", d.Queries[q].ID, tool, got[j*nt+tool], want[tool])
					}
				}
			}
		})
	}
}

// TestSceneContrastMasksDuplicates checks that a scene repeated in a batch is not a negative of
// its own copies: on a hand-checked case and against a host computation on random rows.
func TestSceneContrastMasksDuplicates(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	loss := func(cfg Config, sS, sT [][]float32, bs []int32) float64 {
		out, err := ExecOnce(be, func(a, b, s *Node) *Node { return cfg.sceneContrast(a, b, s) },
			flat(sS), flat(sT), tensors.FromFlatDataAndDimensions(bs, len(bs)))
		if err != nil {
			t.Fatal(err)
		}
		return float64(tensors.ToScalar[float32](out))
	}
	// Scenes 0, 1, 0 with orthogonal unit embeddings, the same in both views, τ = 1: logits
	// l = [[1 0 1] [0 1 0] [1 0 1]]. Rows 0 and 2 drop each other: log(e+1) - 1 each; row 1
	// keeps both copies of scene 0: log(e+2) - 1. Unmasked, rows 0 and 2 would give log(2e+1) - 1.
	rows := [][]float32{{1, 0}, {0, 1}, {1, 0}}
	cfg := Config{Temperature: 1}
	got := loss(cfg, rows, rows, []int32{0, 1, 0})
	e := math.E
	want := (2*math.Log(e+1)+math.Log(e+2))/3 - 1
	if math.Abs(got-want) > 1e-5 {
		t.Errorf("hand case: loss %v, want %v (unmasked: %v)", got, want, (2*math.Log(2*e+1)+math.Log(e+2))/3-1)
	}
	// Distinct scenes: nothing is masked.
	if got, want := loss(cfg, rows[:2], rows[:2], []int32{0, 1}), math.Log(e+1)-1; math.Abs(got-want) > 1e-5 {
		t.Errorf("distinct scenes: loss %v, want %v", got, want)
	}
	// Random rows, scene 2 three times (its rows equal, as gathered from one table).
	r := rand.New(rand.NewPCG(8, 9))
	bs := []int32{2, 0, 2, 1, 2}
	tabS, tabT := randomRows(r, 3, 6), randomRows(r, 3, 6)
	var sS, sT [][]float32
	for _, s := range bs {
		sS, sT = append(sS, tabS[s]), append(sT, tabT[s])
	}
	cfg.Temperature = 0.1
	want = 0
	for i := range bs {
		var lse float64
		for j := range bs {
			if j == i || bs[j] != bs[i] {
				lse += math.Exp(float64(dot(sS[i], sT[j])) / cfg.Temperature)
			}
		}
		want += math.Log(lse) - float64(dot(sS[i], sT[i]))/cfg.Temperature
	}
	want /= float64(len(bs))
	if got := loss(cfg, sS, sT, bs); math.Abs(got-want) > 1e-4 {
		t.Errorf("random case: loss %v, want %v", got, want)
	}
}

// TestPrepareErrors checks that a training query without a scene (it would otherwise be scored
// against scene 0), a zero batch size and wrong embeddings are errors.
func TestPrepareErrors(t *testing.T) {
	d, tr, dev, graphs := embedded(t)
	queries := randomRows(rand.New(rand.NewPCG(1, 1)), len(d.Queries), 4)
	noScene := *tr
	noScene.Scene = maps.Clone(tr.Scene)
	missing := tr.Judged()[5]
	delete(noScene.Scene, missing)
	for _, tc := range []struct {
		name string
		mod  func(*Task)
		want string
	}{
		{"no scene", func(t *Task) { t.Train = &noScene }, fmt.Sprintf("training query %q (split %s) has no scene", d.Queries[missing].ID, tr.Name)},
		{"batch 0", func(t *Task) { t.BatchSize = 0 }, "batch size 0"},
		{"embeddings", func(t *Task) { t.Queries = queries[1:] }, "stage-1 query embeddings"},
		{"dimensions", func(t *Task) { t.Dim = 5 }, "has 4 dimensions, want 5"},
	} {
		task := &Task{Cfg: Default(), Data: d, Train: tr, Dev: dev, Graphs: graphs, Queries: queries, Dim: 4, BatchSize: 64}
		tc.mod(task)
		if err := task.Prepare(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
