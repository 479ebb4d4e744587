package biencoder

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/train"
)

// noDropout turns the encoder's dropout off (GradCache matches the whole batch only when
// both draw no masks).
func noDropout(t *testing.T, c *Config) {
	t.Helper()
	e, err := encoder.Override(c.Encoder, map[string]any{"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})
	if err != nil {
		t.Fatal(err)
	}
	c.Encoder = e
}

// pairTask is the query2tool Task over fbTask's data: batches of 4 with one mined hard
// negative each, separate towers or one.
func pairTask(t *testing.T, shared bool, freeze string) *Task {
	t.Helper()
	fb := fbTask(t, false, false, 1, 1)
	negs := map[int][]int{}
	for q, rel := range fb.Train.Relevant {
		negs[q] = []int{(rel[0] + 1) % len(fb.Data.Tools)}
	}
	cfg := *fb.Cfg
	cfg.Shared, cfg.Marker = shared, ""
	task := &Task{Cfg: &cfg, Setup: fb.Setup, HardNegatives: 1, Negatives: negs, Reg: Regularization{FreezeTower: freeze}}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestCachedMatchesWhole: a bi-encoder trained with its batches encoded two or three rows
// at a time (GradCache) ends with the weights of the one that encodes each batch whole:
// query2tool with hard negatives (one tower, two, the tool tower locked) and feedback
// training (every instruction row, hard negatives).
func TestCachedMatchesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	for _, tc := range []struct {
		name string
		task func(t *testing.T, mini int) train.Cached
	}{
		{"query2tool, one tower", func(t *testing.T, mini int) train.Cached {
			x := pairTask(t, true, "")
			noDropout(t, x.Cfg)
			x.MiniBatchSize = mini
			return x
		}},
		{"query2tool, two towers, tool tower locked", func(t *testing.T, mini int) train.Cached {
			x := pairTask(t, false, ToolTower)
			noDropout(t, x.Cfg)
			x.MiniBatchSize = mini
			return x
		}},
		{"feedback, joint, hard negatives", func(t *testing.T, mini int) train.Cached {
			x := fbTask(t, true, true, 0.5, 1)
			noDropout(t, x.Cfg)
			x.MiniBatchSize = mini
			return x
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(mini int) map[string][]float32 {
				task := tc.task(t, mini)
				var be compute.Backend
				switch x := task.(type) {
				case *Task:
					be = x.Backend
				case *FeedbackTask:
					be = x.Backend
				}
				o := train.DefaultOptimizer()
				o.LR, o.Warmup, o.WeightDecay, o.ClipNorm = 1e-2, 0, 0, 0
				cfg := train.Config{RunDir: filepath.Join(t.TempDir(), "run"), Seed: 1, Epochs: 1, MaxSteps: 2, Optimizer: o, Quiet: true}
				store := model.NewStore()
				store.SetParam(model.ParamInitialSeed, int64(5))
				if _, err := train.Run(be, store, task, cfg, false); err != nil {
					t.Fatal(err)
				}
				out := map[string][]float32{}
				for v := range store.IterVariables() {
					if v.DType() == dtypes.Float32 && !strings.HasPrefix(v.Path(), "/optimizer/acc") {
						out[v.Path()] = tensors.MustCopyFlatData[float32](v.MustValue())
					}
				}
				return out
			}
			whole := run(0)
			for _, mini := range []int{2, 3} {
				cached := run(mini)
				// The weights, and Adam's moments (linear in the gradient, which the
				// normalised update is not).
				if len(cached) != len(whole) {
					t.Fatalf("mini-batch %d: %d variables, whole batch %d", mini, len(cached), len(whole))
				}
				moments := 0
				for p, w := range whole {
					c := cached[p]
					if strings.HasPrefix(p, "/optimizer/m/") {
						moments++
					}
					for i := range w {
						if d := math.Abs(float64(c[i] - w[i])); d > 1e-6+1e-3*math.Abs(float64(w[i])) {
							t.Fatalf("mini-batch %d: %s[%d] is %g, the whole batch's %g", mini, p, i, c[i], w[i])
						}
					}
				}
				if moments == 0 {
					t.Fatal("no optimizer moments compared")
				}
			}
		})
	}
}
