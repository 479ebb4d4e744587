package bert

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/paritytest"
)

// expected is written by scripts/parity/make_bert_fixture.py (PyTorch reference).
type expected struct {
	IDs, Types, Mask [][]int32 `json:"-"`
	RawIDs           [][]int32 `json:"ids"`
	RawTypes         [][]int32 `json:"token_types"`
	RawMask          [][]int32 `json:"mask"`
	Lengths          []int     `json:"lengths"`
	HiddenShape      []int     `json:"hidden_shape"`
	Hidden           []float64 `json:"last_hidden_state"`
	CLS              []float64 `json:"cls"`
	Mean             []float64 `json:"mean"`
	Pooler           []float64 `json:"pooler"`
}

// fixtureDir gunzips the committed fixture checkpoint (testdata/tiny: config.json and
// model.safetensors.gz, see scripts/parity/make_bert_fixture.py) into an HF directory.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile("testdata/tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/tiny/model.safetensors.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// parityTol bounds the max abs difference from PyTorch's float32 BertModel on the fixture
// (README, "Encoding"). Measured: go 1.31e-6, onnx 1.43e-6 (last_hidden_state), onnx vs go
// 1.25e-6.
const parityTol = 2e-6

// loadFixture opens the backend backendName (skipping t when there is none) and loads the
// fixture checkpoint into a new store, with its expected outputs.
func loadFixture(t *testing.T, backendName string) (compute.Backend, *expected, *model.Store, *Config) {
	t.Helper()
	be := paritytest.Backend(t, backendName)
	e := paritytest.Expected[expected](t)
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), fixtureDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return be, e, store, cfg
}

// checkParity loads the fixture checkpoint and compares every pooling with PyTorch, within tol.
func checkParity(t *testing.T, backendName string, tol float64) map[Pooling][]float32 {
	be, e, store, cfg := loadFixture(t, backendName)
	out := map[Pooling][]float32{}
	for _, tc := range []struct {
		p    Pooling
		want []float64
	}{{PoolNone, e.Hidden}, {PoolCLS, e.CLS}, {PoolMean, e.Mean}, {PoolPooler, e.Pooler}} {
		r, err := NewRunner(be, store, "", cfg, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(e.RawIDs, e.RawTypes, e.RawMask)
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](res)
		d := paritytest.MaxDiff(got, tc.want)
		t.Logf("%s/%s: max |%s - torch| = %.2e", backendName, tc.p, backendName, d)
		if d > tol {
			t.Errorf("%s pooling %s differs from PyTorch by %.2e (> %.0e)", backendName, tc.p, d, tol)
		}
		out[tc.p] = got
	}
	// Padding must not change results: each text alone, unpadded, equals its row in the batch.
	r, err := NewRunner(be, store, "", cfg, PoolNone)
	if err != nil {
		t.Fatal(err)
	}
	seq, h := e.HiddenShape[1], e.HiddenShape[2]
	for i, n := range e.Lengths {
		res, err := r.Run([][]int32{e.RawIDs[i][:n]}, [][]int32{e.RawTypes[i][:n]}, [][]int32{e.RawMask[i][:n]})
		if err != nil {
			t.Fatal(err)
		}
		alone := tensors.MustCopyFlatData[float32](res)
		want := e.Hidden[i*seq*h : i*seq*h+n*h]
		d := paritytest.MaxDiff(alone, want)
		t.Logf("%s: text %d alone, unpadded: max |%s - torch| = %.2e", backendName, i, backendName, d)
		if d > tol {
			t.Errorf("text %d alone differs from PyTorch's padded batch row by %.2e (> %.0e)", i, d, tol)
		}
	}
	return out
}

func TestParityPyTorch(t *testing.T) { checkParity(t, "go", parityTol) }
