package encoder

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/tokenize"
)

// Tensors turns a padded batch into the int32 [rows, b.Len] tensors every encoder graph
// takes: token ids, token types and the attention mask.
func Tensors(b tokenize.Batch) (ids, types, mask *tensors.Tensor) {
	n := len(b.IDs)
	fi := make([]int32, 0, n*b.Len)
	ft := make([]int32, 0, n*b.Len)
	fm := make([]int32, 0, n*b.Len)
	for i := range b.IDs {
		fi = append(fi, b.IDs[i]...)
		ft = append(ft, b.Types[i]...)
		fm = append(fm, b.Mask[i]...)
	}
	return tensors.FromFlatDataAndDimensions(fi, n, b.Len),
		tensors.FromFlatDataAndDimensions(ft, n, b.Len),
		tensors.FromFlatDataAndDimensions(fm, n, b.Len)
}

// Call runs a graph over one padded batch: ids, types and mask [rows, len] -> a result whose
// first axis is the rows.
type Call func(ids, types, mask *tensors.Tensor) (*tensors.Tensor, error)

// Map is the inference batching path: it pads seqs (token ids, specials included; types may be
// nil for all zeros) with tok into batches of batch rows or, for the last ones, of a power of
// two rows, taking sequences in order of length so that each batch pads little and its length
// is one of tok's buckets (a graph compiles once per bucket and batch size), runs call on each batch and returns, in input
// order, each sequence's row of the results flattened: [hidden] for a pooled [rows, hidden]
// result, [len*hidden] (len the batch's padded length) for token states. Sequences longer than
// maxLen are cut (maxLen <= 0: no limit).
func Map(tok *tokenize.Tokenizer, seqs, types [][]int32, maxLen, batch int, call Call) ([][]float32, error) {
	if types != nil && len(types) != len(seqs) {
		return nil, fmt.Errorf("encoder: %d token type rows for %d sequences", len(types), len(seqs))
	}
	order := make([]int, len(seqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(seqs[order[a]]) < len(seqs[order[b]]) })
	batch = max(batch, 1)
	out := make([][]float32, len(seqs))
	for start, size := 0, 0; start < len(order); start += size {
		// A batch of batch rows, or, for fewer sequences left, the largest power of two of
		// them (17 left: 16, then 1), so that no batch pads rows (Rows) and each takes the
		// length bucket of its own longest sequence.
		size = min(batch, len(order)-start)
		if size < batch {
			size = 1 << (bits.Len(uint(size)) - 1)
		}
		idx := order[start : start+size]
		sub := make([][]int32, len(idx))
		var subT [][]int32
		if types != nil {
			subT = make([][]int32, len(idx))
		}
		for j, i := range idx {
			sub[j] = seqs[i]
			if types != nil {
				subT[j] = types[i]
			}
		}
		// Rows too come in buckets (powers of two up to batch; the extra rows repeat the
		// last sequence and are dropped), so that a long-lived caller embedding batches of
		// every size compiles a bounded number of graphs.
		for rows := Rows(len(idx), batch); len(sub) < rows; {
			sub = append(sub, sub[len(sub)-1])
			if subT != nil {
				subT = append(subT, subT[len(subT)-1])
			}
		}
		res, err := call(Tensors(tok.Pad(sub, subT, maxLen)))
		if err != nil {
			return nil, err
		}
		if d := res.Shape().Dimensions; len(d) == 0 || d[0] != len(sub) {
			return nil, fmt.Errorf("encoder: batch of %d rows gave a result of shape %s", len(sub), res.Shape())
		}
		flat, err := tensors.CopyFlatData[float32](res)
		if err != nil {
			return nil, fmt.Errorf("encoder: %w", err)
		}
		n := len(flat) / len(sub)
		for j, i := range idx {
			out[i] = flat[j*n : (j+1)*n : (j+1)*n]
		}
	}
	return out, nil
}

// Rows is the row count Map pads a batch of n sequences to: the next power of two, at most
// batch (and at least n).
func Rows(n, batch int) int {
	r := 1
	for r < n {
		r *= 2
	}
	return max(min(r, batch), n)
}

// Runner runs an encoder with a pooling for inference: a graph compiled per input shape
// (each Map bucket), over the variables under a base scope of a store. Variables missing from
// the store are created by the encoder's initialisers (from the store's seed) on first use.
type Runner struct {
	exec *SafeExec
}

// NewRunner prepares cfg with pooling p over the variables under base ("" is the root).
func NewRunner(be compute.Backend, store *model.Store, base string, cfg Config, p Pooling) (*Runner, error) {
	return NewRunnerCompute(be, store, base, cfg, p, dtypes.Float32)
}

// computeTypes are the model types whose graphs run their matrix multiplications in the
// dtype hflayers.ComputeParam sets: their Linear layers are hflayers.Spec.Dense or
// hflayers.ComputeDense and their attention products hflayers.ComputeEinsum. Not wordbag,
// which has no matrix multiplication to lower.
var computeTypes = []string{"bert", "xlm-roberta", "mpnet", "deberta-v2", "modernbert", "qwen3", "gemma3_text"}

// CheckCompute returns nil when cfg's encoder computes its matrix multiplications in dt
// (Float32, the zero value: every encoder; BFloat16: the transformer encoders, computeTypes),
// else an error naming the model type.
func CheckCompute(cfg Config, dt dtypes.DType) error {
	if dt == dtypes.InvalidDType || dt == dtypes.Float32 || slices.Contains(computeTypes, cfg.ModelType()) {
		return nil
	}
	return fmt.Errorf("encoder: the %s encoder has no %s path (mixed precision runs on the %s encoders)", cfg.ModelType(), dt, strings.Join(computeTypes, ", "))
}

// NewRunnerCompute is NewRunner with the encoder's matrix multiplications in the dtype
// compute (hflayers.ComputeParam): dtypes.BFloat16 for bf16 mixed precision (the weights and
// the output stay float32), Float32 (or the zero value) as NewRunner.
func NewRunnerCompute(be compute.Backend, store *model.Store, base string, cfg Config, p Pooling, compute dtypes.DType) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckCompute(cfg, compute); err != nil {
		return nil, err
	}
	if _, err := ParsePooling(string(p)); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	if p == PoolPooler && !cfg.HasPooler() {
		return nil, fmt.Errorf("encoder: pooling %q needs the pooler weights, which this model does not have", p)
	}
	shared := sharesWeights(be)
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, types, mask *Node) *Node {
		s := In(root, base)
		if shared {
			VariablesAsParameters(s, ids.Graph(), checkpoints.OptimizerScope)
		}
		if compute != dtypes.InvalidDType && compute != dtypes.Float32 {
			s.SetGraphParam(ids.Graph(), hflayers.ComputeParam, compute)
		}
		return cfg.Pool(s, cfg.Encode(s, ids, types, mask), mask, p)
	})
	if err != nil {
		return nil, err
	}
	if !shared {
		return &Runner{exec: Guard(exec)}, nil
	}
	return &Runner{exec: GuardShared(exec, store, be)}, nil
}

// Call runs one padded batch (a Call): pooled vectors [rows, hidden], or the last hidden
// states [rows, len, hidden] with PoolNone.
func (r *Runner) Call(ids, types, mask *tensors.Tensor) (*tensors.Tensor, error) {
	out, err := r.exec.Call1(ids, types, mask)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return out, nil
}
