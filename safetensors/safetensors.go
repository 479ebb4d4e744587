// Package safetensors reads and writes the safetensors format (HuggingFace) with full bounds
// checking: files may come from strangers, so every size and offset is validated before use.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON header mapping tensor names
// to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data section),
// an optional "__metadata__" string map, then the data section.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/toolret/toolret/internal/atomicfile"
)

// MaxHeaderSize bounds the JSON header (the reference implementation uses 100 MB).
const MaxHeaderSize = 100 << 20

// Info describes one tensor of a file.
type Info struct {
	DType   string `json:"dtype"`
	Shape   []int  `json:"shape"`
	Offsets [2]int `json:"data_offsets"`
}

// File is a parsed safetensors file held in memory.
type File struct {
	Name     string // for error messages
	Metadata map[string]string
	Tensors  map[string]Info
	data     []byte
}

// ElemSize returns the byte size of a dtype, or 0 if unknown.
func ElemSize(dtype string) int {
	switch dtype {
	case "F64", "I64", "U64":
		return 8
	case "F32", "I32", "U32":
		return 4
	case "F16", "BF16", "I16", "U16":
		return 2
	case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// Open reads and parses a file.
func Open(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse validates and indexes a safetensors file held in b; name is used in errors.
func Parse(name string, b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors %s: truncated: %d bytes, no header length", name, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors %s: header of %d bytes exceeds the %d-byte limit", name, n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors %s: truncated: header says %d bytes, file has %d after the length", name, n, len(b)-8)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("safetensors %s: malformed header: %w", name, err)
	}
	f := &File{Name: name, Tensors: map[string]Info{}, data: b[8+n:]}
	type span struct {
		name       string
		begin, end int
	}
	var spans []span
	for k, v := range raw {
		if k == "__metadata__" {
			if err := json.Unmarshal(v, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors %s: __metadata__ must map strings to strings: %w", name, err)
			}
			continue
		}
		var info Info
		if err := json.Unmarshal(v, &info); err != nil {
			return nil, fmt.Errorf("safetensors %s: tensor %q: malformed entry: %w", name, k, err)
		}
		es := ElemSize(info.DType)
		if es == 0 {
			return nil, fmt.Errorf("safetensors %s: tensor %q: unknown dtype %q", name, k, info.DType)
		}
		numel := 1
		for _, d := range info.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors %s: tensor %q: negative dimension in shape %v", name, k, info.Shape)
			}
			if d != 0 && numel > math.MaxInt32/d {
				return nil, fmt.Errorf("safetensors %s: tensor %q: shape %v too large", name, k, info.Shape)
			}
			numel *= d
		}
		begin, end := info.Offsets[0], info.Offsets[1]
		if begin < 0 || end < begin || end > len(f.data) {
			return nil, fmt.Errorf("safetensors %s: tensor %q: data offsets [%d, %d] outside the %d-byte data section (truncated file?)", name, k, begin, end, len(f.data))
		}
		if end-begin != numel*es {
			return nil, fmt.Errorf("safetensors %s: tensor %q: %d bytes for shape %v of %s (want %d)", name, k, end-begin, info.Shape, info.DType, numel*es)
		}
		f.Tensors[k] = info
		spans = append(spans, span{k, begin, end})
	}
	// By begin, then end: an empty tensor at another's first byte is no overlap, whatever the
	// (random) order of the header's map.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, fmt.Errorf("safetensors %s: tensors %q and %q overlap", name, spans[i-1].name, spans[i].name)
		}
	}
	return f, nil
}

// Names returns the tensor names, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Tensors))
	for k := range f.Tensors {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Raw returns the bytes of a tensor.
func (f *File) Raw(name string) ([]byte, Info, error) {
	info, ok := f.Tensors[name]
	if !ok {
		return nil, Info{}, fmt.Errorf("safetensors %s: no tensor %q", f.Name, name)
	}
	return f.data[info.Offsets[0]:info.Offsets[1]], info, nil
}

// Float32 returns a floating-point tensor converted to float32 (from F32, F16, BF16 or F64).
func (f *File) Float32(name string) ([]float32, []int, error) {
	b, info, err := f.Raw(name)
	if err != nil {
		return nil, nil, err
	}
	es := ElemSize(info.DType)
	out := make([]float32, len(b)/es)
	switch info.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case "F16":
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	default:
		return nil, nil, fmt.Errorf("safetensors %s: tensor %q: dtype %s is not a supported float type (F32, F16, BF16, F64)", f.Name, name, info.DType)
	}
	return out, append([]int(nil), info.Shape...), nil
}

// halfToFloat converts an IEEE 754 binary16 value to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Tensor is one float32 tensor to write.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Write writes tensors as F32 into path atomically (temporary file, fsync, rename), in name
// order, with optional metadata.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].Name < tensors[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := 0
	seen := map[string]bool{}
	for _, t := range tensors {
		if seen[t.Name] || t.Name == "__metadata__" || t.Name == "" {
			return fmt.Errorf("safetensors %s: invalid or duplicate tensor name %q", path, t.Name)
		}
		seen[t.Name] = true
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if n != len(t.Data) {
			return fmt.Errorf("safetensors %s: tensor %q: %d values for shape %v", path, t.Name, len(t.Data), t.Shape)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = Info{DType: "F32", Shape: shape, Offsets: [2]int{off, off + 4*n}}
		off += 4 * n
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 { // align the data section, as the reference writer does
		hb = append(hb, ' ')
	}
	buf := make([]byte, 8+len(hb)+off)
	binary.LittleEndian.PutUint64(buf, uint64(len(hb)))
	copy(buf[8:], hb)
	p := 8 + len(hb)
	for _, t := range tensors {
		for _, v := range t.Data {
			binary.LittleEndian.PutUint32(buf[p:], math.Float32bits(v))
			p += 4
		}
	}
	return writeAtomic(path, buf)
}

func writeAtomic(path string, b []byte) error { return atomicfile.Write(path, b) }

// Raw is one tensor of any dtype to write, as little-endian bytes.
type Raw struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// WriteRaw writes tensors of any supported dtype into path atomically, in name order.
func WriteRaw(path string, tensors []Raw, metadata map[string]string) error {
	es := make([]Entry, len(tensors))
	for i, t := range tensors {
		es[i] = Entry{Name: t.Name, DType: t.DType, Shape: t.Shape, Size: len(t.Data),
			Write: func(w io.Writer) error { _, err := w.Write(t.Data); return err }}
	}
	return WriteEntries(path, es, metadata)
}

// Entry is one tensor WriteEntries writes: Size bytes (little-endian, of DType and Shape),
// which Write writes once, when the file reaches them.
type Entry struct {
	Name  string
	DType string
	Shape []int
	Size  int
	Write func(w io.Writer) error
}

// WriteEntries writes entries into path atomically, in name order, streaming each tensor's
// bytes from its Write: nothing is copied into one buffer, so a file of every variable of a
// model (a checkpoint) costs no memory beyond a write buffer. A Write that writes other than
// Size bytes is an error naming the tensor, and leaves path as it was.
func WriteEntries(path string, entries []Entry, metadata map[string]string) error {
	entries = slices.Clone(entries)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := 0
	for i, t := range entries {
		if t.Name == "" || t.Name == "__metadata__" || (i > 0 && entries[i-1].Name == t.Name) {
			return fmt.Errorf("safetensors %s: invalid or duplicate tensor name %q", path, t.Name)
		}
		es := ElemSize(t.DType)
		if es == 0 {
			return fmt.Errorf("safetensors %s: tensor %q: unknown dtype %q", path, t.Name, t.DType)
		}
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if n*es != t.Size {
			return fmt.Errorf("safetensors %s: tensor %q: %d bytes for shape %v of %s", path, t.Name, t.Size, t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = Info{DType: t.DType, Shape: shape, Offsets: [2]int{off, off + t.Size}}
		off += t.Size
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(hb)))
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
		if _, err := w.Write(hb); err != nil {
			return err
		}
		for _, t := range entries {
			cw := &countWriter{w: w}
			if err := t.Write(cw); err != nil {
				return fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			if cw.n != t.Size {
				return fmt.Errorf("tensor %q: wrote %d bytes, want %d", t.Name, cw.n, t.Size)
			}
		}
		return nil
	})
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += n
	return n, err
}
