package encoder_test

import (
	"reflect"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
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

// MapAnyShape pads each batch to its own longest sequence and adds no rows: the calls see
// exactly the batch's rows and lengths, where Map pads to a length bucket and a power of two.
func TestMapAnyShape(t *testing.T) {
	tok := testTokenizer(t)
	texts := []string{"hello", "hello world", "hello world hello world hello", "world", "hello hello hello"}
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Single(s, 64)
	}
	type shape struct{ rows, len int }
	for _, c := range []struct {
		name string
		fn   func(*tokenize.Tokenizer, [][]int32, [][]int32, int, int, encoder.Call) ([][]float32, error)
	}{{"Map", encoder.Map}, {"MapAnyShape", encoder.MapAnyShape}} {
		var got []shape
		call := func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
			d := ids.Shape().Dimensions
			got = append(got, shape{d[0], d[1]})
			m, _ := tensors.CopyFlatData[int32](mask)
			out := make([]float32, d[0])
			for r := range d[0] { // each row's real length, read from its mask
				for _, v := range m[r*d[1] : (r+1)*d[1]] {
					out[r] += float32(v)
				}
			}
			return tensors.FromFlatDataAndDimensions(out, d[0], 1), nil
		}
		out, err := c.fn(tok, seqs, nil, 64, 3, call)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if int(out[i][0]) != len(s) {
				t.Errorf("%s: text %d: mask length %v, want %d", c.name, i, out[i][0], len(s))
			}
		}
		if c.name == "MapAnyShape" {
			longest := func(idx ...int) int {
				l := 0
				for _, i := range idx {
					l = max(l, len(seqs[i]))
				}
				return l
			}
			// by length: "hello", "world" | "hello world", "hello hello hello" ... batches of 3, then 2.
			want := []shape{{3, longest(0, 3, 1)}, {2, longest(4, 2)}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("MapAnyShape calls %v, want %v", got, want)
			}
		} else if got[1].rows != 2 || got[0].len < got[0].rows {
			t.Errorf("Map calls %v", got)
		}
	}
}
