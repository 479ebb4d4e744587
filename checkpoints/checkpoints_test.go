package checkpoints

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/backend"
)

// newStore makes a store with a float matrix, an int64 counter and the RNG state.
func newStore(t *testing.T) *model.Store {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(7))
	_, err = model.CallOnce(be, store, func(s *model.Scope, g *Graph) *Node {
		s.SetTraining(g, true)
		w := s.In("lin").WithInitializer(initializer.RandomNormalFn(s, 1)).VariableWithShape("weight", shapes.Make(dtypes.Float32, 2, 3))
		c := s.WithInitializer(initializer.Zero).VariableWithShape("count", shapes.Make(dtypes.Int64))
		c.SetNodeValue(AddScalar(c.NodeValue(g), 5))
		return Add(ReduceAllSum(w.NodeValue(g)), ReduceAllSum(s.RandomUniform(g, shapes.Make(dtypes.Float32, 2))))
	})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestSaveLoadRestore(t *testing.T) {
	run := t.TempDir()
	store := newStore(t)
	m := Manifest{Step: 12, Epoch: 1, Position: 3, Seed: 9, Fingerprint: "abc", Metrics: map[string]float64{"ndcg@5": 50}}
	dir, err := Save(run, store, m, map[string][]byte{"config.json": []byte(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint directory has the mode a 0755 mkdir gets (os.MkdirTemp would give 0700).
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.Mkdir(ref, 0o755); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(ref)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("checkpoint directory mode %v (%v), want %v", fi.Mode().Perm(), err, want.Mode().Perm())
	}
	steps, _ := List(run)
	if !reflect.DeepEqual(steps, []int{12}) {
		t.Fatalf("List = %v", steps)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Manifest.Step != 12 || c.Manifest.Fingerprint != "abc" || c.Manifest.Metrics["ndcg@5"] != 50 {
		t.Fatalf("manifest %+v", c.Manifest)
	}
	if b, _ := c.File("config.json"); string(b) != `{"x":1}` {
		t.Fatalf("extra file %q", b)
	}
	be, _ := backend.Open("go")
	fresh := model.NewStore()
	if err := c.Restore(fresh, be); err != nil {
		t.Fatal(err)
	}
	for v := range store.IterVariables() {
		got := fresh.GetVariable(v.Path())
		if got == nil {
			t.Fatalf("variable %s not restored", v.Path())
		}
		var a, b []byte
		v.MustValue().ConstBytes(func(x []byte) { a = append(a, x...) })
		got.MustValue().ConstBytes(func(x []byte) { b = append(b, x...) })
		if !reflect.DeepEqual(a, b) || !v.Shape().Equal(got.Shape()) {
			t.Fatalf("variable %s differs after restore", v.Path())
		}
	}
	if tensors.ToScalar[int64](fresh.GetVariable("/count").MustValue()) != 5 {
		t.Fatal("int64 counter not restored")
	}
	// Restoring builds no graph: with no backend at all it still restores every variable (an
	// initialisation graph, which XLA compiled the weights into, would need one).
	bare := model.NewStore()
	if err := c.Restore(bare, nil); err != nil {
		t.Fatalf("restore with no backend: %v", err)
	}
	if n := len(slices.Collect(bare.IterVariables())); n != len(slices.Collect(store.IterVariables())) {
		t.Fatalf("restored %d variables with no backend", n)
	}
}

func TestCorruptionDetected(t *testing.T) {
	run := t.TempDir()
	dir, err := Save(run, newStore(t), Manifest{Step: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, variablesFile)
	b, _ := os.ReadFile(p)
	for _, tc := range []struct {
		name   string
		mutate func()
		want   string
	}{
		{"truncated", func() { os.WriteFile(p, b[:len(b)-7], 0o644) }, "variables.safetensors is corrupt or truncated"},
		{"flipped byte", func() {
			c := append([]byte(nil), b...)
			c[len(c)-1] ^= 0xff
			os.WriteFile(p, c, 0o644)
		}, "corrupt or truncated"},
		{"missing manifest", func() { os.Remove(filepath.Join(dir, manifestFile)) }, "state.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.mutate()
			defer os.WriteFile(p, b, 0o644)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %v, want %q naming the checkpoint", err, tc.want)
			}
		})
	}
}

func TestShapeMismatchNeverHalfLoads(t *testing.T) {
	run := t.TempDir()
	dir, _ := Save(run, newStore(t), Manifest{Step: 2}, nil)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	v, _ := store.RootScope().In("lin").CreateVariable("weight", tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2))
	be, _ := backend.Open("go")
	err = c.Restore(store, be)
	if err == nil || !strings.Contains(err.Error(), "/lin/weight") {
		t.Fatalf("want shape error naming /lin/weight, got %v", err)
	}
	if store.GetVariable("/count") != nil || v.MustValue().Shape().Dimensions[0] != 2 {
		t.Fatal("a failed restore modified the store")
	}
}

func TestPruneKeepsBest(t *testing.T) {
	run := t.TempDir()
	store := newStore(t)
	for _, s := range []int{1, 2, 3, 4, 5} {
		if _, err := Save(run, store, Manifest{Step: s}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted save leaves a temporary directory: it is never listed.
	os.MkdirAll(filepath.Join(run, "checkpoints", ".tmp-step-000000006-x"), 0o755)
	if err := Prune(run, 2, 2); err != nil {
		t.Fatal(err)
	}
	steps, _ := List(run)
	if !reflect.DeepEqual(steps, []int{2, 4, 5}) {
		t.Fatalf("after prune: %v", steps)
	}
}
