package bert

import (
	"fmt"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Runner executes a BERT encoder for inference in this package's tests: a compiled graph per
// input shape, running under the variables of scope base in store, with its inputs checked.
// Other packages run encoders with models/encoder (Runner, Map).
type Runner struct {
	cfg  *Config
	exec *model.Exec
}

// In returns the scope for base ("" or "/" is the root) within root.
func In(root *model.Scope, base string) *model.Scope {
	if base == "" || base == "/" {
		return root
	}
	s := root
	for _, p := range splitPath(base) {
		s = s.At("%s", p)
	}
	return s
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if i > start {
				out = append(out, p[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// NewRunner builds a runner returning pooled embeddings [batch, hidden] (or the last hidden
// state [batch, seq, hidden] for PoolNone).
func NewRunner(backend compute.Backend, store *model.Store, base string, cfg *Config, pooling Pooling) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pooling == PoolPooler && !cfg.HasPooler() {
		return nil, fmt.Errorf("bert: pooling %q needs the pooler weights, which this model does not have", pooling)
	}
	exec, err := model.NewExec(backend, store, func(root *model.Scope, ids, types, mask *Node) *Node {
		s := In(root, base)
		h := Encode(s, cfg, ids, types, mask)
		return Pool(s, cfg, h, mask, pooling)
	})
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, exec: exec}, nil
}

// Run encodes a padded batch: ids, types and mask are [batch][seq] int32 of equal lengths.
func (r *Runner) Run(ids, types, mask [][]int32) (*tensors.Tensor, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("bert: empty batch")
	}
	seq := len(ids[0])
	if seq > r.cfg.MaxPositionEmbeddings {
		return nil, fmt.Errorf("bert: sequence length %d exceeds max_position_embeddings %d", seq, r.cfg.MaxPositionEmbeddings)
	}
	flat := func(x [][]int32, what string) ([]int32, error) {
		out := make([]int32, 0, len(x)*seq)
		for i, row := range x {
			if len(row) != seq {
				return nil, fmt.Errorf("bert: %s row %d has length %d, want %d", what, i, len(row), seq)
			}
			out = append(out, row...)
		}
		return out, nil
	}
	fi, err := flat(ids, "ids")
	if err != nil {
		return nil, err
	}
	for _, id := range fi {
		if id < 0 || int(id) >= r.cfg.VocabSize {
			return nil, fmt.Errorf("bert: token id %d outside the vocabulary (size %d)", id, r.cfg.VocabSize)
		}
	}
	ft, err := flat(types, "token types")
	if err != nil {
		return nil, err
	}
	for _, t := range ft {
		if t < 0 || int(t) >= r.cfg.TypeVocabSize {
			return nil, fmt.Errorf("bert: token type %d outside [0, %d)", t, r.cfg.TypeVocabSize)
		}
	}
	fm, err := flat(mask, "mask")
	if err != nil {
		return nil, err
	}
	b := len(ids)
	out, err := r.exec.Call1(
		tensors.FromFlatDataAndDimensions(fi, b, seq),
		tensors.FromFlatDataAndDimensions(ft, b, seq),
		tensors.FromFlatDataAndDimensions(fm, b, seq))
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	return out, nil
}
