package train

import (
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// batchesTask is a Task of which RunSettings.Config reads only Batches.
type batchesTask struct{ perEpoch []int }

func (t batchesTask) Loss(*model.Scope, []*Node) *Node                  { return nil }
func (t batchesTask) Batches(e int) int                                 { return t.perEpoch[e] }
func (t batchesTask) Batch(int, int) ([]*tensors.Tensor, int, error)    { return nil, 0, nil }
func (t batchesTask) Evaluate(*model.Store) (map[string]float64, error) { return nil, nil }
func (t batchesTask) Files() (map[string][]byte, error)                 { return nil, nil }

func TestRunSettingsConfig(t *testing.T) {
	task := batchesTask{perEpoch: []int{10, 7, 9}}
	s := RunSettings{RunDir: "r", Seed: 3, Epochs: 3, LR: 1e-3, WeightDecay: 0.1, Schedule: "cosine", Clip: 0.5, Accumulate: 2,
		Warmup: 0.25, Metric: "recall@5", Fingerprint: "fp", Devices: 2, Quiet: true}
	tc, steps := s.Config(task)
	if steps != 5+3+4 {
		t.Errorf("steps %d, want 12 (10/2 + 7/2 + 9/2)", steps)
	}
	o := tc.Optimizer
	if o.LR != 1e-3 || o.WeightDecay != 0.1 || o.Schedule != "cosine" || o.ClipNorm != 0.5 || o.Accumulate != 2 || o.Warmup != 3 || o.Eps != DefaultOptimizer().Eps {
		t.Errorf("optimizer %+v", o)
	}
	if tc.RunDir != "r" || tc.Seed != 3 || tc.Epochs != 3 || tc.KeepLast != 2 || tc.Metric != "recall@5" || tc.Fingerprint != "fp" || tc.Devices != 2 || !tc.Quiet {
		t.Errorf("config %+v", tc)
	}
	s.MaxSteps, s.KeepLast, s.Accumulate = 4, 1, 0
	if tc, steps = s.Config(task); steps != 4 || tc.MaxSteps != 4 || tc.Optimizer.Warmup != 1 || tc.KeepLast != 1 || tc.Optimizer.Accumulate != 1 {
		t.Errorf("capped: %d steps, %+v", steps, tc)
	}
}
