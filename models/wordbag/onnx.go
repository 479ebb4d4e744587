package wordbag

import "github.com/toolret/toolret/models/encoder/onnxgraph"

// ONNX adds the encoder to g and returns its token states [batch, sequence, hidden]: ids int64
// [batch, sequence], mask float32 [batch, sequence]; param returns a parameter's values by name.
func ONNX(g *onnxgraph.Builder, c *Config, param func(name string) []float32, ids, mask string) string {
	words := g.F32(Embeddings, param(Embeddings), c.VocabSize, c.HiddenSize)
	weights := g.F32(Weights, param(Weights), c.VocabSize)
	x := g.Op("Gather", []string{words, ids}, onnxgraph.AttrInt("axis", 0))
	w := g.Op("Unsqueeze", []string{g.Op("Mul", []string{g.Op("Gather", []string{weights, ids}, onnxgraph.AttrInt("axis", 0)), mask}), g.I64("wordbag_axes_last", []int64{-1}, 1)})
	return g.Op("Mul", []string{x, w})
}
