package biencoder

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/train"
)

// loraTask is padTask's tiny bi-encoder of arch with LoRA l, its towers initialised (seed 7)
// in the returned store.
func loraTask(t *testing.T, arch string, shared bool, l hflayers.LoRA) (*Task, *model.Store) {
	t.Helper()
	x := padTask(t, arch, 4, 1)
	x.Cfg.Shared = shared
	x.Cfg.LoRA = &l
	if err := x.Cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := x.Prepare(); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(3))
	for _, tower := range []string{QueryTower, ToolTower} {
		if err := x.Cfg.Encoder.Init(encoder.In(store.RootScope(), x.Cfg.TowerBase(tower)), 7); err != nil {
			t.Fatal(err)
		}
	}
	return x, store
}

func loraTrain(t *testing.T, x *Task, store *model.Store, steps int) {
	t.Helper()
	o := train.DefaultOptimizer()
	o.LR, o.WeightDecay, o.Warmup = 1e-2, 0.1, 0
	cfg := train.Config{RunDir: t.TempDir(), Seed: 1, Epochs: 1, MaxSteps: steps, KeepLast: 1, Optimizer: o, Quiet: true}
	if _, err := train.Run(x.Backend, store, x, cfg, false); err != nil {
		t.Fatal(err)
	}
}

// TestLoRATrainsOnlyAdapters: after a few AdamW steps (weight decay on) every base variable
// of the encoder is bit-identical and has no optimizer state, and every adapter exists (one
// lora_A and lora_B per target Linear per layer per tower), has optimizer state and its
// lora_B (zeros at the start) changed.
func TestLoRATrainsOnlyAdapters(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	for _, c := range []struct {
		name    string
		arch    string
		shared  bool
		targets []string
		perLay  int // target Linears per layer
	}{
		{"bert query,value", "bert", true, []string{"query", "value"}, 2},
		{"bert all", "bert", true, []string{"query", "key", "value", "dense"}, 6},
		{"bert separate towers", "bert", false, []string{"value"}, 1},
		{"mpnet q,v", "mpnet", true, []string{"q", "v"}, 2},
		{"xlm-roberta dense", "xlm-roberta", true, []string{"dense"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, store := loraTask(t, c.arch, c.shared, hflayers.LoRA{Rank: 2, Alpha: 4, Dropout: 0.1, Targets: c.targets})
			before := weights(store)
			loraTrain(t, x, store, 3)
			after := weights(store)
			for p, w := range before {
				if !bytes.Equal(after[p], w) {
					t.Errorf("base variable %s changed in training", p)
				}
				if _, ok := after["/optimizer/m"+p]; ok {
					t.Errorf("base variable %s has optimizer state", p)
				}
			}
			towers := 1
			if !c.shared {
				towers = 2
			}
			var as, bs int
			for p, w := range after {
				if strings.HasPrefix(p, "/optimizer") || !hflayers.IsLoRAVariable(p) {
					continue
				}
				if _, ok := before[p]; ok {
					t.Fatalf("adapter %s existed before training", p)
				}
				if _, ok := after["/optimizer/m"+p]; !ok {
					t.Errorf("adapter %s has no optimizer state", p)
				}
				if strings.HasSuffix(p, "/lora_B/weight") {
					bs++
					if bytes.Equal(w, make([]byte, len(w))) {
						t.Errorf("adapter %s is still zero after training", p)
					}
				} else {
					as++
				}
			}
			want := c.perLay * x.Cfg.Encoder.Layers() * towers
			if as != want || bs != want {
				t.Errorf("%d lora_A and %d lora_B, want %d each", as, bs, want)
			}
		})
	}
}

// randomizeB gives every lora_B of store random values (training starts them at zero, where
// merging is trivially exact).
func randomizeB(t *testing.T, store *model.Store, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	for v := range store.IterVariables() {
		if !strings.HasSuffix(v.Path(), "/lora_B/weight") {
			continue
		}
		d := make([]float32, v.Shape().Size())
		for i := range d {
			d[i] = float32(r.NormFloat64() * 0.5)
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(d, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoRAMerge: a trained LoRA bi-encoder, its adapters then made large, embeds queries and
// tools within 1e-5 (max abs) of the same model after MergeLoRA, which leaves no adapter
// variable, LoRA off, and the adapters and base weights it took out in the Adapter; putting
// the base weights back (SwapWeights) gives the embeddings of the model without adapters.
func TestLoRAMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	texts := []string{"get the weather forecast", "send an email to someone about the flight", "play music", "list files in folder translate text"}
	for _, c := range []struct {
		name    string
		arch    string
		shared  bool
		targets []string
	}{
		{"bert", "bert", true, []string{"query", "value"}},
		{"bert all separate", "bert", false, []string{"query", "key", "value", "dense"}},
		{"mpnet", "mpnet", true, []string{"q", "k", "v", "o", "dense"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, store := loraTask(t, c.arch, c.shared, hflayers.LoRA{Rank: 3, Alpha: 12, Targets: c.targets})
			plain := weights(store)
			loraTrain(t, x, store, 2)
			randomizeB(t, store, 5)
			e := &Embedder{Cfg: x.Cfg, Tok: x.Tok, Backend: x.Backend, Store: store, Batch: 3}
			var adapted [2][][]float32
			for i, tower := range []string{QueryTower, ToolTower} {
				var err error
				if adapted[i], err = e.Embed(tower, texts); err != nil {
					t.Fatal(err)
				}
			}
			ad, err := e.MergeLoRA()
			if err != nil {
				t.Fatal(err)
			}
			if ad == nil || e.Cfg.LoRA != nil || x.Cfg.LoRA == nil {
				t.Fatalf("MergeLoRA: adapter %v, embedder LoRA %v, task's config LoRA %v (want set, nil, untouched)", ad != nil, e.Cfg.LoRA, x.Cfg.LoRA)
			}
			for v := range store.IterVariables() {
				if hflayers.IsLoRAVariable(v.Path()) && !strings.HasPrefix(v.Path(), "/optimizer") {
					t.Errorf("adapter variable %s left after the merge", v.Path())
				}
			}
			if len(ad.Tensors) != 2*len(ad.Base) || len(ad.Base) == 0 {
				t.Errorf("adapter: %d tensors for %d merged weights", len(ad.Tensors), len(ad.Base))
			}
			worst := 0.0
			for i, tower := range []string{QueryTower, ToolTower} {
				merged, err := e.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, maxDiff(merged, adapted[i]))
			}
			if worst > 1e-5 {
				t.Errorf("merged embeddings differ from the adapted ones by %g (max abs), want <= 1e-5", worst)
			}
			if worst == 0 {
				t.Logf("merged embeddings identical to the adapted ones")
			}
			// The base weights taken out are the weights before training.
			old, err := SwapWeights(store, ad.Base)
			if err != nil {
				t.Fatal(err)
			}
			now := weights(store)
			for p, w := range plain {
				if !bytes.Equal(now[p], w) {
					t.Errorf("%s: the restored base weight is not the initial one", p)
				}
			}
			if _, err := SwapWeights(store, old); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func maxDiff(a, b [][]float32) float64 {
	d := 0.0
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// TestLoRAResume: a LoRA run stopped between checkpoints and resumed ends bit-identical to an
// uninterrupted run (go backend), adapters and base weights alike.
func TestLoRAResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	l := hflayers.LoRA{Rank: 2, Alpha: 4, Dropout: 0.2, Targets: []string{"query", "value"}}
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 3, KeepLast: 2, Optimizer: o, Quiet: true}
	}
	ref, refStore := loraTask(t, "bert", true, l)
	if _, err := train.Run(ref.Backend, refStore, ref, cfg(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weights(refStore)
	k := ref.Batches(0) + 1 // between checkpoints (one per epoch)
	dir := filepath.Join(t.TempDir(), "run")
	c := cfg(dir)
	c.StopAfter = k
	x, store := loraTask(t, "bert", true, l)
	if _, err := train.Run(x.Backend, store, x, c, false); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("stop after %d: %v", k, err)
	}
	c.StopAfter = 0
	x, _ = loraTask(t, "bert", true, l)
	resumed := model.NewStore()
	if _, err := train.Run(x.Backend, resumed, x, c, true); err != nil {
		t.Fatalf("resume after %d: %v", k, err)
	}
	got := weights(resumed)
	if len(got) != len(want) {
		t.Fatalf("resumed store has %d variables, want %d", len(got), len(want))
	}
	n := 0
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Errorf("stopped after %d steps and resumed: variable %s differs from the uninterrupted run", k, p)
		}
		if hflayers.IsLoRAVariable(p) {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no adapter variables in the trained store")
	}
}

// TestLoRAConfigErrors: the LoRA settings a bi-encoder refuses, each error naming what is
// wrong (and for an unknown module, the valid ones).
func TestLoRAConfigErrors(t *testing.T) {
	bert, err := encoder.New("bert", encoder.Sizes{Vocab: 100, Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	deberta, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 100, Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    TrainModel
		enc  encoder.Config
		want []string // substrings of the error; nil: no error
	}{
		{"off", TrainModel{}, deberta, nil},
		{"defaults", TrainModel{LoRARank: 8}, bert, nil},
		{"negative rank", TrainModel{LoRARank: -1}, bert, []string{"-lora-rank -1", ">= 0"}},
		{"unknown module", TrainModel{LoRARank: 4, LoRATargets: "query,q_proj"}, bert, []string{`unknown target module "q_proj"`, "valid: query, key, value, dense"}},
		{"mpnet name on bert", TrainModel{LoRARank: 4, LoRATargets: "q"}, bert, []string{`"q"`, "valid: query, key, value, dense"}},
		{"twice", TrainModel{LoRARank: 4, LoRATargets: "query,query"}, bert, []string{"given twice"}},
		{"deberta", TrainModel{LoRARank: 4}, deberta, []string{`"deberta-v2" does not support LoRA`, "bert", "mpnet", "xlm-roberta"}},
		{"alpha without rank", TrainModel{LoRAAlpha: 16}, bert, []string{"need -lora-rank"}},
		{"negative alpha", TrainModel{LoRARank: 4, LoRAAlpha: -1}, bert, []string{"-lora-alpha -1: must be > 0"}},
		{"dropout 1", TrainModel{LoRARank: 4, LoRADropout: 1}, bert, []string{"-lora-dropout 1", "[0, 1)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := c.m.LoRA(c.enc)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c.m.LoRARank > 0 && (l == nil || l.Alpha != 2*float64(c.m.LoRARank) || strings.Join(l.Targets, ",") != "query,value") {
					t.Fatalf("defaults: %+v, want alpha 2×rank, targets query,value", l)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// A configuration (as read from a run) with LoRA on an encoder without it.
	cfg := &Config{Encoder: deberta, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 16, ToolMaxLen: 16, Similarity: "cosine", Temperature: 0.05,
		LoRA: &hflayers.LoRA{Rank: 2, Alpha: 4, Targets: []string{"query"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "does not support LoRA") {
		t.Errorf("Validate of a DeBERTa config with LoRA: %v", err)
	}
}
