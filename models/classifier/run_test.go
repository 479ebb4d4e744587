package classifier

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/tokenize"
)

func TestRowBucket(t *testing.T) {
	for _, tc := range []struct{ n, batch, want int }{
		{1, 32, 1}, {2, 32, 2}, {3, 32, 4}, {17, 32, 32}, {32, 32, 32}, {20, 24, 24}, {5, 3, 5},
	} {
		if got := rowBucket(tc.n, tc.batch); got != tc.want {
			t.Errorf("rowBucket(%d, %d) = %d, want %d", tc.n, tc.batch, got, tc.want)
		}
	}
}

// TestRunSortedRows checks RunSorted returns each input's own output in input order while
// calling with power-of-two row counts.
func TestRunSortedRows(t *testing.T) {
	tok, err := tokenize.New([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var seqs [][]int32
	for i := range 11 {
		s := []int32{2}
		for j := 0; j <= i%4; j++ {
			s = append(s, int32(4+j%3))
		}
		seqs = append(seqs, append(s, 3))
	}
	var shapes [][2]int
	out, err := RunSorted(tok, seqs, nil, 16, 8, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		d := ids.Shape().Dimensions
		shapes = append(shapes, [2]int{d[0], d[1]})
		flat := tensors.MustCopyFlatData[int32](ids)
		res := make([]float32, d[0])
		for r := range d[0] {
			for _, v := range flat[r*d[1] : (r+1)*d[1]] {
				res[r] += float32(v)
			}
		}
		return tensors.FromFlatDataAndDimensions(res, d[0], 1), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		want := float32(0)
		for _, v := range s {
			want += float32(v)
		}
		if len(out[i]) != 1 || out[i][0] != want {
			t.Errorf("input %d: got %v, want %v", i, out[i], want)
		}
	}
	for _, sh := range shapes {
		if sh[0]&(sh[0]-1) != 0 {
			t.Errorf("called with %d rows, want a power of two", sh[0])
		}
	}
	if len(shapes) != 2 || shapes[0][0] != 8 || shapes[1][0] != 4 {
		t.Errorf("call shapes %v, want 8 rows then 4 (3 real)", shapes)
	}
}
