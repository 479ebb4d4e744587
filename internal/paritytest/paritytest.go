// Package paritytest holds what the models' parity tests share: the fixture's expected.json
// (written by scripts/parity from transformers and sentence-transformers), int32 rows as a
// tensor, running one text unpadded, and the distances max |toolret - reference|.
package paritytest

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
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
