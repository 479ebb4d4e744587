package classifier

import (
	"context"
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/train"
)

// Task trains a classifier on the judged queries of a split (it implements train.Task).
type Task struct {
	Cfg *Config
	train.Setup
	// FreezeUntrained (mlc) cuts the gradient of the outputs that no training query has as a
	// positive (Prepare finds them): their rows stay as initialised (an imprinted row keeps
	// its tool's text embedding; only AdamW's decoupled weight decay, lr x weight decay per
	// step, still shrinks them) and the encoder is not trained away from them; they still
	// count in the softmax's denominator.
	FreezeUntrained bool

	frozen  []float32 // per output, 1 where FreezeUntrained cuts its gradient (nil: none)
	seqs    map[int][]int32
	targets map[int][]float32
	devT    map[int][]float32
	order   *train.EpochOrder
}

// Prepare tokenizes the queries and derives the targets.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("classifier: %w", err)
	}
	if t.BatchSize < 1 {
		return fmt.Errorf("classifier: batch size %d", t.BatchSize)
	}
	var err error
	if t.targets, err = Targets(t.Cfg, t.Data, t.Train); err != nil {
		return err
	}
	if t.Dev != nil {
		if t.devT, err = Targets(t.Cfg, t.Data, t.Dev); err != nil {
			return err
		}
	}
	if t.order, err = t.JudgedOrder("classifier", 0x636c6173); err != nil {
		return err
	}
	t.frozen = nil
	if t.FreezeUntrained {
		if t.Cfg.Kind != KindMLC {
			return fmt.Errorf("classifier: -freeze-untrained needs -kind mlc")
		}
		t.frozen = make([]float32, t.Cfg.Outputs())
		for i := range t.frozen {
			t.frozen[i] = 1
		}
		for _, y := range t.targets {
			for i, v := range y {
				if v > 0 {
					t.frozen[i] = 0
				}
			}
		}
	}
	t.seqs = t.QuerySeqs(t.order.Items, t.Cfg.MaxLen)
	return nil
}

// Batches implements train.Task (a trailing partial batch is dropped).
func (t *Task) Batches(int) int { return t.order.FullBatches(t.BatchSize) }

// Frozen returns the outputs whose gradient FreezeUntrained cuts (after Prepare).
func (t *Task) Frozen() []int {
	var out []int
	for i, f := range t.frozen {
		if f > 0 {
			out = append(out, i)
		}
	}
	return out
}

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node {
	logits := t.Cfg.Logits(s, in[0], nil, in[1])
	if t.frozen != nil {
		g := logits.Graph()
		f := BroadcastToShape(ConvertDType(Const(g, [][]float32{t.frozen}), logits.DType()), logits.Shape())
		logits = Where(GreaterThan(f, ZerosLike(f)), StopGradient(logits), logits)
	}
	return t.Cfg.LossOf(logits, in[2])
}

// Batch implements train.Task.
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	qs, err := t.order.Batch(epoch, i, t.BatchSize)
	if err != nil {
		return nil, 0, err
	}
	seqs := make([][]int32, len(qs))
	n := t.Cfg.Outputs()
	y := make([]float32, 0, len(qs)*n)
	for j, q := range qs {
		seqs[j] = t.seqs[q]
		y = append(y, t.targets[q]...)
	}
	ids, _, mask := encoder.Tensors(t.Tok.Pad(seqs, nil, t.Cfg.MaxLen))
	return []*tensors.Tensor{ids, mask, tensors.FromFlatDataAndDimensions(y, len(qs), n)}, len(qs), nil
}

// Evaluate implements train.Task. mlc: the dev ranking metrics (metrics.DevKs) of its sigmoid
// scores; querytype: the dev TypeMetrics.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	if t.Dev == nil {
		return map[string]float64{}, nil
	}
	m := &Model{Cfg: t.Cfg, Tok: t.Tok, Backend: t.Backend, Store: store, Batch: 64}
	if m.Cfg.Kind == KindQueryType {
		return TypeMetrics(m, t.Data, t.Dev)
	}
	r, err := NewRanker(m, t.Data)
	if err != nil {
		return nil, err
	}
	return metrics.EvaluateDev(context.Background(), t.Data, t.Dev, rank.Texts(r), metrics.DevKs)
}

// TypeMetrics evaluates a querytype model on the judged queries of split s: the TypeAccuracy
// of its P(multi) against the query types of the split's qrels.
func TypeMetrics(m *Model, d *data.Dataset, s *data.Split) (map[string]float64, error) {
	if m.Cfg.Kind != KindQueryType {
		return nil, fmt.Errorf("classifier: query-type metrics of a %s model (want querytype)", m.Cfg.Kind)
	}
	qs := s.Judged()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = d.Queries[q].Text
	}
	p, err := m.PMulti(texts)
	if err != nil {
		return nil, err
	}
	return TypeAccuracy(p, qs, QueryTypes(d, s)), nil
}

// TypeAccuracy scores P(multi) predictions (threshold 0.5) against labels: accuracy,
// balanced_accuracy, acc_single, acc_multi (percent) and the class sizes.
func TypeAccuracy(pMulti []float32, qs []int, multi map[int]bool) map[string]float64 {
	var ok, n [2]float64
	for i, q := range qs {
		c := 0
		if multi[q] {
			c = 1
		}
		n[c]++
		if (pMulti[i] > 0.5) == (c == 1) {
			ok[c]++
		}
	}
	out := map[string]float64{"n_single": n[0], "n_multi": n[1]}
	if n[0]+n[1] > 0 {
		out["accuracy"] = 100 * (ok[0] + ok[1]) / (n[0] + n[1])
	}
	bal, classes := 0.0, 0.0
	for c, name := range []string{"acc_single", "acc_multi"} {
		if n[c] > 0 {
			out[name] = 100 * ok[c] / n[c]
			bal += out[name]
			classes++
		}
	}
	if classes > 0 {
		out["balanced_accuracy"] = bal / classes
	}
	return out
}

var _ train.Task = (*Task)(nil)
