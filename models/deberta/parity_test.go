package deberta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
)

// fixture is one configuration written by scripts/deberta/make_fixture.py (PyTorch
// reference of HF's DebertaV2Model).
type fixture struct {
	dir     string
	IDs     [][]int32 `json:"ids"`
	Types   [][]int32 `json:"token_types"`
	Mask    [][]int32 `json:"mask"`
	Lengths []int     `json:"lengths"`
	Hidden  int       `json:"hidden"`
	Buckets []int     `json:"buckets"` // r(d) for d = -(S-1)..S-1
	Pooler  []float64 `json:"pooler"`
	states  []float32 // last hidden states of the non-pad positions, row by row
}

var fixtures = []string{"v3", "buckets8", "embproj"}

func loadFixture(t *testing.T, name string) *fixture {
	t.Helper()
	f := &fixture{dir: filepath.Join("testdata", name)}
	b, err := os.ReadFile(filepath.Join(f.dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, f); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(f.dir, "hidden.f32"))
	if err != nil {
		t.Fatal(err)
	}
	f.states = make([]float32, len(raw)/4)
	if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, f.states); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range f.Lengths {
		n += l
	}
	if len(f.states) != n*f.Hidden {
		t.Fatalf("%s: %d hidden values for %d positions of width %d", name, len(f.states), n, f.Hidden)
	}
	return f
}

// load reads the fixture's HF directory, returning the config and what LoadHF wrote on
// Warnings.
func (f *fixture) load(t *testing.T, store *model.Store) (*Config, string) {
	t.Helper()
	var log bytes.Buffer
	Warnings = &log
	defer func() { Warnings = os.Stderr }()
	cfg, err := LoadHF(store.RootScope(), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, log.String()
}

// run encodes a padded batch with pooling p (PoolNone: all states).
func run(t *testing.T, be compute.Backend, store *model.Store, cfg *Config, p Pooling, ids, types, mask [][]int32) []float32 {
	t.Helper()
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, types, mask *Node) *Node {
		return Pool(root, cfg, Encode(root, cfg, ids, types, mask), mask, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	flat := func(x [][]int32) *tensors.Tensor {
		var d []int32
		for _, r := range x {
			d = append(d, r...)
		}
		return tensors.FromFlatDataAndDimensions(d, len(x), len(x[0]))
	}
	out, err := exec.Call1(flat(ids), flat(types), flat(mask))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out)
}

// parityTol bounds |toolret - PyTorch| on every non-pad position of the fixtures (the
// acceptance bound is 1e-4; measured: go 1.79e-6, onnx 1.91e-6, onnx vs go 1.91e-6).
const parityTol = 1e-5

// checkParity compares every fixture with PyTorch on a backend and returns the states.
func checkParity(t *testing.T, backendName string) map[string][]float32 {
	be, err := backend.Open(backendName)
	if err != nil {
		t.Skipf("backend %s: %v", backendName, err)
	}
	out := map[string][]float32{}
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, name)
			store := model.NewStore()
			cfg, _ := f.load(t, store)
			seq := len(f.IDs[0])
			for k, want := range f.Buckets {
				if got := Bucket(k-(seq-1), cfg.PositionBuckets, cfg.MaxRelative()); got != want {
					t.Fatalf("Bucket(%d) = %d, PyTorch %d", k-(seq-1), got, want)
				}
			}
			got := run(t, be, store, cfg, PoolNone, f.IDs, f.Types, f.Mask)
			h, worst, off, real := f.Hidden, 0.0, 0, []float32{}
			for i, n := range f.Lengths {
				row := got[i*seq*h : i*seq*h+n*h]
				real = append(real, row...)
				for k, v := range row {
					worst = max(worst, math.Abs(float64(v-f.states[off+k])))
				}
				off += n * h
			}
			t.Logf("%s/%s: %d rows of lengths %v: max |last_hidden_state - torch| over all non-pad positions = %.2e",
				backendName, name, len(f.Lengths), f.Lengths, worst)
			if worst > parityTol {
				t.Errorf("%s: last_hidden_state differs from PyTorch by %.2e (> %.0e)", name, worst, parityTol)
			}
			out[name] = real
			if f.Pooler != nil {
				pooled := run(t, be, store, cfg, PoolPooler, f.IDs, f.Types, f.Mask)
				d := 0.0
				for i, v := range pooled {
					d = max(d, math.Abs(float64(v)-f.Pooler[i]))
				}
				t.Logf("%s/%s: max |ContextPooler - torch| = %.2e", backendName, name, d)
				if d > parityTol || len(pooled) != len(f.Pooler) {
					t.Errorf("%s: pooler output differs from PyTorch by %.2e (> %.0e)", name, d, parityTol)
				}
			}
		})
	}
	return out
}

func TestParityPyTorch(t *testing.T) { checkParity(t, "go") }

// TestPaddingIndependent checks that a text encoded alone, unpadded, gives the states of its
// row in the fixture's padded batch.
func TestPaddingIndependent(t *testing.T) {
	be, _ := backend.Open("go")
	for _, name := range []string{"buckets8", "embproj"} {
		f := loadFixture(t, name)
		store := model.NewStore()
		cfg, _ := f.load(t, store)
		off := 0
		for i, n := range f.Lengths {
			got := run(t, be, store, cfg, PoolNone, [][]int32{f.IDs[i][:n]}, [][]int32{f.Types[i][:n]}, [][]int32{f.Mask[i][:n]})
			d := 0.0
			for k, v := range got {
				d = max(d, math.Abs(float64(v-f.states[off+k])))
			}
			off += n * f.Hidden
			if d > parityTol {
				t.Errorf("%s: text %d alone differs from its padded-batch row in PyTorch by %.2e", name, i, d)
			}
		}
	}
}

// TestLoadSkipsHeads checks that loading the v3 fixture (hub layout: "deberta." prefix,
// pretraining heads, unused absolute position table) reports the skipped tensors on one line.
func TestLoadSkipsHeads(t *testing.T) {
	f := loadFixture(t, "v3")
	store := model.NewStore()
	cfg, log := f.load(t, store)
	if strings.Count(log, "\n") != 1 {
		t.Fatalf("want one line, got %q", log)
	}
	for _, s := range []string{"skipped 12 tensors", "lm_predictions.* (5)", "mask_predictions.* (6)",
		"embeddings.position_embeddings.weight (position_biased_input is false) (1)"} {
		if !strings.Contains(log, s) {
			t.Errorf("line %q does not say %q", log, s)
		}
	}
	if !cfg.HasPooler() || store.NumVariables() != len(Params(cfg)) {
		t.Errorf("pooler %v, %d variables for %d params", cfg.HasPooler(), store.NumVariables(), len(Params(cfg)))
	}
	// A checkpoint with only encoder tensors loads silently.
	store2 := model.NewStore()
	if _, log := loadFixture(t, "embproj").load(t, store2); log != "" {
		t.Errorf("embproj: unexpected warning %q", log)
	}
}
