package export_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"google.golang.org/protobuf/proto"
)

// TestQuantizeWeights checks that int8 weights dequantize within half a step of the fp32
// ones, per output channel and per matrix, that the largest weight of a channel maps to
// ±Int8Max, and that an all-zero channel gets scale 1 and zeros.
func TestQuantizeWeights(t *testing.T) {
	const k, n = 7, 5
	w := make([]float32, k*n)
	for i := range w {
		if i%n == 3 {
			continue // column 3 stays zero
		}
		w[i] = float32(math.Sin(float64(i)*1.7)) * float32(1+i%n*10)
	}
	for _, tc := range []struct {
		name       string
		perChannel bool
		scales     int
	}{{"per channel", true, n}, {"per matrix", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			q, scales := export.QuantizeWeights(w, k, n, tc.perChannel)
			if len(q) != len(w) || len(scales) != tc.scales {
				t.Fatalf("%d values and %d scales, want %d and %d", len(q), len(scales), len(w), tc.scales)
			}
			peak := map[int]int{}
			for i, v := range w {
				c := 0
				if tc.perChannel {
					c = i % n
				}
				s := scales[c]
				if d := math.Abs(float64(float32(q[i])*s - v)); d > float64(s)/2*(1+1e-6) {
					t.Errorf("w[%d] = %v: int8 %d × %v is %v off (> step/2 = %v)", i, v, q[i], s, d, s/2)
				}
				if q[i] < -export.Int8Max || q[i] > export.Int8Max {
					t.Errorf("w[%d]: %d outside ±%d", i, q[i], export.Int8Max)
				}
				peak[c] = max(peak[c], int(math.Abs(float64(q[i]))))
			}
			for c, p := range peak {
				if p != export.Int8Max && !(tc.perChannel && c == 3) {
					t.Errorf("channel %d peaks at %d, want %d", c, p, export.Int8Max)
				}
			}
			if tc.perChannel && (scales[3] != 1 || peak[3] != 0) {
				t.Errorf("zero column: scale %v, peak %d; want 1 and 0", scales[3], peak[3])
			}
		})
	}
}

// tinyONNX returns the ONNX graph of a tiny random BERT bi-encoder (2 layers, hidden 32).
func tinyONNX(t *testing.T) []byte {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := export.ONNX(m, &m.Towers[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestQuantizeONNXGraph checks the rewritten graph: every MatMul by a weight matrix (6 per
// BERT layer) became DynamicQuantizeLinear + MatMulInteger + Cast + Mul with int8 weights and
// no fp32 copy left, one DynamicQuantizeLinear per distinct input (Q, K and V share one), the
// attention's activation MatMuls untouched.
func TestQuantizeONNXGraph(t *testing.T) {
	fp32 := tinyONNX(t)
	for _, q := range []export.Quantization{export.QuantInt8, export.QuantInt8Tensor} {
		t.Run(string(q), func(t *testing.T) {
			b, st, err := export.QuantizeONNX(fp32, q)
			if err != nil {
				t.Fatal(err)
			}
			if st.MatMuls != 12 || st.Weights != 12 {
				t.Errorf("stats %+v: want 12 MatMuls and 12 weights (2 layers × 6)", st)
			}
			if st.Int8Bytes*3 > st.FloatBytes {
				t.Errorf("int8 weights take %d bytes for %d fp32 ones: want under a third", st.Int8Bytes, st.FloatBytes)
			}
			var mp protos.ModelProto
			if err := proto.Unmarshal(b, &mp); err != nil {
				t.Fatal(err)
			}
			ops := map[string]int{}
			for _, n := range mp.Graph.Node {
				ops[n.OpType]++
			}
			// Per layer: Q/K/V share the input, then attention output, intermediate, output.
			if ops["MatMulInteger"] != 12 || ops["DynamicQuantizeLinear"] != 8 || ops["MatMul"] != 4 {
				t.Errorf("ops %v: want 12 MatMulInteger, 8 DynamicQuantizeLinear, 4 MatMul left (attention)", ops)
			}
			inits := map[string]*protos.TensorProto{}
			for _, i := range mp.Graph.Initializer {
				inits[i.Name] = i
			}
			for name, i := range inits {
				if strings.HasSuffix(name, ".weight_t") {
					t.Errorf("fp32 weight %s left in the graph", name)
				}
				if strings.HasSuffix(name, ".weight_t_scale") && q == export.QuantInt8 && len(i.Dims) != 1 {
					t.Errorf("%s: dims %v, want one scale per output channel", name, i.Dims)
				}
				if strings.HasSuffix(name, ".weight_t_scale") && q == export.QuantInt8Tensor && len(i.Dims) != 0 {
					t.Errorf("%s: dims %v, want a scalar", name, i.Dims)
				}
			}
			if len(mp.Graph.Output) != 2 || mp.Graph.Output[1].Name != export.OutSentenceEmbedding {
				t.Errorf("outputs %v changed", mp.Graph.Output)
			}
		})
	}
}

// TestQuantizeErrors checks the refusals: a graph with nothing to quantize, an unknown
// -quantize value, and int8 on a backend without integer kernels.
func TestQuantizeErrors(t *testing.T) {
	g := onnxgraph.New("adds_only")
	g.Graph.Input = []*protos.ValueInfoProto{onnxgraph.ValueInfo("x", protos.TensorProto_FLOAT, "n", 2)}
	g.Op("Add", []string{"x", g.F32("b", []float32{1, 2}, 2)})
	g.Rename("y")
	g.Graph.Output = []*protos.ValueInfoProto{onnxgraph.ValueInfo("y", protos.TensorProto_FLOAT, "n", 2)}
	b, err := proto.Marshal(&protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Version: 17}}, Graph: g.Graph})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := export.QuantizeONNX(b, export.QuantInt8); err == nil || !strings.Contains(err.Error(), "nothing to quantize") {
		t.Errorf("graph without MatMul weights: error %v, want nothing to quantize", err)
	}
	if _, _, err := export.QuantizeONNX([]byte("not onnx"), export.QuantInt8); err == nil {
		t.Error("garbage model: no error")
	}
	if _, _, err := export.QuantizeONNX(tinyONNX(t), export.QuantNone); err == nil {
		t.Error("QuantizeONNX with none: no error")
	}
	for _, s := range []string{"int4", "fp16", "int8x"} {
		if _, err := export.ParseQuantization(s); err == nil || !strings.Contains(err.Error(), "int8") {
			t.Errorf("ParseQuantization(%q): error %v, want one listing int8", s, err)
		}
	}
	for s, want := range map[string]export.Quantization{"": export.QuantDefault, "none": export.QuantNone, "fp32": export.QuantNone, "INT8": export.QuantInt8, "int8-tensor": export.QuantInt8Tensor} {
		if q, err := export.ParseQuantization(s); err != nil || q != want {
			t.Errorf("ParseQuantization(%q) = %q, %v; want %q", s, q, err, want)
		}
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	err = export.CheckQuantization(be, export.QuantInt8)
	if err == nil || !strings.Contains(err.Error(), "-backend onnx") {
		t.Errorf("int8 on the go backend: error %v, want one naming -backend onnx", err)
	}
	if err := export.CheckQuantization(be, export.QuantNone); err != nil {
		t.Errorf("fp32 on the go backend: %v", err)
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Quantize(export.QuantInt8); err == nil {
		t.Error("Model.Quantize(int8) on the go backend: no error")
	}
	if _, err := m.Embed(biencoder.QueryTower, []string{"still fp32"}); err != nil {
		t.Errorf("embedding after a refused Quantize: %v", err)
	}
}
