//go:build onnx && linux && amd64

package deberta_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"

	onnxbackend "github.com/gomlx/compute-onnx"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/deberta"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
)

// onnxTol bounds |ONNX Runtime - toolret| (and - PyTorch, on the fixtures) for DeBERTa graphs.
const onnxTol = 1e-5

// ort is an ONNX model loaded into ONNX Runtime through GoMLX's onnx backend.
type ort struct {
	be      compute.Backend
	exec    compute.Executable
	inputs  []string
	outputs []string
}

func loadORT(t *testing.T, b []byte) *ort {
	t.Helper()
	be, err := backend.Open("onnx:cpu,intra_threads=1")
	if err != nil {
		t.Skipf("onnx backend: %v", err)
	}
	var mp protos.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	exec, err := onnxbackend.LoadModel(be, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exec.Finalize)
	o := &ort{be: be, exec: exec}
	o.inputs, _ = exec.Inputs()
	for _, v := range mp.Graph.Output {
		o.outputs = append(o.outputs, v.Name)
	}
	return o
}

// run feeds int32 rows per input name (as int64) and returns each output's dims and values.
func (o *ort) run(t *testing.T, batch map[string][][]int32) map[string]tensorF32 {
	t.Helper()
	var in []compute.Buffer
	for _, name := range o.inputs {
		rows, ok := batch[name]
		if !ok {
			t.Fatalf("model input %q not in the batch", name)
		}
		var flat []int64
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
	res := map[string]tensorF32{}
	for i, b := range outs {
		sh, err := b.Shape()
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float32, sh.Size())
		if err := b.ToFlatData(d); err != nil {
			t.Fatal(err)
		}
		res[o.outputs[i]] = tensorF32{sh.Dimensions, d}
		b.Finalize()
	}
	for _, b := range in {
		b.Finalize()
	}
	return res
}

type tensorF32 struct {
	dims []int
	data []float32
}

// fixture is a PyTorch parity fixture of testdata (scripts/deberta/make_fixture.py).
type fixture struct {
	IDs     [][]int32   `json:"ids"`
	Types   [][]int32   `json:"token_types"`
	Mask    [][]int32   `json:"mask"`
	Lengths []int       `json:"lengths"`
	Hidden  int         `json:"hidden"`
	Pooler  []float64   `json:"pooler"`
	states  [][]float32 // per row, the non-pad positions' last hidden states
}

func loadFixture(t *testing.T, dir string) *fixture {
	t.Helper()
	var f fixture
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "hidden.f32"))
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, len(raw)/4)
	binary.Read(bytes.NewReader(raw), binary.LittleEndian, all)
	for _, n := range f.Lengths {
		if len(all) < n*f.Hidden {
			t.Fatalf("%s: hidden.f32 too short", dir)
		}
		f.states = append(f.states, all[:n*f.Hidden])
		all = all[n*f.Hidden:]
	}
	return &f
}

// graph builds the bare encoder (and ContextPooler) over the variables in store as an ONNX
// model: inputs input_ids, attention_mask (and token_type_ids with token types), outputs
// last_hidden_state and pooler (with a pooler).
func graph(t *testing.T, cfg *deberta.Config, store *model.Store) []byte {
	t.Helper()
	g := onnxgraph.New("deberta_test")
	var perr error
	param := func(name string) []float32 {
		v := encoder.Variable(store, "", name)
		if v == nil {
			perr = fmt.Errorf("no variable %s", name)
			return nil
		}
		x, err := v.Value()
		if err != nil {
			perr = err
			return nil
		}
		return tensors.MustCopyFlatData[float32](x)
	}
	g.Graph.Input = []*protos.ValueInfoProto{
		onnxgraph.ValueInfo("input_ids", protos.TensorProto_INT64, "b", "s"),
		onnxgraph.ValueInfo("attention_mask", protos.TensorProto_INT64, "b", "s"),
	}
	types := "token_type_ids"
	if cfg.TypeVocabSize > 0 {
		g.Graph.Input = append(g.Graph.Input, onnxgraph.ValueInfo(types, protos.TensorProto_INT64, "b", "s"))
	} else {
		types = "" // never read
	}
	mask := g.Op("Cast", []string{"attention_mask"}, onnxgraph.AttrInt("to", int64(protos.TensorProto_FLOAT)))
	x := deberta.ONNX(g, cfg, param, "input_ids", types, mask)
	g.Op("Identity", []string{x})
	g.Rename("last_hidden_state")
	g.Graph.Output = []*protos.ValueInfoProto{onnxgraph.ValueInfo("last_hidden_state", protos.TensorProto_FLOAT, "b", "s", cfg.HiddenSize)}
	if cfg.HasPooler() {
		cls := g.Op("Gather", []string{"last_hidden_state", g.I64("index0", []int64{0})}, onnxgraph.AttrInt("axis", 1))
		deberta.ONNXPooler(g, cfg, param, cls)
		g.Rename("pooler")
		g.Graph.Output = append(g.Graph.Output, onnxgraph.ValueInfo("pooler", protos.TensorProto_FLOAT, "b", cfg.HiddenSize))
	}
	if perr != nil {
		t.Fatal(perr)
	}
	b, err := proto.Marshal(&protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Version: 17}}, Graph: g.Graph})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goStates runs Encode on the go backend over a padded batch: [rows][seq·hidden].
func goStates(t *testing.T, store *model.Store, cfg *deberta.Config, ids, types, mask [][]int32) []float32 {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, types, mask *Node) *Node {
		return deberta.Encode(root, cfg, ids, types, mask)
	})
	if err != nil {
		t.Fatal(err)
	}
	flat := func(x [][]int32) *tensors.Tensor {
		return tensors.FromFlatDataAndDimensions(slices.Concat(x...), len(x), len(x[0]))
	}
	out, err := exec.Call1(flat(ids), flat(types), flat(mask))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out)
}

// TestONNXFixtures runs the DeBERTa ONNX graph in ONNX Runtime on the PyTorch parity fixtures
// (v3: 256 buckets over 512 positions, shared keys, c2p+p2c, ContextPooler; buckets8: 8
// buckets over 32 relative positions, absolute positions, token types, c2p with pos_key_proj;
// embproj: embedding_size 32, no buckets, p2c with pos_query_proj): the padded batch of the
// fixture (lengths 1 to 512) and a second batch of its shorter rows cut to another sequence
// length, through one loaded model. Every non-pad position must match PyTorch and toolret's
// go backend within onnxTol, the ContextPooler output PyTorch's.
func TestONNXFixtures(t *testing.T) {
	for _, name := range []string{"v3", "buckets8", "embproj"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			f := loadFixture(t, dir)
			store := model.NewStore()
			deberta.Warnings = &bytes.Buffer{}
			cfg, err := deberta.LoadHF(store.RootScope(), dir)
			deberta.Warnings = os.Stderr
			if err != nil {
				t.Fatal(err)
			}
			o := loadORT(t, graph(t, cfg, store))

			// Batch 1: the fixture. Batch 2: rows shorter than half the fixture's width, cut to
			// their longest length + 5.
			full := len(f.IDs[0])
			var rows []int
			cut := 0
			for i, n := range f.Lengths {
				if n < full/2 {
					rows = append(rows, i)
					cut = max(cut, n+5)
				}
			}
			sub := func(x [][]int32) [][]int32 {
				var out [][]int32
				for _, i := range rows {
					out = append(out, x[i][:cut])
				}
				return out
			}
			for _, bt := range []struct {
				rows             []int
				ids, types, mask [][]int32
			}{
				{nil, f.IDs, f.Types, f.Mask},
				{rows, sub(f.IDs), sub(f.Types), sub(f.Mask)},
			} {
				if bt.rows == nil {
					for i := range f.IDs {
						bt.rows = append(bt.rows, i)
					}
				}
				seq := len(bt.ids[0])
				r := o.run(t, map[string][][]int32{"input_ids": bt.ids, "token_type_ids": bt.types, "attention_mask": bt.mask})
				hs := r["last_hidden_state"]
				if !slices.Equal(hs.dims, []int{len(bt.ids), seq, f.Hidden}) {
					t.Fatalf("last_hidden_state dims %v", hs.dims)
				}
				ref := goStates(t, store, cfg, bt.ids, bt.types, bt.mask)
				dTorch, dGo := 0.0, 0.0
				for k, i := range bt.rows {
					n := f.Lengths[i] * f.Hidden
					got := hs.data[k*seq*f.Hidden : k*seq*f.Hidden+n]
					for j, v := range got {
						dTorch = max(dTorch, math.Abs(float64(v-f.states[i][j])))
						dGo = max(dGo, math.Abs(float64(v-ref[k*seq*f.Hidden+j])))
					}
				}
				t.Logf("%s: %d rows padded to %d: max |ORT - torch| %.2e, |ORT - go| %.2e", name, len(bt.rows), seq, dTorch, dGo)
				if dTorch > onnxTol || dGo > onnxTol {
					t.Errorf("%s (sequence %d): ONNX Runtime differs from PyTorch by %.2e, from toolret by %.2e (> %.0e)", name, seq, dTorch, dGo, onnxTol)
				}
				if f.Pooler != nil {
					p := r["pooler"]
					d := 0.0
					for k, i := range bt.rows {
						for j := 0; j < f.Hidden; j++ {
							d = max(d, math.Abs(float64(p.data[k*f.Hidden+j])-f.Pooler[i*f.Hidden+j]))
						}
					}
					t.Logf("%s: max |ORT ContextPooler - torch| %.2e", name, d)
					if d > onnxTol {
						t.Errorf("%s: ContextPooler differs from PyTorch by %.2e", name, d)
					}
				}
			}
		})
	}
}

// texts returns n ToolLens-style texts of the embedded default dataset, queries and tools
// interleaved (so that lengths vary from a few tokens to the maximum length), plus an empty
// string and a text longer than any maximum length.
func texts(t *testing.T, n int) []string {
	t.Helper()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"", "find the weather"}
	for i := 0; len(out) < n-1; i++ {
		if i%2 == 0 && i/2 < len(d.Queries) {
			out = append(out, d.Queries[i/2].Text)
		} else if i/2 < len(d.Tools) {
			out = append(out, d.Tools[i/2].Text)
		}
	}
	long := ""
	for i := 0; i < 40; i++ {
		long += d.Tools[i%len(d.Tools)].Text + " "
	}
	return append(out, long)
}

// TestExportONNX exports DeBERTa models with export.Export (-format onnx, as cmd/export does)
// and runs the files in ONNX Runtime on 60 texts in two padded batches of different sizes and
// lengths: bi-encoders (mean/cosine; ContextPooler/cosine; cls/dot with separate query and
// tool towers) must give toolret's embeddings (Model.Embed) within onnxTol, and a
// cross-encoder-style head over the ContextPooler with token types toolret's logits on text
// pairs.
func TestExportONNX(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	all := texts(t, 60)
	sizes := []int{23, len(all) - 23}
	newEnc := func(types int) encoder.Config {
		enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 32, Layers: 2, Heads: 4, MaxPositions: 128})
		if err != nil {
			t.Fatal(err)
		}
		if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2, "type_vocab_size": types}); err != nil {
			t.Fatal(err)
		}
		return enc
	}
	// batches tokenizes (pairs of) texts into ONNX inputs padded per batch to the longest
	// sequence + 3·batch index.
	batches := func(maxLen int, a, b []string) []map[string][][]int32 {
		var out []map[string][][]int32
		start := 0
		for bi, n := range sizes {
			var ids, types [][]int32
			l := 0
			for i := start; i < start+n; i++ {
				var s, ty []int32
				if b == nil {
					s, ty = tok.Single(a[i], maxLen), make([]int32, 0)
				} else {
					s, ty = tok.Pair(a[i], b[i], maxLen)
				}
				ids, types = append(ids, s), append(types, ty)
				l = max(l, len(s))
			}
			l += 3 * bi
			pi, pt, pm := make([][]int32, n), make([][]int32, n), make([][]int32, n)
			for i := range ids {
				pi[i], pt[i], pm[i] = make([]int32, l), make([]int32, l), make([]int32, l)
				for j := range pi[i] {
					pi[i][j] = tok.PadID()
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
	check := func(t *testing.T, what string, want, got [][]float32) {
		t.Helper()
		if len(want) != len(got) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		d := 0.0
		for i := range want {
			for k := range want[i] {
				d = max(d, math.Abs(float64(want[i][k]-got[i][k])))
			}
		}
		t.Logf("%s: max |ONNX Runtime - toolret| = %.2e", what, d)
		if d > onnxTol {
			t.Errorf("%s: ONNX Runtime differs from toolret by %.2e (> %.0e)", what, d, onnxTol)
		}
	}
	rowsOf := func(t *testing.T, o tensorF32, n, k int) [][]float32 {
		t.Helper()
		if !slices.Equal(o.dims, []int{n, k}) {
			t.Fatalf("dims %v, want [%d %d]", o.dims, n, k)
		}
		out := make([][]float32, n)
		for i := range out {
			out[i] = o.data[i*k : (i+1)*k]
		}
		return out
	}

	for _, tc := range []struct {
		name     string
		pool     encoder.Pooling
		sim      string
		separate bool
	}{
		{"mean-cosine", encoder.PoolMean, "cosine", false},
		{"pooler-cosine", encoder.PoolPooler, "cosine", false},
		{"cls-dot-separate", encoder.PoolCLS, "dot", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &biencoder.Config{Encoder: newEnc(0), Pooling: tc.pool, Shared: !tc.separate, QueryMaxLen: 32, ToolMaxLen: 120,
				Similarity: tc.sim, Temperature: 0.05}
			m, err := export.NewBiEncoder(cfg, tok, be, 5)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "onnx")
			man, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				path, err := man.TowerDir(out, tower)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				o := loadORT(t, b)
				if !slices.Equal(o.inputs, []string{export.InputIDs, export.AttentionMask}) {
					t.Errorf("inputs %v", o.inputs)
				}
				want, err := m.Embed(tower, all)
				if err != nil {
					t.Fatal(err)
				}
				maxLen := map[string]int{biencoder.QueryTower: 32, biencoder.ToolTower: 120}[tower]
				var got [][]float32
				for bi, batch := range batches(maxLen, all, nil) {
					got = append(got, rowsOf(t, o.run(t, batch)[export.OutSentenceEmbedding], sizes[bi], 32)...)
				}
				check(t, tower+" sentence_embedding", want, got)
			}
		})
	}

	t.Run("head-pooler-pairs", func(t *testing.T) {
		cfg := &biencoder.Config{Encoder: newEnc(2), Pooling: encoder.PoolPooler, Shared: true, QueryMaxLen: 120, ToolMaxLen: 120,
			Similarity: "cosine", Temperature: 0.05}
		m, err := export.NewBiEncoder(cfg, tok, be, 7)
		if err != nil {
			t.Fatal(err)
		}
		m.Towers[0].Normalize = false
		labels := []string{"a", "b", "c"}
		w, bias := make([]float32, len(labels)*32), []float32{0.1, -0.2, 0.3}
		for i := range w {
			w[i] = float32(math.Sin(float64(i)))
		}
		m.Head = &export.Head{Weight: w, Bias: bias, Labels: labels}
		out := filepath.Join(t.TempDir(), "onnx")
		if _, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: out}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		o := loadORT(t, b)
		if !slices.Equal(o.inputs, []string{export.InputIDs, export.AttentionMask, export.TokenTypeIDs}) {
			t.Errorf("inputs %v", o.inputs)
		}
		docs := make([]string, len(all))
		for i := range docs {
			docs[i] = all[(i*7+3)%len(all)]
		}
		want, err := m.Score(all, docs)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]float32
		for bi, batch := range batches(120, all, docs) {
			got = append(got, rowsOf(t, o.run(t, batch)[export.OutLogits], sizes[bi], len(labels))...)
		}
		check(t, "head logits", want, got)
	})
}
