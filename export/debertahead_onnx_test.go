//go:build onnx && linux && amd64

package export_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolret/toolret/export"
)

// TestHeadPoolingONNX runs the onnx/model.onnx of the HF exports of TestHeadPoolingExport's
// pooler heads (DeBERTa's ContextPooler with and without token types, BERT's pooler) in ONNX
// Runtime: inputs as optimum names them (token_type_ids only with token types), one output,
// logits, equal to toolret's within onnxTol on single texts and pairs, in two batches padded
// differently.
func TestHeadPoolingONNX(t *testing.T) {
	be := goBackend(t)
	texts := sampleTexts(t, 30)
	sizes := []int{11, len(texts) - 11}
	docs := make([]string, len(texts))
	for i := range docs {
		docs[i] = texts[(i*7+3)%len(texts)]
	}
	worst := 0.0
	for _, tc := range headCases {
		if tc.wantErr != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			m, err := export.LoadModel(writeHeadRun(t, tc), be)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "hf")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			o := loadORT(t, filepath.Join(out, export.ONNXFile))
			inputs := []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs}
			if m.Towers[0].Encoder.TypeVocab() == 0 {
				inputs = inputs[:2]
			}
			if !slices.Equal(o.inputs, inputs) || !slices.Equal(o.outputs, []string{export.OutLogits}) {
				t.Fatalf("inputs %v outputs %v; want %v, [%s]", o.inputs, o.outputs, inputs, export.OutLogits)
			}
			n := len(m.Head.Labels)
			d := 0.0
			for _, pairs := range [][]string{docs, nil} {
				want, err := m.Score(texts, pairs)
				if err != nil {
					t.Fatal(err)
				}
				var got [][]float32
				for bi, batch := range encodeBatches(m, m.Towers[0].MaxLen, texts, pairs, sizes...) {
					got = append(got, rowsOf(t, o.run(t, batch)[export.OutLogits], export.OutLogits, sizes[bi], n)...)
				}
				d = max(d, maxDiff(t, want, got))
			}
			worst = max(worst, d)
			t.Logf("%s: ONNX Runtime vs toolret logits (pairs and single texts) max abs diff %.3g", tc.name, d)
			if d > onnxTol {
				t.Errorf("logits differ by %g (> %g)", d, onnxTol)
			}
		})
	}
	t.Logf("worst ONNX Runtime vs toolret max abs logit diff: %.3g", worst)
}
