package exporttest

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
)

// ClassifierOptions shape a tiny classifier run.
type ClassifierOptions struct {
	Kind    string          // classifier.KindMLC (default) or KindQueryType
	Arch    string          // encoder model type: bert (default) or deberta-v2
	Loss    string          // mlc: bce (default) or softmax; querytype: ce (default) or bce
	Pooling encoder.Pooling // the head's input: cls (default) or pooler
	// WeightStd and BiasStd are the standard deviations of the head's random weights and
	// biases (default 0.3 and 1.5: logits of a few units, where the bias changes the order).
	WeightStd, BiasStd float64
}

// WriteClassifierRun writes a classifier with random weights (an encoder of hidden 32, two
// layers, and a head with N(0, WeightStd²) weights and N(0, BiasStd²) biases, deterministic in
// seed) over the embedded dataset as train classifier leaves a run: run.json (kind classifier,
// the embedded dataset's fingerprint and a dev split carved from its train split), its
// classifier.json (an mlc classifier's labels are the dataset's tool ids), the tokenizer and
// one checkpoint, so that classifier.LoadRun and export.LoadModel read it.
func WriteClassifierRun(runDir string, o ClassifierOptions, be compute.Backend, seed uint64) error {
	if o.Kind == "" {
		o.Kind = classifier.KindMLC
	}
	if o.Arch == "" {
		o.Arch = "bert"
	}
	if o.Loss == "" {
		o.Loss = "bce"
		if o.Kind == classifier.KindQueryType {
			o.Loss = "ce"
		}
	}
	if o.Pooling == "" {
		o.Pooling = encoder.PoolCLS
	}
	if o.WeightStd == 0 {
		o.WeightStd = 0.3
	}
	if o.BiasStd == 0 {
		o.BiasStd = 1.5
	}
	tok, err := Tokenizer()
	if err != nil {
		return err
	}
	d, err := data.Default()
	if err != nil {
		return err
	}
	enc, err := encoder.New(o.Arch, encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 32, Layers: 2, Heads: 4, Intermediate: 64, MaxPositions: 128})
	if err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2}); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	enc = enc.WithPooler(o.Pooling == encoder.PoolPooler)
	cfg := &classifier.Config{Kind: o.Kind, Encoder: enc, MaxLen: 32, LossKind: o.Loss, Pooling: o.Pooling}
	if o.Kind == classifier.KindMLC {
		cfg.Labels = classifier.ToolLabels(d)
	} else {
		cfg.Labels = []string{classifier.LabelSingle, classifier.LabelMulti}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), seed); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	n, h := cfg.Outputs(), enc.Hidden()
	rng := rand.New(rand.NewPCG(seed, 0x6d6c63))
	w, b := make([]float32, n*h), make([]float32, n)
	for i := range w {
		w[i] = float32(o.WeightStd * rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(o.BiasStd * rng.NormFloat64())
	}
	head := store.RootScope().At("classifier")
	if _, err := head.CreateVariable("weight", tensors.FromFlatDataAndDimensions(w, n, h)); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	if _, err := head.CreateVariable("bias", tensors.FromFlatDataAndDimensions(b, n)); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	if err := store.InitializeVariables(be, nil); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	files, err := rundir.WriteModelFiles(runDir, classifier.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		return err
	}
	man := checkpoints.Manifest{Step: 1, Seed: seed, Fingerprint: d.Fingerprint(), Extra: map[string]any{"best": map[string]any{"step": 1}}}
	if _, err := checkpoints.Save(runDir, store, man, files); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	sp, _, _, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		return err
	}
	return rundir.Create(runDir, &rundir.Meta{Kind: "classifier", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp})
}
