package encoder_test

import (
	"reflect"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/models/encoder"
)

// Map splits what is left under a full batch into powers of two, so that no batch is padded
// with copies of a row: 17 sequences in batches of up to 32 are one call of 16 rows and one
// of 1 (not 32 rows, 15 of them wasted).
func TestMapPowerOfTwoChunks(t *testing.T) {
	tok := testTokenizer(t)
	for _, c := range []struct {
		n, batch int
		rows     []int
	}{
		{17, 32, []int{16, 1}},
		{40, 32, []int{32, 8}},
		{23, 32, []int{16, 4, 2, 1}},
		{64, 32, []int{32, 32}},
		{7, 2, []int{2, 2, 2, 1}},
		{50, 48, []int{48, 2}},
	} {
		seqs := make([][]int32, c.n)
		for i := range seqs {
			seqs[i] = tok.Single("hello world", 8)
		}
		var rows []int
		call := func(ids, _, _ *tensors.Tensor) (*tensors.Tensor, error) {
			n := ids.Shape().Dimensions[0]
			rows = append(rows, n)
			return tensors.FromFlatDataAndDimensions(make([]float32, n), n, 1), nil
		}
		out, err := encoder.Map(tok, seqs, nil, 8, c.batch, call)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != c.n || !reflect.DeepEqual(rows, c.rows) {
			t.Errorf("%d sequences in batches of %d: %d results from calls of %v rows, want %v", c.n, c.batch, len(out), rows, c.rows)
		}
	}
}
