package deberta

import (
	"fmt"
	"math"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
)

// ONNX adds the encoder to an ONNX graph and returns the name of its last hidden states
// [batch, sequence, hidden] (float32), computing what Encode computes: ids and types are
// int64 [batch, sequence] values of g (types are read only when type_vocab_size > 0), mask
// the float32 attention mask [batch, sequence] (non-zero for real tokens). param returns the
// float32 values of a parameter by HF name (Params naming); it may return nil after recording
// an error, which the caller checks once the graph is built.
//
// Relative positions: the graph holds the bucket table of every distance a sequence of up to
// max_position_embeddings tokens can have, rows[d + M - 1] = clamp(Bucket(d) + span, 0,
// 2·span - 1) for d = i - j in [-(M-1), M-1] (int64, 2M-1 entries), computed in Go by Bucket,
// the function pinned against PyTorch. For the dynamic sequence length S the graph gathers
// the [S, S] index matrix from it at (i - j + M - 1): the buckets are those of toolret and HF
// bit for bit (no logarithm evaluated by the runtime, whose float32 log could round a
// ceil(...) boundary the other way), and a sequence longer than M fails in Gather as Encode
// refuses it. Only the rows between those of d = -(S-1) and d = S-1 (at most 2S-1) are
// sliced out of rel_embeddings and projected (HF projects all 2·span rows; each row is
// computed on its own, so the values are the same). The c2p and p2c scores are
// GatherElements of q·posKeyᵀ [B, heads, S, rows] and k·posQueryᵀ at those indices (p2c
// transposed), as HF's torch.gather.
func ONNX(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, ids, types, mask string) string {
	b := &onnxBuilder{g: g, cfg: cfg, param: param, linears: map[string][2]string{}}
	return b.encode(ids, types, mask)
}

// ONNXPooler adds the ContextPooler, pooler_hidden_act(dense(cls)), over the [CLS] states cls
// [batch, hidden] and returns the name of its output (pooler_dropout is a training-only op).
func ONNXPooler(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, cls string) string {
	b := &onnxBuilder{g: g, cfg: cfg, param: param, linears: map[string][2]string{}}
	return b.activation(cfg.PoolerHiddenAct, b.linear(cls, "pooler.dense", cfg.HiddenSize, cfg.HiddenSize, true), "pooler")
}

// onnxBuilder adds DeBERTa's nodes to g. Initializers are named after the HF parameters with
// a "deberta." prefix (the export adds its own unprefixed constants to the same graph).
type onnxBuilder struct {
	g       *onnxgraph.Builder
	cfg     *Config
	param   func(string) []float32
	linears map[string][2]string // HF Linear name -> initializers (transposed weight, bias)
}

func (b *onnxBuilder) op(opType string, inputs ...string) string { return b.g.Op(opType, inputs) }

func (b *onnxBuilder) i64(name string, v ...int64) string {
	return b.g.I64("deberta."+name, v, len(v))
}

func (b *onnxBuilder) scalar(name string, v float32) string {
	return b.g.ScalarF("deberta."+name, v)
}

func (b *onnxBuilder) f32(name string, dims ...int) string {
	return b.g.F32("deberta."+name, b.param(name), dims...)
}

// linear adds x·Wᵀ (+ b) for the HF Linear name (weight [out, in]); a Linear used twice
// (share_att_key: query_proj and key_proj also project the relative embeddings) has its
// weights stored once.
func (b *onnxBuilder) linear(x, name string, in, out int, bias bool) string {
	w, ok := b.linears[name]
	if !ok {
		// A nil weight (param recorded an error) becomes zeros; one of the wrong size is
		// stored as it is, and ONNX Runtime refuses the initializer's shape.
		src := b.param(name + ".weight")
		wt := src
		if src == nil || len(src) == in*out {
			wt = make([]float32, in*out)
			for o := 0; o < out && src != nil; o++ {
				for i := 0; i < in; i++ {
					wt[i*out+o] = src[o*in+i]
				}
			}
		}
		w[0] = b.g.F32("deberta."+name+".weight_t", wt, in, out)
		if bias {
			w[1] = b.f32(name+".bias", out)
		}
		b.linears[name] = w
	}
	y := b.op("MatMul", x, w[0])
	if w[1] != "" {
		y = b.op("Add", y, w[1])
	}
	return y
}

func (b *onnxBuilder) layerNorm(x, name string) string {
	h := b.cfg.HiddenSize
	gamma := b.f32(name+".weight", h)
	beta := b.f32(name+".bias", h)
	return b.g.Op("LayerNormalization", []string{x, gamma, beta},
		onnxgraph.AttrInt("axis", -1), onnxgraph.AttrFloat("epsilon", float32(b.cfg.LayerNormEps)))
}

// activation applies an HF activation name (see actType); tag makes its constants' names
// unique per use.
func (b *onnxBuilder) activation(act, x, tag string) string {
	c := func(name string, v float32) string { return b.scalar(name+"_"+tag, v) }
	switch act {
	case "relu":
		return b.op("Relu", x)
	case "tanh":
		return b.op("Tanh", x)
	case "gelu_new", "gelu_pytorch_tanh":
		// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))
		x3 := b.op("Mul", b.op("Mul", x, x), x)
		inner := b.op("Mul", b.op("Add", x, b.op("Mul", x3, c("gelu_c", 0.044715))), c("gelu_s", float32(math.Sqrt(2/math.Pi))))
		t := b.op("Add", b.op("Tanh", inner), c("one", 1))
		return b.op("Mul", b.op("Mul", x, t), c("half", 0.5))
	}
	// Exact GELU: 0.5 x (1 + erf(x / sqrt 2)).
	e := b.op("Erf", b.op("Div", x, c("sqrt2", float32(math.Sqrt2))))
	return b.op("Mul", b.op("Mul", x, b.op("Add", e, c("one", 1))), c("half", 0.5))
}

// bucketTable is the relative-position row of every distance d = i - j of sequences up to
// max_position_embeddings long, at d + M - 1 (see ONNX).
func bucketTable(cfg *Config) []int64 {
	m, span := cfg.MaxPositionEmbeddings, cfg.Span()
	t := make([]int64, 2*m-1)
	for k := range t {
		t[k] = int64(min(max(Bucket(k-(m-1), cfg.PositionBuckets, cfg.MaxRelative())+span, 0), 2*span-1))
	}
	return t
}

func (b *onnxBuilder) encode(ids, types, mask string) string {
	cfg, g := b.cfg, b.g
	h, e := cfg.HiddenSize, cfg.Embedding()
	heads := cfg.NumAttentionHeads
	dh := h / heads
	axis0 := onnxgraph.AttrInt("axis", 0)

	// Sequence positions 0..S-1.
	seq := g.Op("Gather", []string{b.op("Shape", ids), g.I64("deberta.index1", []int64{1})}, axis0) // scalar
	one := g.I64("deberta.one", []int64{1})                                                         // scalar
	pos := b.op("Range", g.I64("deberta.zero", []int64{0}), seq, one)

	// Embeddings.
	x := g.Op("Gather", []string{b.f32("embeddings.word_embeddings.weight", cfg.VocabSize, e), ids}, axis0)
	if cfg.PositionBiasedInput {
		p := g.Op("Gather", []string{b.f32("embeddings.position_embeddings.weight", cfg.MaxPositionEmbeddings, e), pos}, axis0)
		x = b.op("Add", x, p)
	}
	if cfg.TypeVocabSize > 0 {
		x = b.op("Add", x, g.Op("Gather", []string{b.f32("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, e), types}, axis0))
	}
	if e != h {
		x = b.linear(x, "embeddings.embed_proj", e, h, false)
	}
	x = b.layerNorm(x, "embeddings.LayerNorm")
	real := g.Op("Cast", []string{mask}, onnxgraph.AttrInt("to", int64(protos.TensorProto_BOOL))) // [B, S]
	realF := g.Op("Cast", []string{real}, onnxgraph.AttrInt("to", int64(protos.TensorProto_FLOAT)))
	x = b.op("Mul", x, b.op("Unsqueeze", realF, b.i64("axes2", 2)))

	// XSoftmax's mask: pair (i, j) takes part when both are real tokens, [B, 1, S, S].
	keep := b.op("And", b.op("Unsqueeze", real, b.i64("axes13", 1, 3)), b.op("Unsqueeze", real, b.i64("axes12", 1, 2)))

	// Relative positions: the [S, S] rows of rel_embeddings for c2p (and transposed, p2c).
	c2p := cfg.RelativeAttention && cfg.has("c2p")
	p2c := cfg.RelativeAttention && cfg.has("p2c")
	var rel, c2pIdx, p2cIdx string
	if c2p || p2c {
		m := cfg.MaxPositionEmbeddings
		table := g.I64("deberta.bucket_table", bucketTable(cfg), 2*m-1)
		first := b.i64("axes_0", 0)
		d := b.op("Sub", b.op("Unsqueeze", pos, b.i64("axes_1", 1)), b.op("Unsqueeze", pos, first)) // i - j
		idx := g.Op("Gather", []string{table, b.op("Add", d, g.I64("deberta.offset", []int64{int64(m - 1)}))}, axis0)
		// Only rows lo..hi (those of d = -(S-1) and S-1; the table is monotone) are used:
		// slice them out of rel_embeddings so that the position projections and scores are
		// [.., 2S-1 at most] wide instead of 2·span (the rows are computed independently, so
		// this changes no value).
		lo := g.Op("Gather", []string{table, b.op("Sub", g.I64("deberta.m", []int64{int64(m)}), seq)}, axis0)
		hi := g.Op("Gather", []string{table, b.op("Add", g.I64("deberta.m_2", []int64{int64(m - 2)}), seq)}, axis0)
		starts := b.op("Unsqueeze", lo, first)
		ends := b.op("Unsqueeze", b.op("Add", hi, one), first)
		rel = b.op("Slice", b.f32("encoder.rel_embeddings.weight", 2*cfg.Span(), h), starts, ends, first)
		if cfg.normRel() {
			rel = b.layerNorm(rel, "encoder.LayerNorm")
		}
		idx = b.op("Sub", idx, lo)
		if c2p {
			c2pIdx = idx
		}
		if p2c {
			p2cIdx = g.Op("Transpose", []string{idx}, onnxgraph.AttrInts("perm", 1, 0))
		}
	}

	splitShape := b.i64("split_heads", 0, 0, int64(heads), int64(dh))
	mergeShape := b.i64("merge_heads", 0, 0, int64(h))
	posShape := b.i64("pos_heads", -1, int64(heads), int64(dh))
	scale := b.scalar("scale", float32(math.Sqrt(float64(dh*cfg.scaleFactor()))))
	lowest := b.scalar("lowest", -math.MaxFloat32)
	zero := b.scalar("zerof", 0)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.attention.", l)
		split := func(y string) string {
			return g.Op("Transpose", []string{b.op("Reshape", y, splitShape)}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
		}
		q := split(b.linear(x, p+"self.query_proj", h, h, true)) // [B, heads, S, dh]
		k := split(b.linear(x, p+"self.key_proj", h, h, true))
		v := split(b.linear(x, p+"self.value_proj", h, h, true))
		kt := g.Op("Transpose", []string{k}, onnxgraph.AttrInts("perm", 0, 1, 3, 2))
		scores := b.op("Div", b.op("MatMul", q, kt), scale) // [B, heads, S, S]
		// posT projects rel with the Linear name into [heads, dh, rows].
		posT := func(name string) string {
			y := b.op("Reshape", b.linear(rel, p+name, h, h, true), posShape)
			return g.Op("Transpose", []string{y}, onnxgraph.AttrInts("perm", 1, 2, 0))
		}
		if c2p {
			name := "self.key_proj"
			if !cfg.ShareAttKey {
				name = "self.pos_key_proj"
			}
			att := b.op("MatMul", q, posT(name)) // [B, heads, S(i), rows]
			ix := b.op("Expand", c2pIdx, b.op("Shape", scores))
			scores = b.op("Add", scores, b.op("Div", g.Op("GatherElements", []string{att, ix}, onnxgraph.AttrInt("axis", 3)), scale))
		}
		if p2c {
			name := "self.query_proj"
			if !cfg.ShareAttKey {
				name = "self.pos_query_proj"
			}
			att := b.op("MatMul", k, posT(name)) // [B, heads, S(j), rows]
			ix := b.op("Expand", p2cIdx, b.op("Shape", scores))
			t := g.Op("Transpose", []string{g.Op("GatherElements", []string{att, ix}, onnxgraph.AttrInt("axis", 3))}, onnxgraph.AttrInts("perm", 0, 1, 3, 2))
			scores = b.op("Add", scores, b.op("Div", t, scale))
		}
		scores = b.op("Where", keep, scores, lowest)
		probs := b.op("Where", keep, g.Op("Softmax", []string{scores}, onnxgraph.AttrInt("axis", -1)), zero)
		ctx := g.Op("Transpose", []string{b.op("MatMul", probs, v)}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
		ctx = b.op("Reshape", ctx, mergeShape)
		a := b.linear(ctx, p+"output.dense", h, h, true)
		x = b.layerNorm(b.op("Add", a, x), p+"output.LayerNorm")

		lp := fmt.Sprintf("encoder.layer.%d.", l)
		inter := b.activation(cfg.HiddenAct, b.linear(x, lp+"intermediate.dense", h, cfg.IntermediateSize, true), fmt.Sprint(l))
		o := b.linear(inter, lp+"output.dense", cfg.IntermediateSize, h, true)
		x = b.layerNorm(b.op("Add", o, x), lp+"output.LayerNorm")
	}
	return x
}
