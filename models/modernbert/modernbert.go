package modernbert

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange, LayerNormEps: cfg.NormEps}
}

// linear is an HF Linear under scope (weight [out, in]; bias [out] when bias).
func linear(scope *model.Scope, cfg *Config, x *Node, out int, bias bool) *Node {
	sp := spec(cfg)
	w := sp.Variable(scope, x.Graph(), "weight", out, x.Shape().Dimensions[x.Rank()-1])
	var b *Node
	if bias {
		b = sp.Variable(scope, x.Graph(), "bias", out)
	}
	return hflayers.ComputeDense(scope, x, w, b)
}

// layerNorm is an HF LayerNorm under scope over the last axis, without bias unless norm_bias.
func layerNorm(scope *model.Scope, cfg *Config, x *Node) *Node {
	sp := spec(cfg)
	h := x.Shape().Dimensions[x.Rank()-1]
	gamma := sp.Variable(scope, x.Graph(), "weight", h)
	var beta *Node
	if cfg.NormBias {
		beta = sp.Variable(scope, x.Graph(), "bias", h)
	}
	return nn.LayerNorm(x, []int{x.Rank() - 1}, cfg.NormEps, gamma, beta, nil)
}

// Encode runs ModernBERT over a batch: ids int32 [batch, seq] (types are ignored: ModernBERT
// has no token types), mask [batch, seq] with 1 for real tokens (any numeric dtype). It
// returns the last hidden states [batch, seq, hidden].
func Encode(scope *model.Scope, cfg *Config, ids, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids), mask)
}

// Embed is the embedding layer: token embeddings, LayerNorm and dropout, [batch, seq, hidden].
func Embed(scope *model.Scope, cfg *Config, ids *Node) *Node {
	seq := ids.Shape().Dimensions[1]
	if seq > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("modernbert: sequence length %d exceeds max_position_embeddings %d", seq, cfg.MaxPositionEmbeddings)
	}
	emb := scope.At("embeddings")
	words := spec(cfg).Variable(emb.In("tok_embeddings"), ids.Graph(), "weight", cfg.VocabSize, cfg.HiddenSize)
	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
	x = layerNorm(emb.In("norm"), cfg, x)
	return hflayers.Dropout(scope, x, cfg.EmbeddingDropout)
}

// rope returns the cos and sin tables [seq, headDim] of HF's ModernBertRotaryEmbedding for
// base theta: inv_freq = 1 / theta^(2i/d) and angle pos * inv_freq, computed in float32 as HF
// does (float64 when the model runs in float64), the halves repeated (rotate_half layout).
func rope(g *Graph, dt dtypes.DType, seq, dim int, theta float64) (cos, sin *Node) {
	half := dim / 2
	c := make([]float64, seq*dim)
	s := make([]float64, seq*dim)
	for i := 0; i < half; i++ {
		var inv float64
		if dt == dtypes.Float64 {
			inv = 1 / math.Pow(theta, float64(2*i)/float64(dim))
		} else {
			inv = float64(1 / float32(math.Pow(theta, float64(float32(2*i)/float32(dim)))))
		}
		for p := 0; p < seq; p++ {
			a := float64(p) * inv
			if dt != dtypes.Float64 {
				a = float64(float32(p) * float32(inv))
			}
			c[p*dim+i], c[p*dim+half+i] = math.Cos(a), math.Cos(a)
			s[p*dim+i], s[p*dim+half+i] = math.Sin(a), math.Sin(a)
		}
	}
	return constant(g, dt, c, seq, dim), constant(g, dt, s, seq, dim)
}

// constant is v as a constant of dtype dt (Float32 or Float64) and shape dims.
func constant(g *Graph, dt dtypes.DType, v []float64, dims ...int) *Node {
	if dt == dtypes.Float64 {
		return Reshape(Const(g, v), dims...)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return Reshape(Const(g, f), dims...)
}

// applyRope rotates x [batch, seq, heads, headDim] by the tables cos, sin [seq, headDim]:
// x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1) for the halves x1, x2.
func applyRope(x, cos, sin *Node) *Node {
	dims := x.Shape().Dimensions
	seq, dim := dims[1], dims[3]
	half := dim / 2
	x1 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, half))
	x2 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(half, dim))
	rot := Concatenate([]*Node{Neg(x2), x1}, -1)
	cos = Reshape(cos, 1, seq, 1, dim)
	sin = Reshape(sin, 1, seq, 1, dim)
	return Add(Mul(x, cos), Mul(rot, sin))
}

// masks returns the additive attention masks [batch, seq, seq] of the global and the local
// layers: 0 where a query may attend to a key, finfo.min elsewhere. Every layer masks padding
// keys; local layers also keys more than Window() positions away (HF's
// sliding_window_bidirectional_overlay: |q - k| <= local_attention/2). A query that may see no
// key (padding far from every real token) gets a uniform row, as in HF.
func masks(cfg *Config, mask *Node, batch, seq int) (global, local *Node) {
	g := mask.Graph()
	dt := cfg.dtype()
	isReal := NotEqual(mask, ScalarZero(g, mask.DType()))                    // [B, S]
	keys := BroadcastToDims(Reshape(isReal, batch, 1, seq), batch, seq, seq) // [B, S(query), S(key)]
	band := make([]bool, seq*seq)
	for q := 0; q < seq; q++ {
		for k := 0; k < seq; k++ {
			band[q*seq+k] = q-k <= cfg.Window() && k-q <= cfg.Window()
		}
	}
	near := BroadcastToDims(Reshape(Const(g, band), 1, seq, seq), batch, seq, seq)
	zero := Zeros(g, shapes.Make(dt, batch, seq, seq))
	lowest := BroadcastToDims(Scalar(g, dt, hflayers.Lowest(dt)), batch, seq, seq)
	global = Where(keys, zero, lowest)
	local = Where(LogicalAnd(keys, near), zero, lowest)
	return global, local
}

// Layers runs the transformer layers and the final LayerNorm over embedded inputs x [batch,
// seq, hidden] with mask [batch, seq] (1 for real positions).
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	g := x.Graph()
	dims := x.Shape().Dimensions
	batch, seq := dims[0], dims[1]
	dh := cfg.HiddenSize / cfg.NumAttentionHeads
	dt := cfg.dtype()
	if mask == nil {
		mask = Ones(g, shapes.Make(dtypes.Int32, batch, seq))
	}
	globalMask, localMask := masks(cfg, mask, batch, seq)
	gCos, gSin := rope(g, dt, seq, dh, cfg.RopeTheta(true))
	lCos, lSin := rope(g, dt, seq, dh, cfg.RopeTheta(false))
	layers := scope.At("layers")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		m, cos, sin := localMask, lCos, lSin
		if cfg.IsGlobal(l) {
			m, cos, sin = globalMask, gCos, gSin
		}
		x = layer(layers.In("%d", l), cfg, l, x, m, cos, sin)
	}
	return layerNorm(scope.At("final_norm"), cfg, x)
}

func layer(scope *model.Scope, cfg *Config, l int, x, addMask, cos, sin *Node) *Node {
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads := cfg.NumAttentionHeads
	dh := hidden / heads

	h := x
	if l > 0 {
		h = layerNorm(scope.In("attn_norm"), cfg, x)
	}
	attn := scope.In("attn")
	qkv := Reshape(linear(attn.In("Wqkv"), cfg, h, 3*hidden, cfg.AttentionBias), batch, seq, 3, heads, dh)
	part := func(i int) *Node {
		return Squeeze(Slice(qkv, AxisRange(), AxisRange(), AxisRange(i, i+1), AxisRange(), AxisRange()), 2)
	}
	q, k, v := applyRope(part(0), cos, sin), applyRope(part(1), cos, sin), part(2)
	ctx := hflayers.Attention(scope, q, k, v, addMask, cfg.AttentionDropout)
	a := linear(attn.In("Wo"), cfg, Reshape(ctx, batch, seq, hidden), hidden, cfg.AttentionBias)
	x = Add(x, hflayers.Dropout(scope, a, cfg.AttentionDropout))

	mlp := scope.In("mlp")
	wi := linear(mlp.In("Wi"), cfg, layerNorm(scope.In("mlp_norm"), cfg, x), 2*cfg.IntermediateSize, cfg.MLPBias)
	i := cfg.IntermediateSize
	input := Slice(wi, AxisRange(), AxisRange(), AxisRange(0, i))
	gate := Slice(wi, AxisRange(), AxisRange(), AxisRange(i, 2*i))
	y := Mul(activation.Apply(hflayers.Activation(cfg.HiddenActivation), input), gate)
	y = hflayers.Dropout(scope, y, cfg.MLPDropout)
	return Add(x, linear(mlp.In("Wo"), cfg, y, hidden, cfg.MLPBias))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] with cls or mean pooling (or
// returns hidden unchanged for none). ModernBERT has no pooler layer.
func Pool(hidden, mask *Node, p pooling.Pooling) *Node {
	return pooling.Pool(hidden, mask, p, nil)
}
