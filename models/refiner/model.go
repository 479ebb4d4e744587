package refiner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
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
	r, err := encoder.LoadRun(path, ConfigFile, be, Unmarshal, func(c *Config) encoder.Config { return c.Encoder })
	if err != nil {
		return nil, err
	}
	cfg := r.Cfg
	if err := ApplyWeight(cfg, path); err != nil {
		return nil, err
	}
	v := r.Store.RootScope().In("tool_vectors").GetVariable("weight")
	if v == nil {
		return nil, fmt.Errorf("%s: no tool_vectors/weight tensor", r.Dir)
	}
	if d := v.Shape().Dimensions; len(d) != 2 || d[0] != cfg.Tools || d[1] != cfg.Dim {
		return nil, fmt.Errorf("%s: tool_vectors/weight is %v, config says [%d %d]", r.Dir, d, cfg.Tools, cfg.Dim)
	}
	return &Model{Cfg: cfg, Tok: r.Tok, Backend: be, Store: r.Store, Batch: 64}, nil
}

// WeightFile is where train refiner records the first-stage weight it chose on dev, in the
// run directory (checkpoints are written before the choice and stay as they are).
const WeightFile = "first_stage_weight.json"

// Weight is the content of WeightFile.
type Weight struct {
	FirstStageWeight float64   `json:"first_stage_weight"`
	Metric           string    `json:"metric"`
	Weights          []float64 `json:"weights"`
	Dev              []float64 `json:"dev"`
}

// ApplyWeight sets cfg.FirstStageWeight from the WeightFile of the run that path (a run or
// one of its checkpoints) belongs to, when it has one.
func ApplyWeight(cfg *Config, path string) error {
	p := filepath.Join(rundir.RunOf(path), WeightFile)
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("refiner: %w", err)
	}
	var w Weight
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("refiner %s: %w", p, err)
	}
	if w.FirstStageWeight < 0 || w.FirstStageWeight > 1 || math.IsNaN(w.FirstStageWeight) {
		return fmt.Errorf("refiner %s: first_stage_weight %v must be in [0, 1]", p, w.FirstStageWeight)
	}
	cfg.FirstStageWeight = w.FirstStageWeight
	return nil
}

func (m *Model) getExec() (*encoder.SafeExec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exec == nil {
		exec, err := model.NewExec(m.Backend, m.Store, func(root *model.Scope, ids, mask, cand, slots *Node) *Node {
			encoder.VariablesAsParameters(root, ids.Graph(), train.OptimizerScope)
			return m.Cfg.Logits(root, ids, mask, cand, slots)
		})
		if err != nil {
			return nil, err
		}
		m.exec = encoder.GuardShared(exec, m.Store, m.Backend)
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

// Refine is the refined ranking of a first-stage list: its first len(scores) candidates by
// score (the refiner's logits, mixed with the first stage's scores by weight w as in
// Config.FirstStageWeight; ties keep first-stage order), then the rest in first-stage order,
// cut to k (k <= 0: all). The rest get scores below every refined one, decreasing. With w > 0
// the first stage must give a score for each refined candidate; a list without them is ranked
// by the refiner alone (candidates.Compute and Cached refuse rankings without scores, so only a
// caller building lists by hand meets this).
func Refine(first rank.Ranking, scores []float32, w float64, k int) rank.Ranking {
	n := len(scores)
	mixed := scores
	if w > 0 && len(first.Scores) >= n {
		a, b := standardise(scores), standardise(first.Scores[:n])
		mixed = make([]float32, n)
		for i := range mixed {
			mixed[i] = float32((1-w)*a[i] + w*b[i])
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return mixed[idx[a]] > mixed[idx[b]] })
	list := first.Tools
	r := rank.Ranking{Tools: make([]int, 0, len(list)), Scores: make([]float32, 0, len(list))}
	low := float32(math.Inf(1))
	for _, i := range idx {
		r.Tools = append(r.Tools, list[i])
		r.Scores = append(r.Scores, mixed[i])
		low = min(low, mixed[i])
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

// standardise returns (x − mean) / std (population std; all zeros when std is 0).
func standardise(x []float32) []float64 {
	out := make([]float64, len(x))
	if len(x) == 0 {
		return out
	}
	mean := 0.0
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	sd := 0.0
	for _, v := range x {
		sd += (float64(v) - mean) * (float64(v) - mean)
	}
	sd = math.Sqrt(sd / float64(len(x)))
	if sd == 0 || math.IsNaN(sd) || math.IsInf(sd, 0) {
		return out
	}
	for i, v := range x {
		out[i] = (float64(v) - mean) / sd
	}
	return out
}

// Lists is a QueryRanker over candidate lists computed ahead (candidates.Lists by query
// index): the refined ranking of each query's list.
func (m *Model) Lists(l Lists) rank.QueryRanker { return listRanker{m, l} }

// Lists are first-stage candidate lists by query index (candidates.Lists).
type Lists = candidates.Lists

type listRanker struct {
	m *Model
	l Lists
}

func (r listRanker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	texts := make([]string, len(qs))
	lists := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		l, ok := r.l[q.Index]
		if !ok {
			return nil, fmt.Errorf("refiner: no candidates for query %d (%q)", q.Index, q.Text)
		}
		texts[i], lists[i] = q.Text, l
	}
	return r.m.rank(ctx, texts, lists, k)
}

func (m *Model) rank(ctx context.Context, texts []string, lists []rank.Ranking, k int) ([]rank.Ranking, error) {
	tools := make([][]int, len(lists))
	for i, l := range lists {
		tools[i] = l.Tools
	}
	sc, err := m.Scores(ctx, texts, tools)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(texts))
	for i := range texts {
		out[i] = Refine(lists[i], sc[i], m.Cfg.FirstStageWeight, k)
	}
	return out, nil
}

// Weights are the first-stage weights ChooseWeight tries.
var Weights = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}

// ChooseWeight scores the judged queries of split s once and returns the first-stage weight
// (of Weights) whose refined rankings maximise metric (a metrics name such as "ndcg@5"; ties
// go to the smaller weight), with the metric at every weight.
func (m *Model) ChooseWeight(ctx context.Context, d *data.Dataset, s *data.Split, l Lists, metric string) (float64, []float64, error) {
	qs := s.Judged()
	texts := make([]string, len(qs))
	lists := make([]rank.Ranking, len(qs))
	tools := make([][]int, len(qs))
	for i, q := range qs {
		r, ok := l[q]
		if !ok {
			return 0, nil, fmt.Errorf("refiner: no candidates for %s query %q", s.Name, d.Queries[q].ID)
		}
		texts[i], lists[i], tools[i] = d.Queries[q].Text, r, r.Tools
	}
	sc, err := m.Scores(ctx, texts, tools)
	if err != nil {
		return 0, nil, err
	}
	best, bestW := math.Inf(-1), 0.0
	vals := make([]float64, len(Weights))
	for wi, w := range Weights {
		fixed := make(rank.Fixed, len(qs))
		for i, q := range qs {
			fixed[q] = Refine(lists[i], sc[i], w, 0).Tools
		}
		res, err := metrics.EvaluateDev(ctx, d, s, fixed, metrics.DevKs)
		if err != nil {
			return 0, nil, err
		}
		v, ok := res[metric]
		if !ok {
			return 0, nil, fmt.Errorf("refiner: metric %q not computed (have e.g. ndcg@5)", metric)
		}
		vals[wi] = v
		if v > best {
			best, bestW = v, w
		}
	}
	return bestW, vals, nil
}

// Pipeline is a first stage followed by the refiner: it implements rank.Ranker. The first
// stage's list is kept to max(N, k, Depth) tools.
type Pipeline struct {
	First   rank.Ranker
	Refiner *Model
	Depth   int
}

// Rank implements rank.Ranker.
func (p *Pipeline) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
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
	return p.Refiner.rank(ctx, queries, first, k)
}

var _ rank.Ranker = (*Pipeline)(nil)

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
