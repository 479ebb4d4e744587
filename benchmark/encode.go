package benchmark

import (
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// EncodeBatch is one padded batch of token ids and attention masks, as encoder.Map forms it.
type EncodeBatch struct {
	IDs  [][]int32 `json:"ids"`
	Mask [][]int32 `json:"mask"`
}

// EncodeSizes are the sizes of the encoders EncodeBatches counts FLOPs for.
type EncodeSizes struct {
	Layers, Hidden, Intermediate int
}

// RecordEncodeBatches records, by a dry run of encoder.Map over seqs (texts of at most
// maxLen tokens, batch texts a batch), the exact batches an encoding pass runs (length-sorted
// and bucketed), with their padded tokens and the forward matmul FLOPs of an encoder of
// sizes s over them (EncoderForwardFLOPs).
func RecordEncodeBatches(tok *tokenize.Tokenizer, seqs [][]int32, maxLen, batch int, s EncodeSizes) (batches []EncodeBatch, tokens int, flops float64, err error) {
	_, err = encoder.Map(tok, seqs, nil, maxLen, batch, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		rows, l := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
		fi, fm := tensors.MustCopyFlatData[int32](ids), tensors.MustCopyFlatData[int32](mask)
		var b EncodeBatch
		for r := 0; r < rows; r++ {
			b.IDs, b.Mask = append(b.IDs, fi[r*l:(r+1)*l]), append(b.Mask, fm[r*l:(r+1)*l])
		}
		batches = append(batches, b)
		tokens += rows * l
		flops += EncoderForwardFLOPs(s.Layers, s.Hidden, s.Intermediate, rows, l)
		return tensors.FromShape(shapes.Make(dtypes.Float32, rows)), nil
	})
	return batches, tokens, flops, err
}

// TimeEncode times encoding seqs (at most maxLen tokens, batch texts a batch) with a
// randomly initialised encoder cfg (mean pooling, seed 1) on be: one untimed pass compiles
// every bucket, then the best of three passes, run under profile when not nil.
func TimeEncode(be compute.Backend, cfg encoder.Config, tok *tokenize.Tokenizer, seqs [][]int32, maxLen, batch int, profile func(func() error) error) (time.Duration, error) {
	return TimeEncodePasses(be, cfg, tok, seqs, maxLen, batch, 3, profile)
}

// TimeEncodePasses is TimeEncode with the best of passes timed passes.
func TimeEncodePasses(be compute.Backend, cfg encoder.Config, tok *tokenize.Tokenizer, seqs [][]int32, maxLen, batch, passes int, profile func(func() error) error) (time.Duration, error) {
	return TimeEncodeCompute(be, cfg, tok, seqs, maxLen, batch, passes, dtypes.Float32, profile)
}

// TimeEncodeCompute is TimeEncodePasses with the encoder's matrix multiplications in compute
// (encoder.NewRunnerCompute: dtypes.BFloat16 for bf16 mixed precision).
func TimeEncodeCompute(be compute.Backend, cfg encoder.Config, tok *tokenize.Tokenizer, seqs [][]int32, maxLen, batch, passes int, compute dtypes.DType, profile func(func() error) error) (time.Duration, error) {
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(1))
	r, err := encoder.NewRunnerCompute(be, store, "", cfg, encoder.PoolMean, compute)
	if err != nil {
		return 0, err
	}
	pass := func() (time.Duration, error) {
		start := time.Now()
		_, err := encoder.Map(tok, seqs, nil, maxLen, batch, r.Call)
		return time.Since(start), err
	}
	if _, err := pass(); err != nil { // compiles every bucket
		return 0, err
	}
	if profile == nil {
		profile = func(f func() error) error { return f() }
	}
	best := time.Duration(1 << 62)
	err = profile(func() error {
		for range max(passes, 1) {
			el, err := pass()
			if err != nil {
				return err
			}
			best = min(best, el)
		}
		return nil
	})
	return best, err
}

// NumParams is the number of parameters of an encoder configuration.
func NumParams(cfg encoder.Config) int {
	n := 0
	for _, p := range cfg.Params() {
		k := 1
		for _, d := range p.Shape {
			k *= d
		}
		n += k
	}
	return n
}
