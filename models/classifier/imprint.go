package classifier

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// Head initialisations of an mlc classifier (TrainConfig.HeadInit).
const (
	HeadInitRandom = "random" // N(0, initializer_range), as HF initialises a new head
	HeadInitTools  = "tools"  // imprinted: each tool's row is its text's pooled embedding
)

// ImprintScale is the logit an imprinted head gives a query whose pooled state points where
// its tool's does, at the tools' mean norm: the cosine similarity times this, as
// sentence-transformers' MultipleNegativesRankingLoss scales it.
const ImprintScale = 20

// ImprintLen is the most tokens of a tool's text an imprinted row reads (specials included).
const ImprintLen = 128

// Imprint sets the head of the mlc classifier cfg in store to its tools' embeddings (weight
// imprinting, Qi, Brown and Lowe 2018): row t is the encoder's pooled state (cfg's head
// pooling) of tool t's text in d, divided by its norm and by the tools' mean norm and times
// ImprintScale; the biases are zero. A query then starts ranked by its similarity to each
// tool's text, as a bi-encoder ranks, and every row, trained or not, means its tool.
func Imprint(cfg *Config, store *model.Store, tok *tokenize.Tokenizer, be compute.Backend, d *data.Dataset, batch int) error {
	if cfg.Kind != KindMLC {
		return fmt.Errorf("classifier: -head-init %s needs -kind mlc", HeadInitTools)
	}
	text := make(map[string]string, len(d.Tools))
	for _, t := range d.Tools {
		text[t.ID] = t.Text
	}
	maxLen := min(ImprintLen, cfg.Encoder.MaxPositions())
	seqs := make([][]int32, len(cfg.Labels))
	for i, l := range cfg.Labels {
		s, ok := text[l]
		if !ok {
			return fmt.Errorf("classifier: imprint: label %q is not a tool of %s", l, d.Name)
		}
		seqs[i] = tok.Single(s, maxLen)
	}
	r, err := encoder.NewRunner(be, store, "", cfg.Encoder, HeadPooling(cfg.Pooling))
	if err != nil {
		return fmt.Errorf("classifier: imprint: %w", err)
	}
	rows, err := encoder.Map(tok, seqs, nil, maxLen, batch, r.Call)
	if err != nil {
		return fmt.Errorf("classifier: imprint: %w", err)
	}
	n, h := len(rows), cfg.Encoder.Hidden()
	norms := make([]float64, n)
	mean := 0.0
	for i, r := range rows {
		if len(r) != h {
			return fmt.Errorf("classifier: imprint: tool %q pooled to %d values, want %d", cfg.Labels[i], len(r), h)
		}
		for _, x := range r {
			norms[i] += float64(x) * float64(x)
		}
		norms[i] = math.Sqrt(norms[i])
		if norms[i] == 0 || math.IsNaN(norms[i]) || math.IsInf(norms[i], 0) {
			return fmt.Errorf("classifier: imprint: tool %q has a pooled state of norm %v", cfg.Labels[i], norms[i])
		}
		mean += norms[i] / float64(n)
	}
	w := make([]float32, n*h)
	for i, r := range rows {
		f := ImprintScale / (norms[i] * mean)
		for j, x := range r {
			w[i*h+j] = float32(float64(x) * f)
		}
	}
	s := store.RootScope().In("classifier")
	for name, t := range map[string]*tensors.Tensor{
		"weight": tensors.FromFlatDataAndDimensions(w, n, h),
		"bias":   tensors.FromFlatDataAndDimensions(make([]float32, n), n),
	} {
		if v := s.GetVariable(name); v != nil {
			if err := v.SetValue(t); err != nil {
				return fmt.Errorf("classifier: imprint: %s: %w", v.Path(), err)
			}
			continue
		}
		if _, err := s.CreateVariable(name, t); err != nil {
			return fmt.Errorf("classifier: imprint: %w", err)
		}
	}
	return nil
}
