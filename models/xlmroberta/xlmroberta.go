package xlmroberta

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

// spec is what the shared HF blocks need of cfg.
func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange, LayerNormEps: cfg.LayerNormEps}
}

// bertOf is the BERT configuration the layers and the pooler run with (DType resolved).
func bertOf(cfg *Config) *bert.Config {
	c := cfg.Config
	c.DType = cfg.dtype()
	return &c
}

// Encode runs XLM-RoBERTa over a batch: ids and types int32 [batch, seq] (types may be nil;
// with type_vocab_size 1 they are ignored: every token is type 0), mask [batch, seq] with 1
// for real tokens (any numeric dtype). It returns the last hidden states [batch, seq, hidden].
func Encode(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids, types, mask), mask)
}

// Positions returns the position ids [batch, seq] (int32) of a mask [batch, seq]: HF's
// create_position_ids_from_input_ids over the real tokens, pad_token_id + cumulative count of
// real tokens for a real token, pad_token_id for padding. A nil mask is all real tokens.
func Positions(cfg *Config, g *Graph, batch, seq int, mask *Node) *Node {
	var m *Node
	if mask == nil {
		m = Ones(g, shapes.Make(dtypes.Int32, batch, seq))
	} else {
		m = ConvertDType(NotEqual(mask, ScalarZero(g, mask.DType())), dtypes.Int32)
	}
	return AddScalar(Mul(CumSum(m, 1), m), cfg.PadTokenID)
}

// Embed is the embedding layer: word + position (Positions) + token type embeddings,
// LayerNorm and dropout, [batch, seq, hidden].
func Embed(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	g := ids.Graph()
	batch, seq := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	if seq > cfg.MaxTokens() {
		exceptions.Panicf("xlm-roberta: sequence length %d exceeds the %d tokens max_position_embeddings %d allows", seq, cfg.MaxTokens(), cfg.MaxPositionEmbeddings)
	}
	sp := spec(cfg)
	emb := scope.At("embeddings")
	words := sp.Variable(emb.In("word_embeddings"), g, "weight", cfg.VocabSize, cfg.HiddenSize)
	positions := sp.Variable(emb.In("position_embeddings"), g, "weight", cfg.MaxPositionEmbeddings, cfg.HiddenSize)
	typeEmb := sp.Variable(emb.In("token_type_embeddings"), g, "weight", cfg.TypeVocabSize, cfg.HiddenSize)

	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1)) // [B, S, H]
	x = Add(x, Gather(positions, InsertAxes(Positions(cfg, g, batch, seq, mask), -1)))
	if types == nil || cfg.TypeVocabSize == 1 {
		x = Add(x, InsertAxes(Slice(typeEmb, AxisRange(0, 1)), 0))
	} else {
		x = Add(x, Gather(typeEmb, InsertAxes(ConvertDType(types, dtypes.Int32), -1)))
	}
	x = sp.LayerNorm(emb.In("LayerNorm"), x)
	return hflayers.Dropout(scope, x, cfg.HiddenDropoutProb)
}

// Layers runs the transformer layers (BERT's) over embedded inputs x [batch, seq, hidden]
// with mask [batch, seq] (1 for real positions).
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	return bert.Layers(scope, bertOf(cfg), x, mask)
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] (PoolNone returns it
// unchanged); the pooler is BERT's dense + tanh over the first token (<s>).
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p pooling.Pooling) *Node {
	return bert.Pool(scope, bertOf(cfg), hidden, mask, p)
}
