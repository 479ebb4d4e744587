package modernbert

import (
	"fmt"
	"math"

	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/hflayers"
)

// onnxBool is ONNX's TensorProto BOOL element type (Cast's "to").
const onnxBool = 9

// ropeTable returns the cos and sin tables [max_position_embeddings, headDim] (float32) of
// base theta, as rope computes them.
func ropeTable(cfg *Config, theta float64) (cos, sin []float32) {
	dim := cfg.HiddenSize / cfg.NumAttentionHeads
	n := cfg.MaxPositionEmbeddings
	half := dim / 2
	cos, sin = make([]float32, n*dim), make([]float32, n*dim)
	for i := 0; i < half; i++ {
		inv := 1 / float32(math.Pow(theta, float64(float32(2*i)/float32(dim))))
		for p := 0; p < n; p++ {
			a := float64(float32(p) * inv)
			c, s := float32(math.Cos(a)), float32(math.Sin(a))
			cos[p*dim+i], cos[p*dim+half+i] = c, c
			sin[p*dim+i], sin[p*dim+half+i] = s, s
		}
	}
	return cos, sin
}

// ONNX adds the encoder to an ONNX graph and returns the name of its last hidden states
// [batch, sequence, hidden] (float32), computing what Encode computes: ids are int64 [batch,
// sequence] values of g (types are ignored: ModernBERT has none), mask the float32 attention
// mask [batch, sequence]. The RoPE tables are constants of max_position_embeddings rows,
// gathered at positions 0..sequence-1; the local layers' window is |query - key| <=
// local_attention/2, built from those positions. param returns the float32 values of an HF
// parameter (Params naming); it may return nil after recording an error, which the caller
// checks once the graph is built.
func ONNX(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, ids, types, mask string) string {
	h, heads := cfg.HiddenSize, cfg.NumAttentionHeads
	dh := h / heads
	half := dh / 2
	axis0 := onnxgraph.AttrInt("axis", 0)
	c := func(name string) string { return "modernbert." + name }
	layerNorm := func(x, name string) string {
		in := []string{x, g.F32(name+".weight", param(name+".weight"), h)}
		if cfg.NormBias {
			in = append(in, g.F32(name+".bias", param(name+".bias"), h))
		}
		return g.Op("LayerNormalization", in, onnxgraph.AttrInt("axis", -1), onnxgraph.AttrFloat("epsilon", float32(cfg.NormEps)))
	}
	linear := func(x, name string, in, out int, bias bool) string {
		w := param(name + ".weight")
		if w == nil {
			return ""
		}
		y := g.Op("MatMul", []string{x, g.F32(name+".weight_t", hflayers.TransposeWeight(w, in, out), in, out)})
		if bias {
			y = g.Op("Add", []string{y, g.F32(name+".bias", param(name+".bias"), out)})
		}
		return y
	}

	seq := g.Op("Gather", []string{g.Op("Shape", []string{ids}), g.I64(c("index1"), []int64{1})}, axis0)
	pos := g.Op("Range", []string{g.I64(c("zero"), []int64{0}), seq, g.I64(c("one"), []int64{1})}) // [S]
	words := g.F32("embeddings.tok_embeddings.weight", param("embeddings.tok_embeddings.weight"), cfg.VocabSize, h)
	x := layerNorm(g.Op("Gather", []string{words, ids}, axis0), "embeddings.norm")

	// Masks, as masks builds them: 0 where a query may attend to a key, finfo.min elsewhere.
	zero, lowest := g.ScalarF(c("f_zero"), 0), g.ScalarF(c("lowest"), -math.MaxFloat32)
	keys := g.Op("Cast", []string{mask}, onnxgraph.AttrInt("to", onnxBool))
	keys = g.Op("Unsqueeze", []string{keys, g.I64(c("axes12"), []int64{1, 2}, 2)}) // [B, 1, 1, S]
	globalMask := g.Op("Where", []string{keys, zero, lowest})
	dist := g.Op("Abs", []string{g.Op("Sub", []string{
		g.Op("Unsqueeze", []string{pos, g.I64(c("axes0"), []int64{0}, 1)}),    // key j
		g.Op("Unsqueeze", []string{pos, g.I64(c("axes1"), []int64{1}, 1)})})}) // query i: [S, S]
	near := g.Op("LessOrEqual", []string{dist, g.I64(c("window"), []int64{int64(cfg.Window())})})
	localMask := g.Op("Where", []string{g.Op("And", []string{keys, near}), zero, lowest}) // [B, 1, S, S]

	// RoPE tables at positions 0..S-1, [1, 1, S, dh].
	table := func(global bool) (cos, sin string) {
		kind := "local"
		if global {
			kind = "global"
		}
		tc, ts := ropeTable(cfg, cfg.RopeTheta(global))
		n := cfg.MaxPositionEmbeddings
		axes := g.I64(c("axes01_"+kind), []int64{0, 1}, 2)
		cos = g.Op("Unsqueeze", []string{g.Op("Gather", []string{g.F32(c("rope_cos_"+kind), tc, n, dh), pos}, axis0), axes})
		sin = g.Op("Unsqueeze", []string{g.Op("Gather", []string{g.F32(c("rope_sin_"+kind), ts, n, dh), pos}, axis0), axes})
		return cos, sin
	}
	gCos, gSin := table(true)
	lCos, lSin := table(false)
	sliceStart, sliceMid, sliceEnd := g.I64(c("start"), []int64{0}, 1), g.I64(c("mid"), []int64{int64(half)}, 1), g.I64(c("end"), []int64{int64(dh)}, 1)
	lastAxis := g.I64(c("last_axis"), []int64{-1}, 1)
	rope := func(x, cos, sin string) string {
		x1 := g.Op("Slice", []string{x, sliceStart, sliceMid, lastAxis})
		x2 := g.Op("Slice", []string{x, sliceMid, sliceEnd, lastAxis})
		rot := g.Op("Concat", []string{g.Op("Neg", []string{x2}), x1}, onnxgraph.AttrInt("axis", -1))
		return g.Op("Add", []string{g.Op("Mul", []string{x, cos}), g.Op("Mul", []string{rot, sin})})
	}

	splitShape := g.I64(c("split_qkv"), []int64{0, 0, 3, int64(heads), int64(dh)}, 5)
	mergeShape := g.I64(c("merge_heads"), []int64{0, 0, int64(h)}, 3)
	scale := g.ScalarF(c("attention_scale"), float32(1/math.Sqrt(float64(dh))))
	i := cfg.IntermediateSize
	wiMid, wiEnd := g.I64(c("wi_mid"), []int64{int64(i)}, 1), g.I64(c("wi_end"), []int64{int64(2 * i)}, 1)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("layers.%d.", l)
		m, cos, sin := localMask, lCos, lSin
		if cfg.IsGlobal(l) {
			m, cos, sin = globalMask, gCos, gSin
		}
		hn := x
		if l > 0 {
			hn = layerNorm(x, p+"attn_norm")
		}
		qkv := g.Op("Reshape", []string{linear(hn, p+"attn.Wqkv", h, 3*h, cfg.AttentionBias), splitShape}) // [B, S, 3, heads, dh]
		part := func(k int64, perm ...int64) string {
			// A scalar index drops the axis: [B, S, heads, dh].
			y := g.Op("Gather", []string{qkv, g.I64(fmt.Sprintf("%s%d_%d", c("qkv_index"), l, k), []int64{k})}, onnxgraph.AttrInt("axis", 2))
			return g.Op("Transpose", []string{y}, onnxgraph.AttrInts("perm", perm...))
		}
		q := rope(part(0, 0, 2, 1, 3), cos, sin) // [B, heads, S, dh]
		k := rope(part(1, 0, 2, 1, 3), cos, sin)
		v := part(2, 0, 2, 1, 3)
		kt := g.Op("Transpose", []string{k}, onnxgraph.AttrInts("perm", 0, 1, 3, 2))
		scores := g.Op("Add", []string{g.Op("Mul", []string{g.Op("MatMul", []string{q, kt}), scale}), m})
		probs := g.Op("Softmax", []string{scores}, onnxgraph.AttrInt("axis", -1))
		ctx := g.Op("Transpose", []string{g.Op("MatMul", []string{probs, v})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
		ctx = g.Op("Reshape", []string{ctx, mergeShape})
		x = g.Op("Add", []string{x, linear(ctx, p+"attn.Wo", h, h, cfg.AttentionBias)})

		wi := linear(layerNorm(x, p+"mlp_norm"), p+"mlp.Wi", h, 2*i, cfg.MLPBias)
		in := g.Op("Slice", []string{wi, sliceStart, wiMid, lastAxis})
		gate := g.Op("Slice", []string{wi, wiMid, wiEnd, lastAxis})
		y := g.Op("Mul", []string{hflayers.ONNXActivation(g, cfg.HiddenActivation, in, fmt.Sprintf("modernbert_%d", l)), gate})
		x = g.Op("Add", []string{x, linear(y, p+"mlp.Wo", i, h, cfg.MLPBias)})
	}
	return layerNorm(x, "final_norm")
}

// ONNXPooler is never reached: ModernBERT has no pooler layer (Validate refuses a
// configuration with one). Asking for the pooler's weights records the error the caller
// reports.
func ONNXPooler(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, cls string) string {
	param("pooler.dense.weight")
	return cls
}
