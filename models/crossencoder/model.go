package crossencoder

import (
	"context"
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// PairIDs builds "[CLS] a [SEP] b [SEP]" (RoBERTa's "<s> a </s></s> b </s>" for an MPNet
// tokenizer) from the ids of a and b (no specials), truncated to maxLen longest-first exactly
// as tokenize.Tokenizer.Pair does (Tokenizer.PairOf).
func PairIDs(tok *tokenize.Tokenizer, a, b []int32, maxLen int) (ids, types []int32) {
	return tok.PairOf(a, b, maxLen)
}

// Model scores (query, tool) pairs with a trained cross-encoder; it implements rerank.Scorer.
// Tool texts are tokenized once. Its graphs take the weights as parameters
// (encoder.VariablesAsParameters): it scores with the store's weights as they are at each call.
type Model struct {
	Cfg     *Config
	Tok     *tokenize.Tokenizer
	Backend compute.Backend
	Store   *model.Store
	Batch   int

	tools [][]int32 // wordpiece ids of each tool text (no specials)
	mu    sync.Mutex
	exec  *encoder.SafeExec
}

// NewModel prepares scoring against the given tool texts (dataset order).
func NewModel(cfg *Config, tok *tokenize.Tokenizer, be compute.Backend, store *model.Store, toolTexts []string) *Model {
	m := &Model{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 64, tools: make([][]int32, len(toolTexts))}
	for i, s := range toolTexts {
		ids := tok.Encode(s)
		m.tools[i] = ids[:min(len(ids), cfg.MaxLen)]
	}
	return m
}

// LoadRun loads a trained cross-encoder from a run directory (best checkpoint) or checkpoint.
func LoadRun(path string, be compute.Backend, toolTexts []string) (*Model, error) {
	r, err := encoder.LoadRun(path, ConfigFile, be, Unmarshal, func(c *Config) encoder.Config { return c.Encoder })
	if err != nil {
		return nil, err
	}
	return NewModel(r.Cfg, r.Tok, be, r.Store, toolTexts), nil
}

func (m *Model) getExec() (*encoder.SafeExec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exec == nil {
		exec, err := model.NewExec(m.Backend, m.Store, func(root *model.Scope, ids, types, mask *Node) *Node {
			encoder.VariablesAsParameters(root, ids.Graph(), train.OptimizerScope)
			return InsertAxes(Sigmoid(m.Cfg.Logits(root, ids, types, mask)), -1)
		})
		if err != nil {
			return nil, err
		}
		m.exec = encoder.GuardShared(exec, m.Store, m.Backend)
	}
	return m.exec, nil
}

// Pair is one (query, tool) pair to score: an index into the query texts and a tool index.
type Pair struct {
	Query int
	Tool  int
}

// ScorePairs scores pairs of queries[p.Query] and tool p.Tool, batched across queries.
func (m *Model) ScorePairs(ctx context.Context, queries []string, pairs []Pair) ([]float32, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	exec, err := m.getExec()
	if err != nil {
		return nil, err
	}
	qIDs := make(map[int][]int32)
	seqs := make([][]int32, len(pairs))
	types := make([][]int32, len(pairs))
	for i, p := range pairs {
		if p.Tool < 0 || p.Tool >= len(m.tools) {
			return nil, fmt.Errorf("crossencoder: tool index %d out of range (%d tools)", p.Tool, len(m.tools))
		}
		q, ok := qIDs[p.Query]
		if !ok {
			q = m.Tok.Encode(queries[p.Query])
			q = q[:min(len(q), m.Cfg.MaxLen)]
			qIDs[p.Query] = q
		}
		seqs[i], types[i] = PairIDs(m.Tok, q, m.tools[p.Tool], m.Cfg.MaxLen)
	}
	rows, err := encoder.Map(m.Tok, seqs, types, m.Cfg.MaxLen, m.Batch, func(ids, ty, mask *tensors.Tensor) (*tensors.Tensor, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return exec.Call1(ids, ty, mask)
	})
	if err != nil {
		return nil, fmt.Errorf("crossencoder: %w", err)
	}
	out := make([]float32, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out, nil
}

// Score implements rerank.Scorer: sigmoid scores of (query, api) for each api.
func (m *Model) Score(ctx context.Context, query string, apis []int) ([]float32, error) {
	pairs := make([]Pair, len(apis))
	for i, a := range apis {
		pairs[i] = Pair{0, a}
	}
	return m.ScorePairs(ctx, []string{query}, pairs)
}

var _ rerank.Scorer = (*Model)(nil)
