package classifier

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// Model runs a trained classifier. Its graphs take the weights as parameters
// (encoder.VariablesAsParameters): it computes with the store's weights as they are at each call.
type Model struct {
	Cfg     *Config
	Tok     *tokenize.Tokenizer
	Backend compute.Backend
	Store   *model.Store
	Batch   int

	mu   sync.Mutex
	exec *encoder.SafeExec
}

// LoadRun loads a trained classifier from a run directory (best checkpoint) or checkpoint.
func LoadRun(path string, be compute.Backend) (*Model, error) {
	r, err := encoder.LoadRun(path, ConfigFile, be, Unmarshal, func(c *Config) encoder.Config { return c.Encoder })
	if err != nil {
		return nil, err
	}
	return &Model{Cfg: r.Cfg, Tok: r.Tok, Backend: be, Store: r.Store, Batch: 64}, nil
}

// Probabilities returns, per text, the probability of each output (softmax or sigmoid).
func (m *Model) Probabilities(texts []string) ([][]float32, error) {
	m.mu.Lock()
	if m.exec == nil {
		exec, err := model.NewExec(m.Backend, m.Store, func(root *model.Scope, ids, mask *Node) *Node {
			encoder.VariablesAsParameters(root, ids.Graph(), train.OptimizerScope)
			return m.Cfg.Probabilities(m.Cfg.Logits(root, ids, nil, mask))
		})
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		m.exec = encoder.GuardShared(exec, m.Store, m.Backend)
	}
	exec := m.exec
	m.mu.Unlock()
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = m.Tok.Single(s, m.Cfg.MaxLen)
	}
	return encoder.Map(m.Tok, seqs, nil, m.Cfg.MaxLen, m.Batch, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		return exec.Call1(ids, mask)
	})
}

// PMulti returns, per query, the probability that it needs several tools (querytype models).
func (m *Model) PMulti(texts []string) ([]float32, error) {
	if m.Cfg.Kind != KindQueryType {
		return nil, fmt.Errorf("classifier: PMulti needs a querytype model, this one is %s", m.Cfg.Kind)
	}
	p, err := m.Probabilities(texts)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(p))
	for i, row := range p {
		out[i] = row[len(row)-1] // ce: [single, multi]; bce: [multi]
	}
	return out, nil
}
