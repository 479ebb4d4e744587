package train

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/backend"
)

// cachedToy is toyTask with a per-row loss, cached: each row's prediction is its
// "embedding" (kind 0), the loss their mean squared error against y.
type cachedToy struct {
	toyTask
	mini int
	rate float64 // dropout
}

func (t *cachedToy) predict(s *model.Scope, x *Node) *Node {
	hs := s.In("hidden")
	h := hs.WithInitializer(initializer.RandomNormalFn(s, 0.5)).VariableWithShape("weights", shapes.Make(dtypes.Float32, 4, 8))
	hb := hs.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(dtypes.Float32, 8))
	o := s.In("out").WithInitializer(initializer.RandomNormalFn(s, 0.5)).VariableWithShape("weights", shapes.Make(dtypes.Float32, 8, 1))
	z := Tanh(Add(MatMul(x, h.NodeValue(x.Graph())), InsertAxes(hb.NodeValue(x.Graph()), 0)))
	if t.rate > 0 {
		z = layers.DropoutStatic(s, z, t.rate)
	}
	return MatMul(z, o.NodeValue(x.Graph())) // [rows, 1]
}

func (t *cachedToy) Loss(s *model.Scope, in []*Node) *Node {
	return t.CachedLoss(s, []*Node{t.predict(s, in[0])}, in[1:])
}

func (t *cachedToy) MiniBatch() int { return t.mini }
func (t *cachedToy) Kinds() int     { return 1 }
func (t *cachedToy) Split(in []*tensors.Tensor) ([]Chunk, []*tensors.Tensor, error) {
	c, err := SplitRows(0, t.mini, in[0])
	return c, in[1:], err
}
func (t *cachedToy) Embed(s *model.Scope, _ int, in []*Node) *Node { return t.predict(s, in[0]) }
func (t *cachedToy) CachedLoss(_ *model.Scope, embs, rest []*Node) *Node {
	return ReduceAllMean(Square(Sub(Reshape(embs[0], -1), rest[0])))
}

func float32s(t *testing.T, store *model.Store) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if v.DType() == dtypes.Float32 && !strings.HasPrefix(v.Path(), optScope+"/acc") {
			out[v.Path()] = tensors.MustCopyFlatData[float32](v.MustValue())
		}
	}
	return out
}

// TestCachedEqualsWhole: with dropout off, a run whose batches are encoded a few rows at a
// time (GradCache) ends where the run that encodes each batch whole ends, for mini-batches
// that divide the batch and that do not, with and without accumulation, and a short last
// batch.
func TestCachedEqualsWhole(t *testing.T) { cachedEqualsWhole(t, "go") }

// TestCachedReplaysDropout: with dropout on, pass 3 draws the masks pass 1 drew (the
// trainer checks every chunk's embeddings); without the replay the check stops the run.
func TestCachedReplaysDropout(t *testing.T) { cachedReplaysDropout(t, "go") }

// openOrSkip opens backend name, skipping the test when it cannot be had.
func openOrSkip(t *testing.T, name string) compute.Backend {
	t.Helper()
	be, err := backend.Open(name)
	if err != nil {
		if name == "go" {
			t.Fatal(err)
		}
		t.Skipf("backend %s not available: %v", name, err)
	}
	return be
}

func cachedEqualsWhole(t *testing.T, name string) {
	be := openOrSkip(t, name)
	for _, tc := range []struct {
		name      string
		mini, acc int
	}{
		{"rows of 4", 4, 1},
		{"rows of 5, the last chunk short", 5, 1},
		{"one row at a time", 1, 1},
		{"rows of 3, accumulating 2 batches", 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(mini int) map[string][]float32 {
				task := &cachedToy{toyTask: toyTask{seed: 7, batches: 4, last: 11}, mini: mini}
				cfg := toyConfig(filepath.Join(t.TempDir(), "run"))
				cfg.Epochs, cfg.Optimizer.Accumulate, cfg.Optimizer.ClipNorm = 2, tc.acc, 0
				store := newToyStore()
				if _, err := Run(be, store, task, cfg, false); err != nil {
					t.Fatal(err)
				}
				return float32s(t, store)
			}
			init := func() map[string][]float32 {
				store := newToyStore()
				task := &cachedToy{toyTask: toyTask{seed: 7, batches: 4}}
				x, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) []*Node { return []*Node{task.Loss(s, in)} })
				if err != nil {
					t.Fatal(err)
				}
				in, _, _ := task.Batch(0, 0)
				if _, err := x.Call(in[0], in[1]); err != nil {
					t.Fatal(err)
				}
				return float32s(t, store)
			}()
			// The weights and Adam's moments (linear in the gradient, which the normalised
			// update is not).
			whole, cached := run(0), run(tc.mini)
			if len(whole) != len(cached) {
				t.Fatalf("cached run has %d variables, whole %d", len(cached), len(whole))
			}
			moved := 0.0
			for p, w := range whole {
				c, ok := cached[p]
				if !ok || len(c) != len(w) {
					t.Fatalf("variable %s: cached run has %d values, whole %d", p, len(c), len(w))
				}
				for i := range w {
					if d := math.Abs(float64(c[i] - w[i])); d > 1e-6+1e-4*math.Abs(float64(w[i])) {
						t.Fatalf("variable %s[%d]: cached %v, whole %v", p, i, c[i], w[i])
					}
					if i0, ok := init[p]; ok {
						moved = max(moved, math.Abs(float64(w[i]-i0[i])))
					}
				}
			}
			if moved < 1e-2 {
				t.Fatalf("the weights moved by at most %g: the comparison says nothing", moved)
			}
		})
	}
}

func cachedReplaysDropout(t *testing.T, name string) {
	be := openOrSkip(t, name)
	run := func() error {
		task := &cachedToy{toyTask: toyTask{seed: 7, batches: 3}, mini: 4, rate: 0.3}
		cfg := toyConfig(filepath.Join(t.TempDir(), "run"))
		_, err := Run(be, newToyStore(), task, cfg, false)
		return err
	}
	if err := run(); err != nil {
		t.Fatalf("replayed: %v", err)
	}
	noReplay = true
	defer func() { noReplay = false }()
	if err := run(); err == nil || !strings.Contains(err.Error(), "not replayed") {
		t.Fatalf("not replayed: got %v, want the replay check's error", err)
	}
}

// TestCachedResumeBitIdentical: a cached run (dropout on) stopped and resumed ends with the
// uninterrupted cached run's weights, bit for bit.
func TestCachedResumeBitIdentical(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := func() *cachedToy {
		return &cachedToy{toyTask: toyTask{seed: 3, batches: 5}, mini: 6, rate: 0.2}
	}
	ref := newToyStore()
	if _, err := Run(be, ref, task(), toyConfig(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weightsBytes(t, ref)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := toyConfig(dir)
	cfg.StopAfter = 7 // after the checkpoint at step 4: three steps are redone
	if _, err := Run(be, newToyStore(), task(), cfg, false); !errors.Is(err, ErrStopped) {
		t.Fatalf("stop: %v", err)
	}
	cfg.StopAfter = 0
	resumed := model.NewStore()
	if _, err := Run(be, resumed, task(), cfg, true); err != nil {
		t.Fatal(err)
	}
	got := weightsBytes(t, resumed)
	for p, w := range want {
		if string(got[p]) != string(w) {
			t.Fatalf("variable %s differs from the uninterrupted run", p)
		}
	}
}

func TestRowsAndSplit(t *testing.T) {
	x := tensors.FromValue([][]int32{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}})
	m := tensors.FromValue([][]bool{{true, false}, {true, true}, {false, false}, {true, true}, {false, true}})
	cs, err := SplitRows(2, 2, x, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 {
		t.Fatalf("%d chunks, want 3", len(cs))
	}
	if got := cs[2].Inputs[0].Value().([][]int32); len(got) != 1 || got[0][0] != 9 || got[0][1] != 10 {
		t.Errorf("last chunk ids %v, want [[9 10]]", got)
	}
	if got := cs[1].Inputs[1].Value().([][]bool); got[0][0] || !got[1][1] {
		t.Errorf("second chunk mask %v, want [[false false] [true true]]", got)
	}
	if cs[0].Kind != 2 {
		t.Errorf("kind %d, want 2", cs[0].Kind)
	}
	all, err := concatRows([]*tensors.Tensor{cs[0].Inputs[0], cs[1].Inputs[0], cs[2].Inputs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Value().([][]int32); len(got) != 5 || got[4][1] != 10 || got[2][0] != 5 {
		t.Errorf("concatenated %v, want the input back", got)
	}
	for _, bad := range []struct {
		name string
		fn   func() error
	}{
		{"rows out of range", func() error { _, err := Rows(x, 3, 6); return err }},
		{"mini-batch 0", func() error { _, err := SplitRows(0, 0, x); return err }},
		{"row counts differ", func() error { _, err := SplitRows(0, 2, x, tensors.FromValue([]int32{1, 2})); return err }},
	} {
		if err := bad.fn(); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

// TestCachedRefusesDevices: GradCache runs on one device; a run asking for more is refused
// before anything is built.
func TestCachedRefusesDevices(t *testing.T) {
	be := openOrSkip(t, "go")
	dir := filepath.Join(t.TempDir(), "run")
	cfg := toyConfig(dir)
	cfg.Devices = 2
	_, err := Run(be, newToyStore(), &cachedToy{toyTask: toyTask{seed: 1, batches: 2}, mini: 4}, cfg, false)
	if err == nil || !strings.Contains(err.Error(), "(GradCache) run on one device") {
		t.Fatalf("-devices 2 with mini-batches: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run left %s behind (%v)", dir, err)
	}
}
