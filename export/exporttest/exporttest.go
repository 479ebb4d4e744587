// Package exporttest builds tiny randomly initialised bi-encoders (and the runs training would
// leave) for tests, examples and benchmarks of package export and its users.
package exporttest

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

var tokOnce = sync.OnceValues(func() (*tokenize.Tokenizer, error) {
	d, err := data.Default()
	if err != nil {
		return nil, err
	}
	var texts []string
	for _, t := range d.Tools {
		texts = append(texts, t.Text)
	}
	for _, q := range d.Queries {
		texts = append(texts, q.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 600, 2, true)
	if err != nil {
		return nil, err
	}
	return tokenize.New(vocab, true)
})

// Tokenizer returns a small WordPiece tokenizer (600 tokens) trained on the embedded default
// dataset. It is shared: do not modify it.
func Tokenizer() (*tokenize.Tokenizer, error) { return tokOnce() }

// Options shape a tiny bi-encoder.
type Options struct {
	Hidden, Layers, Heads int             // default 32, 2, 4
	Pooling               encoder.Pooling // default mean
	Similarity            string          // default cosine
	Separate              bool            // separate query and tool towers
	Act                   string          // hidden_act, default gelu
	Arch                  string          // encoder model_type (bert, the default, deberta-v2, mpnet, xlm-roberta, modernbert; wordbag: Hidden only)
	Fields                map[string]any  // further config.json fields of the encoder (ModernBERT's local_attention)
}

// Config returns the bi-encoder configuration (a BERT encoder) for o and a vocabulary of
// vocabSize tokens.
func Config(o Options, vocabSize int) (*biencoder.Config, error) {
	s := encoder.Sizes{Vocab: vocabSize, Hidden: 32, Layers: 2, Heads: 4, MaxPositions: 128}
	if o.Hidden > 0 {
		s.Hidden = o.Hidden
	}
	if o.Layers > 0 {
		s.Layers = o.Layers
	}
	if o.Heads > 0 {
		s.Heads = o.Heads
	}
	s.Intermediate = 2 * s.Hidden
	arch := o.Arch
	if arch == "" {
		arch = "bert"
	}
	enc, err := encoder.New(arch, s)
	if err != nil {
		return nil, fmt.Errorf("exporttest: %w", err)
	}
	// Larger than BERT's initializer range so that random models separate texts.
	fields := map[string]any{"initializer_range": 0.2}
	if o.Act != "" {
		fields["hidden_act"] = o.Act
	}
	for k, v := range o.Fields {
		fields[k] = v
	}
	if enc, err = encoder.Override(enc, fields); err != nil {
		return nil, fmt.Errorf("exporttest: %w", err)
	}
	c := &biencoder.Config{Encoder: enc, Pooling: o.Pooling, Shared: !o.Separate, QueryMaxLen: 32, ToolMaxLen: 64,
		Similarity: o.Similarity, Temperature: 0.05}
	if c.Pooling == "" {
		c.Pooling = encoder.PoolMean
	}
	if c.Similarity == "" {
		c.Similarity = "cosine"
	}
	return c, nil
}

// BiEncoder returns a tiny bi-encoder with random weights (deterministic in seed).
func BiEncoder(o Options, be compute.Backend, seed uint64) (*export.Model, error) {
	tok, err := Tokenizer()
	if err != nil {
		return nil, err
	}
	cfg, err := Config(o, tok.VocabSize())
	if err != nil {
		return nil, err
	}
	return export.NewBiEncoder(cfg, tok, be, seed)
}

// WriteRun writes m (a bi-encoder from BiEncoder) as a training run with one checkpoint, as
// cmd/train leaves it, so that biencoder.LoadRun and export.LoadModel read it.
func WriteRun(runDir string, o Options, be compute.Backend, seed uint64) error {
	tok, err := Tokenizer()
	if err != nil {
		return err
	}
	cfg, err := Config(o, tok.VocabSize())
	if err != nil {
		return err
	}
	m, err := export.NewBiEncoder(cfg, tok, be, seed)
	if err != nil {
		return err
	}
	files, err := biencoder.WriteRunFiles(runDir, cfg, tok)
	if err != nil {
		return err
	}
	d, err := data.Default()
	if err != nil {
		return err
	}
	man := checkpoints.Manifest{Step: 1, Seed: seed, Fingerprint: d.Fingerprint(), Extra: map[string]any{"best": map[string]any{"step": 1}}}
	if _, err := checkpoints.Save(runDir, m.Store, man, files); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	return nil
}

// IndexRun exports the run (or checkpoint) in runDir as a tool index in out over the embedded
// default dataset, as `cmd/export -format index -run RUN` does; refiner, when not empty, is a
// refiner run packaged with it (-refiner).
func IndexRun(runDir, out, refiner string, be compute.Backend) (*export.Manifest, error) {
	m, err := export.LoadModel(runDir, be)
	if err != nil {
		return nil, err
	}
	d, err := data.Default()
	if err != nil {
		return nil, err
	}
	return export.Export(m, export.Options{Format: export.FormatIndex, Out: out, Data: d, DataSource: "default", Refiner: refiner})
}

// WriteHF writes a tiny bi-encoder with random weights (BiEncoder) as a HuggingFace +
// sentence-transformers directory at dir: a stand-in for a pre-trained model.
func WriteHF(dir string, o Options, be compute.Backend, seed uint64) error {
	m, err := BiEncoder(o, be, seed)
	if err != nil {
		return err
	}
	_, err = export.Export(m, export.Options{Format: export.FormatHF, Out: dir})
	return err
}

// HubModel writes a tiny pre-trained stand-in (WriteHF) to dir/hf and installs it in the hub
// cache dir/cache as repo ("org/name", ref main). Point HF_HUB_CACHE at cache to resolve it.
func HubModel(dir, repo string, o Options, be compute.Backend, seed uint64) (hf, cache, snapshot string, err error) {
	hf, cache = filepath.Join(dir, "hf"), filepath.Join(dir, "cache")
	if err := WriteHF(hf, o, be, seed); err != nil {
		return "", "", "", err
	}
	id, ok := hub.ParseID(repo)
	if !ok {
		return "", "", "", fmt.Errorf("exporttest: %q is not a hub id", repo)
	}
	snapshot, err = hub.Import(cache, id, "", "main", hf)
	return hf, cache, snapshot, err
}

// CrossEncoder returns a tiny cross-encoder with random weights (deterministic in seed): a
// BERT encoder with its pooler and a one-logit head over [CLS], as a cross-encoder run
// exports, reading pairs of up to 64 tokens.
func CrossEncoder(be compute.Backend, seed uint64) (*export.Model, error) {
	m, err := BiEncoder(Options{Pooling: encoder.PoolPooler}, be, seed)
	if err != nil {
		return nil, err
	}
	h := m.Towers[0].Encoder.Hidden()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	head := &export.Head{Labels: []string{"relevant"}, Weight: make([]float32, h), Bias: []float32{0.1}, Pooling: encoder.PoolCLS}
	for i := range head.Weight {
		head.Weight[i] = float32(rng.NormFloat64())
	}
	m.Kind, m.Head, m.EmbedFn, m.Similarity = export.KindCrossEncoder, head, nil, ""
	m.Towers[0].Normalize, m.Towers[0].MaxLen = false, 64 // short pairs: fast tests
	return m, nil
}

// WriteCrossEncoderHF writes a tiny cross-encoder with random weights (CrossEncoder) as a
// HuggingFace directory at dir, as export -format hf writes a cross-encoder run: what
// toolindex.WithReranker and a recipe's reranker load.
func WriteCrossEncoderHF(dir string, be compute.Backend, seed uint64) error {
	m, err := CrossEncoder(be, seed)
	if err != nil {
		return err
	}
	_, err = export.Export(m, export.Options{Format: export.FormatHF, Out: dir})
	return err
}
