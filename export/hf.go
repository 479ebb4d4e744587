package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/tokenize"
)

// sentence-transformers module types and the activation name of its Dense module.
const (
	stTransformer = "sentence_transformers.models.Transformer"
	stPooling     = "sentence_transformers.models.Pooling"
	stDense       = "sentence_transformers.models.Dense"
	stNormalize   = "sentence_transformers.models.Normalize"
	stTanh        = "torch.nn.modules.activation.Tanh"
)

// writeHF writes every tower of m in HF layout: a single tower at the top of root, two towers
// into root/query and root/tool.
func writeHF(m *Model, root string, man *Manifest) error {
	for i := range m.Towers {
		t := &m.Towers[i]
		rel, key := ".", "model"
		if len(m.Towers) > 1 {
			rel, key = t.Name, t.Name
		}
		dir, err := path(root, rel)
		if err != nil {
			return err
		}
		maxLen := t.MaxLen
		if m.Kind == KindBiEncoder && len(m.Towers) == 1 && m.ToolMaxLen > 0 {
			// sentence-transformers has one max_seq_length: a shared tower gets the tool
			// length, and the query length is recorded beside it (writeSentenceTransformers).
			maxLen = min(maxLen, m.ToolMaxLen)
		}
		if err := writeTowerHF(m, t, dir, maxLen); err != nil {
			return err
		}
		if err := writeTowerONNX(m, t, dir, man); err != nil {
			return err
		}
		man.Towers[key] = rel
	}
	return nil
}

// variableData returns the float32 values of the HF parameter name of the encoder under base.
func variableData(store *model.Store, base, name string) ([]float32, error) {
	v := encoder.Variable(store, base, name)
	if v == nil {
		return nil, fmt.Errorf("export: variable for %q not found under %q", name, base)
	}
	t, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("export: %q: %w", name, err)
	}
	if t.DType() == dtypes.Float64 {
		d, err := tensors.CopyFlatData[float64](t)
		if err != nil {
			return nil, err
		}
		out := make([]float32, len(d))
		for i, x := range d {
			out[i] = float32(x)
		}
		return out, nil
	}
	return tensors.CopyFlatData[float32](t)
}

// hfConfig is the config.json content of a tower (extra HF fields on top of the encoder's).
func hfConfig(cfg encoder.Config, head *Head) (map[string]any, error) {
	b, err := cfg.MarshalJSON()
	if err != nil {
		return nil, err
	}
	// Numbers are kept as written (json.Number): transformers' strict configs (ModernBERT's)
	// want a float field written as 2.0, not 2.
	var c map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		return nil, err
	}
	c["model_type"] = cfg.ModelType()
	c["architectures"] = []string{cfg.HF().Model}
	c["torch_dtype"] = "float32"
	if _, ok := c["pooler_hidden_act"]; ok {
		// DeBERTa's ContextPooler: HF reads pooler_hidden_size (default hidden_size),
		// pooler_hidden_act and pooler_dropout (written by the encoder).
		if _, ok := c["pooler_hidden_size"]; !ok {
			c["pooler_hidden_size"] = cfg.Hidden()
		}
	}
	if head != nil {
		c["architectures"] = []string{cfg.HF().SequenceClassification}
		id2label, label2id := map[string]string{}, map[string]int{}
		for i, l := range head.Labels {
			id2label[strconv.Itoa(i)] = l
			label2id[l] = i
		}
		c["id2label"], c["label2id"] = id2label, label2id
	}
	return c, nil
}

// writeTowerHF writes one tower: HF model, tokenizer and, for bi-encoders, the
// sentence-transformers modules.
func writeTowerHF(m *Model, t *Tower, dir string, maxLen int) error {
	head := m.Head
	if head != nil && head.pooling() == encoder.PoolMean {
		// XxxForSequenceClassification reads the first token (through the pooler), never a mean.
		return fmt.Errorf("export: hf: a classification head over the mean of the token states (-pooling mean) cannot be written in HF layout (XxxForSequenceClassification reads the first token); use -format onnx, or -format index for an MLC classifier")
	}
	if mt := t.Encoder.ModelType(); (mt == "mpnet" || mt == "xlm-roberta") && head != nil {
		// MPNetForSequenceClassification's and XLMRobertaForSequenceClassification's heads
		// are their own classifier.dense (tanh) and out_proj over <s>, not the encoder's
		// pooler with one linear layer.
		return fmt.Errorf("export: hf: a classification head over an %s encoder cannot be written in HF layout (%s has a two-layer head of its own); use -format onnx or index", mt, t.Encoder.HF().SequenceClassification)
	} else if mt != "bert" && mt != "mpnet" && mt != "xlm-roberta" {
		// MPNet's and XLM-RoBERTa's poolers are BERT's (dense + tanh over the first token).
		// The [CLS] head's scaled identity pooler and the sentence-transformers Dense module
		// stand for BERT's tanh pooler; other encoders' poolers (DeBERTa: dense + GELU, which
		// cannot stand for the identity) differ. A head over the pooler is the encoder's own
		// XxxForSequenceClassification.
		if head != nil && head.pooling() == encoder.PoolCLS {
			return fmt.Errorf("export: hf: a [CLS] classification head over a %s encoder cannot be written in HF layout: %s always applies its pooler, and only BERT's tanh pooler can stand for [CLS]; train the model with -pooling pooler (the default for %s)",
				mt, t.Encoder.HF().SequenceClassification, mt)
		}
		if m.Kind == KindBiEncoder && t.Pooling == encoder.PoolPooler {
			return fmt.Errorf("export: hf: pooler pooling of a %s encoder cannot be written as a sentence-transformers model (its Dense module is BERT's tanh pooler)", mt)
		}
	}
	scope := encoder.In(m.Store.RootScope(), t.Base)
	if err := t.Encoder.SaveHF(scope, dir, head != nil); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	cfg, err := hfConfig(t.Encoder, head)
	if err != nil {
		return fmt.Errorf("export: config.json: %w", err)
	}
	if head != nil {
		if err := addHead(t, head, dir, cfg); err != nil {
			return err
		}
	}
	if err := writeJSON(dir, "config.json", cfg); err != nil {
		return err
	}
	if err := m.Tok.Save(dir); err != nil {
		return fmt.Errorf("export: tokenizer: %w", err)
	}
	if err := setModelMaxLength(dir, maxLen); err != nil {
		return err
	}
	if m.Kind != KindBiEncoder {
		return nil
	}
	return writeSentenceTransformers(m, t, dir, maxLen)
}

// setModelMaxLength sets model_max_length in dir's tokenizer_config.json to the tower's
// length, so that tokenizers truncating to it (HF with truncation=True, transformers.js
// pipelines) cut texts where toolret does.
func setModelMaxLength(dir string, maxLen int) error {
	p := filepath.Join(dir, "tokenizer_config.json")
	var c map[string]any
	ok, err := readJSONFile(p, &c)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if !ok {
		return fmt.Errorf("export: tokenizer wrote no %s", p)
	}
	c["model_max_length"] = maxLen
	return writeJSON(dir, "tokenizer_config.json", c)
}

// clsPoolerScale is the pooler of a head that reads [CLS] directly: HF's
// BertForSequenceClassification always applies the pooler, so the export sets it to
// clsPoolerScale·I (bias 0) and divides the classifier by clsPoolerScale. tanh(εx)/ε equals x
// within ε²x²/3 relative (5e-7 at |x| = 20); ε is a power of two, so toolret reads the head
// back exactly.
const clsPoolerScale = 1.0 / (1 << 14)

// addHead adds the classifier (and, for a [CLS] head, the scaled identity pooler) to
// model.safetensors (XxxForSequenceClassification names) and cfg.
func addHead(t *Tower, head *Head, dir string, cfg map[string]any) error {
	h, n := t.Encoder.Hidden(), len(head.Labels)
	pw, pb := t.Encoder.HF().Prefix+".pooler.dense.weight", t.Encoder.HF().Prefix+".pooler.dense.bias"
	st := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(st)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	cls := head.pooling() == encoder.PoolCLS
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		if cls && (name == pw || name == pb) {
			continue
		}
		d, shape, err := f.Float32(name)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: d})
	}
	w := head.Weight
	if cls {
		eye := make([]float32, h*h)
		for i := 0; i < h; i++ {
			eye[i*h+i] = clsPoolerScale
		}
		ts = append(ts, safetensors.Tensor{Name: pw, Shape: []int{h, h}, Data: eye},
			safetensors.Tensor{Name: pb, Shape: []int{h}, Data: make([]float32, h)})
		w = make([]float32, len(head.Weight))
		for i, v := range head.Weight {
			w[i] = v / clsPoolerScale
		}
		cfg["toolret_head"] = map[string]any{"pooling": "cls", "pooler_scale": clsPoolerScale}
	}
	if act := head.activation(); n == 1 || act == "sigmoid" {
		// Independent sigmoid scores, as toolret computes them (one logit: the reranker
		// score); text-classification pipelines then apply a sigmoid, not a softmax
		// (transformers.js applies softmax unless problem_type says so).
		cfg["problem_type"] = "multi_label_classification"
	}
	ts = append(ts,
		safetensors.Tensor{Name: "classifier.weight", Shape: []int{n, h}, Data: w},
		safetensors.Tensor{Name: "classifier.bias", Shape: []int{n}, Data: head.Bias})
	if err := safetensors.Write(st, ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// stModule is one entry of a sentence-transformers modules.json.
type stModule struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// stPoolingConfig is a sentence-transformers Pooling module's config.json: mean pooling, or
// the [CLS] token's state (which a pooler reads too).
func stPoolingConfig(hidden int, mean bool) map[string]any {
	return map[string]any{
		"word_embedding_dimension":          hidden,
		"pooling_mode_cls_token":            !mean,
		"pooling_mode_mean_tokens":          mean,
		"pooling_mode_max_tokens":           false,
		"pooling_mode_mean_sqrt_len_tokens": false,
		"pooling_mode_weightedmean_tokens":  false,
		"pooling_mode_lasttoken":            false,
		"include_prompt":                    true,
	}
}

func writeSentenceTransformers(m *Model, t *Tower, dir string, maxLen int) error {
	h := t.Encoder.Hidden()
	mods := []stModule{{0, "0", "", stTransformer}, {1, "1", "1_Pooling", stPooling}}
	pc := stPoolingConfig(h, t.Pooling == encoder.PoolMean)
	if t.Pooling == encoder.PoolLast {
		pc["pooling_mode_cls_token"], pc["pooling_mode_lasttoken"] = false, true
	}
	if err := writeJSON(dir, "1_Pooling/config.json", pc); err != nil {
		return err
	}
	if t.Pooling == encoder.PoolPooler {
		// The pooler (dense + tanh over [CLS]) as a sentence-transformers Dense module.
		w, err := variableData(m.Store, t.Base, "pooler.dense.weight")
		if err != nil {
			return err
		}
		b, err := variableData(m.Store, t.Base, "pooler.dense.bias")
		if err != nil {
			return err
		}
		n := len(mods)
		p := fmt.Sprintf("%d_Dense", n)
		mods = append(mods, stModule{n, strconv.Itoa(n), p, stDense})
		if err := writeJSON(dir, p+"/config.json", map[string]any{"in_features": h, "out_features": h, "bias": true, "activation_function": stTanh}); err != nil {
			return err
		}
		dst, err := path(dir, p+"/model.safetensors")
		if err != nil {
			return err
		}
		if err := safetensors.Write(dst, []safetensors.Tensor{{Name: "linear.weight", Shape: []int{h, h}, Data: w}, {Name: "linear.bias", Shape: []int{h}, Data: b}}, map[string]string{"format": "pt"}); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if o, ok := t.Encoder.(interface{ STDenseDirs() []string }); ok {
		// Dense modules the encoder applies itself (EmbeddingGemma's), written by its SaveHF.
		for _, p := range o.STDenseDirs() {
			n := len(mods)
			mods = append(mods, stModule{n, strconv.Itoa(n), p, stDense})
		}
	}
	if t.Normalize {
		n := len(mods)
		p := fmt.Sprintf("%d_Normalize", n)
		mods = append(mods, stModule{n, strconv.Itoa(n), p, stNormalize})
		np, err := path(dir, p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(np, 0o755); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if err := writeJSON(dir, "modules.json", mods); err != nil {
		return err
	}
	if err := writeJSON(dir, "sentence_bert_config.json", map[string]any{"max_seq_length": maxLen, "do_lower_case": false}); err != nil {
		return err
	}
	sim := "dot"
	if t.Normalize {
		sim = "cosine"
	}
	cfg := map[string]any{
		"__version__": map[string]string{"toolret": Version()}, "prompts": stPrompts(m, t),
		"default_prompt_name": nil, "similarity_fn_name": sim}
	if m.Marker != "" && t.Name == biencoder.QueryTower {
		cfg["default_prompt_name"] = "query" // a separate query tower encodes only queries
	}
	if l := sharedLengths(m, maxLen); l != nil {
		cfg[stToolretKey] = l
	}
	return writeJSON(dir, "config_sentence_transformers.json", cfg)
}

// stPrompts are the sentence-transformers prompts of an iteration-aware bi-encoder's query
// side (Model.Marker): "query" is round 0's marker, "iteration_t" round t's (t < 10), so that
// SentenceTransformer.encode(q, prompt_name="query") embeds q as toolret does. None for a
// model without a marker, nor for a separate tool tower.
func stPrompts(m *Model, t *Tower) map[string]string {
	p := map[string]string{}
	if m.Marker == "" {
		if m.QueryPrompt != "" && t.Name != biencoder.ToolTower {
			p[stQueryPrompt] = m.QueryPrompt
		}
		if m.ToolPrompt != "" && t.Name != biencoder.QueryTower {
			p[stToolPrompt] = m.ToolPrompt
		}
		return p
	}
	if t.Name == biencoder.ToolTower {
		return p
	}
	p["query"] = biencoder.Mark(m.Marker, 0, "")
	for i := range 10 {
		p[fmt.Sprintf("iteration_%d", i)] = biencoder.Mark(m.Marker, i, "")
	}
	return p
}

// The sentence-transformers prompt names of a query and of a tool text.
const (
	stQueryPrompt = encoder.STQueryPrompt
	stToolPrompt  = encoder.STDocumentPrompt
)

// stToolretKey is the key of toolret's own fields in config_sentence_transformers.json.
const stToolretKey = "toolret"

// stLengths are the per-side token limits of a shared bi-encoder tower, recorded in
// config_sentence_transformers.json: sentence-transformers has one max_seq_length (the
// tool length, sentence_bert_config.json), so a user reproducing toolret's query embeddings
// sets model.max_seq_length = QueryMaxSeqLength before encoding queries; LoadHF reads both.
type stLengths struct {
	QueryMaxSeqLength int `json:"query_max_seq_length"`
	ToolMaxSeqLength  int `json:"tool_max_seq_length"`
}

// sharedLengths returns the lengths to record for a tower written with max_seq_length
// maxLen, or nil when m is not a bi-encoder with one shared tower and known lengths.
func sharedLengths(m *Model, maxLen int) *stLengths {
	if m.Kind != KindBiEncoder || len(m.Towers) != 1 || m.QueryMaxLen <= 0 || m.ToolMaxLen <= 0 {
		return nil
	}
	return &stLengths{QueryMaxSeqLength: min(maxLen, m.QueryMaxLen), ToolMaxSeqLength: min(maxLen, m.ToolMaxLen)}
}

// LoadHF loads an exported HF directory (or any HF directory of a registered encoder
// model_type, see encoder.ModelTypes) as a one-tower Model on
// backend be: a bi-encoder tower when it has sentence-transformers files (pooling, Dense
// pooler, Normalize, max_seq_length), a classifier (or a one-label cross-encoder) when
// config.json declares the sequence-classification architecture
// (BertForSequenceClassification, DebertaV2ForSequenceClassification: a head over the
// pooler), otherwise a [CLS]-pooled encoder.
func LoadHF(dir string, be compute.Backend) (*Model, error) {
	tok, err := tokenize.Load(dir)
	if err != nil {
		return nil, err
	}
	store := model.NewStore()
	cfg, err := encoder.LoadHF(store.RootScope(), dir)
	if err != nil {
		return nil, err
	}
	if err := encoder.FitVocab(tok, cfg); err != nil {
		return nil, fmt.Errorf("model %s: %w (config.json)", dir, err)
	}
	t := Tower{Encoder: cfg, Pooling: encoder.PoolCLS, MaxLen: min(512, cfg.MaxPositions())}
	m := &Model{Kind: KindBiEncoder, Tok: tok, Store: store, Backend: be, Source: dir, Similarity: "dot"}
	if err := readSentenceTransformers(dir, &t); err != nil {
		return nil, err
	}
	if t.Normalize {
		m.Similarity = "cosine"
	}
	var st struct {
		Lengths *stLengths `json:"toolret"`
	}
	if _, err := readJSONFile(filepath.Join(dir, "config_sentence_transformers.json"), &st); err != nil {
		return nil, err
	}
	// The "query" and "document" prompts, as sentence-transformers' encode_query and
	// encode_document apply them; not an iteration-aware export's markers (the retriever
	// applies those itself, per iteration).
	q, d, err := encoder.STPrompts(dir)
	if err != nil {
		return nil, err
	}
	m.QueryPrompt, m.ToolPrompt = q, d
	if l := st.Lengths; l != nil {
		if l.QueryMaxSeqLength < 2 || l.ToolMaxSeqLength < 2 {
			return nil, fmt.Errorf("%s: toolret lengths %+v: want >= 2", filepath.Join(dir, "config_sentence_transformers.json"), *l)
		}
		m.QueryMaxLen, m.ToolMaxLen = l.QueryMaxSeqLength, l.ToolMaxSeqLength
		t.MaxLen = min(max(l.QueryMaxSeqLength, l.ToolMaxSeqLength), cfg.MaxPositions())
	}
	head, err := readHead(dir, cfg)
	if err != nil {
		return nil, err
	}
	if head != nil {
		m.Head, m.Similarity = head, ""
		m.Kind = KindClassifier
		if len(head.Labels) == 1 {
			m.Kind = KindCrossEncoder
		}
	}
	m.Towers = []Tower{t}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model %s: %w", dir, err)
	}
	if m.Recipe, err = ReadRecipe(dir); err != nil {
		return nil, err
	}
	return m, nil
}

func readJSONFile(p string, v any) (bool, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	return true, nil
}

// readSentenceTransformers sets t's pooling, normalisation and length from modules.json and
// friends, when present.
func readSentenceTransformers(dir string, t *Tower) error {
	var mods []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	ok, err := readJSONFile(filepath.Join(dir, "modules.json"), &mods)
	if err != nil || !ok {
		return err
	}
	dense := false
	for _, mod := range mods {
		mp := filepath.Join(dir, mod.Path)
		if !filepath.IsLocal(mod.Path) && mod.Path != "" {
			return fmt.Errorf("%s: module path %q leaves the model directory", filepath.Join(dir, "modules.json"), mod.Path)
		}
		kind, _ := encoder.STModuleOf(mod.Type)
		switch kind {
		case encoder.STModTransformer:
		case encoder.STModPooling:
			var p map[string]any
			if _, err := readJSONFile(filepath.Join(mp, "config.json"), &p); err != nil {
				return err
			}
			pool, ok := encoder.STPoolingMode(p)
			if !ok {
				return fmt.Errorf("%s: pooling mode not supported (cls or mean tokens)", filepath.Join(mp, "config.json"))
			}
			t.Pooling = pool
		case encoder.STModDense:
			// An encoder that loaded the Dense modules with its weights applies them in Pool
			// (EmbeddingGemma's 2_Dense, 3_Dense).
			if o, ok := t.Encoder.(interface{ OwnsSTDense() bool }); ok && o.OwnsSTDense() {
				continue
			}
			var c struct {
				Activation string `json:"activation_function"`
			}
			if _, err := readJSONFile(filepath.Join(mp, "config.json"), &c); err != nil {
				return err
			}
			if c.Activation != stTanh || t.Pooling != encoder.PoolCLS || !t.Encoder.HasPooler() {
				return fmt.Errorf("%s: only the model's pooler (cls pooling, tanh Dense) is supported as a Dense module", mp)
			}
			f, err := safetensors.Open(filepath.Join(mp, "model.safetensors"))
			if err != nil {
				return err
			}
			if err := samePooler(dir, t.Encoder.HF().Prefix, f); err != nil {
				return err
			}
			dense = true
		case encoder.STModNormalize:
			t.Normalize = true
		default:
			return fmt.Errorf("%s: module %q not supported", filepath.Join(dir, "modules.json"), mod.Type)
		}
	}
	if dense {
		t.Pooling = encoder.PoolPooler
	}
	var sb struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if _, err := readJSONFile(filepath.Join(dir, "sentence_bert_config.json"), &sb); err != nil {
		return err
	}
	if sb.MaxSeqLength <= 0 {
		// sentence-transformers 6 keeps the length in the tokenizer's model_max_length.
		var tc struct {
			ModelMaxLength float64 `json:"model_max_length"`
		}
		if _, err := readJSONFile(filepath.Join(dir, "tokenizer_config.json"), &tc); err != nil {
			return err
		}
		if tc.ModelMaxLength > 0 && tc.ModelMaxLength < 1e6 {
			sb.MaxSeqLength = int(tc.ModelMaxLength)
		}
	}
	if sb.MaxSeqLength > 0 {
		t.MaxLen = min(sb.MaxSeqLength, t.Encoder.MaxPositions())
	}
	return nil
}

// samePooler checks that a Dense module holds the model's own pooler weights (named with or
// without the base-model prefix).
func samePooler(dir, prefix string, dense *safetensors.File) error {
	mf, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	for _, pair := range [][2]string{{"linear.weight", "pooler.dense.weight"}, {"linear.bias", "pooler.dense.bias"}} {
		a, _, err := dense.Float32(pair[0])
		if err != nil {
			return err
		}
		name := pair[1]
		if !slices.Contains(mf.Names(), name) {
			name = prefix + "." + name
		}
		b, _, err := mf.Float32(name)
		if err != nil {
			return err
		}
		if !slices.Equal(a, b) {
			return fmt.Errorf("%s: the Dense module is not the model's pooler", dense.Name)
		}
	}
	return nil
}

// readHead reads a sequence-classification head (the encoder's XxxForSequenceClassification,
// BertForSequenceClassification or DebertaV2ForSequenceClassification: classifier.weight/bias
// over the pooler, id2label), or the [CLS] head toolret writes as BERT with a scaled identity
// pooler (toolret_head).
func readHead(dir string, cfg encoder.Config) (*Head, error) {
	var c struct {
		Architectures []string          `json:"architectures"`
		ID2Label      map[string]string `json:"id2label"`
		ProblemType   string            `json:"problem_type"`
		ToolretHead   struct {
			Pooling     string  `json:"pooling"`
			PoolerScale float64 `json:"pooler_scale"`
		} `json:"toolret_head"`
	}
	if _, err := readJSONFile(filepath.Join(dir, "config.json"), &c); err != nil {
		return nil, err
	}
	arch := cfg.HF().SequenceClassification
	if !slices.Contains(c.Architectures, arch) {
		return nil, nil
	}
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	if err != nil {
		return nil, err
	}
	w, ws, err := f.Float32("classifier.weight")
	if err != nil {
		return nil, fmt.Errorf("%s: %s without classifier weights: %w", p, arch, err)
	}
	b, bs, err := f.Float32("classifier.bias")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(ws) != 2 || ws[1] != cfg.Hidden() || len(bs) != 1 || bs[0] != ws[0] {
		return nil, fmt.Errorf("%s: classifier shapes %v and %v do not fit hidden size %d", p, ws, bs, cfg.Hidden())
	}
	labels := make([]string, ws[0])
	for i := range labels {
		labels[i] = c.ID2Label[strconv.Itoa(i)]
		if labels[i] == "" {
			labels[i] = fmt.Sprintf("LABEL_%d", i)
		}
	}
	if !cfg.HasPooler() {
		return nil, fmt.Errorf("%s: %s needs the pooler weights", p, arch)
	}
	head := &Head{Weight: w, Bias: b, Labels: labels, Pooling: encoder.PoolPooler, Activation: "softmax"}
	if c.ProblemType == "multi_label_classification" {
		head.Activation = "sigmoid"
	}
	if c.ToolretHead.Pooling == "cls" {
		// Undo the scaled identity pooler (see clsPoolerScale): exact, ε is a power of two.
		head.Pooling = encoder.PoolCLS
		for i := range head.Weight {
			head.Weight[i] *= float32(c.ToolretHead.PoolerScale)
		}
	}
	return head, nil
}
