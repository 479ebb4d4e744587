package encodecmd

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/tokenize"
)

// TestEncodeCommand runs the command on the parity fixture model (with the shared
// bert-base-uncased vocab) and checks every pooling's output shape, and that mean pooling of
// a text equals the mean of its -pooling none token states.
func TestEncodeCommand(t *testing.T) {
	vocab, _ := filepath.Abs("../../../shared/vocab/bert-base-uncased-vocab.txt")
	if _, err := os.Stat(vocab); err != nil {
		t.Skipf("%s absent", vocab)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile("../../models/bert/testdata/tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	gz, err := os.Open("../../models/bert/testdata/tiny/model.safetensors.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	st, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
	tok, err := tokenize.FromVocab(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	tok.Save(dir)
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("Find a flight to Lisbon\n{\"text\": \"weather in Tokyo\"}\nbook a table for two\n"), 0o644)
	read := func(pooling string) []map[string]any {
		out := filepath.Join(dir, pooling+".jsonl")
		if err := run(dir, in, out, pooling, 32, 2, "go"); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(out)
		defer f.Close()
		var rows []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			rows = append(rows, m)
		}
		return rows
	}
	mean, none := read("mean"), read("none")
	for _, bad := range []struct{ text, want string }{
		{"a text\n\nanother\n", "in-bad.txt:2: empty text"},
		{"a text\n   \n", "in-bad.txt:2: empty text"},
		{"{\"text\": \" \"}\n", "in-bad.txt:1: empty text"},
	} {
		p := filepath.Join(dir, "in-bad.txt")
		os.WriteFile(p, []byte(bad.text), 0o644)
		if err := run(dir, p, filepath.Join(dir, "bad.jsonl"), "mean", 32, 2, "go"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("input %q: want error %q, got %v", bad.text, bad.want, err)
		}
	}
	if len(mean) != 3 || len(none) != 3 {
		t.Fatalf("rows: %d mean, %d none (want 3, one per line)", len(mean), len(none))
	}
	for i := range mean {
		emb := mean[i]["embedding"].([]any)
		hid := none[i]["hidden"].([]any)
		if len(emb) != 64 || len(hid) != len(none[i]["ids"].([]any)) {
			t.Fatalf("row %d: embedding %d, hidden %d tokens", i, len(emb), len(hid))
		}
		for k := range emb {
			s := 0.0
			for _, tokState := range hid {
				s += tokState.([]any)[k].(float64)
			}
			if d := math.Abs(s/float64(len(hid)) - emb[k].(float64)); d > 1e-5 {
				t.Fatalf("row %d dim %d: mean of token states differs by %g", i, k, d)
			}
		}
	}
	for _, p := range []string{"cls", "pooler"} {
		if rows := read(p); len(rows[0]["embedding"].([]any)) != 64 {
			t.Fatalf("%s embedding size", p)
		}
	}
	if err := run(dir, in, "", "max", 32, 2, "go"); err == nil || !strings.Contains(err.Error(), "unknown pooling") {
		t.Fatalf("bad pooling: %v", err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\": \"ok\"}\n{\"txt\": 1}\n"), 0o644)
	if err := run(dir, bad, "", "cls", 32, 2, "go"); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Fatalf("bad input: %v", err)
	}
	// -precision bf16: the products in bfloat16, embeddings within its rounding of fp32's.
	out16 := filepath.Join(dir, "bf16.jsonl")
	if err := encode(dir, in, out16, "mean", 32, 2, "go", "", "bf16"); err != nil {
		t.Fatalf("-precision bf16: %v", err)
	}
	b, err := os.ReadFile(out16)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(mean) {
		t.Fatalf("-precision bf16: %d rows, want %d", len(lines), len(mean))
	}
	same := true
	for i, line := range lines {
		var m struct{ Embedding []float64 }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		var dot, n32, n16 float64
		for k, v := range mean[i]["embedding"].([]any) {
			a := v.(float64)
			dot, n32, n16 = dot+a*m.Embedding[k], n32+a*a, n16+m.Embedding[k]*m.Embedding[k]
			same = same && a == m.Embedding[k]
		}
		if cos := dot / math.Sqrt(n32*n16); !(cos > 0.999) {
			t.Errorf("-precision bf16: row %d: cosine with fp32 %.6f, want > 0.999", i, cos)
		}
	}
	if same {
		t.Errorf("-precision bf16: embeddings bit-identical to fp32's")
	}
	for _, c := range []struct{ backend, precision, quant, want string }{
		{"go", "bogus", "", `-precision "bogus": want fp32, bf16, auto`},
		{"onnx", "bf16", "", "the onnx backend does not run bfloat16"},
		{"go", "bf16", "int8", "-precision bf16 and -quantize int8"},
	} {
		if err := encode(dir, in, "", "mean", 32, 2, c.backend, export.Quantization(c.quant), c.precision); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-backend %s -precision %s -quantize %q: %v, want an error with %q", c.backend, c.precision, c.quant, err, c.want)
		}
	}
}
