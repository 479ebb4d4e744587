package mpnet

import (
	"fmt"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/hflayers"
	"math"
)

// bucketTable is Bucket of every relative position rel = key - query of sequences up to
// MaxPositionEmbeddings long, at rel + MaxPositionEmbeddings - 1.
func bucketTable(cfg *Config) []int64 {
	m := cfg.MaxPositionEmbeddings
	t := make([]int64, 2*m-1)
	for i := range t {
		t[i] = int64(Bucket(i-(m-1), cfg.RelativeBuckets))
	}
	return t
}

// ONNX adds the encoder to an ONNX graph and returns the name of its last hidden states
// [batch, sequence, hidden] (float32), computing what Encode computes: ids are int64 [batch,
// sequence] values of g (types are ignored: MPNet has none), mask the float32 attention mask
// [batch, sequence]. param returns the float32 values of an HF parameter (Params naming); it
// may return nil after recording an error, which the caller checks once the graph is built.
func ONNX(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, ids, types, mask string) string {
	h, heads := cfg.HiddenSize, cfg.NumAttentionHeads
	dh := h / heads
	axis0 := onnxgraph.AttrInt("axis", 0)
	layerNorm := func(x, name string) string { return hflayers.ONNXLayerNorm(g, param, x, name, h, cfg.LayerNormEps) }
	linear := func(x, name string, in, out int) string { return hflayers.ONNXLinear(g, param, x, name, in, out) }

	// Embeddings: positions pad_token_id+1 .. pad_token_id+S.
	seq := g.Op("Gather", []string{g.Op("Shape", []string{ids}), g.I64("mpnet.index1", []int64{1})}, axis0)
	pos := g.Op("Range", []string{g.I64("mpnet.zero", []int64{0}), seq, g.I64("mpnet.one", []int64{1})})
	first := g.I64("mpnet.first_position", []int64{int64(cfg.PadTokenID + 1)})
	words := g.F32("embeddings.word_embeddings.weight", param("embeddings.word_embeddings.weight"), cfg.VocabSize, h)
	positions := g.F32("embeddings.position_embeddings.weight", param("embeddings.position_embeddings.weight"), cfg.MaxPositionEmbeddings, h)
	x := g.Op("Gather", []string{words, ids}, axis0)
	x = g.Op("Add", []string{x, g.Op("Gather", []string{positions, g.Op("Add", []string{pos, first})}, axis0)})
	x = layerNorm(x, "embeddings.LayerNorm")

	// Attention bias: (1 - mask) * finfo.min over the keys [B, 1, 1, S] plus the relative
	// position bias [1, heads, S, S].
	addMask := g.Op("Mul", []string{g.Op("Sub", []string{g.ScalarF("mpnet.f_one", 1), mask}), g.ScalarF("mpnet.lowest", -math.MaxFloat32)})
	addMask = g.Op("Unsqueeze", []string{addMask, g.I64("mpnet.axes12", []int64{1, 2}, 2)})
	rel := g.Op("Sub", []string{
		g.Op("Unsqueeze", []string{pos, g.I64("mpnet.axes0", []int64{0}, 1)}),  // key j
		g.Op("Unsqueeze", []string{pos, g.I64("mpnet.axes1", []int64{1}, 1)})}) // query i: [S, S] = j - i
	m := cfg.MaxPositionEmbeddings
	idx := g.Op("Gather", []string{g.I64("mpnet.bucket_table", bucketTable(cfg), 2*m-1), g.Op("Add", []string{rel, g.I64("mpnet.offset", []int64{int64(m - 1)})})}, axis0)
	table := g.F32("encoder.relative_attention_bias.weight", param("encoder.relative_attention_bias.weight"), cfg.RelativeBuckets, heads)
	posBias := g.Op("Transpose", []string{g.Op("Gather", []string{table, idx}, axis0)}, onnxgraph.AttrInts("perm", 2, 0, 1)) // [heads, S, S]
	bias := g.Op("Add", []string{addMask, g.Op("Unsqueeze", []string{posBias, g.I64("mpnet.axes0b", []int64{0}, 1)})})

	splitShape := g.I64("mpnet.split_heads", []int64{0, 0, int64(heads), int64(dh)}, 4)
	mergeShape := g.I64("mpnet.merge_heads", []int64{0, 0, int64(h)}, 3)
	scale := g.ScalarF("mpnet.attention_scale", float32(1/math.Sqrt(float64(dh))))
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		split := func(name string, perm ...int64) string {
			y := g.Op("Reshape", []string{linear(x, p+name, h, h), splitShape})
			return g.Op("Transpose", []string{y}, onnxgraph.AttrInts("perm", perm...))
		}
		q := split("attention.attn.q", 0, 2, 1, 3) // [B, heads, S, dh]
		k := split("attention.attn.k", 0, 2, 3, 1) // [B, heads, dh, S]
		v := split("attention.attn.v", 0, 2, 1, 3)
		scores := g.Op("Add", []string{g.Op("Mul", []string{g.Op("MatMul", []string{q, k}), scale}), bias})
		probs := g.Op("Softmax", []string{scores}, onnxgraph.AttrInt("axis", -1))
		ctx := g.Op("Transpose", []string{g.Op("MatMul", []string{probs, v})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
		ctx = g.Op("Reshape", []string{ctx, mergeShape})
		a := linear(ctx, p+"attention.attn.o", h, h)
		x = layerNorm(g.Op("Add", []string{a, x}), p+"attention.LayerNorm")
		inter := linear(x, p+"intermediate.dense", h, cfg.IntermediateSize)
		inter = hflayers.ONNXActivation(g, cfg.HiddenAct, inter, fmt.Sprintf("mpnet_%d", l))
		o := linear(inter, p+"output.dense", cfg.IntermediateSize, h)
		x = layerNorm(g.Op("Add", []string{o, x}), p+"output.LayerNorm")
	}
	return x
}

// ONNXPooler adds the pooler (dense + tanh) over the first tokens' states cls [batch,
// hidden] and returns the name of its output.
func ONNXPooler(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, cls string) string {
	return g.Op("Tanh", []string{hflayers.ONNXLinear(g, param, cls, "pooler.dense", cfg.HiddenSize, cfg.HiddenSize)})
}
