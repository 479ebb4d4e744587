package safetensors

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"sort"
	"testing"
)

// fuzzSeeds are well-formed files (every dtype, scalars, empty tensors, metadata, the
// writer's space padding) and near misses.
func fuzzSeeds() [][]byte {
	f32 := build(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8))
	seeds := [][]byte{
		f32,
		f32[:len(f32)-1],
		build(`{"__metadata__":{"format":"pt"},"h":{"dtype":"F16","shape":[1,1],"data_offsets":[0,2]}}`, []byte{0x00, 0x3c}),
		build(`{"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"d":{"dtype":"F64","shape":[],"data_offsets":[4,12]},`+
			`"i":{"dtype":"I64","shape":[1],"data_offsets":[12,20]},"u":{"dtype":"U8","shape":[3,0],"data_offsets":[20,20]},`+
			`"z":{"dtype":"BOOL","shape":[2],"data_offsets":[20,22]}}       `, make([]byte, 22)),
		build(`{"a":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]}}`, nil),
		build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)),
		build(`{"w":{"dtype":"F8_E4M3","shape":[65536,65536],"data_offsets":[0,4]}}`, make([]byte, 4)),
		build(`{}`, nil),
		{},
	}
	var w bytes.Buffer
	hdr := []byte(`{"x":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`)
	binary.Write(&w, binary.LittleEndian, uint64(len(hdr)))
	w.Write(hdr)
	w.Write(bytes.Repeat([]byte{0xff}, 16))
	return append(seeds, w.Bytes())
}

// TestParseEmptyTensors checks a file whose empty tensors sit at another tensor's first byte
// parses every time: Parse once called that an overlap when the header map's random order put
// the empty tensor second.
func TestParseEmptyTensors(t *testing.T) {
	b := build(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},`+
		`"c":{"dtype":"U8","shape":[2,0],"data_offsets":[4,4]},"d":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},`+
		`"e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}}`, make([]byte, 8))
	for i := 0; i < 100; i++ {
		if _, err := Parse("x", b); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
}

// FuzzParse parses arbitrary bytes as a safetensors file (the header is all a stranger
// controls: lengths, dtypes, shapes, offsets). Parse must not panic, and must allocate at
// most a bounded multiple of the input size, whatever the header claims (a header length of
// 2^64-1, shapes of 2^62 elements, offsets past the end). A file it accepts must be
// consistent: each tensor's bytes lie in the data section, hold exactly shape × dtype size
// bytes and overlap no other tensor's; Names lists them sorted; Float32 converts every float
// tensor to product(shape) values and refuses the others.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		file, err := Parse("fuzz", b)
		runtime.ReadMemStats(&after)
		// JSON decoding holds a few copies of the header (raw messages, the decoded map and
		// entries); 64 bytes per input byte plus 1 MiB is far above that and far below what
		// trusting a claimed size would take.
		if a := after.TotalAlloc - before.TotalAlloc; a > 64*uint64(len(b))+1<<20 {
			t.Fatalf("Parse of %d bytes allocated %d bytes", len(b), a)
		}
		if err != nil {
			return
		}
		names := file.Names()
		if len(names) != len(file.Tensors) || !sort.StringsAreSorted(names) {
			t.Fatalf("Names %q for %d tensors", names, len(file.Tensors))
		}
		type span struct{ begin, end int }
		var spans []span
		for _, n := range names {
			raw, info, err := file.Raw(n)
			if err != nil {
				t.Fatalf("Raw(%q): %v", n, err)
			}
			numel := 1
			for _, d := range info.Shape {
				if d < 0 {
					t.Fatalf("%q: accepted shape %v", n, info.Shape)
				}
				numel *= d
			}
			es := ElemSize(info.DType)
			if es == 0 || len(raw) != numel*es || info.Offsets[1]-info.Offsets[0] != len(raw) {
				t.Fatalf("%q: %d bytes for %s %v at %v", n, len(raw), info.DType, info.Shape, info.Offsets)
			}
			if info.Offsets[0] < 0 || info.Offsets[1] > len(b) {
				t.Fatalf("%q: offsets %v in a %d-byte file", n, info.Offsets, len(b))
			}
			spans = append(spans, span{info.Offsets[0], info.Offsets[1]})
			vals, shape, err := file.Float32(n)
			switch info.DType {
			case "F32", "F64", "F16", "BF16":
				if err != nil || len(vals) != numel || !slices.Equal(shape, info.Shape) {
					t.Fatalf("Float32(%q) of %s %v: %d values, shape %v, %v", n, info.DType, info.Shape, len(vals), shape, err)
				}
			default:
				if err == nil {
					t.Fatalf("Float32(%q) converted dtype %s", n, info.DType)
				}
			}
		}
		slices.SortFunc(spans, func(x, y span) int {
			if x.begin != y.begin {
				return x.begin - y.begin
			}
			return x.end - y.end
		})
		for i := 1; i < len(spans); i++ {
			if spans[i].begin < spans[i-1].end {
				t.Fatalf("accepted overlapping tensors %v", spans)
			}
		}
	})
}
