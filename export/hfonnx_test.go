package export_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/encoder"
	"google.golang.org/protobuf/proto"
)

// withoutONNX hides an encoder's ONNX graph (encoder.ONNX), as for an architecture that has
// none.
type withoutONNX struct{ encoder.Config }

// onnxGraph is encoder.ONNX under another name (an embedded field named ONNX would hide the
// method).
type onnxGraph interface{ encoder.ONNX }

// withoutTypes is an encoder with an ONNX graph that reports no token types.
type withoutTypes struct {
	encoder.Config
	onnxGraph
}

func (withoutTypes) TypeVocab() int { return 0 }

// onnxIO returns the input and output names of an ONNX file with their dimensions (sizes, or
// dimension names).
func onnxIO(t *testing.T, path string) (in, out map[string][]string, inNames, outNames []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mp protos.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(mp.OpsetImport) != 1 || mp.OpsetImport[0].Version != export.ONNXOpset {
		t.Errorf("%s: opsets %v", path, mp.OpsetImport)
	}
	dims := func(vs []*protos.ValueInfoProto) (map[string][]string, []string) {
		m := map[string][]string{}
		var names []string
		for _, v := range vs {
			var d []string
			for _, x := range v.GetType().GetTensorType().GetShape().GetDim() {
				if p := x.GetDimParam(); p != "" {
					d = append(d, p)
				} else {
					d = append(d, strings.Repeat("#", int(x.GetDimValue())))
				}
			}
			m[v.Name] = d
			names = append(names, v.Name)
		}
		return m, names
	}
	in, inNames = dims(mp.Graph.Input)
	out, outNames = dims(mp.Graph.Output)
	return in, out, inNames, outNames
}

// jsonMap reads a JSON object file.
func jsonMap(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	readJSON(t, path, &m)
	return m
}

// TestHFONNXLayout checks what the ecosystem's loaders look for in an HF export: every tower
// directory has onnx/model.onnx (listed in the manifest) with optimum's input and output
// names and dynamic axes (token_type_ids only for encoders with token types), the tokenizer's
// model_max_length is the tower's length, a one-logit or sigmoid head is declared
// multi-label (so text-classification pipelines apply a sigmoid); an encoder without an ONNX
// graph is exported without onnx/ and one manifest note.
func TestHFONNXLayout(t *testing.T) {
	be := goBackend(t)
	seq := []string{"batch_size", "sequence_length"}
	hidden := strings.Repeat("#", 32)
	biOut := map[string][]string{export.OutLastHiddenState: {"batch_size", "sequence_length", hidden}, export.OutSentenceEmbedding: {"batch_size", hidden}}
	for _, tc := range []struct {
		name    string
		model   func(t *testing.T) *export.Model
		towers  map[string]int // tower directory -> model_max_length
		inputs  []string
		outputs map[string][]string
		problem string // config.json problem_type
		note    bool   // no ONNX graph: a note and no onnx/
	}{
		{"shared-mean", func(t *testing.T) *export.Model { return biModel(t, exporttest.Options{}) },
			map[string]int{".": 64}, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs}, biOut, "", false},
		{"separate-cls", func(t *testing.T) *export.Model {
			return biModel(t, exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true})
		}, map[string]int{"query": 32, "tool": 64}, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs}, biOut, "", false},
		{"no-token-types", func(t *testing.T) *export.Model {
			m := biModel(t, exporttest.Options{})
			m.Towers[0].Encoder = withoutTypes{m.Towers[0].Encoder, m.Towers[0].Encoder.(encoder.ONNX)}
			return m
		}, map[string]int{".": 64}, []string{export.InputIDs, export.AttentionMask}, biOut, "", false},
		{"cross-encoder", func(t *testing.T) *export.Model {
			return headModel(t, be, []string{"relevant"}, encoder.PoolCLS, "sigmoid")
		}, map[string]int{".": 96}, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs},
			map[string][]string{export.OutLogits: {"batch_size", "#"}}, "multi_label_classification", false},
		{"softmax-classifier", func(t *testing.T) *export.Model {
			return headModel(t, be, []string{"a", "b", "c"}, encoder.PoolPooler, "softmax")
		}, map[string]int{".": 96}, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs},
			map[string][]string{export.OutLogits: {"batch_size", "###"}}, "", false},
		{"sigmoid-classifier", func(t *testing.T) *export.Model {
			return headModel(t, be, []string{"x", "y"}, encoder.PoolCLS, "sigmoid")
		}, map[string]int{".": 96}, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs},
			map[string][]string{export.OutLogits: {"batch_size", "##"}}, "multi_label_classification", false},
		{"no-onnx-graph", func(t *testing.T) *export.Model {
			m := biModel(t, exporttest.Options{Separate: true})
			for i := range m.Towers {
				m.Towers[i].Encoder = withoutONNX{m.Towers[i].Encoder}
			}
			return m
		}, map[string]int{"query": 32, "tool": 64}, nil, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model(t)
			out := filepath.Join(t.TempDir(), "hf")
			man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for rel, maxLen := range tc.towers {
				dir := filepath.Join(out, rel)
				if got := jsonMap(t, filepath.Join(dir, "tokenizer_config.json"))["model_max_length"]; got != float64(maxLen) {
					t.Errorf("%s: tokenizer model_max_length %v, want %d", rel, got, maxLen)
				}
				if got, _ := jsonMap(t, filepath.Join(dir, "config.json"))["problem_type"].(string); got != tc.problem {
					t.Errorf("%s: problem_type %q, want %q", rel, got, tc.problem)
				}
				key := filepath.ToSlash(filepath.Join(rel, export.ONNXFile))
				if tc.note {
					if _, err := os.Stat(filepath.Join(dir, "onnx")); err == nil {
						t.Errorf("%s: onnx/ written for an encoder without an ONNX graph", rel)
					}
					continue
				}
				if _, ok := man.Files[key]; !ok {
					t.Errorf("%s not in the manifest", key)
				}
				in, outs, inNames, outNames := onnxIO(t, filepath.Join(dir, export.ONNXFile))
				if !slices.Equal(inNames, tc.inputs) {
					t.Errorf("%s: inputs %v, want %v", rel, inNames, tc.inputs)
				}
				for _, n := range inNames {
					if !slices.Equal(in[n], seq) {
						t.Errorf("%s: input %s dims %v, want %v", rel, n, in[n], seq)
					}
				}
				if len(outs) != len(tc.outputs) {
					t.Errorf("%s: outputs %v, want %v", rel, outNames, tc.outputs)
				}
				for n, d := range tc.outputs {
					if !slices.Equal(outs[n], d) {
						t.Errorf("%s: output %s dims %v, want %v", rel, n, outs[n], d)
					}
				}
			}
			if tc.note != (len(man.Notes) == 1) || (tc.note && !strings.Contains(man.Notes[0], "model_type bert has no ONNX graph")) {
				t.Errorf("manifest notes %q", man.Notes)
			}
			if tc.note {
				saved, err := export.ReadManifest(out)
				if err != nil || !slices.Equal(saved.Notes, man.Notes) {
					t.Errorf("manifest.json notes %v (%v)", saved, err)
				}
			}
		})
	}
}

func biModel(t *testing.T, o exporttest.Options) *export.Model {
	t.Helper()
	m, err := exporttest.BiEncoder(o, goBackend(t), 5)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
