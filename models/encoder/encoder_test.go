package encoder_test

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

func testTokenizer(t *testing.T) *tokenize.Tokenizer {
	t.Helper()
	tok, err := tokenize.New([]string{tokenize.PAD, tokenize.UNK, tokenize.CLS, tokenize.SEP, tokenize.MASK, "hello", "world", ",", "!", "x"}, true)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTensors(t *testing.T) {
	ids, types, mask := encoder.Tensors(tokenize.Batch{Len: 3,
		IDs: [][]int32{{2, 5, 3}, {2, 3, 0}}, Types: [][]int32{{0, 1, 1}, {0, 0, 0}}, Mask: [][]int32{{1, 1, 1}, {1, 1, 0}}})
	for _, tc := range []struct {
		name string
		got  *tensors.Tensor
		want []int32
	}{
		{"ids", ids, []int32{2, 5, 3, 2, 3, 0}},
		{"types", types, []int32{0, 1, 1, 0, 0, 0}},
		{"mask", mask, []int32{1, 1, 1, 1, 1, 0}},
	} {
		if d := tc.got.Shape().Dimensions; !reflect.DeepEqual(d, []int{2, 3}) || tc.got.DType() != dtypes.Int32 {
			t.Errorf("%s: shape %s", tc.name, tc.got.Shape())
		}
		if v := tensors.MustCopyFlatData[int32](tc.got); !reflect.DeepEqual(v, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, v, tc.want)
		}
	}
}

// TestMap checks the batching path with a fake graph: batches of at most the batch size, taken
// in order of length, padded to the tokenizer's buckets (capped at maxLen), with token types,
// and every result back at its sequence's position.
func TestMap(t *testing.T) {
	tok := testTokenizer(t)
	tok.Buckets = []int{4, 6, 10}
	texts := []string{"hello world hello world hello", "hello", "", "hello world", "world , world !", "x"}
	seqs, types := make([][]int32, len(texts)), make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Single(s, 10)
		types[i] = make([]int32, len(seqs[i]))
		types[i][len(types[i])-1] = int32(i % 2) // a type on the final [SEP], to see types pass
	}
	var lens, rows []int
	// Each row's result: [sum of real ids, real tokens, sum of types, padded length].
	call := func(ids, ty, mask *tensors.Tensor) (*tensors.Tensor, error) {
		n, l := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
		lens, rows = append(lens, l), append(rows, n)
		fi, ft, fm := tensors.MustCopyFlatData[int32](ids), tensors.MustCopyFlatData[int32](ty), tensors.MustCopyFlatData[int32](mask)
		out := make([]float32, 0, 4*n)
		for r := 0; r < n; r++ {
			var s, m, y float32
			for k := r * l; k < (r+1)*l; k++ {
				if fm[k] == 1 {
					s += float32(fi[k])
				} else if fi[k] != tok.PadID() {
					t.Errorf("padding id %d", fi[k])
				}
				m += float32(fm[k])
				y += float32(ft[k])
			}
			out = append(out, s, m, y, float32(l))
		}
		return tensors.FromFlatDataAndDimensions(out, n, 4), nil
	}
	got, err := encoder.Map(tok, seqs, types, 10, 2, call)
	if err != nil {
		t.Fatal(err)
	}
	// Lengths (specials included) 7, 3, 2, 4, 6, 3: batches {2, 1}, {5, 3}, {4, 0}.
	if !reflect.DeepEqual(lens, []int{4, 4, 10}) || !reflect.DeepEqual(rows, []int{2, 2, 2}) {
		t.Errorf("batches of %v rows padded to %v, want [2 2 2] rows of [4 4 10]", rows, lens)
	}
	padded := map[int]float32{2: 4, 1: 4, 5: 4, 3: 4, 4: 10, 0: 10}
	for i, s := range seqs {
		sum := float32(0)
		for _, id := range s {
			sum += float32(id)
		}
		want := []float32{sum, float32(len(s)), float32(i % 2), padded[i]}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("sequence %d: result %v, want %v", i, got[i], want)
		}
	}

	t.Run("errors", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := encoder.Map(tok, seqs, nil, 10, 4, func(_, _, _ *tensors.Tensor) (*tensors.Tensor, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Errorf("call error: got %v", err)
		}
		one := func(ids, _, _ *tensors.Tensor) (*tensors.Tensor, error) {
			return tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2)), nil
		}
		if _, err := encoder.Map(tok, seqs, nil, 10, 4, one); err == nil || !strings.Contains(err.Error(), "batch of 4 rows") {
			t.Errorf("wrong result rows: got %v", err)
		}
		if _, err := encoder.Map(tok, seqs, types[:2], 10, 4, call); err == nil || !strings.Contains(err.Error(), "2 token type rows for 6 sequences") {
			t.Errorf("short types: got %v", err)
		}
		if out, err := encoder.Map(tok, nil, nil, 10, 4, call); err != nil || len(out) != 0 {
			t.Errorf("no sequences: %v, %v", out, err)
		}
	})
}

func tiny(t *testing.T, vocab int) encoder.Config {
	t.Helper()
	c, err := encoder.New("bert", encoder.Sizes{Vocab: vocab, Layers: 2, Hidden: 8, Heads: 2, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNew(t *testing.T) {
	c := tiny(t, 40)
	if c.ModelType() != "bert" || c.Vocab() != 40 || c.Layers() != 2 || c.Hidden() != 8 || c.MaxPositions() != 16 || c.TypeVocab() != 2 || !c.HasPooler() {
		t.Errorf("config %s", mustJSON(t, c))
	}
	var f map[string]any
	json.Unmarshal(mustJSON(t, c), &f)
	if f["intermediate_size"] != 32.0 || f["num_attention_heads"] != 2.0 || f["model_type"] != "bert" {
		t.Errorf("intermediate_size %v (want 4*hidden), heads %v, model_type %v", f["intermediate_size"], f["num_attention_heads"], f["model_type"])
	}
	if def, err := encoder.New("bert", encoder.Sizes{}); err != nil || def.Hidden() != 768 || def.Layers() != 12 || def.Vocab() != 30522 {
		t.Errorf("defaults: %v %v", def, err)
	}
	for _, tc := range []struct {
		typ  string
		s    encoder.Sizes
		want string
	}{
		{"gpt2", encoder.Sizes{}, `model_type "gpt2" not supported (supported: bert, deberta-v2, gemma3_text, modernbert, mpnet, qwen3, wordbag, xlm-roberta)`},
		{"bert", encoder.Sizes{Hidden: 10, Heads: 3}, "not a multiple of num_attention_heads"},
		{"bert", encoder.Sizes{Layers: -1}, "must all be > 0"},
	} {
		if _, err := encoder.New(tc.typ, tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %+v): error %v, want %q", tc.typ, tc.s, err, tc.want)
		}
	}
}

func mustJSON(t *testing.T, c encoder.Config) []byte {
	t.Helper()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnmarshal(t *testing.T) {
	c := tiny(t, 40)
	back, err := encoder.Unmarshal(mustJSON(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mustJSON(t, back), mustJSON(t, c)) {
		t.Errorf("round trip:\n%s\nwant\n%s", mustJSON(t, back), mustJSON(t, c))
	}
	for _, tc := range []struct{ name, json, want string }{
		{"no model_type", `{"hidden_size": 8}`, "no model_type (supported: bert, deberta-v2, gemma3_text, modernbert, mpnet, qwen3, wordbag, xlm-roberta)"},
		{"unknown model_type", `{"model_type": "gpt2"}`, `model_type "gpt2" not supported`},
		{"not an object", `[1]`, "encoder config"},
		{"bad field", `{"model_type": "bert", "hidden_size": "big"}`, "encoder config (bert)"},
	} {
		if _, err := encoder.Unmarshal([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestOverride(t *testing.T) {
	c := tiny(t, 40).WithPooler(false)
	o, err := encoder.Override(c, map[string]any{"hidden_act": "relu", "initializer_range": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	json.Unmarshal(mustJSON(t, o), &f)
	if f["hidden_act"] != "relu" || o.InitRange() != 0.5 || o.Hidden() != 8 || o.HasPooler() {
		t.Errorf("override: %s (pooler %v)", mustJSON(t, o), o.HasPooler())
	}
	if c.InitRange() != 0.02 {
		t.Error("Override changed its input")
	}
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"model_type": "other"}, "cannot change model_type"},
		{map[string]any{"hidden_act": "swish"}, `unsupported hidden_act "swish"`},
		{map[string]any{"hidden_size": "x"}, "encoder config (bert)"},
	} {
		if _, err := encoder.Override(c, tc.fields); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Override(%v): error %v, want %q", tc.fields, err, tc.want)
		}
	}
}

// fixtureDir writes models/bert's parity fixture (an HF BERT directory) to a temp directory.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile("../bert/testdata/tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../bert/testdata/tiny/model.safetensors.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
	return dir
}

func TestLoadHF(t *testing.T) {
	dir := fixtureDir(t)
	store := model.NewStore()
	c, err := encoder.LoadHF(store.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType() != "bert" || c.Hidden() != 64 || !c.HasPooler() || store.NumVariables() != len(c.Params()) {
		t.Errorf("loaded %s with %d variables, %d params", mustJSON(t, c), store.NumVariables(), len(c.Params()))
	}
	for _, p := range c.Params() {
		v := encoder.Variable(store, "", p.Name)
		if v == nil || !reflect.DeepEqual(v.Shape().Dimensions, p.Shape) {
			t.Errorf("param %s %v: variable %v", p.Name, p.Shape, v)
		}
	}
	for _, tc := range []struct{ name, config, want string }{
		{"unknown model_type", `{"model_type": "gpt2", "hidden_size": 64}`, `config.json: model_type "gpt2" not supported (supported: bert, deberta-v2, gemma3_text, modernbert, mpnet, qwen3, wordbag, xlm-roberta)`},
		{"no model_type", `{"hidden_size": 64}`, "config.json: no model_type"},
		{"bad json", `{`, "config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "config.json"), []byte(tc.config), 0o644)
			if _, err := encoder.LoadHF(model.NewStore().RootScope(), d); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := encoder.LoadHF(model.NewStore().RootScope(), t.TempDir()); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing config.json: %v", err)
	}
}

// TestMapMatchesAlone runs a real encoder through Runner and Map: every text's pooled vector
// (and token states) in length-sorted, padded batches equals the text encoded alone, unpadded.
func TestMapMatchesAlone(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok := testTokenizer(t)
	cfg := tiny(t, tok.VocabSize())
	store := model.NewStore()
	if err := cfg.Init(store.RootScope(), 7); err != nil {
		t.Fatal(err)
	}
	texts := []string{"hello world , hello world !", "x", "hello", "world world world world world world world world world world world"}
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Single(s, 16)
	}
	for _, p := range []encoder.Pooling{encoder.PoolMean, encoder.PoolCLS, encoder.PoolPooler, encoder.PoolNone} {
		t.Run(string(p), func(t *testing.T) {
			r, err := encoder.NewRunner(be, store, "", cfg, p)
			if err != nil {
				t.Fatal(err)
			}
			batched, err := encoder.Map(tok, seqs, nil, 16, 3, r.Call)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range seqs {
				ids, types, mask := encoder.Tensors(tokenize.Batch{Len: len(s), IDs: [][]int32{s}, Types: [][]int32{make([]int32, len(s))}, Mask: [][]int32{ones(len(s))}})
				res, err := r.Call(ids, types, mask)
				if err != nil {
					t.Fatal(err)
				}
				alone := tensors.MustCopyFlatData[float32](res)
				got := batched[i]
				if p == encoder.PoolNone {
					got = got[:len(alone)] // the real tokens' states come first
				}
				if len(got) != len(alone) {
					t.Fatalf("text %d: %d values batched, %d alone", i, len(got), len(alone))
				}
				for k := range alone {
					if d := math.Abs(float64(got[k] - alone[k])); d > 1e-5 {
						t.Fatalf("text %d value %d: batched %v, alone %v", i, k, got[k], alone[k])
					}
				}
			}
		})
	}
	if _, err := encoder.NewRunner(be, store, "", cfg.WithPooler(false), encoder.PoolPooler); err == nil {
		t.Error("pooler pooling accepted without a pooler")
	}
	if _, err := encoder.NewRunner(be, store, "", cfg, "max"); err == nil {
		t.Error("unknown pooling accepted")
	}
}

func ones(n int) []int32 {
	m := make([]int32, n)
	for i := range m {
		m[i] = 1
	}
	return m
}

// TestWithDType checks a Float64 copy initialises and computes in float64 while the original
// stays float32.
func TestWithDType(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		cfg := tiny(t, 10).WithDType(dt)
		store := model.NewStore()
		if err := cfg.Init(store.RootScope(), 1); err != nil {
			t.Fatal(err)
		}
		if v := encoder.Variable(store, "", "encoder.layer.0.output.dense.weight"); v == nil || v.DType() != dt {
			t.Fatalf("%s: variable %v", dt, v)
		}
		exec, err := model.NewExec(be, store, func(s *model.Scope, ids, mask *Node) *Node {
			return cfg.Pool(s, cfg.Encode(s, ids, nil, mask), mask, encoder.PoolMean)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Call1(tensors.FromFlatDataAndDimensions([]int32{2, 5, 3}, 1, 3), tensors.FromFlatDataAndDimensions([]int32{1, 1, 1}, 1, 3))
		if err != nil {
			t.Fatal(err)
		}
		if out.DType() != dt || !reflect.DeepEqual(out.Shape().Dimensions, []int{1, 8}) {
			t.Errorf("%s: output %s", dt, out.Shape())
		}
	}
}

// TestRunnerManyShapes: a long-lived Runner (a server) sees many batch sizes and lengths;
// it keeps answering past GoMLX's default cache of 32 compiled graphs, and each answer equals
// the sequence embedded alone.
func TestRunnerManyShapes(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok := testTokenizer(t)
	cfg := tiny(t, tok.VocabSize())
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(3))
	r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolMean)
	if err != nil {
		t.Fatal(err)
	}
	seq := func(n int) []int32 {
		s := []int32{tok.CLSID()}
		for i := 0; i < n; i++ {
			s = append(s, int32(5+i%5))
		}
		return append(s, tok.SEPID())
	}
	alone := map[int][]float32{}
	for n := 0; n < 14; n++ {
		out, err := encoder.Map(tok, [][]int32{seq(n)}, nil, 16, 1, r.Call)
		if err != nil {
			t.Fatal(err)
		}
		alone[n] = out[0]
	}
	for rows := 1; rows <= 40; rows++ {
		for _, n := range []int{1, 7, 13} {
			seqs := make([][]int32, rows)
			for i := range seqs {
				seqs[i] = seq(n)
			}
			out, err := encoder.Map(tok, seqs, nil, 16, 64, r.Call)
			if err != nil {
				t.Fatalf("batch of %d rows of %d tokens: %v", rows, n+2, err)
			}
			for i, v := range out {
				for j := range v {
					if math.Abs(float64(v[j]-alone[n][j])) > 1e-5 {
						t.Fatalf("batch of %d rows, row %d: %v, alone %v", rows, i, v[:3], alone[n][:3])
					}
				}
			}
		}
	}
}

// TestMapSortedMatchesUnsorted checks Map's length-sorted batches against the plain way of
// batching: texts in input order, each batch padded to its longest text. Every pooled vector,
// read back in input order, is the same within 1e-6.
func TestMapSortedMatchesUnsorted(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok := testTokenizer(t)
	cfg := tiny(t, tok.VocabSize())
	store := model.NewStore()
	if err := cfg.Init(store.RootScope(), 11); err != nil {
		t.Fatal(err)
	}
	texts := []string{"world world world world world world world world world world world", "x", "hello world , hello world !",
		"hello", "world ! world", "", "hello hello hello hello hello hello hello", "world"}
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Single(s, 16)
	}
	r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolMean)
	if err != nil {
		t.Fatal(err)
	}
	const batch = 4
	sorted, err := encoder.Map(tok, seqs, nil, 16, batch, r.Call)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for start := 0; start < len(seqs); start += batch {
		sub := seqs[start:min(start+batch, len(seqs))]
		res, err := r.Call(encoder.Tensors(tok.Pad(sub, nil, 16)))
		if err != nil {
			t.Fatal(err)
		}
		flat := tensors.MustCopyFlatData[float32](res)
		n := len(flat) / len(sub)
		for j := range sub {
			for k, v := range flat[j*n : (j+1)*n] {
				worst = max(worst, math.Abs(float64(v-sorted[start+j][k])))
			}
		}
	}
	t.Logf("max |sorted - unsorted| = %g", worst)
	if worst > 1e-6 {
		t.Fatalf("length-sorted batches differ from input-order batches by %g (> 1e-6)", worst)
	}
}
