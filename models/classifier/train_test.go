package classifier_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
)

// TestTrain trains a tiny query-type and a tiny mlc classifier from scratch through the
// library recipe on a small dataset (the dev split carved with Dev and Seed): each fills in
// its kind's loss and metric, records its run and prints its test report; bad settings are
// refused naming their flag.
func TestTrain(t *testing.T) {
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 80, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, loss, metric, report string
	}{
		{classifier.KindQueryType, "ce", "accuracy", "query-type accuracy"},
		{classifier.KindMLC, "bce", "ndcg@5", "(mlc)"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			cfg := classifier.DefaultTrainConfig()
			var out, log bytes.Buffer
			cfg.Kind, cfg.RunDir, cfg.Data, cfg.Dev, cfg.Seed = c.kind, filepath.Join(dir, c.kind), d, 0.25, 7
			cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Batch, cfg.Epochs, cfg.Quiet = 1, 16, 2, 16, 1, true
			cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &out, &log
			res, err := classifier.Train(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary == nil || res.Summary.Steps == 0 || (res.Test == nil) == (res.Types == nil) {
				t.Fatalf("result %+v", res)
			}
			if _, ok := res.Summary.BestMetrics[c.metric]; !ok {
				t.Errorf("best metrics %v lack the default metric %s", res.Summary.BestMetrics, c.metric)
			}
			if !strings.Contains(out.String(), c.report) || !strings.Contains(log.String(), c.loss+" loss") {
				t.Errorf("stdout %q, stderr %q", out.String(), log.String())
			}
			m, err := rundir.Read(cfg.RunDir)
			if err != nil || m.Kind != "classifier" || m.Split.DevFraction != 0.25 || m.Split.Seed != 7 {
				t.Errorf("run.json %+v, %v", m, err)
			}
		})
	}
	for _, c := range []struct {
		name string
		edit func(*classifier.TrainConfig)
		want string
	}{
		{"kind", func(c *classifier.TrainConfig) { c.Kind = "tools" }, `-kind "tools"`},
		{"querytype loss", func(c *classifier.TrainConfig) { c.Loss = "softmax" }, "-kind querytype wants ce or bce"},
		{"mlc loss", func(c *classifier.TrainConfig) { c.Kind, c.Loss = classifier.KindMLC, "ce" }, "-kind mlc wants bce or softmax"},
		{"querytype metric", func(c *classifier.TrainConfig) { c.Metric = "ndcg@5" }, `-metric "ndcg@5"`},
		{"max-len", func(c *classifier.TrainConfig) { c.MaxLen = 1 }, "-max-len 1"},
		{"dev", func(c *classifier.TrainConfig) { c.Dev = 1 }, "-dev 1"},
		{"batch", func(c *classifier.TrainConfig) { c.Batch = 0 }, "-batch 0"},
		{"head-init", func(c *classifier.TrainConfig) { c.HeadInit = "zeros" }, `-head-init "zeros": want random or tools`},
		{"querytype imprint", func(c *classifier.TrainConfig) { c.HeadInit = classifier.HeadInitTools }, "-kind querytype has no tools to imprint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := classifier.DefaultTrainConfig()
			cfg.RunDir, cfg.Data = filepath.Join(dir, "bad"), d
			c.edit(&cfg)
			if _, err := classifier.Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestHeadLR trains the same mlc classifier twice from the same seed with a learning rate
// too small to move anything, once with -head-lr 0.05: the head (HeadVars) must move in the
// second run and nothing else may differ between the two.
func TestHeadLR(t *testing.T) {
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 80, 20)
	if err != nil {
		t.Fatal(err)
	}
	stores := map[float64]*model.Store{}
	for _, headLR := range []float64{0, 0.05} {
		cfg := classifier.DefaultTrainConfig()
		cfg.Kind, cfg.Data, cfg.Dev, cfg.Seed, cfg.Test = classifier.KindMLC, d, 0.25, 7, ""
		cfg.RunDir = filepath.Join(dir, fmt.Sprint("run-", headLR))
		cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Batch, cfg.Epochs, cfg.Quiet = 1, 16, 2, 16, 1, true
		cfg.LR, cfg.HeadLR, cfg.Warmup = 1e-12, headLR, 0
		cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &bytes.Buffer{}, &bytes.Buffer{}
		res, err := classifier.Train(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := checkpoints.List(cfg.RunDir)
		if err != nil || len(steps) == 0 || steps[len(steps)-1] != res.Summary.Steps {
			t.Fatalf("checkpoints %v (%v), %d steps", steps, err, res.Summary.Steps)
		}
		c, err := checkpoints.Load(checkpoints.Dir(cfg.RunDir, steps[len(steps)-1]))
		if err != nil {
			t.Fatal(err)
		}
		be, err := backend.Open("go")
		if err != nil {
			t.Fatal(err)
		}
		stores[headLR] = model.NewStore()
		if err := c.Restore(stores[headLR], be); err != nil {
			t.Fatal(err)
		}
	}
	heads := 0
	for v := range stores[0].IterVariables() {
		if strings.HasPrefix(v.Path(), checkpoints.OptimizerScope+"/") || v.Shape().DType != dtypes.Float32 {
			continue
		}
		w := stores[0.05].GetVariable(v.Path())
		if w == nil {
			t.Fatalf("%s missing from the -head-lr run", v.Path())
		}
		a, b := tensors.MustCopyFlatData[float32](v.MustValue()), tensors.MustCopyFlatData[float32](w.MustValue())
		diff := 0.0
		for i := range a {
			diff = max(diff, math.Abs(float64(a[i]-b[i])))
		}
		head := strings.HasPrefix(v.Path(), classifier.HeadVars[0])
		if head {
			heads++
		}
		switch {
		case head && diff < 1e-3:
			t.Errorf("head variable %s moved by only %g with -head-lr", v.Path(), diff)
		case !head && diff > 1e-6:
			t.Errorf("encoder variable %s differs by %g with -head-lr", v.Path(), diff)
		}
	}
	if heads != 2 {
		t.Errorf("%d head variables, want the weight and the bias", heads)
	}
}

// TestImprint trains an mlc classifier with -head-init tools and a learning rate too small to
// move anything: each head row must point where the trained encoder pools its tool's text
// (computed apart, through the exported model), at ImprintScale over the tools' mean norm,
// with zero biases, for the mean and cls head poolings.
func TestImprint(t *testing.T) {
	dir, d, be := smallSetup(t)
	for _, pool := range []encoder.Pooling{encoder.PoolMean, encoder.PoolCLS} {
		t.Run(string(pool), func(t *testing.T) {
			cfg := classifier.DefaultTrainConfig()
			cfg.Kind, cfg.Loss, cfg.HeadInit, cfg.Pooling = classifier.KindMLC, "softmax", classifier.HeadInitTools, string(pool)
			cfg.RunDir, cfg.Data, cfg.Dev, cfg.Seed, cfg.Test = filepath.Join(dir, string(pool)), d, 0.25, 7, ""
			cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Batch, cfg.Epochs, cfg.Quiet, cfg.MaxLen = 1, 16, 2, 16, 1, true, classifier.ImprintLen
			cfg.LR, cfg.Warmup = 1e-12, 0
			var log bytes.Buffer
			cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &bytes.Buffer{}, &log
			if _, err := classifier.Train(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "head imprinted") {
				t.Errorf("log %q does not say the head was imprinted", log.String())
			}
			m, err := export.LoadModel(cfg.RunDir, be)
			if err != nil {
				t.Fatal(err)
			}
			text := map[string]string{}
			for _, tool := range d.Tools {
				text[tool.ID] = tool.Text
			}
			texts := make([]string, len(m.Head.Labels))
			for i, l := range m.Head.Labels {
				texts[i] = text[l]
			}
			emb, err := m.Pooled(texts, nil, pool)
			if err != nil {
				t.Fatal(err)
			}
			h := len(emb[0])
			norm := func(v []float32) float64 {
				s := 0.0
				for _, x := range v {
					s += float64(x) * float64(x)
				}
				return math.Sqrt(s)
			}
			mean := 0.0
			for _, e := range emb {
				mean += norm(e) / float64(len(emb))
			}
			for i, e := range emb {
				row := m.Head.Weight[i*h : (i+1)*h]
				dot := 0.0
				for j := range e {
					dot += float64(e[j]) * float64(row[j])
				}
				if cos := dot / (norm(e) * norm(row)); cos < 0.9999 {
					t.Errorf("tool %s: head row at cosine %.6f from its text's embedding", m.Head.Labels[i], cos)
				}
				if got := norm(row) * mean; math.Abs(got-classifier.ImprintScale) > 1e-3*classifier.ImprintScale {
					t.Errorf("tool %s: row norm x mean tool norm %.4f, want %d", m.Head.Labels[i], got, classifier.ImprintScale)
				}
				if math.Abs(float64(m.Head.Bias[i])) > 1e-9 { // the learning rate moves it by ~1e-12
					t.Errorf("tool %s: bias %v, want 0", m.Head.Labels[i], m.Head.Bias[i])
				}
			}
		})
	}
}

// TestFreezeUntrained trains an imprinted mlc classifier with -freeze-untrained at a learning
// rate that moves it, and the same run at one too small to: the rows of the tools no training
// query has must end as imprinted (the second run's), the others must have moved.
func TestFreezeUntrained(t *testing.T) {
	dir, d, be := smallSetup(t)
	heads := map[float64]*export.Head{}
	var log bytes.Buffer
	for _, lr := range []float64{1e-2, 1e-12} {
		cfg := classifier.DefaultTrainConfig()
		cfg.Kind, cfg.Loss, cfg.HeadInit, cfg.Pooling, cfg.FreezeUntrained = classifier.KindMLC, "softmax", classifier.HeadInitTools, "mean", true
		cfg.RunDir, cfg.Data, cfg.Dev, cfg.Seed, cfg.Test = filepath.Join(dir, fmt.Sprint("run-", lr)), d, 0.25, 7, ""
		cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Batch, cfg.Epochs, cfg.Quiet = 1, 16, 2, 16, 2, true
		cfg.LR, cfg.Warmup, cfg.WeightDecay = lr, 0, 0
		log.Reset()
		cfg.Backend, cfg.Stdout, cfg.Stderr = "go", &bytes.Buffer{}, &log
		if _, err := classifier.Train(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		m, err := export.LoadModel(cfg.RunDir, be)
		if err != nil {
			t.Fatal(err)
		}
		heads[lr] = m.Head
	}
	var frozen, total int
	if _, err := fmt.Sscanf(log.String()[strings.Index(log.String(), "-freeze-untrained: "):], "-freeze-untrained: %d of %d", &frozen, &total); err != nil || frozen == 0 || frozen == total {
		t.Fatalf("log %q: want some tools, not all, without training queries (%v)", log.String(), err)
	}
	seen := d.Seen("train") // a tool unseen there has no training query after the dev carve either
	trained := map[string]bool{}
	for i, tool := range d.Tools {
		trained[tool.ID] = seen[i]
	}
	a, b := heads[1e-2], heads[1e-12]
	h := len(a.Weight) / len(a.Labels)
	moved, kept := 0, 0
	for i, l := range a.Labels {
		diff := math.Abs(float64(a.Bias[i] - b.Bias[i]))
		for j := i * h; j < (i+1)*h; j++ {
			diff = max(diff, math.Abs(float64(a.Weight[j]-b.Weight[j])))
		}
		switch {
		case diff > 1e-6 && !trained[l]:
			t.Errorf("tool %s has no training query but its output moved by %g", l, diff)
		case diff > 1e-6:
			moved++
		default:
			kept++
		}
	}
	if moved == 0 || kept < frozen {
		t.Errorf("%d outputs moved, %d kept (%d frozen): the test cannot tell", moved, kept, frozen)
	}
}

// smallSetup returns a temporary directory, a small dataset written in it and the go backend.
func smallSetup(t *testing.T) (string, *data.Dataset, compute.Backend) {
	t.Helper()
	dir := t.TempDir()
	d, err := exporttest.SmallData(filepath.Join(dir, "data"), 80, 20)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	return dir, d, be
}
