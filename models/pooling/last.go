package pooling

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// Last pools the last real token's state: sentence-transformers' "lasttoken" pooling, what
// decoder embedders (Qwen3-Embedding) use, their last token seeing the whole text.
const Last Pooling = "lasttoken"

// LastToken returns the state [batch, hidden] of each row's last real token of hidden
// [batch, seq, hidden], as sentence-transformers' lasttoken pooling picks it: the last
// position whose mask [batch, seq] is non-zero (with right padding the last real token, with
// left padding the last position), the last position for a row without real tokens, and the
// state multiplied by its mask value (zero for such a row).
func LastToken(hidden, mask *Node) *Node {
	g := hidden.Graph()
	d := hidden.Shape().Dimensions
	batch, seq := d[0], d[1]
	pos := Iota(g, shapes.Make(dtypes.Int32, batch, seq), 1)
	real := NotEqual(mask, ScalarZero(g, mask.DType()))
	last := ReduceAndKeep(Where(real, pos, Scalar(g, dtypes.Int32, -1)), ReduceMax, 1) // [batch, 1]
	last = Where(LessThan(last, ScalarZero(g, dtypes.Int32)), Scalar(g, dtypes.Int32, seq-1), last)
	pick := ConvertDType(Equal(pos, last), hidden.DType())             // one-hot [batch, seq]
	w := InsertAxes(Mul(pick, ConvertDType(mask, hidden.DType())), -1) // [batch, seq, 1]
	return ReduceSum(Mul(hidden, w), 1)
}
