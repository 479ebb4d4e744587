package refiner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/train"
)

// Training-list choices.
const (
	// MissingInsert puts a positive the first stage missed into a random slot (the last
	// non-positive candidate makes room); MissingDrop trains on the first stage's list as is.
	MissingInsert = "insert"
	MissingDrop   = "drop"
	// OrderShuffle shuffles the slots of every training list (each epoch anew); OrderRank keeps
	// first-stage order.
	OrderShuffle = "shuffle"
	OrderRank    = "rank"
)

// Slate builds one training list: the first n of list (the first stage's, best first), with
// the positives of rel handled by missing and the slots ordered by order (r draws the random
// choices). It returns the candidates and their 0/1 labels.
func Slate(list, rel []int, n int, missing, order string, r *rand.Rand) ([]int, []float32) {
	cand := slices.Clone(list[:min(n, len(list))])
	isPos := func(t int) bool { return slices.Contains(rel, t) }
	if missing == MissingInsert {
		for _, p := range rel {
			if slices.Contains(cand, p) {
				continue
			}
			if len(cand) >= n {
				// Make room: drop the last non-positive; none left means n positives already.
				last := -1
				for i := len(cand) - 1; i >= 0; i-- {
					if !isPos(cand[i]) {
						last = i
						break
					}
				}
				if last < 0 {
					break
				}
				cand = slices.Delete(cand, last, last+1)
			}
			cand = slices.Insert(cand, r.IntN(len(cand)+1), p)
		}
	}
	if order == OrderShuffle {
		r.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	}
	labels := make([]float32, len(cand))
	for i, t := range cand {
		if isPos(t) {
			labels[i] = 1
		}
	}
	return cand, labels
}

// Task trains a refiner on the judged queries of a split over their first-stage candidate
// lists (it implements train.Task).
type Task struct {
	Cfg *Config
	train.Setup
	// Lists holds the first stage's candidates of every training and dev query.
	Lists          candidates.Lists
	Missing, Order string

	seqs  map[int][]int32
	order *train.EpochOrder
}

// Prepare checks the inputs and tokenizes the training queries.
func (t *Task) Prepare() error {
	if err := t.Cfg.Validate(); err != nil {
		return err
	}
	if err := encoder.FitVocab(t.Tok, t.Cfg.Encoder); err != nil {
		return fmt.Errorf("refiner: %w", err)
	}
	if t.BatchSize < 1 {
		return fmt.Errorf("refiner: batch size %d", t.BatchSize)
	}
	if t.Missing != MissingInsert && t.Missing != MissingDrop {
		return fmt.Errorf("refiner: missing positives %q: want insert or drop", t.Missing)
	}
	if t.Order != OrderShuffle && t.Order != OrderRank {
		return fmt.Errorf("refiner: slot order %q: want shuffle or rank", t.Order)
	}
	var err error
	if t.order, err = t.JudgedOrder("refiner", 0x7265666e); err != nil {
		return err
	}
	check := func(s *data.Split) error {
		for _, q := range s.Judged() {
			l, ok := t.Lists[q]
			if !ok {
				return fmt.Errorf("refiner: no candidates for %s query %q", s.Name, t.Data.Queries[q].ID)
			}
			for _, x := range l.Tools {
				if x < 0 || x >= t.Cfg.Tools {
					return fmt.Errorf("refiner: %s query %q: candidate tool %d out of range (%d tools)", s.Name, t.Data.Queries[q].ID, x, t.Cfg.Tools)
				}
			}
		}
		return nil
	}
	if err := check(t.Train); err != nil {
		return err
	}
	if t.Dev != nil {
		if err := check(t.Dev); err != nil {
			return err
		}
	}
	t.seqs = t.QuerySeqs(t.order.Items, t.Cfg.MaxLen)
	return nil
}

// Batches implements train.Task (a trailing partial batch is dropped).
func (t *Task) Batches(int) int { return t.order.FullBatches(t.BatchSize) }

// Loss implements train.Task.
func (t *Task) Loss(s *model.Scope, in []*Node) *Node { return t.Cfg.Loss(s, in) }

// Batch implements train.Task: query ids and mask, candidates, slot mask and labels, a pure
// function of (seed, epoch, i).
func (t *Task) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	qs, err := t.order.Batch(epoch, i, t.BatchSize)
	if err != nil {
		return nil, 0, err
	}
	n := t.Cfg.N
	seqs := make([][]int32, len(qs))
	lists := make([][]int, len(qs))
	y := make([]float32, len(qs)*n)
	for j, q := range qs {
		seqs[j] = t.seqs[q]
		r := rand.New(rand.NewPCG(t.Seed^uint64(q)*0x9e3779b97f4a7c15, uint64(epoch)))
		cand, labels := Slate(t.Lists[q].Tools, t.Train.Relevant[q], n, t.Missing, t.Order, r)
		lists[j] = cand
		copy(y[j*n:], labels)
	}
	ids, _, mask := encoder.Tensors(t.Tok.Pad(seqs, nil, t.Cfg.MaxLen))
	cand, slots := slotTensors(lists, n)
	return []*tensors.Tensor{ids, mask, cand, slots, tensors.FromFlatDataAndDimensions(y, len(qs), n)}, len(qs), nil
}

// Evaluate implements train.Task: the dev ranking metrics (metrics.DevKs) of the refined lists.
func (t *Task) Evaluate(store *model.Store) (map[string]float64, error) {
	if t.Dev == nil {
		return map[string]float64{}, nil
	}
	m := &Model{Cfg: t.Cfg, Tok: t.Tok, Backend: t.Backend, Store: store, Batch: 64}
	return metrics.EvaluateDev(context.Background(), t.Data, t.Dev, m.Lists(t.Lists), metrics.DevKs)
}

var _ train.Task = (*Task)(nil)
