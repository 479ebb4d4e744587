package export_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/safetensors"
	"google.golang.org/protobuf/proto"
)

// linearWeight matches the Linear weights PyTorch's exporter stores transposed under an
// anonymous name.
var linearWeight = regexp.MustCompile(`(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense|pooler\.dense)\.weight$`)

// onnxOpts shape the exported graph torchONNX writes.
type onnxOpts struct {
	prefix     string  // tensor name prefix ("bert." as BertForX exports write it)
	headSize   int     // the attention scale's sqrt(head size); 0: no attention scale
	mulScale   bool    // scale by Mul(1/sqrt) instead of Div(sqrt)
	eps        float32 // LayerNorm epsilon; 0: no LayerNorm pattern
	noErf      bool    // leave out the Erf (another activation)
	drop       string  // leave out this tensor
	unnamedAdd string  // this Linear's bias added under an anonymous name
}

// torchONNX writes the BERT of the HF directory src as PyTorch's ONNX exporter does: biases,
// embeddings and LayerNorm parameters under their names, each Linear weight transposed under
// "onnx::MatMul_N" and multiplied then added to its named bias, the attention scale, LayerNorm
// epsilon and gelu's Erf as nodes. The graph is not meant to run: ImportONNX reads its
// structure and weights.
func torchONNX(t *testing.T, src string, o onnxOpts) []byte {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	g := &protos.GraphProto{Name: "main_graph"}
	scalar := func(name string, v float32) {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
		g.Node = append(g.Node, &protos.NodeProto{OpType: "Constant", Output: []string{name}, Attribute: []*protos.AttributeProto{{
			Name: "value", Type: protos.AttributeProto_TENSOR, T: &protos.TensorProto{DataType: int32(protos.TensorProto_FLOAT), RawData: b}}}})
	}
	n := 0
	for _, name := range f.Names() {
		if name == o.drop {
			continue
		}
		raw, info, err := f.Raw(name)
		if err != nil {
			t.Fatal(err)
		}
		dims := make([]int64, len(info.Shape))
		for i, d := range info.Shape {
			dims[i] = int64(d)
		}
		if !linearWeight.MatchString(name) {
			g.Initializer = append(g.Initializer, &protos.TensorProto{Name: o.prefix + name, Dims: dims, DataType: int32(protos.TensorProto_FLOAT), RawData: raw})
			continue
		}
		rows, cols := info.Shape[0], info.Shape[1] // [out, in] -> [in, out]
		tr := make([]byte, len(raw))
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				copy(tr[4*(j*rows+i):], raw[4*(i*cols+j):4*(i*cols+j)+4])
			}
		}
		n++
		w := fmt.Sprintf("onnx::MatMul_%d", 1500+n)
		g.Initializer = append(g.Initializer, &protos.TensorProto{Name: w, Dims: []int64{dims[1], dims[0]}, DataType: int32(protos.TensorProto_FLOAT), RawData: tr})
		bias := o.prefix + strings.TrimSuffix(name, ".weight") + ".bias"
		if name == o.unnamedAdd {
			bias = fmt.Sprintf("onnx::Add_%d", 1500+n)
		}
		g.Node = append(g.Node,
			&protos.NodeProto{OpType: "MatMul", Name: fmt.Sprintf("/MatMul_%d", n), Input: []string{fmt.Sprintf("x%d", n), w}, Output: []string{fmt.Sprintf("m%d", n)}},
			&protos.NodeProto{OpType: "Add", Input: []string{bias, fmt.Sprintf("m%d", n)}, Output: []string{fmt.Sprintf("a%d", n)}})
	}
	if o.headSize > 0 {
		g.Node = append(g.Node, &protos.NodeProto{OpType: "MatMul", Input: []string{"q", "kt"}, Output: []string{"scores"}})
		if o.mulScale {
			scalar("scale", float32(1/math.Sqrt(float64(o.headSize))))
			g.Node = append(g.Node, &protos.NodeProto{OpType: "Mul", Input: []string{"scores", "scale"}, Output: []string{"scaled"}})
		} else {
			scalar("scale", float32(math.Sqrt(float64(o.headSize))))
			g.Node = append(g.Node, &protos.NodeProto{OpType: "Div", Input: []string{"scores", "scale"}, Output: []string{"scaled"}})
		}
	}
	if o.eps > 0 {
		scalar("eps", o.eps)
		g.Node = append(g.Node,
			&protos.NodeProto{OpType: "ReduceMean", Input: []string{"sq"}, Output: []string{"var"}},
			&protos.NodeProto{OpType: "Add", Input: []string{"var", "eps"}, Output: []string{"vareps"}})
	}
	if !o.noErf {
		g.Node = append(g.Node, &protos.NodeProto{OpType: "Erf", Input: []string{"h"}, Output: []string{"erf"}})
	}
	b, err := proto.Marshal(&protos.ModelProto{IrVersion: 7, ProducerName: "pytorch", Graph: g,
		OpsetImport: []*protos.OperatorSetIdProto{{Version: 11}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImportONNX rebuilds a tiny BERT from its PyTorch-style ONNX export: every tensor is byte
// for byte the original's, config.json has its sizes, heads and epsilon, and the imported
// model embeds as the original does.
func TestImportONNX(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 3, Hidden: 32, Heads: 4}, be, 11); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(src, "tokenizer.json")
	for _, c := range []struct {
		name string
		o    onnxOpts
	}{
		{"div", onnxOpts{headSize: 8, eps: 1e-12}},
		{"mul and bert. prefix", onnxOpts{prefix: "bert.", headSize: 8, mulScale: true, eps: 1e-12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "model.onnx")
			if err := os.WriteFile(m, torchONNX(t, src, c.o), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := export.ImportONNX(out, export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "mean", Normalize: true, QueryPrompt: "query: "}); err != nil {
				t.Fatal(err)
			}
			fs, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			fo, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			kept := 0
			for _, name := range fs.Names() {
				if strings.HasPrefix(name, "pooler.") {
					continue
				}
				kept++
				a, _, _ := fs.Raw(name)
				b, info, err := fo.Raw(name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s %v: not the original's bytes", name, info.Shape)
				}
			}
			if got := len(fo.Names()); got != kept {
				t.Errorf("%d tensors, want %d", got, kept)
			}
			var cfg map[string]any
			raw, _ := os.ReadFile(filepath.Join(out, "config.json"))
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			var orig map[string]any
			raw, _ = os.ReadFile(filepath.Join(src, "config.json"))
			if err := json.Unmarshal(raw, &orig); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size"} {
				if cfg[k] != orig[k] {
					t.Errorf("config.json %s = %v, want %v", k, cfg[k], orig[k])
				}
			}
			if cfg["layer_norm_eps"] != 1e-12 {
				t.Errorf("layer_norm_eps %v, want 1e-12", cfg["layer_norm_eps"])
			}
			a, err := export.LoadHF(src, be)
			if err != nil {
				t.Fatal(err)
			}
			b, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if b.QueryPrompt != "query: " {
				t.Errorf("query prompt %q, want %q", b.QueryPrompt, "query: ")
			}
			texts := []string{"book a flight to Paris", "what is the weather in Rome tomorrow"}
			ea, err := a.Embed("tool", texts)
			if err != nil {
				t.Fatal(err)
			}
			eb, err := b.Embed("tool", texts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ea {
				for j := range ea[i] {
					if d := math.Abs(float64(ea[i][j] - eb[i][j])); d > 1e-6 {
						t.Fatalf("text %d dim %d: %g vs %g", i, j, ea[i][j], eb[i][j])
					}
				}
			}
		})
	}
}

// TestImportONNXErrors: a graph or tokenizer that is not the BERT ImportONNX rebuilds is an
// error naming what is wrong, and nothing is written.
func TestImportONNXErrors(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 2, Hidden: 32, Heads: 4}, be, 3); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(src, "tokenizer.json")
	good := onnxOpts{headSize: 8, eps: 1e-12}
	// A tokenizer with one token fewer than the embedding table.
	var tj map[string]any
	raw, err := os.ReadFile(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	vocab := tj["model"].(map[string]any)["vocab"].(map[string]any)
	for k, v := range vocab {
		if v.(float64) == float64(len(vocab)-1) {
			delete(vocab, k)
		}
	}
	short := filepath.Join(dir, "short-tokenizer.json")
	b, _ := json.Marshal(tj)
	if err := os.WriteFile(short, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exists := filepath.Join(dir, "exists")
	if err := os.Mkdir(exists, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
		o          onnxOpts
		bytes      []byte
		tok, out   string
		pooling    string
		heads      int
	}{
		{name: "not onnx", bytes: []byte("not a model"), want: "not an ONNX model"},
		{name: "unnamed bias", o: onnxOpts{headSize: 8, eps: 1e-12, unnamedAdd: "encoder.layer.1.output.dense.weight"}, want: "is not followed by a named bias"},
		{name: "missing tensor", o: onnxOpts{headSize: 8, eps: 1e-12, drop: "encoder.layer.0.output.LayerNorm.bias"}, want: "no tensor encoder.layer.0.output.LayerNorm.bias"},
		{name: "no erf", o: onnxOpts{headSize: 8, eps: 1e-12, noErf: true}, want: "no Erf node"},
		{name: "no epsilon", o: onnxOpts{headSize: 8}, want: "no LayerNorm epsilon"},
		{name: "no attention scale", o: onnxOpts{eps: 1e-12}, want: "give the number of heads"},
		{name: "vocabulary", o: good, tok: short, want: "rows"},
		{name: "pooling", o: good, pooling: "max", want: "want cls or mean"},
		{name: "out exists", o: good, out: exists, want: "exists"},
		{name: "missing tokenizer", o: good, tok: filepath.Join(dir, "nope.json"), want: "nope.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "model.onnx")
			body := c.bytes
			if body == nil {
				body = torchONNX(t, src, c.o)
			}
			if err := os.WriteFile(m, body, 0o644); err != nil {
				t.Fatal(err)
			}
			in := export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "cls", Heads: c.heads}
			if c.tok != "" {
				in.Tokenizer = c.tok
			}
			if c.pooling != "" {
				in.Pooling = c.pooling
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			if c.out != "" {
				out = c.out
			}
			err := export.ImportONNX(out, in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ImportONNX: %v, want an error containing %q", err, c.want)
			}
			if c.out == "" {
				if left, _ := os.ReadDir(parent); len(left) > 0 {
					t.Errorf("left %v behind", left)
				}
			}
		})
	}
	// Heads given where the graph has no attention scale: imported.
	m := filepath.Join(dir, "noscale.onnx")
	if err := os.WriteFile(m, torchONNX(t, src, onnxOpts{eps: 1e-12}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := export.ImportONNX(filepath.Join(dir, "heads"), export.ONNXImport{Model: m, Tokenizer: tok, Pooling: "cls", Heads: 4}); err != nil {
		t.Errorf("with -heads 4: %v", err)
	}
}
