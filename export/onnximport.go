package export

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/safetensors"
	"google.golang.org/protobuf/proto"
)

// ONNXImport describes a BERT encoder exported to ONNX by PyTorch (as transformers.js and
// optimum publish them, and as Java packages such as langchain4j's embedding models carry
// them): one graph from input_ids / attention_mask / token_type_ids to last_hidden_state, its
// weights as initializers. ImportONNX rebuilds the HuggingFace / sentence-transformers model
// directory it was exported from.
type ONNXImport struct {
	Model     string // the .onnx file
	Tokenizer string // the model's tokenizer.json (WordPiece)
	// Pooling is the sentence embedding's pooling: "cls" (bge) or "mean" (e5, MiniLM). The
	// graph stops at the token states, so the model card has to say which.
	Pooling   string
	Normalize bool // unit-length embeddings (a Normalize module)
	// MaxSeqLength is the sentence-transformers max_seq_length; 0 means the position table's
	// length.
	MaxSeqLength int
	// Heads is the number of attention heads; 0 reads it off the graph's attention scale
	// (scores divided by sqrt(hidden / heads)).
	Heads int
	// QueryPrompt and DocumentPrompt are the model card's prompts, recorded as
	// sentence-transformers' "query" and "document" prompts (e5: "query: ", "passage: ").
	QueryPrompt, DocumentPrompt string
	Source                      string // where the file came from, recorded in the weights' metadata
}

// ImportONNX writes to out the HF model directory (config.json, model.safetensors, tokenizer
// files) and sentence-transformers modules of the BERT encoder in.Model. PyTorch's exporter
// keeps the names of biases and LayerNorm parameters but stores each Linear weight transposed
// under an anonymous name ("onnx::MatMul_1525"); a weight is named after the bias added to
// its product and transposed back, so the safetensors hold exactly the exported values.
// Hidden size, layers, intermediate size, vocabulary and position table come from the tensor
// shapes, the heads and LayerNorm epsilon from the graph's constants. A graph that is not such
// a BERT (an unnamed weight, a missing tensor, another activation) is an error naming it, and
// a tokenizer whose vocabulary is not the embedding table's size is refused. out is written
// in a temporary directory beside it and renamed into place; an existing out is refused.
func ImportONNX(out string, in ONNXImport) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("import onnx: %s exists", out)
	}
	if in.Pooling != "cls" && in.Pooling != "mean" {
		return fmt.Errorf("import onnx: pooling %q: want cls or mean", in.Pooling)
	}
	b, err := os.ReadFile(in.Model)
	if err != nil {
		return fmt.Errorf("import onnx: %w", err)
	}
	g, err := readBERTGraph(in.Model, b)
	if err != nil {
		return fmt.Errorf("import onnx: %w", err)
	}
	if in.Heads > 0 {
		g.heads = in.Heads
	}
	if g.heads <= 0 || g.hidden%g.heads != 0 {
		return fmt.Errorf("import onnx: %s: no attention scale found to read the heads from; give the number of heads", in.Model)
	}
	tok, err := os.ReadFile(in.Tokenizer)
	if err != nil {
		return fmt.Errorf("import onnx: %w", err)
	}
	var tj struct {
		Normalizer *struct {
			Type      string `json:"type"`
			Lowercase *bool  `json:"lowercase"`
		} `json:"normalizer"`
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tok, &tj); err != nil {
		return fmt.Errorf("import onnx: %s: %w", in.Tokenizer, err)
	}
	if tj.Model.Type != "WordPiece" {
		return fmt.Errorf("import onnx: %s: model type %q, want WordPiece (a BERT tokenizer)", in.Tokenizer, tj.Model.Type)
	}
	if n := len(tj.Model.Vocab); n != g.vocab {
		return fmt.Errorf("import onnx: %s has %d tokens, but %s's embeddings.word_embeddings.weight has %d rows", in.Tokenizer, n, in.Model, g.vocab)
	}
	lower := tj.Normalizer != nil && tj.Normalizer.Lowercase != nil && *tj.Normalizer.Lowercase
	maxLen := in.MaxSeqLength
	if maxLen <= 0 || maxLen > g.positions {
		maxLen = g.positions
	}
	cfg := map[string]any{
		"architectures": []string{"BertModel"}, "model_type": "bert",
		"hidden_size": g.hidden, "num_hidden_layers": g.layers, "num_attention_heads": g.heads,
		"intermediate_size": g.inter, "vocab_size": g.vocab, "max_position_embeddings": g.positions,
		"type_vocab_size": g.types, "hidden_act": "gelu", "layer_norm_eps": g.eps,
		"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
		"pad_token_id": 0, "position_embedding_type": "absolute", "use_cache": true,
	}
	specials := map[string]string{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]"}
	for k, v := range specials {
		if _, ok := tj.Model.Vocab[v]; !ok {
			return fmt.Errorf("import onnx: %s has no %s token %q", in.Tokenizer, k, v)
		}
	}
	tcfg := map[string]any{"tokenizer_class": "BertTokenizer", "do_lower_case": lower, "model_max_length": maxLen,
		"clean_up_tokenization_spaces": true, "tokenize_chinese_chars": true, "strip_accents": nil}
	for k, v := range specials {
		tcfg[k] = v
	}
	prompts := map[string]string{}
	if in.QueryPrompt != "" {
		prompts[stQueryPrompt] = in.QueryPrompt
	}
	if in.DocumentPrompt != "" {
		prompts[stToolPrompt] = in.DocumentPrompt
	}
	sim := "dot"
	if in.Normalize {
		sim = "cosine"
	}
	mods := []stModule{{0, "0", "", stTransformer}, {1, "1", "1_Pooling", stPooling}}
	if in.Normalize {
		mods = append(mods, stModule{2, "2", "2_Normalize", stNormalize})
	}
	files := map[string]any{
		"config.json": cfg, "tokenizer_config.json": tcfg, "special_tokens_map.json": specials,
		"modules.json": mods, "1_Pooling/config.json": stPoolingConfig(g.hidden, in.Pooling == "mean"),
		"sentence_bert_config.json":         map[string]any{"max_seq_length": maxLen, "do_lower_case": false},
		"config_sentence_transformers.json": map[string]any{"prompts": prompts, "default_prompt_name": nil, "similarity_fn_name": sim},
	}
	src := in.Source
	if src == "" {
		src = in.Model
	}
	meta := map[string]string{"format": "pt", "toolret_imported_from": src}
	err = writeModelDir(out, "", func(tmp string) error {
		for name, v := range files {
			if err := writeJSON(tmp, name, v); err != nil {
				return err
			}
		}
		if in.Normalize {
			if err := os.MkdirAll(filepath.Join(tmp, "2_Normalize"), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, "tokenizer.json"), tok, 0o644); err != nil {
			return err
		}
		return safetensors.WriteRaw(filepath.Join(tmp, "model.safetensors"), g.tensors, meta)
	})
	if err != nil {
		return fmt.Errorf("import onnx: %w", err)
	}
	return nil
}

// bertGraph is what readBERTGraph finds in an exported BERT.
type bertGraph struct {
	tensors                                        []safetensors.Raw
	hidden, layers, heads, inter, vocab, positions int
	types                                          int
	eps                                            float64
}

// readBERTGraph maps the initializers of a PyTorch-exported BERT to HF tensor names.
func readBERTGraph(name string, b []byte) (*bertGraph, error) {
	var mp protos.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("%s: not an ONNX model: %w", name, err)
	}
	gr := mp.Graph
	if gr == nil {
		return nil, fmt.Errorf("%s: the ONNX model has no graph", name)
	}
	inits := map[string]*protos.TensorProto{}
	for _, t := range gr.Initializer {
		inits[t.Name] = t
	}
	consts := map[string]*protos.TensorProto{} // outputs of Constant nodes
	producer := map[string]*protos.NodeProto{}
	users := map[string][]*protos.NodeProto{}
	ops := map[string]bool{}
	for _, n := range gr.Node {
		ops[n.OpType] = true
		for _, o := range n.Output {
			producer[o] = n
		}
		for _, i := range n.Input {
			users[i] = append(users[i], n)
		}
		if n.OpType == "Constant" && len(n.Output) == 1 {
			for _, a := range n.Attribute {
				if a.Name == "value" && a.T != nil {
					consts[n.Output[0]] = a.T
				}
			}
		}
	}
	if !ops["Erf"] {
		return nil, fmt.Errorf("%s: no Erf node: only BERT's exact gelu activation is imported", name)
	}
	scalar := func(x string) (float64, bool) {
		t := consts[x]
		if t == nil {
			t = inits[x]
		}
		if t == nil || t.DataType != int32(protos.TensorProto_FLOAT) {
			return 0, false
		}
		v, err := floatData(t)
		if err != nil || len(v) != 1 {
			return 0, false
		}
		return float64(v[0]), true
	}
	names := map[string]string{} // initializer -> HF name
	transpose := map[string]bool{}
	for n, t := range inits {
		if !strings.HasPrefix(n, "onnx::") && t.DataType == int32(protos.TensorProto_FLOAT) {
			names[n] = strings.TrimPrefix(n, "bert.")
		}
	}
	g := &bertGraph{eps: -1}
	for _, n := range gr.Node {
		switch n.OpType {
		case "MatMul":
			if len(n.Input) != 2 {
				continue
			}
			w := inits[n.Input[1]]
			if w == nil {
				continue
			}
			if len(w.Dims) != 2 || w.DataType != int32(protos.TensorProto_FLOAT) {
				return nil, fmt.Errorf("%s: MatMul %s: weight %s is not a 2-D float tensor", name, n.Name, w.Name)
			}
			bias := ""
			for _, u := range users[n.Output[0]] {
				if u.OpType != "Add" {
					continue
				}
				for _, x := range u.Input {
					if strings.HasSuffix(x, ".bias") && inits[x] != nil {
						bias = x
					}
				}
			}
			if bias == "" {
				return nil, fmt.Errorf("%s: MatMul %s: weight %s is not followed by a named bias, so it cannot be named", name, n.Name, w.Name)
			}
			hf := strings.TrimSuffix(strings.TrimPrefix(bias, "bert."), ".bias") + ".weight"
			if prev, ok := names[w.Name]; ok && prev != hf {
				return nil, fmt.Errorf("%s: initializer %s is both %s and %s", name, w.Name, prev, hf)
			}
			names[w.Name], transpose[w.Name] = hf, true
		case "Div", "Mul":
			// The attention scale: Q·Kᵀ (a MatMul of two activations) / sqrt(head size).
			if len(n.Input) != 2 || g.heads > 0 {
				continue
			}
			p := producer[n.Input[0]]
			v, ok := scalar(n.Input[1])
			if p == nil || p.OpType != "MatMul" || inits[p.Input[1]] != nil || !ok || v <= 0 {
				continue
			}
			if n.OpType == "Mul" {
				v = 1 / v
			}
			if hd := int(math.Round(v * v)); hd > 0 && math.Abs(v*v-float64(hd)) < 1e-3 {
				g.heads = -hd // the head size; heads once the hidden size is known
			}
		case "Add":
			// LayerNorm's epsilon: variance (a ReduceMean) + eps.
			if len(n.Input) != 2 || g.eps >= 0 {
				continue
			}
			if p := producer[n.Input[0]]; p != nil && p.OpType == "ReduceMean" {
				if v, ok := scalar(n.Input[1]); ok && v > 0 && v < 1e-3 {
					// The float32 constant's shortest decimal (1e-12, not 9.99…96e-13).
					g.eps, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
				}
			}
		}
	}
	if g.eps < 0 {
		return nil, fmt.Errorf("%s: no LayerNorm epsilon found (variance + eps after a ReduceMean)", name)
	}
	byName := map[string]*protos.TensorProto{}
	for n, hf := range names {
		if prev, ok := byName[hf]; ok {
			return nil, fmt.Errorf("%s: initializers %s and %s are both %s", name, prev.Name, n, hf)
		}
		byName[hf] = inits[n]
	}
	for n, t := range inits {
		if _, ok := names[n]; !ok && t.DataType == int32(protos.TensorProto_FLOAT) && len(t.Dims) >= 2 {
			return nil, fmt.Errorf("%s: weight %s %v is neither named nor a MatMul weight", name, n, t.Dims)
		}
	}
	dims := func(hf string, rank int) ([]int, error) {
		t := byName[hf]
		if t == nil {
			return nil, fmt.Errorf("%s: no tensor %s", name, hf)
		}
		if len(t.Dims) != rank {
			return nil, fmt.Errorf("%s: tensor %s has shape %v, want rank %d", name, hf, t.Dims, rank)
		}
		d := make([]int, rank)
		for i, x := range t.Dims {
			d[i] = int(x)
		}
		return d, nil
	}
	we, err := dims("embeddings.word_embeddings.weight", 2)
	if err != nil {
		return nil, err
	}
	pe, err := dims("embeddings.position_embeddings.weight", 2)
	if err != nil {
		return nil, err
	}
	te, err := dims("embeddings.token_type_embeddings.weight", 2)
	if err != nil {
		return nil, err
	}
	g.vocab, g.hidden, g.positions, g.types = we[0], we[1], pe[0], te[0]
	for {
		if _, ok := byName[fmt.Sprintf("encoder.layer.%d.attention.self.query.weight", g.layers)]; !ok {
			break
		}
		g.layers++
	}
	if g.layers == 0 {
		return nil, fmt.Errorf("%s: no transformer layer (encoder.layer.0.attention.self.query.weight)", name)
	}
	id, err := dims("encoder.layer.0.intermediate.dense.weight", 2)
	if err != nil {
		return nil, err
	}
	g.inter = id[1] // [in, out] as exported
	if g.heads < 0 {
		if hd := -g.heads; g.hidden%hd == 0 {
			g.heads = g.hidden / hd
		} else {
			g.heads = 0
		}
	}
	// Every tensor of a BERT layer, with its HF shape, must be there.
	want := map[string][]int{
		"embeddings.LayerNorm.weight": {g.hidden}, "embeddings.LayerNorm.bias": {g.hidden},
		"embeddings.word_embeddings.weight": {g.vocab, g.hidden}, "embeddings.position_embeddings.weight": {g.positions, g.hidden},
		"embeddings.token_type_embeddings.weight": {g.types, g.hidden},
	}
	for l := 0; l < g.layers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, s := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			want[p+s+".weight"], want[p+s+".bias"] = []int{g.hidden, g.hidden}, []int{g.hidden}
		}
		want[p+"intermediate.dense.weight"], want[p+"intermediate.dense.bias"] = []int{g.inter, g.hidden}, []int{g.inter}
		want[p+"output.dense.weight"], want[p+"output.dense.bias"] = []int{g.hidden, g.inter}, []int{g.hidden}
		for _, s := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			want[p+s+".weight"], want[p+s+".bias"] = []int{g.hidden}, []int{g.hidden}
		}
	}
	hfNames := make([]string, 0, len(byName))
	for hf := range byName {
		hfNames = append(hfNames, hf)
	}
	slices.Sort(hfNames)
	for _, hf := range hfNames {
		t := byName[hf]
		shape, ok := want[hf]
		if !ok {
			if strings.HasPrefix(hf, "pooler.") || hf == "embeddings.position_ids" {
				continue // not used by a sentence embedding
			}
			return nil, fmt.Errorf("%s: tensor %s (from %s) is not a BERT encoder tensor", name, hf, t.Name)
		}
		delete(want, hf)
		data, err := floatData(t)
		if err != nil {
			return nil, fmt.Errorf("%s: initializer %s (%s): %w", name, t.Name, hf, err)
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if len(data) != n {
			return nil, fmt.Errorf("%s: initializer %s (%s) has %d values, want %v", name, t.Name, hf, len(data), shape)
		}
		if transpose[t.Name] {
			r, c := int(t.Dims[0]), int(t.Dims[1]) // [in, out] -> [out, in]
			if r != shape[1] || c != shape[0] {
				return nil, fmt.Errorf("%s: initializer %s (%s) has shape %v, want %v transposed", name, t.Name, hf, t.Dims, shape)
			}
			tr := make([]float32, n)
			for i := 0; i < r; i++ {
				for j := 0; j < c; j++ {
					tr[j*r+i] = data[i*c+j]
				}
			}
			data = tr
		} else if !slices.Equal(int64s(shape), t.Dims) {
			return nil, fmt.Errorf("%s: initializer %s has shape %v, want %v", name, hf, t.Dims, shape)
		}
		raw := make([]byte, 4*n)
		for i, v := range data {
			bits := math.Float32bits(v)
			raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
		g.tensors = append(g.tensors, safetensors.Raw{Name: hf, DType: "F32", Shape: shape, Data: raw})
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for hf := range want {
			missing = append(missing, hf)
		}
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: no tensor %s", name, strings.Join(missing, ", "))
	}
	return g, nil
}

func int64s(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}
