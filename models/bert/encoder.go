package bert

import (
	"fmt"
	"sort"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Batcher is the tokenization a TextEncoder needs (tokenize.Tokenizer implements it).
type Batcher interface {
	Single(text string, maxLen int) []int32
	PadID() int32
}

// TextEncoder encodes texts with a BERT model: tokenization, length-sorted bucketed batches
// (a graph compiles once per bucket), pooling, results in input order.
type TextEncoder struct {
	Tok       Batcher
	MaxLen    int
	BatchSize int
	runner    *Runner
}

// NewTextEncoder prepares an encoder for the BERT under base in store.
func NewTextEncoder(be compute.Backend, store *model.Store, base string, cfg *Config, pooling Pooling, tok Batcher, maxLen, batch int) (*TextEncoder, error) {
	if maxLen <= 0 || maxLen > cfg.MaxPositionEmbeddings {
		maxLen = cfg.MaxPositionEmbeddings
	}
	r, err := NewRunner(be, store, base, cfg, pooling)
	if err != nil {
		return nil, err
	}
	return &TextEncoder{Tok: tok, MaxLen: maxLen, BatchSize: max(batch, 1), runner: r}, nil
}

// Encoded is one text's result: its token ids and either its pooled embedding or (pooling
// none) its token states.
type Encoded struct {
	IDs       []int32
	Embedding []float32
	Hidden    [][]float32
}

// Encode encodes texts; each result holds ids and the embedding (or hidden states).
func (e *TextEncoder) Encode(texts []string) ([]Encoded, error) {
	out := make([]Encoded, len(texts))
	for i, s := range texts {
		out[i].IDs = e.Tok.Single(s, e.MaxLen)
	}
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(out[order[a]].IDs) < len(out[order[b]].IDs) })
	for start := 0; start < len(order); start += e.BatchSize {
		idx := order[start:min(start+e.BatchSize, len(order))]
		longest := 0
		for _, i := range idx {
			longest = max(longest, len(out[i].IDs))
		}
		l := bucket(longest, e.MaxLen)
		ids, types, mask := make([][]int32, len(idx)), make([][]int32, len(idx)), make([][]int32, len(idx))
		for j, i := range idx {
			ids[j], types[j], mask[j] = make([]int32, l), make([]int32, l), make([]int32, l)
			for k := range ids[j] {
				ids[j][k] = e.Tok.PadID()
			}
			copy(ids[j], out[i].IDs)
			for k := range out[i].IDs {
				mask[j][k] = 1
			}
		}
		res, err := e.runner.Run(ids, types, mask)
		if err != nil {
			return nil, err
		}
		flat := tensors.MustCopyFlatData[float32](res)
		dims := res.Shape().Dimensions
		for j, i := range idx {
			if len(dims) == 2 {
				out[i].Embedding = flat[j*dims[1] : (j+1)*dims[1]]
				continue
			}
			h := dims[2]
			n := len(out[i].IDs)
			out[i].Hidden = make([][]float32, n)
			for k := 0; k < n; k++ {
				off := (j*dims[1] + k) * h
				out[i].Hidden[k] = flat[off : off+h]
			}
		}
	}
	return out, nil
}

var buckets = []int{8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}

func bucket(n, maxLen int) int {
	for _, b := range buckets {
		if b >= n {
			return min(b, maxLen)
		}
	}
	return min(n, maxLen)
}

// String describes the encoder.
func (e *TextEncoder) String() string {
	return fmt.Sprintf("bert encoder (max len %d, batch %d)", e.MaxLen, e.BatchSize)
}
