package train

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/backend"
)

// shapesTask is toyTask with batch i of 16+i rows: more distinct input shapes than GoMLX's
// default executable cache (32), bounded by MaxShapes.
type shapesTask struct {
	toyTask
	bound bool
}

func (t *shapesTask) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	in, _, err := t.toyTask.Batch(epoch, i)
	if err != nil {
		return nil, 0, err
	}
	n := 16 + i
	x, y := tensors.MustCopyFlatData[float32](in[0]), tensors.MustCopyFlatData[float32](in[1])
	for len(y) < n {
		x, y = append(x, x[:4]...), append(y, y[0])
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, n, 4), tensors.FromFlatDataAndDimensions(y, n)}, n, nil
}

type boundedShapesTask struct{ shapesTask }

func (t *boundedShapesTask) MaxShapes() int { return t.batches }

// TestMaxShapesCache: a task with 40 batch shapes trains when it bounds its shapes (Shapes),
// and fails past GoMLX's default cache of 32 compiled graphs when it does not (so the bound
// is what makes it work).
func TestMaxShapesCache(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	cfg := toyConfig(filepath.Join(t.TempDir(), "bounded"))
	cfg.Epochs, cfg.EvalEvery = 1, 0
	if _, err := Run(be, newToyStore(), &boundedShapesTask{shapesTask{toyTask: toyTask{seed: 1, batches: 40}}}, cfg, false); err != nil {
		t.Fatalf("40 shapes with MaxShapes 40: %v", err)
	}
	if DefaultExecMaxCacheSize >= 40 {
		t.Skipf("GoMLX caches %d graphs by default: nothing to show", DefaultExecMaxCacheSize)
	}
	cfg.RunDir = filepath.Join(t.TempDir(), "unbounded")
	_, err = Run(be, newToyStore(), &shapesTask{toyTask: toyTask{seed: 1, batches: 40}}, cfg, false)
	if err == nil || !strings.Contains(err.Error(), "step 33:") || !strings.Contains(err.Error(), "cache") {
		t.Errorf("40 shapes without MaxShapes: %v; want a cache error at step 33 (else the test shows nothing)", err)
	}
}
