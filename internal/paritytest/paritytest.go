// Package paritytest holds what the models' parity tests share: the fixture's expected.json
// (written by scripts/parity from transformers and sentence-transformers), int32 rows as a
// tensor, running texts unpadded, the distances max |toolret - reference|, the variables
// after a SaveHF round trip, the backend a test runs on, and the measures a bf16 pass is
// compared with an fp32 one by.
package paritytest

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/hfweights"
)

// Expected decodes testdata/expected.json into a new T, failing tb when it cannot.
func Expected[T any](tb testing.TB) *T {
	tb.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		tb.Fatal(err)
	}
	var e T
	if err := json.Unmarshal(b, &e); err != nil {
		tb.Fatal(err)
	}
	return &e
}

// Backend opens the backend name (backend.Open), skipping tb when this machine has none.
func Backend(tb testing.TB, name string) compute.Backend {
	tb.Helper()
	be, err := backend.Open(name)
	if err != nil {
		tb.Skipf("backend %s: %v", name, err)
	}
	return be
}

// Flat is the rows x (all of one length) as an int32 tensor [len(x), len(x[0])].
func Flat(x [][]int32) *tensors.Tensor {
	var f []int32
	for _, r := range x {
		f = append(f, r...)
	}
	return tensors.FromFlatDataAndDimensions(f, len(x), len(x[0]))
}

// Concat is the rows one after the other (the flat data of a batch of embeddings).
func Concat(rows [][]float64) []float64 {
	var f []float64
	for _, r := range rows {
		f = append(f, r...)
	}
	return f
}

// F64 is x in float64.
func F64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// Alone runs exec on the text ids alone, unpadded (a mask of ones), failing tb on an error.
func Alone(tb testing.TB, exec *model.Exec, ids []int32) []*tensors.Tensor {
	tb.Helper()
	mask := make([]int32, len(ids))
	for j := range mask {
		mask[j] = 1
	}
	out, err := exec.Exec(Flat([][]int32{ids}), Flat([][]int32{mask}))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// MaxDiff is max |got - want|, +Inf when the lengths differ.
func MaxDiff(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range got {
		m = math.Max(m, math.Abs(float64(got[i])-want[i]))
	}
	return m
}

// Cosine is the cosine of the vectors a and b (sums in float64), NaN when either is zero.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		x, y := float64(a[i]), float64(b[i])
		dot, na, nb = dot+x*y, na+x*x, nb+y*y
	}
	return dot / math.Sqrt(na*nb)
}

// Spread is max |a - b| (+Inf when the lengths differ), max |a| (the scale diff is measured
// against) and whether a and b are equal at every position.
func Spread(a, b []float32) (diff, scale float64, same bool) {
	if len(a) != len(b) {
		return math.Inf(1), 0, false
	}
	same = true
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		diff, scale = max(diff, math.Abs(x-y)), max(scale, math.Abs(x))
		same = same && x == y
	}
	return diff, scale, same
}

// MaskedDiff is max |got - want| over the positions [batch, seq, hidden] whose mask is 1,
// +Inf when the lengths differ.
func MaskedDiff(got []float32, want []float64, mask [][]int32, hidden int) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	m, seq := 0.0, len(mask[0])
	for i := range got {
		tok := i / hidden
		if mask[tok/seq][tok%seq] == 0 {
			continue
		}
		m = math.Max(m, math.Abs(float64(got[i])-want[i]))
	}
	return m
}

// SameVariables checks that the stores a and b hold the same values for params (HF names,
// placed as hfweights places them), naming what (as "prefix true") in each error.
func SameVariables(tb testing.TB, a, b *model.Store, params []hfweights.Param, what string) {
	tb.Helper()
	for _, p := range params {
		sc, vn := hfweights.VariablePath("/", p.Name)
		path := model.JoinPath(sc, vn)
		va, vb := a.GetVariable(path), b.GetVariable(path)
		if va == nil || vb == nil {
			tb.Fatalf("%s: variable %s missing", what, p.Name)
		}
		if !slices.Equal(tensors.MustCopyFlatData[float32](va.MustValue()), tensors.MustCopyFlatData[float32](vb.MustValue())) {
			tb.Errorf("%s: %s differs after the round trip", what, p.Name)
		}
	}
}

// EachAlone runs each text of ids alone (Alone) and compares output out with the text's row
// of want. It returns the outputs and the largest distance, and calls over with each text
// further than tol.
func EachAlone(tb testing.TB, exec *model.Exec, ids [][]int32, out int, want [][]float64, tol float64, over func(i int, d float64)) ([][]float32, float64) {
	tb.Helper()
	var got [][]float32
	worst := 0.0
	for i, row := range ids {
		g := tensors.MustCopyFlatData[float32](Alone(tb, exec, row)[out])
		d := MaxDiff(g, want[i])
		worst = max(worst, d)
		if d > tol {
			over(i, d)
		}
		got = append(got, g)
	}
	return got, worst
}
