package refiner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// Model scores candidate lists with a trained refiner. It is safe for concurrent use.
type Model struct {
	Cfg     *Config
	Tok     *tokenize.Tokenizer
	Backend compute.Backend
	Store   *model.Store
	Batch   int

	mu   sync.Mutex
	exec *encoder.SafeExec
}

// LoadRun loads a trained refiner from a run directory (best checkpoint) or checkpoint.
func LoadRun(path string, be compute.Backend) (*Model, error) {
	c, cb, tok, err := rundir.LoadCheckpoint(path, ConfigFile)
	if err != nil {
		return nil, err
	}
	cfg, err := Unmarshal(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Dir, err)
	}
	if err := encoder.CheckVocab(tok.VocabSize(), cfg.Encoder); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Dir, err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		return nil, err
	}
	v := store.RootScope().In("tool_vectors").GetVariable("weight")
	if v == nil {
		return nil, fmt.Errorf("%s: no tool_vectors/weight tensor", c.Dir)
	}
	if d := v.Shape().Dimensions; len(d) != 2 || d[0] != cfg.Tools || d[1] != cfg.Dim {
		return nil, fmt.Errorf("%s: tool_vectors/weight is %v, config says [%d %d]", c.Dir, d, cfg.Tools, cfg.Dim)
	}
	return &Model{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 64}, nil
}

func (m *Model) getExec() (*encoder.SafeExec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exec == nil {
		exec, err := model.NewExec(m.Backend, m.Store, func(root *model.Scope, ids, mask, cand, slots *Node) *Node {
			return m.Cfg.Logits(root, ids, mask, cand, slots)
		})
		if err != nil {
			return nil, err
		}
		m.exec = encoder.Guard(exec)
	}
	return m.exec, nil
}

// slotTensors pads candidate lists (each cut to n) to [rows, n] tool indices and slot mask.
func slotTensors(lists [][]int, n int) (cand, slots *tensors.Tensor) {
	c := make([]int32, len(lists)*n)
	s := make([]int32, len(lists)*n)
	for i, l := range lists {
		for j := 0; j < n && j < len(l); j++ {
			c[i*n+j] = int32(l[j])
			s[i*n+j] = 1
		}
	}
	return tensors.FromFlatDataAndDimensions(c, len(lists), n), tensors.FromFlatDataAndDimensions(s, len(lists), n)
}

// Scores returns the logits of the first N candidates of each query's list: one score per
// candidate, len(out[i]) = min(N, len(lists[i])).
func (m *Model) Scores(ctx context.Context, texts []string, lists [][]int) ([][]float32, error) {
	if len(texts) != len(lists) {
		return nil, fmt.Errorf("refiner: %d queries, %d candidate lists", len(texts), len(lists))
	}
	for i, l := range lists {
		for _, t := range l {
			if t < 0 || t >= m.Cfg.Tools {
				return nil, fmt.Errorf("refiner: query %d: tool index %d out of range (%d tools)", i, t, m.Cfg.Tools)
			}
		}
	}
	exec, err := m.getExec()
	if err != nil {
		return nil, err
	}
	// Batches of queries of similar length: sort by token count.
	seqs := make([][]int32, len(texts))
	order := make([]int, len(texts))
	for i, s := range texts {
		seqs[i] = m.Tok.Single(s, m.Cfg.MaxLen)
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(seqs[order[a]]) < len(seqs[order[b]]) })
	out := make([][]float32, len(texts))
	batch := max(m.Batch, 1)
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := order[lo:min(lo+batch, len(order))]
		bs := make([][]int32, len(idx))
		bl := make([][]int, len(idx))
		for j, i := range idx {
			bs[j], bl[j] = seqs[i], lists[i]
		}
		ids, _, mask := encoder.Tensors(m.Tok.Pad(bs, nil, m.Cfg.MaxLen))
		cand, slots := slotTensors(bl, m.Cfg.N)
		res, err := exec.Call1(ids, mask, cand, slots)
		if err != nil {
			return nil, fmt.Errorf("refiner: %w", err)
		}
		flat := tensors.MustCopyFlatData[float32](res)
		for j, i := range idx {
			k := min(m.Cfg.N, len(lists[i]))
			out[i] = append([]float32(nil), flat[j*m.Cfg.N:j*m.Cfg.N+k]...)
		}
	}
	return out, nil
}

// Refine is the refined ranking of a candidate list: its first len(scores) candidates by
// score (ties keep first-stage order), then the rest in first-stage order, cut to k (k <= 0:
// all). The rest get scores below every refined one, decreasing.
func Refine(list []int, scores []float32, k int) retrieve.Ranking {
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	r := retrieve.Ranking{Tools: make([]int, 0, len(list)), Scores: make([]float32, 0, len(list))}
	low := float32(math.Inf(1))
	for _, i := range idx {
		r.Tools = append(r.Tools, list[i])
		r.Scores = append(r.Scores, scores[i])
		low = min(low, scores[i])
	}
	if n == 0 {
		low = 0
	}
	for j, t := range list[n:] {
		r.Tools = append(r.Tools, t)
		r.Scores = append(r.Scores, low-1-float32(j))
	}
	if k > 0 && len(r.Tools) > k {
		r.Tools, r.Scores = r.Tools[:k], r.Scores[:k]
	}
	return r
}

// Lists is a QueryRanker over candidate lists computed ahead (candidates.Lists by query
// index): the refined ranking of each query's list.
func (m *Model) Lists(l candidates.Lists) retrieve.QueryRanker { return listRanker{m, l} }

type listRanker struct {
	m *Model
	l candidates.Lists
}

func (r listRanker) RankQueries(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	texts := make([]string, len(qs))
	lists := make([][]int, len(qs))
	for i, q := range qs {
		l, ok := r.l[q.Index]
		if !ok {
			return nil, fmt.Errorf("refiner: no candidates for query %d (%q)", q.Index, q.Text)
		}
		texts[i], lists[i] = q.Text, l
	}
	return r.m.rank(ctx, texts, lists, k)
}

func (m *Model) rank(ctx context.Context, texts []string, lists [][]int, k int) ([]retrieve.Ranking, error) {
	sc, err := m.Scores(ctx, texts, lists)
	if err != nil {
		return nil, err
	}
	out := make([]retrieve.Ranking, len(texts))
	for i := range texts {
		out[i] = Refine(lists[i], sc[i], k)
	}
	return out, nil
}

// Pipeline is a first stage followed by the refiner: it implements retrieve.Ranker. The first
// stage's list is kept to max(N, k, Depth) tools.
type Pipeline struct {
	First   retrieve.Ranker
	Refiner *Model
	Depth   int
}

// Rank implements retrieve.Ranker.
func (p *Pipeline) Rank(ctx context.Context, queries []string, k int) ([]retrieve.Ranking, error) {
	depth := max(p.Refiner.Cfg.N, p.Depth)
	if k <= 0 {
		depth = 0 // all tools
	} else {
		depth = max(depth, k)
	}
	first, err := p.First.Rank(ctx, queries, depth)
	if err != nil {
		return nil, err
	}
	lists := make([][]int, len(first))
	for i, r := range first {
		lists[i] = r.Tools
	}
	return p.Refiner.rank(ctx, queries, lists, k)
}

var _ retrieve.Ranker = (*Pipeline)(nil)

// LoadPipeline loads a refiner run and re-opens the first stage it was trained over (its
// recorded candidate source; usage vectors from the training part of the refiner run's
// recorded dev split), as one ranker of d's tools.
func LoadPipeline(dir string, d *data.Dataset, be compute.Backend) (*Pipeline, error) {
	m, err := LoadRun(dir, be)
	if err != nil {
		return nil, err
	}
	if m.Cfg.Tools != len(d.Tools) {
		return nil, fmt.Errorf("refiner %s: trained over %d tools, the dataset has %d", dir, m.Cfg.Tools, len(d.Tools))
	}
	var train *data.Split
	if m.Cfg.Candidates.Kind == "usage" {
		if train, _, _, err = rundir.Splits(rundir.RunOf(dir), d); err != nil {
			return nil, fmt.Errorf("refiner %s: %w", dir, err)
		}
	}
	first, _, err := candidates.Open(m.Cfg.Candidates, d, train, be)
	if err != nil {
		return nil, fmt.Errorf("refiner %s: first stage: %w", dir, err)
	}
	return &Pipeline{First: first, Refiner: m}, nil
}
