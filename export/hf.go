package export

import (
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
	"github.com/toolret/toolret/models/bert"
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
		if err := writeTowerHF(m, t, dir, t.MaxLen); err != nil {
			return err
		}
		man.Towers[key] = rel
	}
	return nil
}

// variableData returns the float32 values of the HF parameter name of the BERT under base.
func variableData(store *model.Store, base, name string) ([]float32, error) {
	sc, vn := bert.VariablePath(bert.In(store.RootScope(), base).Scope(), name)
	v := store.GetVariable(model.JoinPath(sc, vn))
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

// hfConfig is the config.json content of a tower (extra HF fields on top of bert.Config).
func hfConfig(cfg *bert.Config, head *Head) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if c["model_type"] == nil || c["model_type"] == "" {
		c["model_type"] = "bert"
	}
	c["architectures"] = []string{"BertModel"}
	c["torch_dtype"] = "float32"
	if head != nil {
		c["architectures"] = []string{"BertForSequenceClassification"}
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
	scope := bert.In(m.Store.RootScope(), t.Base)
	if err := bert.SaveHF(scope, t.BERT, dir, head != nil); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	cfg, err := hfConfig(t.BERT, head)
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
	if m.Kind != KindBiEncoder {
		return nil
	}
	return writeSentenceTransformers(m, t, dir, maxLen)
}

// clsPoolerScale is the pooler of a head that reads [CLS] directly: HF's
// BertForSequenceClassification always applies the pooler, so the export sets it to
// clsPoolerScale·I (bias 0) and divides the classifier by clsPoolerScale. tanh(εx)/ε equals x
// within ε²x²/3 relative (5e-7 at |x| = 20); ε is a power of two, so toolret reads the head
// back exactly.
const clsPoolerScale = 1.0 / (1 << 14)

// addHead adds the classifier (and, for a [CLS] head, the scaled identity pooler) to
// model.safetensors (BertForSequenceClassification names) and cfg.
func addHead(t *Tower, head *Head, dir string, cfg map[string]any) error {
	h, n := t.BERT.HiddenSize, len(head.Labels)
	st := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(st)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	cls := head.pooling() == bert.PoolCLS
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		if cls && (name == "bert.pooler.dense.weight" || name == "bert.pooler.dense.bias") {
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
		pw := make([]float32, h*h)
		for i := 0; i < h; i++ {
			pw[i*h+i] = clsPoolerScale
		}
		ts = append(ts, safetensors.Tensor{Name: "bert.pooler.dense.weight", Shape: []int{h, h}, Data: pw},
			safetensors.Tensor{Name: "bert.pooler.dense.bias", Shape: []int{h}, Data: make([]float32, h)})
		w = make([]float32, len(head.Weight))
		for i, v := range head.Weight {
			w[i] = v / clsPoolerScale
		}
		cfg["toolret_head"] = map[string]any{"pooling": "cls", "pooler_scale": clsPoolerScale}
	}
	if act := head.activation(); n > 1 && act == "sigmoid" {
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

func writeSentenceTransformers(m *Model, t *Tower, dir string, maxLen int) error {
	h := t.BERT.HiddenSize
	type module struct {
		Idx  int    `json:"idx"`
		Name string `json:"name"`
		Path string `json:"path"`
		Type string `json:"type"`
	}
	mods := []module{{0, "0", "", stTransformer}, {1, "1", "1_Pooling", stPooling}}
	pool := map[string]any{
		"word_embedding_dimension":          h,
		"pooling_mode_cls_token":            t.Pooling != bert.PoolMean,
		"pooling_mode_mean_tokens":          t.Pooling == bert.PoolMean,
		"pooling_mode_max_tokens":           false,
		"pooling_mode_mean_sqrt_len_tokens": false,
		"pooling_mode_weightedmean_tokens":  false,
		"pooling_mode_lasttoken":            false,
		"include_prompt":                    true,
	}
	if err := writeJSON(dir, "1_Pooling/config.json", pool); err != nil {
		return err
	}
	if t.Pooling == bert.PoolPooler {
		// BERT's pooler (dense + tanh over [CLS]) as a sentence-transformers Dense module.
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
		mods = append(mods, module{n, strconv.Itoa(n), p, stDense})
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
	if t.Normalize {
		n := len(mods)
		p := fmt.Sprintf("%d_Normalize", n)
		mods = append(mods, module{n, strconv.Itoa(n), p, stNormalize})
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
	return writeJSON(dir, "config_sentence_transformers.json", map[string]any{
		"__version__": map[string]string{"toolret": Version()}, "prompts": map[string]string{},
		"default_prompt_name": nil, "similarity_fn_name": sim})
}

// LoadHF loads an exported HF directory (or any HF BERT directory) as a one-tower Model on
// backend be: a bi-encoder tower when it has sentence-transformers files (pooling, Dense
// pooler, Normalize, max_seq_length), a classifier (or a one-label cross-encoder) when
// config.json declares BertForSequenceClassification, otherwise a [CLS]-pooled encoder.
func LoadHF(dir string, be compute.Backend) (*Model, error) {
	tok, err := tokenize.Load(dir)
	if err != nil {
		return nil, err
	}
	store := model.NewStore()
	cfg, err := bert.LoadHF(store.RootScope(), dir)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() != cfg.VocabSize {
		return nil, fmt.Errorf("model %s: tokenizer has %d tokens but config.json says vocab_size %d", dir, tok.VocabSize(), cfg.VocabSize)
	}
	t := Tower{BERT: cfg, Pooling: bert.PoolCLS, MaxLen: min(512, cfg.MaxPositionEmbeddings)}
	m := &Model{Kind: KindBiEncoder, Tok: tok, Store: store, Backend: be, Source: dir, Similarity: "dot"}
	if err := readSentenceTransformers(dir, &t); err != nil {
		return nil, err
	}
	if t.Normalize {
		m.Similarity = "cosine"
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
		switch mod.Type {
		case stTransformer:
		case stPooling:
			var p map[string]any
			if _, err := readJSONFile(filepath.Join(mp, "config.json"), &p); err != nil {
				return err
			}
			switch {
			case p["pooling_mode_mean_tokens"] == true:
				t.Pooling = bert.PoolMean
			case p["pooling_mode_cls_token"] == true:
				t.Pooling = bert.PoolCLS
			default:
				return fmt.Errorf("%s: pooling mode not supported (cls or mean tokens)", filepath.Join(mp, "config.json"))
			}
		case stDense:
			var c struct {
				Activation string `json:"activation_function"`
			}
			if _, err := readJSONFile(filepath.Join(mp, "config.json"), &c); err != nil {
				return err
			}
			if c.Activation != stTanh || t.Pooling != bert.PoolCLS || !t.BERT.HasPooler() {
				return fmt.Errorf("%s: only the BERT pooler (cls pooling, tanh Dense) is supported as a Dense module", mp)
			}
			f, err := safetensors.Open(filepath.Join(mp, "model.safetensors"))
			if err != nil {
				return err
			}
			if err := samePooler(dir, f); err != nil {
				return err
			}
			dense = true
		case stNormalize:
			t.Normalize = true
		default:
			return fmt.Errorf("%s: module %q not supported", filepath.Join(dir, "modules.json"), mod.Type)
		}
	}
	if dense {
		t.Pooling = bert.PoolPooler
	}
	var sb struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if _, err := readJSONFile(filepath.Join(dir, "sentence_bert_config.json"), &sb); err != nil {
		return err
	}
	if sb.MaxSeqLength > 0 {
		t.MaxLen = min(sb.MaxSeqLength, t.BERT.MaxPositionEmbeddings)
	}
	return nil
}

// samePooler checks that a Dense module holds the model's own pooler weights.
func samePooler(dir string, dense *safetensors.File) error {
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
			name = "bert." + name
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

// readHead reads a BertForSequenceClassification head (classifier.weight/bias, id2label).
func readHead(dir string, cfg *bert.Config) (*Head, error) {
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
	if !slices.Contains(c.Architectures, "BertForSequenceClassification") {
		return nil, nil
	}
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	if err != nil {
		return nil, err
	}
	w, ws, err := f.Float32("classifier.weight")
	if err != nil {
		return nil, fmt.Errorf("%s: BertForSequenceClassification without classifier weights: %w", p, err)
	}
	b, bs, err := f.Float32("classifier.bias")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(ws) != 2 || ws[1] != cfg.HiddenSize || len(bs) != 1 || bs[0] != ws[0] {
		return nil, fmt.Errorf("%s: classifier shapes %v and %v do not fit hidden size %d", p, ws, bs, cfg.HiddenSize)
	}
	labels := make([]string, ws[0])
	for i := range labels {
		labels[i] = c.ID2Label[strconv.Itoa(i)]
		if labels[i] == "" {
			labels[i] = fmt.Sprintf("LABEL_%d", i)
		}
	}
	if !cfg.HasPooler() {
		return nil, fmt.Errorf("%s: BertForSequenceClassification needs the pooler weights", p)
	}
	head := &Head{Weight: w, Bias: b, Labels: labels, Pooling: bert.PoolPooler, Activation: "softmax"}
	if c.ProblemType == "multi_label_classification" {
		head.Activation = "sigmoid"
	}
	if c.ToolretHead.Pooling == "cls" {
		// Undo the scaled identity pooler (see clsPoolerScale): exact, ε is a power of two.
		head.Pooling = bert.PoolCLS
		for i := range head.Weight {
			head.Weight[i] *= float32(c.ToolretHead.PoolerScale)
		}
	}
	return head, nil
}
