package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// The exportable built-in model kinds: the names their packages register (package kinds).
const (
	KindBiEncoder    = biencoder.Kind
	KindCrossEncoder = crossencoder.Kind
	KindClassifier   = classifier.Kind
)

// Model is a trained encoder-based model in the form every export format needs: one or two
// encoder towers whose variables live in Store, the tokenizer, and for rerankers and
// classifiers a classification head over the pooled [CLS] state.
type Model struct {
	Kind    string
	Tok     *tokenize.Tokenizer
	Store   *model.Store
	Backend compute.Backend
	// Towers: one for shared bi-encoders, cross-encoders and classifiers; two (QueryTower
	// and ToolTower) for bi-encoders with separate towers.
	Towers []Tower
	// Head is the classification head (nil for bi-encoders).
	Head *Head
	// Similarity of a bi-encoder ("cosine" or "dot"); empty otherwise.
	Similarity string
	// Marker is a bi-encoder's iteration marker (biencoder.Config.Marker; "" for none).
	Marker string
	// QueryPrompt and ToolPrompt are prefixes put before every query and every tool text a
	// bi-encoder embeds (e.g. bge's query instruction, e5's "query: "; sentence-transformers'
	// prompts "query" and "document", as its encode_query and encode_document apply them).
	QueryPrompt, ToolPrompt string
	// QueryMaxLen and ToolMaxLen are a bi-encoder's per-side length limits (a shared tower's
	// MaxLen is the larger one).
	QueryMaxLen, ToolMaxLen int
	// Recipe is the retrieval recipe of the model directory it was loaded from (LoadHF reads
	// its toolret_recipe.json; its reranker's Dir is the cross-encoder inside that directory);
	// nil: none. An hf export writes it again, an index records its hybrid, clauses and
	// reranker, each copying the reranker's cross-encoder (Options.Recipe replaces it).
	Recipe *Recipe
	// Source is the checkpoint directory the model came from, and Fingerprint the training
	// data fingerprint recorded in it (both may be empty for models built in memory).
	Source      string
	Fingerprint string
	// EmbedFn, when set, embeds texts with a tower exactly as the training code does (the
	// index export uses it); otherwise Embed runs the tower's encoder with its pooling.
	EmbedFn func(tower string, texts []string) ([][]float32, error)
	// Adapter is, for a bi-encoder trained with LoRA, the adapters merged into Store when it
	// was loaded (biencoder.LoadRun), which Options.LoRA LoRAAdapter exports; nil: none.
	Adapter *biencoder.Adapter
	// setLengths, with EmbedFn, sets the lengths EmbedFn embeds with (Lengths.Apply).
	setLengths func(query, tool int) error
	// setCompute, with EmbedFn, sets the compute dtype EmbedFn embeds with (SetPrecision).
	setCompute func(dtypes.DType)

	mu      sync.Mutex
	runners map[string]*encoder.Runner
	quant   Quantization // Quantize
	// precision is SetPrecision's: "" (fp32) or backend.BF16.
	precision string
	qcalls    map[string]encoder.Call // quantized calls by tower base and pooling
}

// Tower is one encoder of a model.
type Tower struct {
	// Name is "" for a single (shared) tower, else biencoder.QueryTower or ToolTower; it
	// is also the subdirectory the tower is exported into.
	Name string
	// Base is the scope path of the tower's encoder variables in Model.Store ("" = root).
	Base    string
	Encoder encoder.Config
	Pooling encoder.Pooling
	// Normalize L2-normalises the pooled vector (cosine bi-encoders).
	Normalize bool
	// MaxLen is the maximum number of tokens per text, [CLS] and [SEP] included.
	MaxLen int
}

// Head is a sequence-classification head: logits = W·pooled + b, with W [labels, hidden].
// It reads the encoder's pooler output (BERT: dense+tanh over [CLS]; DeBERTa: the
// ContextPooler, dense+GELU), as HF's XxxForSequenceClassification does, or the raw [CLS]
// state with Pooling PoolCLS.
type Head struct {
	Weight  []float32 // [len(Labels), hidden], row-major
	Bias    []float32 // [len(Labels)]
	Labels  []string
	Pooling encoder.Pooling // encoder.PoolPooler (default) or encoder.PoolCLS
	// Activation turns several logits into probabilities: "softmax" (default) or "sigmoid"
	// (independent labels). A single logit always gets a sigmoid (the reranker score).
	Activation string
}

func (h *Head) activation() string {
	if h.Activation == "" {
		return "softmax"
	}
	return h.Activation
}

func (h *Head) pooling() encoder.Pooling {
	if h.Pooling == "" {
		return encoder.PoolPooler
	}
	return h.Pooling
}

// Logits applies the head to pooled vectors [n][hidden].
func (h *Head) Logits(pooled [][]float32) [][]float32 {
	n := len(h.Labels)
	out := make([][]float32, len(pooled))
	for i, p := range pooled {
		out[i] = make([]float32, n)
		for l := 0; l < n; l++ {
			s := h.Bias[l]
			w := h.Weight[l*len(p) : (l+1)*len(p)]
			for k, v := range p {
				s += w[k] * v
			}
			out[i][l] = s
		}
	}
	return out
}

// Sigmoid is 1 / (1 + e^-x), the score of a one-logit reranker.
func Sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// Tower returns the tower named name ("" finds the single tower of a shared model).
func (m *Model) Tower(name string) (*Tower, error) {
	for i := range m.Towers {
		if m.Towers[i].Name == name || len(m.Towers) == 1 {
			return &m.Towers[i], nil
		}
	}
	return nil, fmt.Errorf("model has no %q tower", name)
}

// Validate checks that the model is exportable: valid encoder configs, a tokenizer whose
// vocabulary matches every tower, lengths within the position table and a consistent head.
func (m *Model) Validate() error {
	if m.Tok == nil || m.Store == nil {
		return fmt.Errorf("export: model has no tokenizer or no variables")
	}
	if len(m.Towers) == 0 || len(m.Towers) > 2 {
		return fmt.Errorf("export: model has %d towers, want 1 or 2", len(m.Towers))
	}
	for _, t := range m.Towers {
		name := t.Name
		if name == "" {
			name = "encoder"
		}
		if t.Encoder == nil {
			return fmt.Errorf("export: %s tower has no encoder config", name)
		}
		if err := t.Encoder.Validate(); err != nil {
			return fmt.Errorf("export: %s tower: %w", name, err)
		}
		if err := encoder.FitVocab(m.Tok, t.Encoder); err != nil {
			return fmt.Errorf("export: %s tower: %w", name, err)
		}
		if t.MaxLen < 2 || t.MaxLen > t.Encoder.MaxPositions() {
			return fmt.Errorf("export: %s tower max length %d outside [2, %d]", name, t.MaxLen, t.Encoder.MaxPositions())
		}
		switch t.Pooling {
		case encoder.PoolCLS, encoder.PoolMean, encoder.PoolLast:
		case encoder.PoolPooler:
			if !t.Encoder.HasPooler() {
				return fmt.Errorf("export: %s tower pools with the pooler but has no pooler weights", name)
			}
		default:
			return fmt.Errorf("export: %s tower pooling %q not exportable (cls, mean, lasttoken, pooler)", name, t.Pooling)
		}
		if t.Name != "" && t.Name != biencoder.QueryTower && t.Name != biencoder.ToolTower {
			return fmt.Errorf("export: tower name %q (want %q or %q)", t.Name, biencoder.QueryTower, biencoder.ToolTower)
		}
	}
	if len(m.Towers) == 2 && (m.Towers[0].Name == m.Towers[1].Name || m.Towers[0].Name == "" || m.Towers[1].Name == "") {
		return fmt.Errorf("export: two towers need distinct names %q and %q", biencoder.QueryTower, biencoder.ToolTower)
	}
	if h := m.Head; h != nil {
		if len(m.Towers) != 1 {
			return fmt.Errorf("export: a classification head needs exactly one tower")
		}
		hid := m.Towers[0].Encoder.Hidden()
		n := len(h.Labels)
		if n == 0 || len(h.Weight) != n*hid || len(h.Bias) != n {
			return fmt.Errorf("export: head has %d labels, %d weights and %d biases; want weight [%d, %d] and bias [%d]", n, len(h.Weight), len(h.Bias), n, hid, n)
		}
		seen := map[string]bool{}
		for _, l := range h.Labels {
			if l == "" || seen[l] {
				return fmt.Errorf("export: head labels %q must be non-empty and distinct", h.Labels)
			}
			seen[l] = true
		}
		if a := h.activation(); a != "softmax" && a != "sigmoid" {
			return fmt.Errorf("export: head activation %q (want softmax or sigmoid)", a)
		}
		if p := h.pooling(); p != encoder.PoolPooler && p != encoder.PoolCLS && p != encoder.PoolMean {
			return fmt.Errorf("export: head pooling %q (want pooler, cls or mean)", p)
		}
		if h.pooling() == encoder.PoolPooler && !m.Towers[0].Encoder.HasPooler() {
			return fmt.Errorf("export: head reads the pooler but the model has no pooler weights")
		}
	}
	return nil
}

func (m *Model) runner(base string, cfg encoder.Config, p encoder.Pooling) (*encoder.Runner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := base + "|" + string(p)
	if r := m.runners[key]; r != nil {
		return r, nil
	}
	r, err := encoder.NewRunnerCompute(m.Backend, m.Store, base, cfg, p, m.computeDType())
	if err != nil {
		return nil, err
	}
	if m.runners == nil {
		m.runners = map[string]*encoder.Runner{}
	}
	m.runners[key] = r
	return r, nil
}

// sessionONNX says whether tower t runs as one ONNX Runtime session (NewONNXCall) rather than
// GoMLX graphs: on the onnx backend, for an encoder that writes itself as ONNX, unless
// $TOOLRET_ONNX_GRAPHS=gomlx asks for the graphs (one compiled per batch shape, each holding
// its own copy of the weights; kept for comparisons).
func (m *Model) sessionONNX(t *Tower) bool {
	if m.EmbedFn != nil || !backend.RunsONNX(m.Backend) || os.Getenv("TOOLRET_ONNX_GRAPHS") == "gomlx" {
		return false
	}
	_, ok := t.Encoder.(encoder.ONNX)
	return ok
}

// run encodes sequences (ids, types; maxLen and Map's batching) with the tower's encoder and
// pooling p.
func (m *Model) run(t *Tower, p encoder.Pooling, ids, types [][]int32, maxLen int) ([][]float32, error) {
	if m.Quantization().Int8() || m.sessionONNX(t) {
		c, err := m.quantCall(t, p)
		if err != nil {
			return nil, err
		}
		return encoder.Map(m.Tok, ids, types, maxLen, 32, c)
	}
	r, err := m.runner(t.Base, t.Encoder, p)
	if err != nil {
		return nil, err
	}
	return encoder.Map(m.Tok, ids, types, maxLen, 32, r.Call)
}

// Embed returns the pooled (and, with Normalize, L2-normalised) embedding of each text with
// the named tower, computed by the encoder graph on the model's backend: the reference the
// exported formats are checked against.
func (m *Model) Embed(tower string, texts []string) ([][]float32, error) {
	if m.EmbedFn != nil {
		return m.EmbedFn(tower, texts)
	}
	t, err := m.Tower(tower)
	if err != nil {
		return nil, err
	}
	maxLen := t.MaxLen
	if p := m.prompt(tower); p != "" {
		prefixed := make([]string, len(texts))
		for i, s := range texts {
			prefixed[i] = p + s
		}
		texts = prefixed
	}
	switch {
	case tower == biencoder.QueryTower && m.QueryMaxLen > 0:
		maxLen = min(maxLen, m.QueryMaxLen)
	case tower == biencoder.ToolTower && m.ToolMaxLen > 0:
		maxLen = min(maxLen, m.ToolMaxLen)
	}
	ids := make([][]int32, len(texts))
	for i, s := range texts {
		ids[i] = m.Tok.Single(s, maxLen)
	}
	out, err := m.run(t, t.Pooling, ids, nil, maxLen)
	if err != nil {
		return nil, err
	}
	if t.Normalize {
		for _, v := range out {
			L2Normalize(v)
		}
	}
	return out, nil
}

// prompt returns the prefix of a tower's texts.
func (m *Model) prompt(tower string) string {
	switch tower {
	case biencoder.QueryTower:
		return m.QueryPrompt
	case biencoder.ToolTower:
		return m.ToolPrompt
	}
	return ""
}

// Score returns the head's logits for each (a, b) text pair (b may be nil for single texts).
func (m *Model) Score(a, b []string) ([][]float32, error) {
	if m.Head == nil {
		return nil, fmt.Errorf("model %s has no classification head", m.Kind)
	}
	pooled, err := m.Pooled(a, b, m.Head.pooling())
	if err != nil {
		return nil, err
	}
	return m.Head.Logits(pooled), nil
}

// Pooled returns the pooled states of the first tower for each (a, b) text pair (b may be
// nil for single texts), tokenized as the head's input: [CLS] a [SEP] b [SEP] with token
// types 0 then 1, truncated to the tower's MaxLen.
func (m *Model) Pooled(a, b []string, p encoder.Pooling) ([][]float32, error) {
	t := &m.Towers[0]
	ids := make([][]int32, len(a))
	var types [][]int32
	if b != nil {
		types = make([][]int32, len(a))
	}
	for i := range a {
		if b == nil {
			ids[i] = m.Tok.Single(a[i], t.MaxLen)
		} else {
			ids[i], types[i] = m.Tok.Pair(a[i], b[i], t.MaxLen)
		}
	}
	return m.run(t, p, ids, types, t.MaxLen)
}

// L2Normalize scales v to unit length in place (as losses.Normalize: norm clamped at 1e-12).
func L2Normalize(v []float32) {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := float32(math.Sqrt(max(s, 1e-24)))
	for i := range v {
		v[i] /= n
	}
}

// Facet returns the export facet of a kind (kinds.Kind.Export) whose models load with load
// and export in formats, with firstStage its role as an index's first stage (FirstStage*;
// "" for none).
func Facet(load func(checkpointDir string, be compute.Backend) (*Model, error), firstStage string, formats ...string) *kinds.Export {
	return &kinds.Export{Formats: formats, FirstStage: firstStage,
		Load: func(dir string, be compute.Backend) (any, error) { return load(dir, be) }}
}

// The built-in kinds' export facets live here: their loaders build Models, which the model
// packages cannot import.
func init() {
	kinds.Register(kinds.Kind{Name: KindBiEncoder, Export: Facet(loadBiEncoder, FirstStageBiEncoder, FormatHF, FormatONNX, FormatIndex)})
	kinds.Register(kinds.Kind{Name: KindCrossEncoder, Export: Facet(HeadLoader(KindCrossEncoder, crossencoder.ConfigFile, []string{"relevant"}), "", FormatHF, FormatONNX)})
	// A classifier indexes when it is an MLC classifier (writeMLCIndex checks).
	kinds.Register(kinds.Kind{Name: KindClassifier, Export: Facet(HeadLoader(KindClassifier, classifier.ConfigFile, nil), FirstStageMLC, FormatHF, FormatONNX, FormatIndex)})
}

// HeadLoader returns a loader for checkpoints of encoder + classification head models (the
// cross-encoder and the classifiers): the encoder at the store root, the head's variables
// /classifier/weight [n, hidden] and /classifier/bias [n], and a configuration file with
// "encoder" (or the older "bert"), "max_len", optional "labels" (else defaultLabels, else
// LABEL_i), "loss" ("ce" and "softmax" mean softmax probabilities, anything else sigmoid) and optional
// "pooling", the head's input: "cls" (the [CLS] state, the default) or "pooler" (the
// encoder's pooler layer over it).
func HeadLoader(kind, configFile string, defaultLabels []string) func(dir string, be compute.Backend) (*Model, error) {
	return func(dir string, be compute.Backend) (*Model, error) {
		c, err := checkpoints.Load(dir)
		if err != nil {
			return nil, err
		}
		cb, err := c.File(configFile)
		if err != nil {
			return nil, fmt.Errorf("%s is not a %s checkpoint: %w", dir, kind, err)
		}
		var cfg headConfig
		if err := json.Unmarshal(cb, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", dir, configFile, err)
		}
		if cfg.Encoder == nil {
			return nil, fmt.Errorf("%s: %s has no encoder config", dir, configFile)
		}
		tok, err := tokenize.Load(dir)
		if err != nil {
			return nil, err
		}
		store := model.NewStore()
		if err := c.Restore(store, be); err != nil {
			return nil, err
		}
		cfg.Encoder = withPooler(cfg.Encoder, store, "")
		read := func(name string) ([]float32, []int, error) {
			v := store.GetVariable(name)
			if v == nil {
				return nil, nil, fmt.Errorf("%s: no variable %s (not an encoder + classification head checkpoint)", dir, name)
			}
			t, err := v.Value()
			if err != nil {
				return nil, nil, err
			}
			d, err := tensors.CopyFlatData[float32](t)
			return d, t.Shape().Dimensions, err
		}
		w, ws, err := read("/classifier/weight")
		if err != nil {
			return nil, err
		}
		b, _, err := read("/classifier/bias")
		if err != nil {
			return nil, err
		}
		labels := cfg.Labels
		if len(labels) == 0 {
			labels = defaultLabels
		}
		if len(ws) == 2 && ws[0] == 1 && len(labels) == 2 {
			labels = labels[1:] // one sigmoid logit for the second (positive) class
		}
		if len(ws) == 2 && len(labels) != ws[0] {
			labels = make([]string, ws[0])
			for i := range labels {
				labels[i] = fmt.Sprintf("LABEL_%d", i)
			}
		}
		act := "sigmoid"
		if cfg.Loss == "ce" || cfg.Loss == "softmax" { // mlc -loss softmax: softmax over all tools
			act = "softmax"
		}
		pool := cfg.Pooling
		switch pool {
		case "":
			pool = encoder.PoolCLS
		case encoder.PoolCLS, encoder.PoolMean, encoder.PoolPooler:
		default:
			return nil, fmt.Errorf("%s: %s: pooling %q (want cls, mean or pooler)", dir, configFile, pool)
		}
		maxLen := cfg.MaxLen
		if maxLen <= 0 {
			maxLen = cfg.Encoder.MaxPositions()
		}
		return &Model{Kind: kind, Tok: tok, Store: store, Backend: be, Source: dir,
			Towers: []Tower{{Encoder: cfg.Encoder, Pooling: pool, MaxLen: maxLen}},
			Head:   &Head{Weight: w, Bias: b, Labels: labels, Pooling: pool, Activation: act}}, nil
	}
}

// LoadModel loads the model of a run directory (its best checkpoint) or of one checkpoint
// directory, whatever its kind (package kinds) with an export facet; a kind without one
// loads as its Base (a pretrain run as the bi-encoder it holds).
func LoadModel(path string, be compute.Backend) (*Model, error) {
	dir, err := rundir.CheckpointDir(path)
	if err != nil {
		return nil, err
	}
	var exportable []kinds.Kind
	for _, k := range kinds.All() {
		if k.Export != nil && k.Export.Load != nil {
			exportable = append(exportable, k)
		}
	}
	var l kinds.Kind
	k, err := kinds.Of(dir)
	ok := err == nil
	if ok {
		l, ok = k, k.Export != nil && k.Export.Load != nil
		if !ok && k.Base != "" {
			if b, err := kinds.Lookup(k.Base); err == nil && b.Export != nil && b.Export.Load != nil {
				l, ok = b, true
			}
		}
	}
	if !ok { // a kind without a loader whose checkpoint holds an exportable kind's model
		for _, e := range exportable {
			if _, err := os.Stat(filepath.Join(dir, e.ConfigFile)); e.ConfigFile != "" && err == nil {
				l, ok = e, true
				break
			}
		}
	}
	if !ok {
		names := make([]string, len(exportable))
		for i, e := range exportable {
			names[i] = e.Name
		}
		return nil, fmt.Errorf("%s: not an exportable checkpoint (exportable kinds: %v)", dir, names)
	}
	if _, err := os.Stat(filepath.Join(dir, l.ConfigFile)); l.ConfigFile != "" && err != nil {
		return nil, fmt.Errorf("%s: a %s checkpoint without %s", dir, k.Name, l.ConfigFile)
	}
	v, err := l.Export.Load(dir, be)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*Model)
	if !ok || m == nil {
		return nil, fmt.Errorf("%s: kind %s's export loader returned %T, want a *export.Model (export.Facet)", dir, l.Name, v)
	}
	if m.Kind == "" {
		m.Kind = l.Name
	}
	if m.Source == "" {
		m.Source = dir
	}
	if m.Fingerprint == "" {
		m.Fingerprint = checkpointFingerprint(dir)
	}
	return m, nil
}

func checkpointFingerprint(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return ""
	}
	var m checkpoints.Manifest
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Fingerprint
}

func loadBiEncoder(dir string, be compute.Backend) (*Model, error) {
	e, err := biencoder.LoadRun(dir, be)
	if err != nil {
		return nil, err
	}
	return FromEmbedder(e), nil
}

// FromEmbedder describes a loaded bi-encoder as an exportable Model; embeddings come from the
// embedder itself.
func FromEmbedder(e *biencoder.Embedder) *Model {
	c := e.Cfg
	cos := c.Similarity == "cosine" || c.Similarity == "cos"
	tower := func(name string, maxLen int) Tower {
		base := c.TowerBase(name)
		return Tower{Name: name, Base: base, Encoder: withPooler(c.Encoder, e.Store, base), Pooling: c.Pooling, Normalize: cos, MaxLen: maxLen}
	}
	// The prompts are recorded (exports and indexes write them); the embedder applies them.
	m := &Model{Kind: KindBiEncoder, Tok: e.Tok, Store: e.Store, Backend: e.Backend, Similarity: c.Similarity, Marker: c.Marker,
		QueryPrompt: c.QueryPrompt, ToolPrompt: c.ToolPrompt, QueryMaxLen: c.QueryMaxLen, ToolMaxLen: c.ToolMaxLen, EmbedFn: e.Embed, setLengths: e.SetLengths, Adapter: e.Adapter,
		setCompute: func(dt dtypes.DType) { e.Cfg.Compute = dt }}
	if c.Shared {
		t := tower("", max(c.QueryMaxLen, c.ToolMaxLen))
		m.Towers = []Tower{t}
	} else {
		m.Towers = []Tower{tower(biencoder.QueryTower, c.QueryMaxLen), tower(biencoder.ToolTower, c.ToolMaxLen)}
	}
	return m
}

// withPooler returns a copy of cfg that records whether the encoder under base in store
// has pooler weights (training creates them only when the pooling uses them).
func withPooler(cfg encoder.Config, store *model.Store, base string) encoder.Config {
	return cfg.WithPooler(encoder.Variable(store, base, "pooler.dense.weight") != nil)
}

// NewBiEncoder builds a bi-encoder Model with freshly initialised weights (encoder Init with
// seed), for tests, examples and benchmarks.
func NewBiEncoder(cfg *biencoder.Config, tok *tokenize.Tokenizer, be compute.Backend, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, errors.New("export: no tokenizer")
	}
	if cfg.Pooling != encoder.PoolPooler {
		// As training leaves it: no pooler weights when the pooling does not use them.
		c := *cfg
		c.Encoder = cfg.Encoder.WithPooler(false)
		cfg = &c
	}
	store := model.NewStore()
	bases := []string{""}
	if !cfg.Shared {
		bases = []string{cfg.TowerBase(biencoder.QueryTower), cfg.TowerBase(biencoder.ToolTower)}
	}
	for i, b := range bases {
		if err := cfg.Encoder.Init(encoder.In(store.RootScope(), b), seed+uint64(i)); err != nil {
			return nil, err
		}
	}
	e := &biencoder.Embedder{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 32}
	return FromEmbedder(e), nil
}

// headConfig is what HeadLoader reads of a head model's configuration file.
type headConfig struct {
	Encoder encoder.Config  `json:"encoder"`
	MaxLen  int             `json:"max_len"`
	Labels  []string        `json:"labels"`
	Loss    string          `json:"loss"`
	Pooling encoder.Pooling `json:"pooling"`
}

// UnmarshalJSON reads the "encoder" object, or the "bert" object of configurations written
// before encoders were pluggable.
func (c *headConfig) UnmarshalJSON(b []byte) error {
	type plain headConfig
	enc, err := encoder.UnmarshalModel(b, (*plain)(c))
	c.Encoder = enc
	return err
}
