package export

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
)

// First stages of an index (Manifest.FirstStage).
const (
	FirstStageBiEncoder = "biencoder" // a bi-encoder's tool embeddings
	FirstStageMLC       = "mlc"       // an MLC classifier's head
)

// IndexBias is the tensor of tools.safetensors holding an MLC index's per-tool bias
// [n_tools] F32, in tools.jsonl order.
const IndexBias = "bias"

// MLCManifest describes an index exported from an MLC classifier (train classifier -kind mlc).
// Its head computes logits = W·h + b over every tool, h the encoder's [CLS] state (or its
// pooler's output over [CLS], Pooling "pooler"); ranking by the logits is ranking by the
// classifier's probabilities. The index holds the rows of W as the tool embeddings
// (tools.safetensors "embeddings", mapped from label order to tools.jsonl order), b as the
// tensor Bias, and the encoder with that pooling and no normalisation as the query tower:
// a tool's score is the dot product of the query's vector with its row plus its bias, the
// classifier's logit.
type MLCManifest struct {
	// Loss is the classifier's training loss, "bce" or "softmax", and Activation what turns
	// its logits into the probabilities it ranks by (and a ToolRefiner over its candidates
	// was trained with): "sigmoid" (bce) or "softmax" (over all tools).
	Loss       string `json:"loss"`
	Activation string `json:"activation"`
	// Pooling is the head's input, "cls" or "pooler".
	Pooling string `json:"pooling"`
	// Labels is the number of the classifier's labels (the tools as exported).
	Labels int `json:"labels"`
	// Bias names the bias tensor of tools.safetensors (IndexBias).
	Bias string `json:"bias"`
}

// Stage is the index's first stage: FirstStage, or FirstStageBiEncoder for indexes written
// before it was recorded.
func (m *Manifest) Stage() string {
	if m.FirstStage == "" {
		return FirstStageBiEncoder
	}
	return m.FirstStage
}

// mlcConfig reads the classifier configuration of m's checkpoint (m.Source) and checks that it
// is an MLC classifier whose labels and head are m's.
func mlcConfig(m *Model) (*classifier.Config, error) {
	if m.Source == "" || m.Head == nil {
		return nil, fmt.Errorf("export: -format index: a classifier model without its checkpoint (Model.Source) or head: its %s says whether it is an mlc classifier", classifier.ConfigFile)
	}
	c, err := checkpoints.Load(m.Source)
	if err != nil {
		return nil, fmt.Errorf("export: -format index: %w", err)
	}
	b, err := c.File(classifier.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("export: -format index: %s: %w", m.Source, err)
	}
	cfg, err := classifier.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("export: -format index: %s: %w", m.Source, err)
	}
	if cfg.Kind != classifier.KindMLC {
		return nil, fmt.Errorf("export: -format index: %s is a %s classifier; an index needs a bi-encoder or an mlc classifier (whose labels are tools)", m.Source, cfg.Kind)
	}
	if !slices.Equal(cfg.Labels, m.Head.Labels) {
		return nil, fmt.Errorf("export: -format index: %s: the head has %d outputs for the %d labels of its %s", m.Source, len(m.Head.Labels), len(cfg.Labels), classifier.ConfigFile)
	}
	if p := classifier.HeadPooling(cfg.Pooling); p != m.Head.Pooling {
		return nil, fmt.Errorf("export: -format index: %s: head pooling %q, its %s says %q", m.Source, m.Head.Pooling, classifier.ConfigFile, p)
	}
	return cfg, nil
}

// mlcActivations maps an MLC loss to the function that turns its logits into probabilities.
var mlcActivations = map[string]string{"bce": "sigmoid", "softmax": "softmax"}

// writeMLCIndex writes the index of the MLC classifier m over the tools of opts.Data (default
// dataset if nil), which must be its labels: the head's rows and biases in the data's tool
// order, the encoder as the query tower (query/; no tool tower: tools cannot be added) and,
// with opts.Refiner, the refiner (a ToolRefiner over this classifier's candidates).
func writeMLCIndex(m *Model, root string, man *Manifest, opts Options) error {
	cfg, err := mlcConfig(m)
	if err != nil {
		return err
	}
	act, ok := mlcActivations[cfg.LossKind]
	if !ok {
		return fmt.Errorf("export: -format index: %s: mlc loss %q (want bce or softmax)", m.Source, cfg.LossKind)
	}
	t0 := m.Towers[0]
	pool := classifier.HeadPooling(cfg.Pooling)
	if mt := t0.Encoder.ModelType(); pool == encoder.PoolPooler && mt != "bert" {
		return fmt.Errorf("export: -format index: MLC classifier %s reads its %s encoder's pooler (head pooling %q): the index's query tower cannot express that pooler (a sentence-transformers Dense module is BERT's tanh pooler); an MLC index needs head pooling %q, or a BERT encoder (train classifier -kind mlc -pooling cls)",
			m.Source, mt, pool, encoder.PoolCLS)
	}
	d, src := opts.Data, opts.DataSource
	if d == nil {
		if d, err = data.Default(); err != nil {
			return err
		}
		src = "default"
	}
	if src == "" {
		src = d.Name
	}
	if len(d.Tools) == 0 {
		return fmt.Errorf("export: dataset %s has no tools", d.Name)
	}
	// The head's rows in the data's tool order: its tools must be the labels.
	label := make(map[string]int, len(cfg.Labels))
	for i, l := range cfg.Labels {
		label[l] = i
	}
	hid := t0.Encoder.Hidden()
	emb := make([][]float32, len(d.Tools))
	bias := make([]float32, len(d.Tools))
	seen := make(map[string]bool, len(d.Tools))
	for i, t := range d.Tools {
		j, ok := label[t.ID]
		if !ok {
			return fmt.Errorf("export: -format index: tool %q of %s is not a label of MLC classifier %s: an MLC index holds the classifier's labels (index the data it was trained on)", t.ID, src, m.Source)
		}
		if seen[t.ID] {
			return fmt.Errorf("export: -format index: tool %q appears twice in %s", t.ID, src)
		}
		seen[t.ID] = true
		emb[i] = m.Head.Weight[j*hid : (j+1)*hid : (j+1)*hid]
		bias[i] = m.Head.Bias[j]
	}
	for _, l := range cfg.Labels {
		if !seen[l] {
			return fmt.Errorf("export: -format index: label %q of MLC classifier %s is not a tool of %s: an MLC index holds the classifier's labels (index the data it was trained on)", l, m.Source, src)
		}
	}
	recs := ToolRecords(d)
	meta := map[string]string{"similarity": "dot", "data_fingerprint": d.Fingerprint(), "first_stage": FirstStageMLC}
	if err := WriteIndexFilesBias(root, recs, emb, bias, meta); err != nil {
		return err
	}
	man.FirstStage = FirstStageMLC
	man.MLC = &MLCManifest{Loss: cfg.LossKind, Activation: act, Pooling: string(pool), Labels: len(cfg.Labels), Bias: IndexBias}
	if opts.Refiner != "" {
		if man.Refiner, err = writeRefiner(m, root, man, opts, d, recs); err != nil {
			return err
		}
	}
	// The query tower: the classifier's encoder with the head's pooling, unnormalised.
	q := &Model{Kind: KindBiEncoder, Tok: m.Tok, Store: m.Store, Backend: m.Backend, Similarity: "dot", Source: m.Source,
		Towers: []Tower{{Base: t0.Base, Encoder: t0.Encoder, Pooling: pool, MaxLen: t0.MaxLen}}}
	if err := q.Validate(); err != nil {
		return fmt.Errorf("export: -format index: MLC classifier %s: query tower: %w", m.Source, err)
	}
	dir, err := path(root, IndexQueryDir)
	if err != nil {
		return err
	}
	if err := writeTowerHF(q, &q.Towers[0], dir, t0.MaxLen); err != nil {
		return err
	}
	man.Towers = map[string]string{biencoder.QueryTower: IndexQueryDir}
	man.Labels = nil // the tools are the labels (tools.jsonl)
	man.Similarity = "dot"
	man.TrainDataFingerprint = m.Fingerprint
	man.DataFingerprint = d.Fingerprint()
	man.DataSource = src
	man.Tools, man.Dim = len(emb), hid
	return nil
}

// ReadIndexBias reads the per-tool bias of the index in dir that man describes: nil for a
// bi-encoder's index, else the tensor man.MLC.Bias of tools.safetensors, which must hold one
// value per tool (n, the rows of its embeddings).
func ReadIndexBias(dir string, man *Manifest, n int) ([]float32, error) {
	switch man.Stage() {
	case FirstStageBiEncoder:
		return nil, nil
	case FirstStageMLC:
	default:
		return nil, fmt.Errorf("index %s: first stage %q (want %s or %s; written by a newer toolret?)", dir, man.FirstStage, FirstStageBiEncoder, FirstStageMLC)
	}
	if man.MLC == nil || man.MLC.Bias == "" {
		return nil, fmt.Errorf("index %s: first stage %s without the manifest's mlc entry naming its bias tensor", dir, FirstStageMLC)
	}
	p := filepath.Join(dir, IndexEmbeddings)
	f, err := safetensors.Open(p)
	if err != nil {
		return nil, err
	}
	b, shape, err := f.Float32(man.MLC.Bias)
	if err != nil {
		return nil, fmt.Errorf("%s: the MLC index's bias (manifest mlc.bias %q): %w", p, man.MLC.Bias, err)
	}
	if len(shape) != 1 || shape[0] != n {
		return nil, fmt.Errorf("%s: bias shape %v, want [%d] (one per tool)", p, shape, n)
	}
	return b, nil
}
