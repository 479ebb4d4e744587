package safetensors

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func build(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	in := []Tensor{{"b", []int{2}, []float32{1, -2}}, {"a", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}}, {"s", nil, []float32{7}}}
	if err := Write(path, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || strings.Join(f.Names(), ",") != "a,b,s" {
		t.Fatalf("metadata %v names %v", f.Metadata, f.Names())
	}
	got, shape, err := f.Float32("a")
	if err != nil || len(shape) != 2 || shape[1] != 3 || got[5] != 6 {
		t.Fatalf("a = %v %v %v", got, shape, err)
	}
	if err := Write(path, []Tensor{{"x", []int{3}, []float32{1}}}, nil); err == nil {
		t.Fatal("want error: 1 value for shape [3]")
	}
}

func TestHalfPrecision(t *testing.T) {
	// F16: 1.0 = 0x3c00, -2.5 = 0xc100, 6.1035e-05 = 0x0400 (smallest normal), 5.96e-08 = 0x0001.
	// BF16: 1.0 = 0x3f80, -2.5 = 0xc020.
	f16 := []uint16{0x3c00, 0xc100, 0x0400, 0x0001}
	bf16 := []uint16{0x3f80, 0xc020}
	var data []byte
	for _, v := range append(f16, bf16...) {
		data = binary.LittleEndian.AppendUint16(data, v)
	}
	hdr := `{"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},"i":{"dtype":"I32","shape":[0],"data_offsets":[12,12]}}`
	f, err := Parse("mem", build(hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := f.Float32("h")
	want := []float32{1, -2.5, float32(math.Pow(2, -14)), float32(math.Pow(2, -24))}
	for i := range want {
		if h[i] != want[i] {
			t.Errorf("F16[%d] = %v, want %v", i, h[i], want[i])
		}
	}
	b, _, _ := f.Float32("b")
	if b[0] != 1 || b[1] != -2.5 {
		t.Errorf("BF16 = %v", b)
	}
	if _, _, err := f.Float32("i"); err == nil || !strings.Contains(err.Error(), "not a supported float type") {
		t.Errorf("I32 as float: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	ok := `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	big := make([]byte, 8)
	binary.LittleEndian.PutUint64(big, MaxHeaderSize+1)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"too short", []byte{1, 2, 3}, "truncated"},
		{"oversized header", big, "exceeds"},
		{"header past end", build(ok, nil)[:20], "truncated: header says"},
		{"malformed json", build(`{"w":`, nil), "malformed header"},
		{"unknown dtype", build(`{"w":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), `unknown dtype "F7"`},
		{"data truncated", build(ok, make([]byte, 4)), "outside the 4-byte data section"},
		{"size mismatch", build(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "8 bytes for shape [3]"},
		{"negative dim", build(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil), "negative dimension"},
		{"reversed offsets", build(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, make([]byte, 8)), "outside"},
		{"overlap", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "overlap"},
		{"huge shape", build(`{"w":{"dtype":"F32","shape":[100000,100000,100000],"data_offsets":[0,0]}}`, nil), "too large"},
		{"bad metadata", build(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.safetensors", tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.safetensors") {
				t.Fatalf("error %v, want it to name the file and contain %q", err, tc.want)
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); !os.IsNotExist(err) {
		t.Fatalf("want not-exist, got %v", err)
	}
}

// TestWriteEntries: tensors streamed from their writers read back as written; a writer that
// writes other than its size, or fails, is an error naming the tensor and leaves the file
// as it was.
func TestWriteEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.safetensors")
	bytesOf := func(vs ...float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	entry := func(name string, shape []int, data []byte) Entry {
		n := 4
		for _, d := range shape {
			n *= d
		}
		return Entry{Name: name, DType: "F32", Shape: shape, Size: n, Write: func(w io.Writer) error { _, err := w.Write(data); return err }}
	}
	good := []Entry{entry("w", []int{2, 2}, bytesOf(1, 2, 3, 4)), entry("b", []int{2}, bytesOf(-1, 5))}
	if err := WriteEntries(path, good, map[string]string{"format": "toolret"}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(path, before)
	if err != nil {
		t.Fatal(err)
	}
	if w, shape, err := f.Float32("w"); err != nil || len(shape) != 2 || w[3] != 4 {
		t.Fatalf("w = %v %v %v", w, shape, err)
	}
	if b, _, err := f.Float32("b"); err != nil || b[0] != -1 || b[1] != 5 {
		t.Fatalf("b = %v %v", b, err)
	}
	for _, c := range []struct {
		name string
		e    Entry
		want string
	}{
		{"short", entry("short", []int{3}, bytesOf(1, 2)), `tensor "short": wrote 8 bytes, want 12`},
		{"failing", Entry{Name: "bad", DType: "F32", Shape: []int{1}, Size: 4, Write: func(io.Writer) error { return errors.New("disk on fire") }}, `tensor "bad": disk on fire`},
		{"size for shape", Entry{Name: "odd", DType: "F32", Shape: []int{2}, Size: 4, Write: func(io.Writer) error { return nil }}, `tensor "odd": 4 bytes for shape [2]`},
	} {
		err := WriteEntries(path, append([]Entry{good[0]}, c.e), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
		after, _ := os.ReadFile(path)
		if string(after) != string(before) {
			t.Errorf("%s: the file changed", c.name)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only the written one", len(ents))
	}
}
