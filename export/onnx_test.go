//go:build onnx && linux && amd64

package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	onnxbackend "github.com/gomlx/compute-onnx"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"google.golang.org/protobuf/proto"
)

// onnxTol bounds the max abs difference between ONNX Runtime and toolret on exported models
// (README, "Export").
const onnxTol = 1e-5

// ortModel is an exported .onnx file loaded into ONNX Runtime through GoMLX's onnx backend.
type ortModel struct {
	be      compute.Backend
	exec    compute.Executable
	inputs  []string
	outputs []string
}

// loadORT loads path with the onnx backend (one thread), skipping the test when ONNX Runtime
// is not installed (scripts/install-onnxruntime.sh).
func loadORT(t *testing.T, path string) *ortModel {
	t.Helper()
	be, err := backend.Open("onnx:cpu,intra_threads=1")
	if err != nil {
		t.Skipf("onnx backend: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mp protos.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	exec, err := onnxbackend.LoadModel(be, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	t.Cleanup(exec.Finalize)
	o := &ortModel{be: be, exec: exec}
	o.inputs, _ = exec.Inputs()
	for _, v := range mp.Graph.Output {
		o.outputs = append(o.outputs, v.Name)
	}
	return o
}

// ortOutput is one output of a run: its dimensions and values.
type ortOutput struct {
	dims []int
	data []float32
}

// run feeds one padded batch (int32 rows per input name) and returns the outputs by name.
func (o *ortModel) run(t *testing.T, batch map[string][][]int32) map[string]ortOutput {
	t.Helper()
	var in []compute.Buffer
	for _, name := range o.inputs {
		rows, ok := batch[name]
		if !ok {
			t.Fatalf("model input %q not in the batch", name)
		}
		flat := make([]int64, 0, len(rows)*len(rows[0]))
		for _, r := range rows {
			for _, v := range r {
				flat = append(flat, int64(v))
			}
		}
		buf, err := o.be.BufferFromFlatData(0, flat, shapes.Make(dtypes.Int64, len(rows), len(rows[0])))
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, buf)
	}
	outs, err := o.exec.Execute(in, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]ortOutput{}
	for i, b := range outs {
		sh, err := b.Shape()
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float32, sh.Size())
		if err := b.ToFlatData(d); err != nil {
			t.Fatal(err)
		}
		res[o.outputs[i]] = ortOutput{dims: sh.Dimensions, data: d}
		b.Finalize()
	}
	for _, b := range in {
		b.Finalize()
	}
	return res
}

// encodeBatches tokenizes texts (or pairs) into ONNX input batches of the given sizes, each
// padded to its longest sequence plus 3 per batch index, so that batches differ in both axes
// and padding must not change the outputs.
func encodeBatches(m *export.Model, maxLen int, a, b []string, sizes ...int) []map[string][][]int32 {
	var out []map[string][][]int32
	start := 0
	for _, n := range sizes {
		var ids, types [][]int32
		for i := start; i < start+n; i++ {
			if b == nil {
				s := m.Tok.Single(a[i], maxLen)
				ids, types = append(ids, s), append(types, make([]int32, len(s)))
			} else {
				s, ty := m.Tok.Pair(a[i], b[i], maxLen)
				ids, types = append(ids, s), append(types, ty)
			}
		}
		l := 0
		for _, s := range ids {
			l = max(l, len(s))
		}
		l += 3 * len(out)
		pi, pt, pm := make([][]int32, n), make([][]int32, n), make([][]int32, n)
		for i := range ids {
			pi[i], pt[i], pm[i] = make([]int32, l), make([]int32, l), make([]int32, l)
			for j := range pi[i] {
				pi[i][j] = m.Tok.PadID()
			}
			copy(pi[i], ids[i])
			copy(pt[i], types[i])
			for j := range ids[i] {
				pm[i][j] = 1
			}
		}
		out = append(out, map[string][][]int32{export.InputIDs: pi, export.AttentionMask: pm, export.TokenTypeIDs: pt})
		start += n
	}
	return out
}

// rowsOf splits a [rows, k] output into rows.
func rowsOf(t *testing.T, o ortOutput, name string, rows, k int) [][]float32 {
	t.Helper()
	if !slices.Equal(o.dims, []int{rows, k}) {
		t.Fatalf("%s: dims %v, want [%d %d]", name, o.dims, rows, k)
	}
	out := make([][]float32, rows)
	for i := range out {
		out[i] = o.data[i*k : (i+1)*k]
	}
	return out
}

// TestONNXParity exports bi-encoders (mean/cosine, pooler, cls/dot with separate towers, an
// encoder without token types, a word bag, MPNet) and cross-encoder and classifier heads in HF layout and runs
// their onnx/model.onnx in ONNX Runtime (GoMLX's onnx backend) on 50 ToolLens queries (the embedded default dataset's texts
// without ../shared), in two batches of different sizes and padded lengths. Inputs and
// outputs must have optimum's names; sentence_embedding must equal toolret's embeddings,
// last_hidden_state toolret's token states on real tokens and logits toolret's head logits,
// each within onnxTol. -format onnx must write the same graphs.
func TestONNXParity(t *testing.T) {
	be := goBackend(t)
	texts := sampleTexts(t, 50)
	sizes := []int{17, len(texts) - 17}
	worst := 0.0
	for _, tc := range []struct {
		name    string
		o       exporttest.Options
		noTypes bool // the encoder reports no token types: no token_type_ids input
	}{
		{"mean-cosine", exporttest.Options{}, false},
		{"pooler-cosine-gelunew", exporttest.Options{Pooling: encoder.PoolPooler, Act: "gelu_new"}, false},
		{"cls-dot-separate", exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true, Act: "relu"}, false},
		{"mean-cosine-no-token-types", exporttest.Options{}, true},
		{"wordbag-mean-cosine", exporttest.Options{Arch: "wordbag", Hidden: 48}, true},
		{"mpnet-mean-cosine", exporttest.Options{Arch: "mpnet"}, true},
		{"mpnet-pooler-dot-separate", exporttest.Options{Arch: "mpnet", Pooling: encoder.PoolPooler, Similarity: "dot", Separate: true}, true},
		{"xlm-roberta-mean-cosine", exporttest.Options{Arch: "xlm-roberta"}, false},
		{"xlm-roberta-pooler-dot-separate", exporttest.Options{Arch: "xlm-roberta", Pooling: encoder.PoolPooler, Similarity: "dot", Separate: true}, false},
		// ModernBERT: 3 layers (0 and 2 global, 1 local) with a window of 4 each side, shorter
		// than the texts; the second also with every bias.
		{"modernbert-mean-cosine", exporttest.Options{Arch: "modernbert", Layers: 3,
			Fields: map[string]any{"local_attention": 8, "global_attn_every_n_layers": 2}}, true},
		{"modernbert-cls-dot-separate-bias", exporttest.Options{Arch: "modernbert", Layers: 3, Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true,
			Fields: map[string]any{"local_attention": 8, "global_attn_every_n_layers": 2, "norm_bias": true, "attention_bias": true, "mlp_bias": true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(tc.o, be, 21)
			if err != nil {
				t.Fatal(err)
			}
			inputs := []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs}
			if tc.noTypes {
				for i := range m.Towers {
					m.Towers[i].Encoder = withoutTypes{m.Towers[i].Encoder, m.Towers[i].Encoder.(encoder.ONNX)}
				}
				inputs = inputs[:2]
			}
			out := filepath.Join(t.TempDir(), "hf")
			man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			onnxOut := filepath.Join(t.TempDir(), "onnx")
			onnxMan, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: onnxOut})
			if err != nil {
				t.Fatal(err)
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				dir, err := man.TowerDir(out, tower)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, export.ONNXFile)
				alone, err := onnxMan.TowerDir(onnxOut, tower)
				if err != nil {
					t.Fatal(err)
				}
				a, _ := os.ReadFile(path)
				b, _ := os.ReadFile(alone)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s: -format onnx (%s) and -format hf (%s) graphs differ", tower, alone, path)
				}
				o := loadORT(t, path)
				if !slices.Equal(o.inputs, inputs) {
					t.Errorf("inputs %v, want %v", o.inputs, inputs)
				}
				if want := []string{export.OutLastHiddenState, export.OutSentenceEmbedding}; !slices.Equal(o.outputs, want) {
					t.Fatalf("outputs %v, want %v", o.outputs, want)
				}
				tw, _ := m.Tower(tower)
				h := tw.Encoder.Hidden()
				maxLen := map[string]int{biencoder.QueryTower: 32, biencoder.ToolTower: 64}[tower]
				want, err := m.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				states, err := encoder.NewRunner(be, m.Store, tw.Base, tw.Encoder, encoder.PoolNone)
				if err != nil {
					t.Fatal(err)
				}
				var got [][]float32
				dStates := 0.0
				for bi, batch := range encodeBatches(m, maxLen, texts, nil, sizes...) {
					r := o.run(t, batch)
					got = append(got, rowsOf(t, r[export.OutSentenceEmbedding], export.OutSentenceEmbedding, sizes[bi], h)...)
					// last_hidden_state against toolret's token states on the same padded batch.
					n, l := len(batch[export.InputIDs]), len(batch[export.InputIDs][0])
					hs := r[export.OutLastHiddenState]
					if !slices.Equal(hs.dims, []int{n, l, h}) {
						t.Fatalf("last_hidden_state dims %v, want [%d %d %d]", hs.dims, n, l, h)
					}
					ref, err := states.Call(encoder.Tensors(tokenize.Batch{IDs: batch[export.InputIDs], Types: batch[export.TokenTypeIDs], Mask: batch[export.AttentionMask], Len: l}))
					if err != nil {
						t.Fatal(err)
					}
					rf := ref.Value().([][][]float32)
					for i := 0; i < n; i++ {
						for j := 0; j < l && batch[export.AttentionMask][i][j] == 1; j++ {
							for k := 0; k < h; k++ {
								dStates = max(dStates, math.Abs(float64(hs.data[(i*l+j)*h+k]-rf[i][j][k])))
							}
						}
					}
				}
				d := maxDiff(t, want, got)
				worst = max(worst, d, dStates)
				t.Logf("%s tower: ONNX Runtime vs toolret max abs diff: sentence_embedding %.3g, last_hidden_state %.3g", tower, d, dStates)
				if d > onnxTol || dStates > onnxTol {
					t.Errorf("%s tower: ONNX Runtime differs from toolret by %g (sentence_embedding), %g (last_hidden_state), > %g", tower, d, dStates, onnxTol)
				}
			}
		})
	}
	for _, tc := range []struct {
		labels []string
		pool   encoder.Pooling
		act    string
	}{{[]string{"relevant"}, encoder.PoolCLS, "sigmoid"}, {[]string{"a", "b", "c"}, encoder.PoolPooler, "softmax"}, {[]string{"a", "b"}, encoder.PoolMean, "softmax"}} {
		t.Run(fmt.Sprintf("head-%d-%s", len(tc.labels), tc.pool), func(t *testing.T) {
			m := headModel(t, be, tc.labels, tc.pool, tc.act)
			out := filepath.Join(t.TempDir(), "hf")
			format := export.FormatHF
			if tc.pool == encoder.PoolMean { // no HF layout for a mean head (TestHeadMean)
				format = export.FormatONNX
			}
			if _, err := export.Export(m, export.Options{Format: format, Out: out}); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(out, export.ONNXFile)
			if format == export.FormatONNX {
				file = filepath.Join(out, "model.onnx")
			}
			o := loadORT(t, file)
			if !slices.Equal(o.outputs, []string{export.OutLogits}) {
				t.Fatalf("outputs %v, want [%s]", o.outputs, export.OutLogits)
			}
			docs := make([]string, len(texts))
			for i := range docs {
				docs[i] = texts[(i*7+3)%len(texts)]
			}
			d := 0.0
			for _, pairs := range [][]string{docs, nil} {
				want, err := m.Score(texts, pairs)
				if err != nil {
					t.Fatal(err)
				}
				var got [][]float32
				for bi, batch := range encodeBatches(m, 96, texts, pairs, sizes...) {
					got = append(got, rowsOf(t, o.run(t, batch)[export.OutLogits], export.OutLogits, sizes[bi], len(tc.labels))...)
				}
				d = max(d, maxDiff(t, want, got))
			}
			worst = max(worst, d)
			t.Logf("head: ONNX Runtime vs toolret logits (pairs and single texts) max abs diff %.3g", d)
			if d > onnxTol {
				t.Errorf("head logits differ by %g (> %g)", d, onnxTol)
			}
		})
	}
	t.Logf("worst ONNX Runtime vs toolret max abs diff: %.3g", worst)
}

// TestONNXModernBERTTransformers exports the tiny ModernBERT of
// scripts/parity/make_modernbert_fixture.py (-format hf, which writes its ONNX graph) and runs
// the graph on ONNX Runtime over the fixture's padded batch: last_hidden_state at real tokens
// and the mean-pooled sentence_embedding against transformers' and sentence-transformers'.
func TestONNXModernBERTTransformers(t *testing.T) {
	const fixture = "../models/modernbert/testdata"
	var e struct {
		BatchIDs  [][]int32   `json:"batch_ids"`
		BatchMask [][]int32   `json:"batch_mask"`
		Shape     []int       `json:"hidden_shape"`
		Hidden    []float64   `json:"last_hidden_state"`
		Emb       [][]float64 `json:"embeddings"`
	}
	raw, err := os.ReadFile(filepath.Join(fixture, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	m, err := export.Open(context.Background(), filepath.Join(fixture, "tiny"), goBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hf")
	man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := man.TowerDir(out, biencoder.QueryTower)
	if err != nil {
		t.Fatal(err)
	}
	o := loadORT(t, filepath.Join(dir, export.ONNXFile))
	r := o.run(t, map[string][][]int32{export.InputIDs: e.BatchIDs, export.AttentionMask: e.BatchMask})
	hs := r[export.OutLastHiddenState]
	if !slices.Equal(hs.dims, e.Shape) {
		t.Fatalf("last_hidden_state dims %v, want %v", hs.dims, e.Shape)
	}
	n, l, h := e.Shape[0], e.Shape[1], e.Shape[2]
	dStates := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < l && e.BatchMask[i][j] == 1; j++ {
			for k := 0; k < h; k++ {
				dStates = max(dStates, math.Abs(float64(hs.data[(i*l+j)*h+k])-e.Hidden[(i*l+j)*h+k]))
			}
		}
	}
	// sentence_embedding is L2-normalised for a cosine model: then compare with the normalised
	// reference.
	se := r[export.OutSentenceEmbedding]
	dEmb := 0.0
	for i, row := range e.Emb {
		norm := 1.0
		if m.Towers[0].Normalize {
			norm = 0
			for _, v := range row {
				norm += v * v
			}
			norm = math.Sqrt(norm)
		}
		for k, v := range row {
			dEmb = max(dEmb, math.Abs(float64(se.data[i*h+k])-v/norm))
		}
	}
	t.Logf("ModernBERT ONNX graph on ONNX Runtime vs transformers: last_hidden_state %.3g, sentence_embedding vs sentence-transformers %.3g (normalised: %v)", dStates, dEmb, m.Towers[0].Normalize)
	if dStates > 1e-5 || dEmb > 1e-5 {
		t.Errorf("ONNX Runtime differs from transformers by %g (last_hidden_state), %g (sentence_embedding), > 1e-5", dStates, dEmb)
	}
}
