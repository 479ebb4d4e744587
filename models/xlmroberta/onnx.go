package xlmroberta

import (
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/hflayers"
)

// onnxInt64 is ONNX's TensorProto INT64 element type (Cast's "to").
const onnxInt64 = 7

// ONNX adds the encoder to an ONNX graph and returns the name of its last hidden states
// [batch, sequence, hidden] (float32): ids and types are int64 [batch, sequence] values of g
// (types are ignored with type_vocab_size 1), mask the float32 attention mask [batch,
// sequence]. Positions are Positions': CumSum of the mask times the mask, plus pad_token_id.
// param returns the float32 values of an HF parameter (Params naming); it may return nil after
// recording an error, which the caller checks once the graph is built.
func ONNX(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, ids, types, mask string) string {
	h := cfg.HiddenSize
	words := g.F32("embeddings.word_embeddings.weight", param("embeddings.word_embeddings.weight"), cfg.VocabSize, h)
	x := g.Op("Gather", []string{words, ids}, onnxgraph.AttrInt("axis", 0))

	isReal := g.Op("Cast", []string{mask}, onnxgraph.AttrInt("to", onnxInt64))
	count := g.Op("CumSum", []string{isReal, g.I64("xlmr_seq_axis", []int64{1})})
	posIDs := g.Op("Add", []string{g.Op("Mul", []string{count, isReal}), g.I64("xlmr_pad_id", []int64{int64(cfg.PadTokenID)})})
	positions := g.F32("embeddings.position_embeddings.weight", param("embeddings.position_embeddings.weight"), cfg.MaxPositionEmbeddings, h)
	x = g.Op("Add", []string{x, g.Op("Gather", []string{positions, posIDs}, onnxgraph.AttrInt("axis", 0))})

	typeEmb := g.F32("embeddings.token_type_embeddings.weight", param("embeddings.token_type_embeddings.weight"), cfg.TypeVocabSize, h)
	if cfg.TypeVocabSize == 1 {
		x = g.Op("Add", []string{x, typeEmb}) // [1, hidden] broadcasts: every token is type 0
	} else {
		x = g.Op("Add", []string{x, g.Op("Gather", []string{typeEmb, types}, onnxgraph.AttrInt("axis", 0))})
	}
	x = hflayers.ONNXLayerNorm(g, param, x, "embeddings.LayerNorm", h, cfg.LayerNormEps)
	return bert.ONNXLayers(g, bertOf(cfg), param, x, mask)
}

// ONNXPooler adds the pooler (BERT's dense + tanh) over the first-token states cls [batch,
// hidden] and returns the name of its output.
func ONNXPooler(g *onnxgraph.Builder, cfg *Config, param func(name string) []float32, cls string) string {
	return bert.ONNXPooler(g, bertOf(cfg), param, cls)
}
