package bert

import (
	"fmt"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/hflayers"
	"math"
	"strconv"
)

// ONNX adds the encoder to an ONNX graph and returns the name of its last hidden states
// [batch, sequence, hidden] (float32): ids and types are int64 [batch, sequence] values of g,
// mask the float32 attention mask [batch, sequence] (1 for real tokens). param returns the
// float32 values of an HF parameter (Params naming); it may return nil after recording an
// error, which the caller checks once the graph is built.
func ONNX(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, ids, types, mask string) string {
	h := cfg.HiddenSize
	layerNorm := func(x, name string) string { return hflayers.ONNXLayerNorm(g, param, x, name, h, cfg.LayerNormEps) }

	// Embeddings.
	words := g.F32("embeddings.word_embeddings.weight", param("embeddings.word_embeddings.weight"), cfg.VocabSize, h)
	x := g.Op("Gather", []string{words, ids}, onnxgraph.AttrInt("axis", 0))
	shape := g.Op("Shape", []string{ids})
	seq := g.Op("Gather", []string{shape, g.I64("axis1", []int64{1})}, onnxgraph.AttrInt("axis", 0))
	posIDs := g.Op("Range", []string{g.I64("zero_i64", []int64{0}), seq, g.I64("one_i64", []int64{1})})
	positions := g.F32("embeddings.position_embeddings.weight", param("embeddings.position_embeddings.weight"), cfg.MaxPositionEmbeddings, h)
	x = g.Op("Add", []string{x, g.Op("Gather", []string{positions, posIDs}, onnxgraph.AttrInt("axis", 0))})
	typeEmb := g.F32("embeddings.token_type_embeddings.weight", param("embeddings.token_type_embeddings.weight"), cfg.TypeVocabSize, h)
	x = g.Op("Add", []string{x, g.Op("Gather", []string{typeEmb, types}, onnxgraph.AttrInt("axis", 0))})
	x = layerNorm(x, "embeddings.LayerNorm")
	return ONNXLayers(g, cfg, param, x, mask)
}

// ONNXLayers adds the transformer layers of ONNX over the embedded inputs x [batch, sequence,
// hidden] with the float32 attention mask [batch, sequence] and returns the name of the last
// hidden states (XLM-RoBERTa's ONNX runs them after its own embeddings).
func ONNXLayers(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, x, mask string) string {
	h, heads := cfg.HiddenSize, cfg.NumAttentionHeads
	dh := h / heads
	layerNorm := func(x, name string) string { return hflayers.ONNXLayerNorm(g, param, x, name, h, cfg.LayerNormEps) }

	// Additive attention mask (1 - mask) * finfo(float32).min, [batch, 1, 1, sequence].
	addMask := g.Op("Mul", []string{g.Op("Sub", []string{g.ScalarF("one", 1), mask}), g.ScalarF("lowest", -math.MaxFloat32)})
	addMask = g.Op("Unsqueeze", []string{addMask, g.I64("axes12", []int64{1, 2}, 2)})

	splitShape := g.I64("split_heads", []int64{0, 0, int64(heads), int64(dh)}, 4)
	mergeShape := g.I64("merge_heads", []int64{0, 0, int64(h)}, 3)
	scale := g.ScalarF("attention_scale", float32(1/math.Sqrt(float64(dh))))
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		split := func(name string, perm ...int64) string {
			y := g.Op("Reshape", []string{onnxLinear(g, param, x, p+name, h, h), splitShape})
			return g.Op("Transpose", []string{y}, onnxgraph.AttrInts("perm", perm...))
		}
		q := split("attention.self.query", 0, 2, 1, 3) // [B, heads, S, dh]
		k := split("attention.self.key", 0, 2, 3, 1)   // [B, heads, dh, S]
		v := split("attention.self.value", 0, 2, 1, 3) // [B, heads, S, dh]
		scores := g.Op("Add", []string{g.Op("Mul", []string{g.Op("MatMul", []string{q, k}), scale}), addMask})
		probs := g.Op("Softmax", []string{scores}, onnxgraph.AttrInt("axis", -1))
		ctx := g.Op("Transpose", []string{g.Op("MatMul", []string{probs, v})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
		ctx = g.Op("Reshape", []string{ctx, mergeShape})
		a := onnxLinear(g, param, ctx, p+"attention.output.dense", h, h)
		x = layerNorm(g.Op("Add", []string{a, x}), p+"attention.output.LayerNorm")
		inter := onnxLinear(g, param, x, p+"intermediate.dense", h, cfg.IntermediateSize)
		inter = hflayers.ONNXActivation(g, cfg.HiddenAct, inter, strconv.Itoa(l))
		o := onnxLinear(g, param, inter, p+"output.dense", cfg.IntermediateSize, h)
		x = layerNorm(g.Op("Add", []string{o, x}), p+"output.LayerNorm")
	}
	return x
}

// ONNXPooler adds BERT's pooler (dense + tanh) over the [CLS] states cls [batch, hidden] and
// returns the name of its output.
func ONNXPooler(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, cls string) string {
	return g.Op("Tanh", []string{onnxLinear(g, param, cls, "pooler.dense", cfg.HiddenSize, cfg.HiddenSize)})
}

func onnxLinear(g *onnxgraph.Builder, param func(string) []float32, x, name string, in, out int) string {
	return hflayers.ONNXLinear(g, param, x, name, in, out)
}
